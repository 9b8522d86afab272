/* draw.c: the transcript, status bar and session list (see draw.h). */
#include "config.h"

#include "ui/draw.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/sanitize.h"
#include "ui/screen.h"
#include "ui/session_list.h"
#include "ui/tree_view.h"
#include "src/conversation/session_tree.h"

/* Draw n bytes of sanitized UTF-8 at the cursor, at most max_cols columns. */
static int put_text(WINDOW *w, const char *s, size_t n, int max_cols)
{
    int cols = 0, cw;
    size_t i = 0;
    uint32_t cp;
    while (u8_next(s, n, &i, &cp, &cw)) {
        if (cw < 0)
            cp = UTF8_REPLACEMENT, cw = 1;
        if (cols + cw > max_cols)
            break;
        wchar_t wc = (wchar_t)cp;
        waddnwstr(w, &wc, 1);
        cols += cw;
    }
    return cols;
}

static int md_curses_attr(uint16_t a)
{
    int c = A_NORMAL;
    if (a & (MD_A_CODE | MD_A_CODEBLOCK))
        c |= screen_attr(SA_CODE);
    if (a & MD_A_MARKER)
        c |= screen_attr(SA_MD_MARKER);
    if (a & MD_A_BOLD)
        c |= A_BOLD;
    if (a & MD_A_ITALIC)
        c |= A_ITALIC;
    if (a & (MD_A_LINK | MD_A_HEADING))
        c |= A_UNDERLINE;
    if (a & (MD_A_DIM | MD_A_STRIKE))
        c |= screen_attr(SA_MD_DIM);
    return c;
}

