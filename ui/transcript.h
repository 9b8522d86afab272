/* transcript.h: the conversation as drawn: sanitized message text, wrapped
 * into display lines by columns, and the scroll position.  The messages are
 * a display copy (the session in src/ is the truth); the wrapped lines are a
 * disposable cache, rebuilt on resize.  Pure: no curses.  UI thread only. */
#ifndef ELMCHAT_UI_TRANSCRIPT_H
#define ELMCHAT_UI_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/markdown.h"
#include "ui/sanitize.h"

/* One wrapped line of s: iterate with wrap_next.  Lines break at '\n', else
 * after the last space that fits, else before the character that does not
 * fit (a width-2 character never straddles the edge).  A line always takes
 * at least one character, so width < 2 still terminates.  Spaces at a soft
 * break are consumed.  "" is one empty line; "a\n" is "a" and "". */
struct wrap_iter {
    const char *s;
    size_t n, pos;
    int width;
    bool done;
};
void wrap_init(struct wrap_iter *it, const char *s, size_t n, int width);
bool wrap_next(struct wrap_iter *it, size_t *off, size_t *len, int *cols);

enum tr_role { TR_USER, TR_ASSISTANT, TR_SYSTEM, TR_INFO, TR_ERROR };

enum tr_line_kind { TRL_HEADER, TRL_BODY, TRL_GAP };

struct tr_line {
    uint32_t msg;   /* message index */
    uint32_t off;   /* byte range in the message's text (BODY) */
    uint32_t len;
    uint16_t cols;
    uint8_t kind;   /* enum tr_line_kind */
};

struct tr_msg {
    enum tr_role role;
    struct sbuf text;      /* sanitized, what is drawn */
    struct sbuf pending;   /* raw bytes not yet sanitizable (streaming) */
    bool streaming, interrupted, out_of_context, pinned;
    bool markdown;         /* drawn from md (laid out for the width), not text */
    bool queued;           /* a message typed ahead, not sent yet: dimmed */
    struct md_out md;
    int exchange;          /* user messages: the exchange number shown (0: none) */
    int version, n_versions; /* "< 2/3 >" on a message with other versions (n_versions > 1) */
    int ref;               /* caller's tag (e.g. the session message index) */
    char *author;          /* assistant: the model that wrote it (owned); NULL: the current one */
    size_t first_line, n_lines;
};

struct transcript {
    struct tr_msg *msgs;
    size_t n_msgs, cap_msgs;
    struct tr_line *lines;
    size_t n_lines, cap_lines;
    int width;             /* columns the cache was wrapped for (0: none) */
    size_t scroll;         /* lines between the view's bottom and the end */
    bool markdown;         /* assistant messages render their markdown */
    /* search (/find, Ctrl-F): the query (owned, NULL: none), case folded
     * unless it has capitals, the current match's line (SIZE_MAX: none) */
    char *search;
    bool search_fold;
    size_t search_line;
    size_t selected;       /* the selected message (Alt-Up/Down), SIZE_MAX: none */
};

void transcript_init(struct transcript *t);
void transcript_fini(struct transcript *t);

/* Add a complete message (raw text, sanitized here); returns its index. */
size_t transcript_add(struct transcript *t, enum tr_role role, const char *text, size_t n,
                      int ref);
/* Streaming: start an empty message, append raw chunks, finish it. */
size_t transcript_begin(struct transcript *t, enum tr_role role, int ref);
void transcript_append(struct transcript *t, size_t msg, const char *text, size_t n);
void transcript_finish(struct transcript *t, size_t msg, bool interrupted);
/* Keep the first n messages. */
void transcript_truncate(struct transcript *t, size_t n);
void transcript_clear(struct transcript *t);

/* Markdown for the assistant's messages on or off (everything re-laid). */
void transcript_set_markdown(struct transcript *t, bool on);
/* The text a line's off/len refer to: the markdown layout or the text. */
const char *transcript_line_text(const struct transcript *t, const struct tr_line *l);

/* Re-wrap everything for a new width (no-op when unchanged).  Keeps the
 * message at the top of a scrolled view in view. */
void transcript_set_width(struct transcript *t, int width, int height);

/* Search every message (those out of context too) for query, line by
 * line; the current match becomes the newest and is scrolled into view.
 * Returns the number of matching lines.  NULL or "": search off. */
size_t transcript_search(struct transcript *t, const char *query, int height);
/* The next older (dir > 0) or newer (dir < 0) matching line, wrapping
 * around; scrolled into view.  *index / *count: its place among them. */
bool transcript_search_step(struct transcript *t, int dir, int height, size_t *index,
                            size_t *count);
/* Where query occurs in n bytes of text from *from on: its offset, or
 * SIZE_MAX.  (For drawing the highlights.) */
size_t transcript_search_find(const struct transcript *t, const char *s, size_t n, size_t from);

/* Move the selection to the previous (dir < 0) or next user or assistant
 * message, scrolled into view; from none, Alt-Up starts at the newest.
 * Past the newest: none again.  Returns the selected index or SIZE_MAX. */
size_t transcript_select_step(struct transcript *t, int dir, int height);

/* Scrolling, for a view of height rows.  delta > 0 scrolls back (up). */
void transcript_scroll(struct transcript *t, long delta, int height);
void transcript_scroll_home(struct transcript *t, int height);
void transcript_scroll_end(struct transcript *t);
/* First line index shown in a view of height rows (lines [first, first+h)
 * that exist are drawn, top-aligned). */
size_t transcript_first_visible(const struct transcript *t, int height);

#endif
