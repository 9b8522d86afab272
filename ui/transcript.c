/* transcript.c: message display copies, column wrapping, scrollback. */
#include "config.h"

#include "ui/transcript.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/xalloc.h"

void wrap_init(struct wrap_iter *it, const char *s, size_t n, int width)
{
    it->s = s;
    it->n = n;
    it->pos = 0;
    it->width = width < 1 ? 1 : width;
    it->done = false;
}

bool wrap_next(struct wrap_iter *it, size_t *off, size_t *len, int *cols)
{
    if (it->done)
        return false;
    const char *s = it->s;
    size_t n = it->n, i = it->pos;
    size_t start = i;
    int w = 0;
    size_t brk = 0;     /* end of the line at the last soft break (0: none) */
    int brk_w = 0;
    size_t brk_next = 0; /* where the next line starts after that break */

    while (i < n) {
        if (s[i] == '\n') {
            *off = start, *len = i - start, *cols = w;
            it->pos = i + 1;
            return true; /* a trailing '\n' leaves one more (empty) line */
        }
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        if (k == 0)
            k = n - i; /* truncated tail: treat as one cell */
        int cw = u8_cp_width(cp);
        if (cw < 0)
            cw = 1;
        if (cp == ' ') {
            /* break opportunity: the line may end before this space */
            brk = i;
            brk_w = w;
            size_t j = i;
            while (j < n && s[j] == ' ')
                j++;
            brk_next = j;
        }
        if (w + cw > it->width && i > start) {
            if (cp == ' ') {
                /* the overflowing character is itself a space: break here */
                size_t j = i;
                while (j < n && s[j] == ' ')
                    j++;
                *off = start, *len = i - start, *cols = w;
                it->pos = j;
                if (j < n && s[j] == '\n')
                    it->pos = j + 1;
                if (it->pos >= n && j >= n)
                    it->done = true;
                return true;
            }
            if (brk > start) {
                *off = start, *len = brk - start, *cols = brk_w;
                it->pos = brk_next;
                return true;
            }
            *off = start, *len = i - start, *cols = w;
            it->pos = i;
            return true;
        }
        w += cw;
        i += k;
    }
    *off = start, *len = i - start, *cols = w;
    it->pos = n;
    it->done = true;
    return true;
}

void transcript_init(struct transcript *t)
{
    memset(t, 0, sizeof *t);
    t->selected = SIZE_MAX;
}

static void msg_fini(struct tr_msg *m)
{
    sbuf_fini(&m->text);
    sbuf_fini(&m->pending);
    md_out_fini(&m->md);
    free(m->author);
    m->author = NULL;
}

void transcript_fini(struct transcript *t)
{
    free(t->search);
    for (size_t i = 0; i < t->n_msgs; i++)
        msg_fini(&t->msgs[i]);
    free(t->msgs);
    free(t->lines);
    memset(t, 0, sizeof *t);
}

static void push_line(struct transcript *t, uint32_t msg, uint8_t kind, size_t off, size_t len,
                      int cols)
{
    if (t->n_lines == t->cap_lines) {
        t->cap_lines = t->cap_lines ? t->cap_lines * 2 : 256;
        t->lines = x_reallocarray(t->lines, t->cap_lines, sizeof *t->lines);
    }
    struct tr_line *l = &t->lines[t->n_lines++];
    l->msg = msg;
    l->kind = kind;
    l->off = (uint32_t)off;
    l->len = (uint32_t)len;
    l->cols = (uint16_t)(cols > 0xFFFF ? 0xFFFF : cols);
}

/* Wrap message i at the end of the line cache (all later lines must be
 * gone).  The view stays put when scrolled back. */
static void wrap_msg(struct transcript *t, size_t i)
{
    struct tr_msg *m = &t->msgs[i];
    size_t before = t->n_lines;
    m->first_line = t->n_lines;
    if (t->width > 0) {
        push_line(t, (uint32_t)i, TRL_HEADER, 0, 0, 0);
        const char *s = m->text.data ? m->text.data : "";
        size_t n = m->text.len;
        if (m->markdown) {
            /* laid out for the width: the wrap below keeps its lines */
            md_render(s, n, t->width, &m->md);
            s = m->md.text.data;
            n = m->md.text.len;
        }
        struct wrap_iter it;
        wrap_init(&it, s, n, t->width);
        size_t off, len;
        int cols;
        while (wrap_next(&it, &off, &len, &cols))
            push_line(t, (uint32_t)i, TRL_BODY, off, len, cols);
        push_line(t, (uint32_t)i, TRL_GAP, 0, 0, 0);
    }
    m->n_lines = t->n_lines - m->first_line;
    (void)before;
}

/* Drop the cached lines of messages [i, n) . */
static void unwrap_from(struct transcript *t, size_t i)
{
    if (i < t->n_msgs)
        t->n_lines = t->msgs[i].first_line;
}

