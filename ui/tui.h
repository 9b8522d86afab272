/* tui.h: the full-screen chat (ncurses + readline).  UI thread only. */
#ifndef ELMCHAT_UI_TUI_H
#define ELMCHAT_UI_TUI_H

/* Parse the chat options of argv and run the interactive chat; returns the
 * exit status. */
int tui_main(int argc, char **argv);

#endif