/* One line of a markdown message: its text in runs of one attribute. */
static void put_md_line(WINDOW *w, const struct md_out *md, size_t off, size_t len, int max_cols)
{
    /* the first span that ends after off (spans are in text order) */
    size_t lo = 0, hi = md->n_spans;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (md->spans[mid].off + md->spans[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t pos = off, end = off + len, k = lo;
    int cols = 0;
    while (pos < end && cols < max_cols) {
        size_t stop = end;
        uint16_t attr = 0;
        if (k < md->n_spans && md->spans[k].off <= pos) {
            attr = md->spans[k].attr;
            size_t se = md->spans[k].off + md->spans[k].len;
            stop = se < end ? se : end;
            k++;
        } else if (k < md->n_spans && md->spans[k].off < end) {
            stop = md->spans[k].off;
        }
        wattrset(w, md_curses_attr(attr));
        cols += put_text(w, md->text.data + pos, stop - pos, max_cols - cols);
        pos = stop;
    }
    wattrset(w, A_NORMAL);
}

static const char *role_label(const struct tr_msg *m, const char *assistant)
{
    switch (m->role) {
    case TR_USER:
        return "you";
    case TR_ASSISTANT:
        if (m->author && *m->author)
            return m->author;
        return assistant && *assistant ? assistant : "assistant";
    case TR_SYSTEM:
        return "system";
    case TR_INFO:
        return "elmchat";
    case TR_ERROR:
        return "error";
    }
    return "";
}

static enum screen_attr role_attr(enum tr_role r)
{
    switch (r) {
    case TR_USER:
        return SA_USER;
    case TR_ASSISTANT:
        return SA_ASSISTANT;
    case TR_SYSTEM:
        return SA_SYSTEM;
    case TR_INFO:
        return SA_INFO;
    case TR_ERROR:
        return SA_ERROR;
    }
    return SA_NORMAL;
}

/* The window (NULL: none to draw into) erased, and its size. */
static WINDOW *erased(void *vwin, int *h, int *wd)
{
    WINDOW *w = vwin;
    if (w) {
        getmaxyx(w, *h, *wd);
        werase(w);
    }
    return w;
}

/* The search's matches on line li (row y), drawn over in reverse video;
 * the current match's line in bold too. */
static void highlight_matches(WINDOW *w, const struct transcript *t, size_t li, int y, int wd)
{
    const struct tr_line *l = &t->lines[li];
    const char *s = transcript_line_text(t, l) + l->off;
    size_t qn = strlen(t->search), from = 0, at;
    int a = A_REVERSE | (li == t->search_line ? A_BOLD : 0);
    while ((at = transcript_search_find(t, s, l->len, from)) != SIZE_MAX) {
        int col = u8_width(s, at);
        if (col >= wd)
            break;
        wmove(w, y, col);
        wattrset(w, a);
        put_text(w, s + at, qn, wd - col);
        wattrset(w, A_NORMAL);
        from = at + qn;
    }
}

void draw_transcript(void *vwin, struct transcript *t, const char *assistant_label)
{
    int h, wd;
    WINDOW *w = erased(vwin, &h, &wd);
    if (!w)
        return;
    size_t first = transcript_first_visible(t, h);
    for (int y = 0; y < h && first + (size_t)y < t->n_lines; y++) {
        const struct tr_line *l = &t->lines[first + (size_t)y];
        const struct tr_msg *m = &t->msgs[l->msg];
        wmove(w, y, 0);
        if (l->kind == TRL_HEADER) {
            int a = screen_attr(role_attr(m->role)) | (l->msg == t->selected ? A_REVERSE : 0);
            wattrset(w, a);
            char *label = sanitize_dup(role_label(m, assistant_label), strlen(role_label(m, assistant_label)), NULL);
            int used = put_text(w, label, strlen(label), wd);
            free(label);
            wattrset(w, screen_attr(SA_MARK));
            char mark[96];
            snprintf(mark, sizeof mark, "%s%s%s%s", m->queued ? " (queued: sent when the reply ends)" : "",
                     m->streaming ? " …" : m->interrupted ? " [interrupted]" : "",
                     m->pinned ? " [pinned]" : "", m->out_of_context ? " [out of context]" : "");
            if (m->exchange > 0) {
                char num[16];
                snprintf(num, sizeof num, " #%d", m->exchange);
                used += put_text(w, num, strlen(num), wd - used);
            }
            if (m->n_versions > 1) { /* other versions: Alt-Left/Right, /branch */
                char ver[40];
                snprintf(ver, sizeof ver, " < %d/%d >", m->version, m->n_versions);
                used += put_text(w, ver, strlen(ver), wd - used);
            }
            put_text(w, mark, strlen(mark), wd - used);
            wattrset(w, A_NORMAL);
        } else if (l->kind == TRL_BODY && m->markdown) {
            put_md_line(w, &m->md, l->off, l->len, wd);
        } else if (l->kind == TRL_BODY) {
            int a = m->queued              ? (int)A_DIM
                    : m->role == TR_INFO ? screen_attr(SA_INFO)
                    : m->role == TR_ERROR ? screen_attr(SA_ERROR)
                                          : (int)A_NORMAL;
            wattrset(w, a);
            put_text(w, m->text.data + l->off, l->len, wd);
            wattrset(w, A_NORMAL);
        }
        if (l->kind == TRL_BODY && t->search)
            highlight_matches(w, t, first + (size_t)y, y, wd);
    }
    /* A scrolled view says so in its last row. */
    if (t->scroll > 0 && h > 0) {
        char buf[64];
        snprintf(buf, sizeof buf, " ↓ %zu more (End) ", t->scroll);
        int len = u8_width(buf, strlen(buf));
        if (len < wd) {
            wmove(w, h - 1, wd - len);
            wattrset(w, screen_attr(SA_STATUS));
            put_text(w, buf, strlen(buf), len);
            wattrset(w, A_NORMAL);
        }
    }
    wnoutrefresh(w);
}

/* s appended to buf (size bytes), cut where it ends */
static void cat(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 >= size)
        return;
    size_t k = strnlen(s, size - 1 - n);
    memcpy(buf + n, s, k);
    buf[n + k] = '\0';
}

/* Cut s (UTF-8, in a buffer of size bytes) to at most cols columns, ending
 * with an ellipsis when something was cut. */
static void cut_cols(char *s, size_t size, int cols)
{
    size_t len = strlen(s), i = 0;
    if (cols < 1 || u8_width(s, len) <= cols)
        return;
    int used = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = utf8_decode(s + i, len - i, &cp);
        int cw = k ? u8_cp_width(cp) : 1;
        if (!k || used + (cw > 0 ? cw : 0) > cols - 1)
            break;
        used += cw > 0 ? cw : 0;
        i += k;
    }
    if (i + 4 <= size)
        memcpy(s + i, "…", 4); /* with its NUL */
}