static size_t new_msg(struct transcript *t, enum tr_role role, int ref)
{
    if (t->n_msgs == t->cap_msgs) {
        t->cap_msgs = t->cap_msgs ? t->cap_msgs * 2 : 32;
        t->msgs = x_reallocarray(t->msgs, t->cap_msgs, sizeof *t->msgs);
    }
    struct tr_msg *m = &t->msgs[t->n_msgs];
    memset(m, 0, sizeof *m);
    m->role = role;
    m->ref = ref;
    m->markdown = t->markdown && role == TR_ASSISTANT;
    sbuf_add(&m->text, "", 0);
    return t->n_msgs++;
}

/* Keep a scrolled-back view steady while lines change below it. */
static void keep_view(struct transcript *t, size_t old_n_lines)
{
    if (t->scroll > 0 && t->n_lines > old_n_lines)
        t->scroll += t->n_lines - old_n_lines;
    else if (t->scroll > 0 && t->n_lines < old_n_lines)
        t->scroll = t->scroll > old_n_lines - t->n_lines ? t->scroll - (old_n_lines - t->n_lines)
                                                         : 0;
}

size_t transcript_add(struct transcript *t, enum tr_role role, const char *text, size_t n, int ref)
{
    size_t i = new_msg(t, role, ref);
    sanitize_append(&t->msgs[i].text, text, n, true);
    size_t old = t->n_lines;
    wrap_msg(t, i);
    keep_view(t, old);
    return i;
}

size_t transcript_begin(struct transcript *t, enum tr_role role, int ref)
{
    size_t i = new_msg(t, role, ref);
    t->msgs[i].streaming = true;
    size_t old = t->n_lines;
    wrap_msg(t, i);
    keep_view(t, old);
    return i;
}

static void rewrap_tail(struct transcript *t, size_t i)
{
    /* Only the last message may change in place; an earlier one (rare)
     * rewraps everything after it too. */
    size_t old = t->n_lines;
    unwrap_from(t, i);
    for (size_t j = i; j < t->n_msgs; j++)
        wrap_msg(t, j);
    keep_view(t, old);
}

void transcript_append(struct transcript *t, size_t msg, const char *text, size_t n)
{
    if (msg >= t->n_msgs || n == 0)
        return;
    struct tr_msg *m = &t->msgs[msg];
    sbuf_add(&m->pending, text, n);
    size_t used = sanitize_append(&m->text, m->pending.data, m->pending.len, false);
    memmove(m->pending.data, m->pending.data + used, m->pending.len - used);
    m->pending.len -= used;
    m->pending.data[m->pending.len] = '\0';
    rewrap_tail(t, msg);
}

void transcript_finish(struct transcript *t, size_t msg, bool interrupted)
{
    if (msg >= t->n_msgs)
        return;
    struct tr_msg *m = &t->msgs[msg];
    if (m->pending.len)
        sanitize_append(&m->text, m->pending.data, m->pending.len, true);
    sbuf_fini(&m->pending);
    m->streaming = false;
    m->interrupted = interrupted;
    rewrap_tail(t, msg);
}

void transcript_truncate(struct transcript *t, size_t n)
{
    if (n >= t->n_msgs)
        return;
    size_t old = t->n_lines;
    unwrap_from(t, n);
    for (size_t i = n; i < t->n_msgs; i++)
        msg_fini(&t->msgs[i]);
    t->n_msgs = n;
    if (t->selected != SIZE_MAX && t->selected >= n)
        t->selected = SIZE_MAX;
    keep_view(t, old);
}

void transcript_clear(struct transcript *t)
{
    transcript_truncate(t, 0);
    t->scroll = 0;
}

void transcript_set_markdown(struct transcript *t, bool on)
{
    if (t->markdown == on)
        return;
    t->markdown = on;
    for (size_t i = 0; i < t->n_msgs; i++)
        t->msgs[i].markdown = on && t->msgs[i].role == TR_ASSISTANT;
    size_t old = t->n_lines;
    t->n_lines = 0;
    for (size_t i = 0; i < t->n_msgs; i++)
        wrap_msg(t, i);
    keep_view(t, old);
}

const char *transcript_line_text(const struct transcript *t, const struct tr_line *l)
{
    const struct tr_msg *m = &t->msgs[l->msg];
    const char *s = m->markdown ? m->md.text.data : m->text.data;
    return s ? s : "";
}

void transcript_set_width(struct transcript *t, int width, int height)
{
    if (width == t->width)
        return;
    /* Anchor: the message at the top of a scrolled-back view. */
    bool anchored = t->scroll > 0 && t->n_lines > 0;
    size_t anchor_msg = 0;
    if (anchored) {
        size_t first = transcript_first_visible(t, height);
        anchor_msg = first < t->n_lines ? t->lines[first].msg : 0;
    }
    t->width = width;
    t->n_lines = 0;
    for (size_t i = 0; i < t->n_msgs; i++)
        wrap_msg(t, i);
    t->scroll = 0;
    if (anchored && anchor_msg < t->n_msgs) {
        size_t first = t->msgs[anchor_msg].first_line;
        size_t h = height > 0 ? (size_t)height : 1;
        size_t bottom = first + h; /* the view's end when that message is on top */
        t->scroll = bottom < t->n_lines ? t->n_lines - bottom : 0;
    }
}

