/* chat_args.h: the options of `elmchat` without a command, which both
 * front ends share (the full-screen one, ui/tui.c, and the inline one,
 * ui/inline_chat.c), and which of the two runs. */
#ifndef ELMCHAT_UI_CHAT_ARGS_H
#define ELMCHAT_UI_CHAT_ARGS_H

#include <stdbool.h>

#include "src/chat/chat_controller.h"

struct chat_args {
    struct chat_options chat;
    bool inline_mode;    /* --inline, --screen-reader, config.yaml ui: inline, or no terminal */
    bool screen_reader;  /* --screen-reader: nothing rewritten, speaker and end-of-turn lines */
    bool color;          /* --color: colour even where it is off by default */
    const char *input;   /* -f FILE ("-": standard input): the whole of it is one message */
};

/* Parse argv into a; 0, or the exit status of a usage error (said). */
int chat_args_parse(int argc, char **argv, struct chat_args *a);

#endif