/* The status text for a width (pure): fills buf, returns the column where
 * the warning part starts (or -1). */
static int status_format(const struct chat_status *s, int width, char *buf, size_t size)
{
    char parts[9][160];
    int np = 0;
    /* where each part went (-1: not shown), for the order they give way */
    int at_template = -1, at_session = -1, at_attached = -1, at_ctx = -1, at_reuse = -1,
        at_speed = -1, at_format = -1;
    buf[0] = '\0';
    if (size == 0)
        return -1;
    if (s->notice && *s->notice) {
        snprintf(parts[np++], sizeof parts[0], "%s", s->notice);
    } else {
        snprintf(parts[np++], sizeof parts[0], "%s", s->model ? s->model : "no model");
        if (s->template_name)
            snprintf(parts[at_template = np++], sizeof parts[0], "%s", s->template_name);
        if (s->session)
            snprintf(parts[at_session = np++], sizeof parts[0], "%s", s->session);
        if (s->attached)
            snprintf(parts[at_attached = np++], sizeof parts[0], "+ %s", s->attached);
        if (s->format) { /* "format json", "format schema FILE": the file's name */
            const char *sp = strchr(s->format, ' ');
            const char *base = sp ? strrchr(sp + 1, '/') : NULL;
            snprintf(parts[at_format = np++], sizeof parts[0], "format %.*s%s%s",
                     (int)(sp ? (size_t)(sp - s->format) : strlen(s->format)), s->format,
                     sp ? " " : "", sp ? (base ? base + 1 : sp + 1) : "");
        }
    }
    if (s->n_ctx > 0)
        snprintf(parts[at_ctx = np++], sizeof parts[0], "ctx %d/%d", s->n_past, s->n_ctx);
    /* what the KV cache saved on the last turn (the words of /info) */
    if (!s->notice && s->reused + s->computed > 0)
        snprintf(parts[at_reuse = np++], sizeof parts[0], "reused %d, computed %d", s->reused,
                 s->computed);
    if (!s->notice && s->decode_tps > 0 && s->prefill_tps > 0)
        snprintf(parts[at_speed = np++], sizeof parts[0], "pp %.0f t/s  tg %.1f t/s",
                 s->prefill_tps, s->decode_tps);
    else if (!s->notice && s->decode_tps > 0)
        snprintf(parts[at_speed = np++], sizeof parts[0], "tg %.1f t/s", s->decode_tps);
    snprintf(parts[np++], sizeof parts[0], "%s", s->state ? s->state : "idle");
    /* The highlighted tail: a warning about the context. */
    const char *warning = s->warning;
    bool tail = warning != NULL;
    /* Drop middle parts until it fits; the state and the warning are kept
     * longest. */
    int keep[9];
    for (int i = 0; i < np; i++)
        keep[i] = 1;
    int warn_at = -1;
    for (int drop = 1; drop < np; drop++) {
        buf[0] = '\0';
        cat(buf, size, " ");
        bool firstp = true;
        for (int i = 0; i < np; i++) {
            if (!keep[i])
                continue;
            if (!firstp)
                cat(buf, size, " │ ");
            cat(buf, size, parts[i]);
            firstp = false;
        }
        cat(buf, size, " ");
        warn_at = -1;
        if (tail) {
            warn_at = u8_width(buf, strlen(buf));
            cat(buf, size, " ");
            cat(buf, size, warning);
            cat(buf, size, " ");
        }
        int over = u8_width(buf, strlen(buf)) - width;
        if (over <= 0)
            return warn_at;
        if (s->notice && *s->notice && keep[0] && s->warning) {
            /* a context warning outranks the end of a notice */
            int nw = u8_width(parts[0], strlen(parts[0]));
            if (nw - over >= 16) {
                cut_cols(parts[0], sizeof parts[0], nw - over);
                drop--;
                continue;
            }
        }
        if (tail && warn_at <= width) {
            /* shorten the warning before dropping more */
            char *d = strstr(buf, warning);
            if (d) {
                *d = '\0';
                cat(buf, size, "ctx full soon");
                cat(buf, size, " ");
                if (u8_width(buf, strlen(buf)) <= width)
                    return warn_at;
            }
        }
        /* the middle gives way: template, session, speeds, reuse, ctx, the
         * attachment, then the model (or the notice) */
        int victim = -1;
        const int order[] = {at_template, at_session, at_speed, at_reuse, at_ctx, at_attached,
                             at_format, 0};
        for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
            int v = order[k];
            if (v >= 0 && v < np - 1 && keep[v]) {
                victim = v;
                break;
            }
        }
        if (victim < 0)
            break;
        keep[victim] = 0;
    }
    return warn_at;
}

