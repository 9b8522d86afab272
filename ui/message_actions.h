/* message_actions.h: what the keys do to the message Alt-Up / Alt-Down
 * selected (the transcript's `selected`): copy, edit, retry from there,
 * pin or unpin, its other versions, through the chat's own commands.  UI thread only. */
#ifndef ELMCHAT_UI_MESSAGE_ACTIONS_H
#define ELMCHAT_UI_MESSAGE_ACTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat_controller.h"
#include "ui/transcript.h"

/* Say in the status bar what is selected and which keys apply. */
void message_actions_hint(struct chat *c, const struct transcript *t);
/* A key (its bytes: c, e, r, p, d then y, Alt-Left, Alt-Right) on the
 * selected message; false when it is none of them (the selection ends and
 * the key is typed as usual). */
bool message_action(struct chat *c, struct transcript *t, const char *key, size_t len);

#endif
