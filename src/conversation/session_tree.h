/* session_tree.h: a session is a tree of messages (docs/DESIGN.md,
 * "Conversations as trees").
 *
 * Every message has an id (unique in its session, > 0) and a parent (the
 * message it answers or follows; 0: the first message of a conversation).
 * s->msgs is the current path, root first: what the transcript shows,
 * what the conversation renders and the KV cache holds, so everything
 * that reads a conversation sees a plain list.  The messages of the other
 * branches are kept in s->alts, in no particular order; each carries a
 * stamp that tells when it left the current path, so that coming back to
 * a branch follows the path the user was last on.
 *
 * Siblings (the alternatives at one place of the path) are the messages
 * with the same parent, numbered by id: the first written is 1.
 *
 * UI thread only (plain data, like session.h).
 */
#ifndef ELMCHAT_SRC_SESSION_TREE_H
#define ELMCHAT_SRC_SESSION_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/conversation/session.h"

/* Path message i's place among its siblings: *k of *n (1-based; *n == 1
 * when it has none).  i out of range: 0 of 0. */
void session_siblings(const struct session *s, size_t i, size_t *k, size_t *n);
/* The same for every path message in turn (a transcript drawn whole)
 * without a scan of the other branches per message: every message sorted
 * by parent and id (the index session_tree_rows walks too), valid until
 * the session changes. */
struct session_sibling_index;
struct session_sibling_index *session_sibling_index_new(const struct session *s);
void session_siblings_indexed(const struct session_sibling_index *x, const struct session *s,
                              size_t i, size_t *k, size_t *n);
void session_sibling_index_free(struct session_sibling_index *x);
/* Messages of other branches that follow the path's last message (after
 * a /fork): the next message sent will be their sibling. */
size_t session_children_after_path(const struct session *s);

/* Keep path[0, n_keep) and move the rest into the other branches (an edit,
 * a retry, a fork: nothing is destroyed). */
void session_stash(struct session *s, size_t n_keep);
/* Make the path run through message id, then on through the children the
 * user was last on.  Returns the first path index that changed (n_msgs
 * when none did), or SIZE_MAX when no message has that id. */
size_t session_select(struct session *s, uint32_t id);
/* Path message i's k-th sibling (1-based) onto the path (session_select).
 * SIZE_MAX when there is no such sibling. */
size_t session_branch(struct session *s, size_t i, size_t k);

/* What a command took off the path (/remove, /clear: kept in the other
 * branches, never deleted) and how to put it back: the path's last message
 * before it, and the messages whose parent it changed, with their old
 * parent.  A stash (session_stash) changes no parent: last is enough. */
struct session_restore {
    uint32_t last;       /* the path's last message before (0: the path was empty) */
    struct session_reparent {
        uint32_t id, parent;
    } *moved;            /* owned */
    size_t n_moved;
};
void session_restore_fini(struct session_restore *r);
/* Take path messages [i, i + n) off the path, kept as another branch after
 * message i - 1 (nothing is destroyed; session_remove deletes): the later
 * path messages, and the branches that followed the last one, follow
 * message i - 1 instead.  r is filled to put them back.  i + n < n_msgs
 * (a message follows; else session_stash_undoable). */
void session_take_out(struct session *s, size_t i, size_t n, struct session_restore *r);
/* Put back what r records: the old parents, then the old path, ending at
 * r->last.  Returns the first path index that changed (n_msgs when none
 * did), or SIZE_MAX when r->last is not in the session any more. */
size_t session_restore(struct session *s, const struct session_restore *r);

/* The whole tree, one row per message, depth first (children by id). */
struct session_tree_row {
    const struct message *m; /* borrowed: valid until the session changes */
    int depth;               /* branch points above it (a chain stays at one depth) */
    bool on_path;
    size_t path_index;       /* on_path: its index in s->msgs */
    size_t k, n;             /* its place among its siblings (n == 1: none) */
};
/* Owned array of every message (*n rows). */
struct session_tree_row *session_tree_rows(const struct session *s, size_t *n);

#endif
