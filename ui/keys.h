/* keys.h: the keys of one read from the terminal, the chat's table of key
 * bindings and what a handler asks of the loop.
 *
 * htop's shape (Action_setBindings, HandlerResult): the chat's modes (the
 * session list, /tree, a selected message) take keys before readline
 * through a table of bindings (ui/tui.c: tui_key_bindings); a binding
 * names a mode, a key (or any key) and a typed handler that acts on the
 * chat and returns reaction bits; the loop alone acts on them (relayout,
 * redraw, resize, leave).  Whether an Esc at the end of a read is the Esc
 * key or the Alt prefix of a key still coming is decided here, once per
 * read.  No curses, no readline.  UI thread only. */
#ifndef ELMCHAT_UI_KEYS_H
#define ELMCHAT_UI_KEYS_H

#include <stdbool.h>
#include <stddef.h>

/* What a handler asks of the loop; 0: the key is used up, nothing to do. */
enum reaction {
    REACT_PASS = 1u << 0,       /* not this mode's key: it and the rest of the read
                                 * go on to the next mode, at last to readline */
    REACT_REDRAW = 1u << 1,     /* the transcript or the session list changed */
    REACT_REDRAW_ALL = 1u << 2, /* every window drawn again */
    REACT_CLEAR = 1u << 3,      /* the terminal repainted from nothing (Ctrl-L) */
    REACT_RELAYOUT = 1u << 4,   /* the windows change (the session list opened or closed) */
    REACT_RESIZE = 1u << 5,     /* the terminal's size is read again (once per burst) */
    REACT_QUIT = 1u << 6,       /* the chat ends */
};

/* The modes that take keys before readline, in the order a read goes
 * through them: a mode takes keys while it is active, the first key it
 * does not take and all after it go on to the next. */
enum key_mode {
    KEY_MODE_SESSION_LIST, /* the input line is empty: F2/Alt-S, the list's keys */
    KEY_MODE_TREE,         /* /tree is open: every key */
    KEY_MODE_SELECTION,    /* a message is selected, the line is empty */
    KEY_MODES
};

/* The bytes of one read, as the modes take them. */
struct key_read {
    const char *buf;
    size_t len;
    size_t from; /* where the current mode began */
    int fd;      /* the tty, polled for the Alt-prefix timeout */
    int waited;  /* 0: not yet; 1: a key followed the Esc; 2: nothing did */
};

/* One key of a read. */
struct key {
    const char *bytes;
    size_t len;
    struct key_read *read;
};

/* The bytes of the first key in buf: a CSI or SS3 sequence, an Alt-key, a
 * UTF-8 character or one byte. */
size_t key_length(const char *buf, size_t n);
/* The key at off (off < r->len). */
struct key key_at(struct key_read *r, size_t off);

enum key_esc {
    KEY_ESC_NONE,   /* not an Esc alone at the end of the read */
    KEY_ESC_PREFIX, /* an Alt prefix: the key it begins is still coming */
    KEY_ESC_ALONE,  /* the Esc key: nothing followed within the timeout */
};
/* The read's last byte, when it is an Esc on its own since r->from: the
 * Esc key or an Alt prefix.  Waits up to 30 ms (the man page's Alt-prefix
 * timeout) for a next byte, once per read. */
enum key_esc key_read_tail(struct key_read *r);
/* The same for one key: PREFIX also when the Esc follows another Esc. */
enum key_esc key_escape(const struct key *k);

struct tui;
typedef unsigned key_fn(struct tui *t, const struct key *k);
typedef unsigned action_fn(struct tui *t);

struct key_binding {
    enum key_mode mode;
    const char *seq;            /* the key's bytes; NULL: any key (the mode's last row) */
    bool (*when)(struct tui *t); /* NULL: always */
    bool waits_for_alt;         /* an Esc that may begin an Alt-key is not given to fn */
    key_fn *fn;
};

/* The first row of mode that takes k now, or NULL. */
const struct key_binding *key_binding_find(const struct key_binding *table, size_t n,
                                           enum key_mode mode, const struct key *k,
                                           struct tui *t);

#endif
