/* session.h: a conversation and its file ($XDG_DATA_HOME/elmchat/sessions/NAME.yaml).
 *
 * The file is readable YAML written with libyaml's emitter (message content
 * as a literal block scalar whenever YAML can hold it exactly; libyaml picks
 * a double-quoted scalar for content with tabs, CR, trailing spaces...).
 * Loading validates everything and reports "FILE:LINE:COLUMN: message"; a
 * newer format version is refused; unknown keys (top level and per message)
 * are kept and written back.  The last key is `end: true`: a file cut short
 * anywhere fails to load instead of silently losing the tail.  A file that
 * fails to load is never modified.  Saving is atomic (store.h).
 *
 * The token sequence in the KV cache is not stored here (the KV snapshot
 * holds it); it can be re-rendered from the messages with template.h.
 *
 * UI thread only (plain data, no locking).
 */
#ifndef ELMCHAT_SRC_SESSION_H
#define ELMCHAT_SRC_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "src/template/template.h"

#define SESSION_FORMAT_VERSION 2 /* 2: the tree (branches:, id:) */
#define SESSION_MAX_FILE_SIZE (256 * 1024 * 1024)
#define SESSION_MAX_MESSAGES 1000000 /* path and other branches */

struct session_extra; /* unknown keys kept for the next save (opaque) */

struct message {
    enum role role;      /* ROLE_USER or ROLE_ASSISTANT (ROLE_SYSTEM allowed, unused) */
    char *content;       /* owned, UTF-8, never NULL */
    time_t time;         /* when it was completed (0: unknown) */
    bool interrupted;    /* the reply was cancelled or cut by max tokens */
    bool out_of_context; /* evicted from the KV cache by the context policy */
    bool pinned;         /* never evicted */
    uint32_t id;         /* unique in the session, > 0 (session_tree.h) */
    uint32_t parent;     /* the message before it on its branch; 0: the first */
    uint64_t stamp;      /* other branches: when it left the current path */
    char *model;         /* assistant: the model that wrote it (its label); owned, may be NULL */
    struct session_extra *extra; /* owned; NULL when none */
};

struct session {
    int version;          /* format version read (SESSION_FORMAT_VERSION when new) */
    char *name;           /* owned, never NULL */
    time_t created, updated;
    char *model;          /* model name or path as the user gave it; owned, may be NULL */
    char *template_name;  /* owned, may be NULL (then the model's default) */
    char *system;         /* system prompt; owned, may be NULL (template default) */
    char *role;           /* the role preset the system prompt came from; owned, may be NULL */
    char *format;         /* /format: "json", "schema FILE", "grammar FILE"; owned, NULL: off */
    struct sampling sampling; /* parameters set for this conversation */
    struct message *msgs; /* owned array: the current path (session_tree.h) */
    size_t n_msgs, cap_msgs;
    struct message *alts; /* owned array: the other branches' messages */
    size_t n_alts, cap_alts;
    uint32_t next_id;     /* the highest id given */
    uint64_t stamp;       /* the last stamp given */
    struct session_extra *extra; /* owned; unknown top-level keys */
};

/* A new empty session named name (created = updated = now).  Owned. */
struct session *session_new(const char *name);
void session_free(struct session *s);

/* Whether a turn of text_len bytes (the user's message and its reply)
 * still leaves the session loadable: the app stops short of the limits
 * a load enforces, so that no session it saves is refused.  If not, false
 * and why into err. */
bool session_has_room(const struct session *s, size_t text_len, char *err, size_t err_size);

/* Append a message (content copied); returns it (borrowed, valid until the
 * next append/remove).  time = now. */
struct message *session_append(struct session *s, enum role role, const char *content);
/* Replace the content of message i (copied). */
void session_set_content(struct session *s, size_t i, const char *content);
/* Delete path messages [n_keep, n_msgs) and the branches that grow from
 * them (a turn that could not be rendered; /undo, /clear, an edit or a
 * retry keep them: session_stash). */
void session_truncate(struct session *s, size_t n_keep);
/* Remove path messages [i, i + n) (the later ones move up and follow
 * message i - 1); the branches that grow inside them go too, those after
 * the last one follow message i - 1 as well.  (/remove keeps them:
 * session_take_out.) */
void session_remove(struct session *s, size_t i, size_t n);

/* The tree's storage (session_tree.h navigates it). */

/* The message with this id (path or other branches), NULL when none. */
const struct message *session_find_id(const struct session *s, uint32_t id);
/* Room for one more message in s->alts, or at the end of the path:
 * returns it, zeroed (no id, no parent: the caller's). */
struct message *session_alt_append(struct session *s);
struct message *session_path_slot(struct session *s);
/* After loading: ids are unique, and every other-branch message's parent
 * exists and leads to the root without a cycle.  false with the first
 * message at fault (in_branches: s->alts[index], else s->msgs[index]) and
 * what is wrong with it. */
struct session_tree_fault {
    bool in_branches;
    size_t index;
    char what[160];
};
bool session_tree_valid(const struct session *s, struct session_tree_fault *f);

/* Save to path atomically (temp file in the same folder, fsync, rename,
 * fsync the folder, mode 0600); sets s->updated to now first.  Invalid UTF-8
 * in any text is written as U+FFFD.  0 or -errno (err filled); on failure
 * the old file is intact. */
int session_save(struct session *s, const char *path, char *err, size_t err_size);
/* Load.  NULL on error with err = "FILE:LINE:COLUMN: message" (or "FILE: ...").
 * Owned. */
struct session *session_load(const char *path, char *err, size_t err_size);

/* Serialize / parse in memory (the file functions use these).  to_yaml
 * returns owned text; from_yaml: name is used in error messages. */
char *session_to_yaml(const struct session *s, size_t *len);
struct session *session_from_yaml(const char *text, size_t len, const char *name, char *err,
                                  size_t err_size);

/* Markdown export: "# NAME", then each message under a "**User**" /
 * "**Assistant**" line.  Owned. */
char *session_to_markdown(const struct session *s);

/* $XDG_DATA_HOME/elmchat/sessions/NAME.yaml (owned); NULL when name is not
 * a valid session name (empty, '/', leading '.', control characters). */
char *session_path_for(const char *name);
bool session_name_valid(const char *name);

/* The messages as template_msg (borrowed pointers into s), skipping
 * out-of-context ones when in_context_only; owned array, *n set. */
struct template_msg *session_template_msgs(const struct session *s, bool in_context_only,
                                           size_t *n);

#endif