static size_t max_scroll(const struct transcript *t, int height)
{
    size_t h = height > 0 ? (size_t)height : 0;
    return t->n_lines > h ? t->n_lines - h : 0;
}

void transcript_scroll(struct transcript *t, long delta, int height)
{
    size_t max = max_scroll(t, height);
    if (t->scroll > max)
        t->scroll = max;
    if (delta > 0) {
        size_t d = (size_t)delta;
        t->scroll = max - t->scroll < d ? max : t->scroll + d;
    } else if (delta < 0) {
        size_t d = (size_t)(-delta);
        t->scroll = t->scroll < d ? 0 : t->scroll - d;
    }
}

void transcript_scroll_home(struct transcript *t, int height)
{
    t->scroll = max_scroll(t, height);
}

void transcript_scroll_end(struct transcript *t)
{
    t->scroll = 0;
}

size_t transcript_first_visible(const struct transcript *t, int height)
{
    size_t max = max_scroll(t, height);
    size_t s = t->scroll > max ? max : t->scroll;
    size_t h = height > 0 ? (size_t)height : 0;
    return t->n_lines > s + h ? t->n_lines - s - h : 0;
}

/* ------------------------------------------------------------------ search */

static int fold(int ch, bool on)
{
    return on && ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

size_t transcript_search_find(const struct transcript *t, const char *s, size_t n, size_t from)
{
    const char *q = t->search;
    size_t qn = q ? strlen(q) : 0;
    if (!qn || n < qn)
        return SIZE_MAX;
    for (size_t i = from; i + qn <= n; i++) {
        size_t k = 0;
        while (k < qn && fold((unsigned char)s[i + k], t->search_fold) == (unsigned char)q[k])
            k++;
        if (k == qn)
            return i;
    }
    return SIZE_MAX;
}

static bool line_matches(const struct transcript *t, size_t li)
{
    const struct tr_line *l = &t->lines[li];
    if (l->kind != TRL_BODY)
        return false;
    return transcript_search_find(t, transcript_line_text(t, l) + l->off, l->len, 0) != SIZE_MAX;
}

/* Scroll so that line li is in view (kept where it is when it already is). */
static void show_line(struct transcript *t, size_t li, int height)
{
    size_t h = height > 0 ? (size_t)height : 1;
    size_t first = transcript_first_visible(t, height);
    if (li >= first && li < first + h)
        return;
    size_t bottom = li + h / 2 + 1; /* li a little above the middle */
    t->scroll = bottom < t->n_lines ? t->n_lines - bottom : 0;
}

size_t transcript_search(struct transcript *t, const char *query, int height)
{
    free(t->search);
    t->search = NULL;
    t->search_line = SIZE_MAX;
    if (!query || !*query)
        return 0;
    t->search = x_strdup(query);
    t->search_fold = true;
    for (const char *p = query; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            t->search_fold = false; /* capitals: the case counts */
    size_t n = 0;
    for (size_t i = t->n_lines; i-- > 0;) {
        if (!line_matches(t, i))
            continue;
        if (t->search_line == SIZE_MAX)
            t->search_line = i;
        n++;
    }
    if (t->search_line != SIZE_MAX)
        show_line(t, t->search_line, height);
    return n;
}

bool transcript_search_step(struct transcript *t, int dir, int height, size_t *index,
                            size_t *count)
{
    *index = *count = 0;
    if (!t->search || !t->n_lines)
        return false;
    size_t start = t->search_line < t->n_lines ? t->search_line : t->n_lines - 1;
    size_t found = SIZE_MAX;
    for (size_t k = 1; k <= t->n_lines && found == SIZE_MAX; k++) {
        size_t i = dir > 0 ? (start + t->n_lines - k) % t->n_lines : (start + k) % t->n_lines;
        if (line_matches(t, i))
            found = i;
    }
    if (found == SIZE_MAX)
        return false;
    t->search_line = found;
    /* counted from the newest: the first Ctrl-F after /find is match 2 */
    for (size_t i = t->n_lines; i-- > 0;)
        if (line_matches(t, i)) {
            (*count)++;
            if (i >= found)
                (*index)++;
        }
    show_line(t, found, height);
    return true;
}

/* --------------------------------------------------------------- selection */

static bool selectable(const struct tr_msg *m)
{
    return (m->role == TR_USER || m->role == TR_ASSISTANT) && !m->queued;
}

size_t transcript_select_step(struct transcript *t, int dir, int height)
{
    size_t i = t->selected;
    for (;;) {
        if (dir < 0)
            i = i == SIZE_MAX ? t->n_msgs : i;
        if (dir < 0 && i == 0)
            return t->selected; /* the oldest stays selected */
        i = dir < 0 ? i - 1 : (i == SIZE_MAX ? SIZE_MAX : i + 1);
        if (i == SIZE_MAX || i >= t->n_msgs) {
            t->selected = SIZE_MAX;
            t->scroll = 0;
            return SIZE_MAX;
        }
        if (selectable(&t->msgs[i]))
            break;
    }
    t->selected = i;
    show_line(t, t->msgs[i].first_line, height);
    return i;
}
