/* tree_view.h: /tree, the conversation's tree in place of the transcript
 * with the keyboard on it: Up/Down (PgUp/PgDn, Home/End) choose a message,
 * Enter shows the path through it (chat_select_message), Esc or q closes.
 * The rows are asked of the chat at each key and each draw, so a reply
 * that ends meanwhile cannot leave them stale; only the chosen message's
 * id is kept.  UI thread only. */
#ifndef ELMCHAT_UI_TREE_VIEW_H
#define ELMCHAT_UI_TREE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/chat/chat_controller.h"

struct session_tree_row;

struct tree_view {
    bool open;
    uint32_t chosen; /* the chosen message's id */
    size_t top;      /* the first row drawn */
};

/* Open on the last message of the current path. */
void tree_view_open(struct tree_view *tv, struct chat *c);
/* A key (the bytes of one read) while open: true when the tree took it;
 * rows: the rows the view shows (for PgUp/PgDn). */
bool tree_view_key(struct tree_view *tv, struct chat *c, const char *key, size_t len, int rows);
/* The chosen row's index in rows (0 when the message is gone). */
size_t tree_view_chosen(const struct tree_view *tv, const struct session_tree_row *rows,
                        size_t n);
/* One row as drawn, before its text: "  you #3 [2/3] " (indent, role,
 * exchange number on the path, version among siblings).  Into buf. */
void tree_view_row_head(struct chat *c, const struct session_tree_row *r, char *buf,
                        size_t size);

#endif
