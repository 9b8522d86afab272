/* session_list.h: the session list driven by keys (Alt-S or F2 opens it
 * with the keyboard on it): Up/Down choose, Enter switches, r renames,
 * d deletes (after y), / filters by name or content, Esc leaves.  The commands are
 * the chat's (/switch, /rename, /delete).  UI thread only. */
#ifndef ELMCHAT_UI_SESSION_LIST_H
#define ELMCHAT_UI_SESSION_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "src/chat/chat_controller.h"

struct session_list {
    bool focused;
    size_t sel;          /* among the names the filter keeps */
    char filter[64];
    bool filtering;      /* typing the filter */
    char *confirm;       /* the name d asked about (owned), NULL */
};

/* names[] (n) that the filter keeps: their indices into kept (n entries
 * at most); returns how many. */
size_t session_list_kept(const struct session_list *l, char *const *names, size_t n,
                         size_t *kept);
/* Focus the list on open (sel: the current session). */
void session_list_focus(struct session_list *l, char *const *names, size_t n,
                        const char *current);
/* A key (the bytes of one read) while focused: true when the list took
 * it.  Unfocuses itself on Enter, Esc and keys it does not know. */
bool session_list_key(struct session_list *l, struct chat *c, char *const *names, size_t n,
                      const char *buf, size_t len);
void session_list_fini(struct session_list *l);
/* When session NAME was last saved, for the list: "14:05" today, else
 * "2026-12-01"; "new" before its first save. */
void session_list_when(const char *name, char *buf, size_t size);
/* The columns the list wants to show names[] (n) whole with their dates. */
int session_list_width(char *const *names, size_t n);

#endif