void draw_status(void *vwin, const struct chat_status *s)
{
    WINDOW *w = vwin;
    if (!w)
        return;
    int h, wd;
    getmaxyx(w, h, wd);
    if (h <= 0)
        return;
    char raw[1024];
    int warn_at = status_format(s, wd, raw, sizeof raw);
    char *text = sanitize_dup(raw, strlen(raw), NULL);
    int base = screen_attr(s->notice && s->notice_error ? SA_STATUS_WARN : SA_STATUS);
    wbkgdset(w, ' ' | (chtype)(base & ~A_CHARTEXT));
    werase(w);
    wmove(w, 0, 0);
    wattrset(w, base);
    /* Draw: the part before the warning, the warning highlighted. */
    size_t len = strlen(text);
    size_t split = len;
    if (warn_at >= 0) {
        /* find the byte offset of column warn_at */
        int cols = 0, cw;
        size_t i = 0;
        uint32_t cp;
        while (cols < warn_at && u8_next(text, len, &i, &cp, &cw))
            cols += cw > 0 ? cw : 0;
        split = i;
    }
    int used = put_text(w, text, split, wd);
    if (split < len) {
        wattrset(w, screen_attr(SA_STATUS_WARN));
        used += put_text(w, text + split, len - split, wd - used);
    }
    /* The state (last part) gets the busy colour while working. */
    if (s->busy && s->state) {
        const char *st = strstr(text, s->state);
        if (st && st < text + split) {
            int col = u8_width(text, (size_t)(st - text));
            int sw = u8_width(s->state, strlen(s->state));
            int a = screen_attr(SA_STATUS_BUSY);
            if (col + sw <= wd)
                mvwchgat(w, 0, col, sw, (attr_t)(a & ~A_COLOR), (short)PAIR_NUMBER(a), NULL);
        }
    }
    wattrset(w, A_NORMAL);
    free(text);
    wnoutrefresh(w);
}

