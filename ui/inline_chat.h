/* inline_chat.h: the inline front end: a readline prompt on the normal
 * terminal, replies below it in the scrollback (no alternate screen, no
 * cursor addressing), or standard input read as messages when it is not a
 * terminal (a pipe: one message a line; -f FILE: the file as one message).
 * Talks to the controller only through chat_controller.h.  UI thread. */
#ifndef ELMCHAT_UI_INLINE_CHAT_H
#define ELMCHAT_UI_INLINE_CHAT_H

#include "ui/chat_args.h"

/* Run the chat; returns the exit status. */
int inline_chat_main(const struct chat_args *a);

#endif
