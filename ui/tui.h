/* tui.h: the full-screen chat (ncurses + readline).  UI thread only. */
#ifndef ELMCHAT_UI_TUI_H
#define ELMCHAT_UI_TUI_H

#include <stddef.h>

#include "ui/keys.h"

/* Parse the chat options of argv and run the interactive chat; returns the
 * exit status. */
int tui_main(int argc, char **argv);

/* The chat's bindings (ui/keys.h): the keys its modes take before
 * readline, and a handler for each of readline's actions (indexed by enum
 * input_action).  Read by tests/ui/test-key-bindings. */
extern const struct key_binding tui_key_bindings[];
extern const size_t tui_n_key_bindings;
extern action_fn *const tui_actions[];

#endif