void draw_sessions(void *vwin, char *const *names, size_t n, const char *current,
                   const struct session_list *l)
{
    int h, wd;
    WINDOW *w = erased(vwin, &h, &wd);
    if (!w)
        return;
    /* a left border column */
    for (int y = 0; y < h; y++)
        mvwaddch(w, y, 0, ACS_VLINE);
    wattrset(w, A_BOLD);
    char title[96];
    snprintf(title, sizeof title, "sessions%s%s", l->filter[0] || l->filtering ? " /" : "",
             l->filter);
    wmove(w, 0, 2);
    char *tt = sanitize_dup(title, strlen(title), NULL);
    put_text(w, tt, strlen(tt), wd - 3);
    free(tt);
    wattrset(w, A_NORMAL);
    size_t *kept = calloc(n + 1, sizeof *kept);
    size_t m = kept ? session_list_kept(l, names, n, kept) : 0;
    /* keep the chosen row in view */
    size_t rows = h > 2 ? (size_t)h - 2 : 1, top = l->focused && l->sel >= rows ? l->sel - rows + 1 : 0;
    for (size_t k = top; k < m && (int)(k - top) + 1 < h - (l->focused ? 1 : 0); k++) {
        const char *name = names[kept[k]];
        bool cur = current && strcmp(name, current) == 0;
        int a = screen_attr(cur ? SA_LIST_CURRENT : SA_LIST);
        if (l->focused && k == l->sel)
            a = A_REVERSE | A_BOLD;
        wattrset(w, a);
        wmove(w, (int)(k - top) + 1, 2);
        /* the name, cut with "…" where the list is narrower than it (the
         * status bar shows it whole when chosen), and its date at the right */
        char when[32], row[600];
        session_list_when(name, when, sizeof when);
        int room = wd - 3, ww = u8_width(when, strlen(when));
        bool dated = room >= ww + 2 + 4;
        char *t = sanitize_dup(name, strlen(name), NULL);
        snprintf(row, sizeof row, "%s", t);
        free(t);
        cut_cols(row, sizeof row, dated ? room - ww - 1 : room);
        put_text(w, row, strlen(row), room);
        if (dated) {
            wmove(w, (int)(k - top) + 1, wd - 1 - ww);
            put_text(w, when, strlen(when), ww);
        }
        wattrset(w, A_NORMAL);
    }
    if (l->focused && h > 2) {
        wattrset(w, screen_attr(SA_MARK));
        wmove(w, h - 1, 2);
        const char *keys = "↑↓ Enter r d / Esc";
        put_text(w, keys, strlen(keys), wd - 3);
        wattrset(w, A_NORMAL);
    }
    free(kept);
    wnoutrefresh(w);
}

void draw_tree(void *vwin, struct tree_view *tv, struct chat *c)
{
    int h, wd;
    WINDOW *w = erased(vwin, &h, &wd);
    if (!w)
        return;
    size_t n;
    struct session_tree_row *rows = chat_tree(c, &n);
    size_t at = tree_view_chosen(tv, rows, n);
    size_t view = h > 1 ? (size_t)h - 1 : 1;
    if (at < tv->top)
        tv->top = at;
    if (at >= tv->top + view)
        tv->top = at - view + 1;
    wattrset(w, A_BOLD);
    wmove(w, 0, 0);
    char title[160];
    snprintf(title, sizeof title, "tree: %zu message%s · * the path shown · ↑↓ choose · Enter shows "
                                  "that path · Esc closes",
             n, n == 1 ? "" : "s");
    put_text(w, title, strlen(title), wd);
    for (size_t i = tv->top; i < n && (int)(i - tv->top) + 1 < h; i++) {
        const struct session_tree_row *r = &rows[i];
        int a = r->on_path ? A_BOLD : A_NORMAL;
        if (i == at)
            a = A_REVERSE | (r->on_path ? A_BOLD : 0);
        wattrset(w, a);
        wmove(w, (int)(i - tv->top) + 1, 0);
        char head[96];
        tree_view_row_head(c, r, head, sizeof head);
        int used = put_text(w, r->on_path ? "* " : "  ", 2, wd);
        used += put_text(w, head, strlen(head), wd - used);
        /* the first line of the text */
        const char *t = r->m->content;
        size_t len = strcspn(t, "\n");
        char *clean = sanitize_dup(t, len, NULL);
        used += put_text(w, clean, strlen(clean), wd - used);
        free(clean);
        if (t[len] && used < wd)
            put_text(w, " …", strlen(" …"), wd - used);
        wattrset(w, A_NORMAL);
    }
    free(rows);
    wnoutrefresh(w);
}
