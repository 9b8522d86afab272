/* message_actions.c: a selected message's actions are the controller's
 * typed entry points that the slash commands also reach (chat_copy_message,
 * chat_edit, chat_pin, chat_unpin, chat_branch, chat_remove), given the
 * message's exchange number; "retry from here" is chat_resend: the same
 * text sent as an edit (conversation.h: another reply to the same message). */
#include "config.h"

#include "ui/message_actions.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/screen.h"

/* The user message of the exchange the message i belongs to (NULL: none). */
static const struct tr_msg *user_of(const struct transcript *t, size_t i)
{
    for (size_t k = i + 1; k-- > 0;)
        if (t->msgs[k].role == TR_USER)
            return &t->msgs[k];
    return NULL;
}

/* After a command drew the transcript again: the same session message
 * selected (by its ref), wherever it is now. */
static void reselect(struct transcript *t, enum tr_role role, int ref)
{
    t->selected = SIZE_MAX;
    for (size_t i = 0; i < t->n_msgs; i++)
        if (t->msgs[i].role == role && t->msgs[i].ref == ref)
            t->selected = i;
}

static int exchange_of(const struct transcript *t, size_t i)
{
    const struct tr_msg *u = user_of(t, i);
    return u ? u->exchange : 0;
}

static bool pinned(const struct transcript *t, size_t i)
{
    const struct tr_msg *u = user_of(t, i);
    return u && u->pinned;
}

void message_actions_hint(struct chat *c, const struct transcript *t)
{
    if (t->selected == SIZE_MAX)
        return;
    const struct tr_msg *m = &t->msgs[t->selected];
    int x = exchange_of(t, t->selected);
    char ver[48] = "";
    if (m->n_versions > 1)
        snprintf(ver, sizeof ver, " (version %d/%d: Alt-Left/Right)", m->version, m->n_versions);
    chat_notice(c, false, "selected: %s%d%s · c copy · e edit · r retry from here · p %s · "
                          "d remove · Esc",
                m->role == TR_USER ? "your message #" : "the reply to #", x, ver,
                pinned(t, t->selected) ? "unpin" : "pin");
}

/* d asked about this exchange: y removes it (0: nothing asked). */
static int asked_remove;

/* Alt-Left (-1) / Alt-Right (+1): the previous or next version. */
static bool other_version(struct chat *c, struct transcript *t, int dir)
{
    const struct tr_msg *m = &t->msgs[t->selected];
    int x = exchange_of(t, t->selected);
    if (m->n_versions <= 1) {
        chat_notice(c, false, "this message has no other version (/edit and /retry make them)");
        return true;
    }
    int k = m->version + dir;
    if (k < 1 || k > m->n_versions) {
        chat_notice(c, false, "version %d of %d: the %s one", m->version, m->n_versions,
                    dir < 0 ? "first" : "last");
        return true;
    }
    enum tr_role role = m->role;
    int ref = m->ref;
    chat_branch(c, x, role != TR_USER, k);
    reselect(t, role, ref);
    return true;
}

bool message_action(struct chat *c, struct transcript *t, const char *key_bytes, size_t len)
{
    if (t->selected == SIZE_MAX)
        return false;
    if (len == 6 && memcmp(key_bytes, "\033[1;3", 5) == 0 &&
        (key_bytes[5] == 'D' || key_bytes[5] == 'C') && exchange_of(t, t->selected) > 0)
        return other_version(c, t, key_bytes[5] == 'D' ? -1 : 1);
    if (len != 1)
        return false;
    int key = (unsigned char)key_bytes[0];
    if (asked_remove) {
        int n = asked_remove;
        asked_remove = 0;
        if (key == 'y') {
            t->selected = SIZE_MAX;
            chat_remove(c, n);
        } else {
            chat_notice(c, false, "exchange #%d kept", n);
        }
        return true;
    }
    const struct tr_msg *m = &t->msgs[t->selected];
    int x = exchange_of(t, t->selected);
    if (x <= 0 && key != 'c')
        return false;
    switch (key) {
    case 'c':
        if (m->role == TR_USER) {
            enum tr_role role = m->role;
            int ref = m->ref;
            chat_copy_message(c, x);
            reselect(t, role, ref);
        } else if (screen_clipboard(m->text.data ? m->text.data : "", m->text.len)) {
            chat_notice(c, false, "copied the reply to #%d (%zu bytes) to the clipboard (OSC 52)",
                        x, m->text.len);
        } else {
            chat_notice(c, true, "this terminal cannot take the clipboard (OSC 52)");
        }
        return true;
    case 'e':
        t->selected = SIZE_MAX;
        chat_edit(c, x);
        return true;
    case 'r':
        /* the exchange's message sent again: what followed it goes */
        t->selected = SIZE_MAX;
        chat_resend(c, x);
        return true;
    case 'd':
        asked_remove = x;
        chat_notice(c, false, "remove exchange #%d (your message and its reply)? y removes it, "
                              "any other key keeps it",
                    x);
        return true;
    case 'p': {
        /* the transcript is drawn again with the mark: the selection stays */
        enum tr_role role = m->role;
        int ref = m->ref;
        if (pinned(t, t->selected))
            chat_unpin(c, x);
        else
            chat_pin(c, x);
        reselect(t, role, ref);
        return true;
    }
    default:
        return false;
    }
}
