/* markdown.c: md4c's callbacks build the display lines.  Inline text of a
 * leaf block (paragraph, heading, list item text, table cell) collects in
 * `para` with attribute runs; when the block ends it is word-wrapped into
 * the columns the enclosing blocks leave (quote bars, list indents) and
 * emitted.  Code blocks are emitted line by line, broken at the edge but
 * never re-flowed; tables are measured whole, then drawn. */
#include "config.h"

#include "ui/markdown.h"

#include <md4c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/xalloc.h"
#include "ui/sanitize.h"

#define MAX_DEPTH 32

struct run {
    uint32_t off, len;
    uint16_t attr;
};

struct level {
    MD_BLOCKTYPE type;
    bool tight;      /* lists */
    unsigned next;   /* ordered lists: the next item's number */
    bool ordered;
    char marker[16]; /* list items: "• " or "12. ", printed on its first line */
    bool marked;     /* the marker was printed */
};

struct cell {
    char *text;
    bool head;
    MD_ALIGN align;
};

struct mdr {
    struct md_out *out;
    int width;
    struct level lv[MAX_DEPTH];
    int depth;
    /* inline text of the open leaf block */
    struct sbuf para;
    struct run *runs;
    size_t n_runs, cap_runs;
    int n_em, n_strong, n_code, n_link, n_del, n_heading;
    char *hrefs[8];
    int n_hrefs;
    bool emitted;  /* a line was emitted (blocks after it get a gap) */
    bool want_gap; /* a blank line before the next block's first line */
    /* code block */
    bool in_code;
    struct sbuf code;
    char lang[40];
    /* table */
    bool in_table;
    struct cell *cells;
    size_t n_cells, cap_cells;
    unsigned n_cols;
    size_t row_start; /* first cell of the current row */
};

/* ------------------------------------------------------------------ output */

static void add_span(struct md_out *o, size_t off, size_t len, uint16_t attr)
{
    if (!len || !attr)
        return;
    if (o->n_spans && o->spans[o->n_spans - 1].attr == attr &&
        o->spans[o->n_spans - 1].off + o->spans[o->n_spans - 1].len == off) {
        o->spans[o->n_spans - 1].len += (uint32_t)len;
        return;
    }
    if (o->n_spans == o->cap_spans) {
        o->cap_spans = o->cap_spans ? 2 * o->cap_spans : 32;
        o->spans = x_reallocarray(o->spans, o->cap_spans, sizeof *o->spans);
    }
    o->spans[o->n_spans++] = (struct md_span){(uint32_t)off, (uint32_t)len, attr};
}

static void out_text(struct mdr *r, const char *s, size_t n, uint16_t attr)
{
    add_span(r->out, r->out->text.len, n, attr);
    sbuf_add(&r->out->text, s, n);
}

/* The enclosing blocks' prefix of the next line: quote bars, list markers
 * (on an item's first line) or their indent.  Returns its columns. */
static int prefix_cols(const struct mdr *r)
{
    int cols = 0;
    for (int i = 0; i < r->depth; i++) {
        if (r->lv[i].type == MD_BLOCK_QUOTE)
            cols += 2;
        else if (r->lv[i].type == MD_BLOCK_LI)
            cols += u8_width(r->lv[i].marker, strlen(r->lv[i].marker));
    }
    return cols;
}

static void emit_prefix(struct mdr *r)
{
    for (int i = 0; i < r->depth; i++) {
        struct level *l = &r->lv[i];
        if (l->type == MD_BLOCK_QUOTE) {
            out_text(r, "│ ", strlen("│ "), MD_A_MARKER | MD_A_DIM);
            l->marked = true; /* its gap lines carry the bar from now on */
        } else if (l->type == MD_BLOCK_LI) {
            if (!l->marked) {
                out_text(r, l->marker, strlen(l->marker), MD_A_MARKER);
                l->marked = true;
            } else {
                int w = u8_width(l->marker, strlen(l->marker));
                for (int k = 0; k < w; k++)
                    out_text(r, " ", 1, 0);
            }
        }
    }
}

static void begin_line(struct mdr *r)
{
    if (r->emitted)
        sbuf_add(&r->out->text, "\n", 1);
    if (r->want_gap && r->emitted) {
        /* the gap line carries quote bars, no list marker */
        for (int i = 0; i < r->depth; i++)
            if (r->lv[i].type == MD_BLOCK_QUOTE && r->lv[i].marked)
                out_text(r, "│", strlen("│"), MD_A_MARKER | MD_A_DIM);
        sbuf_add(&r->out->text, "\n", 1);
    }
    r->want_gap = false;
    r->emitted = true;
    emit_prefix(r);
}

static int avail_cols(const struct mdr *r)
{
    int w = r->width - prefix_cols(r);
    return w < 4 ? 4 : w;
}

/* ------------------------------------------------------------------ inline */

static uint16_t cur_attr(const struct mdr *r)
{
    uint16_t a = 0;
    if (r->n_em)
        a |= MD_A_ITALIC;
    if (r->n_strong)
        a |= MD_A_BOLD;
    if (r->n_code)
        a |= MD_A_CODE;
    if (r->n_link)
        a |= MD_A_LINK;
    if (r->n_del)
        a |= MD_A_STRIKE;
    if (r->n_heading)
        a |= MD_A_HEADING | MD_A_BOLD;
    return a;
}

static void para_add(struct mdr *r, const char *s, size_t n, uint16_t attr)
{
    if (!n)
        return;
    if (r->n_runs && r->runs[r->n_runs - 1].attr == attr &&
        r->runs[r->n_runs - 1].off + r->runs[r->n_runs - 1].len == r->para.len) {
        r->runs[r->n_runs - 1].len += (uint32_t)n;
    } else {
        if (r->n_runs == r->cap_runs) {
            r->cap_runs = r->cap_runs ? 2 * r->cap_runs : 16;
            r->runs = x_reallocarray(r->runs, r->cap_runs, sizeof *r->runs);
        }
        r->runs[r->n_runs++] = (struct run){(uint32_t)r->para.len, (uint32_t)n, attr};
    }
    sbuf_add(&r->para, s, n);
}

static void para_reset(struct mdr *r)
{
    r->para.len = 0;
    if (r->para.data)
        r->para.data[0] = '\0';
    r->n_runs = 0;
}

/* para[a, b) onto the output, with its runs' attributes. */
static void emit_range(struct mdr *r, size_t a, size_t b)
{
    size_t base = r->out->text.len;
    sbuf_add(&r->out->text, r->para.data + a, b - a);
    for (size_t i = 0; i < r->n_runs; i++) {
        size_t s = r->runs[i].off, e = s + r->runs[i].len;
        if (e <= a || s >= b)
            continue;
        size_t lo = s > a ? s : a, hi = e < b ? e : b;
        add_span(r->out, base + lo - a, hi - lo, r->runs[i].attr);
    }
}

/* Word-wrap the paragraph into the available columns and emit it. */
static void flush_para(struct mdr *r)
{
    if (!r->para.len)
        return;
    const char *s = r->para.data;
    size_t n = r->para.len, i = 0;
    while (i <= n) {
        int avail = avail_cols(r);
        size_t start = i, last_space = (size_t)-1, j = i;
        int cols = 0;
        while (j < n && s[j] != '\n') {
            uint32_t cp;
            int w;
            size_t k = j;
            if (!u8_next(s, n, &k, &cp, &w))
                break;
            if (w < 0)
                w = 1;
            if (cols + w > avail && j > start)
                break;
            if (cp == ' ')
                last_space = j;
            cols += w;
            j = k;
        }
        size_t end = j, next = j;
        if (j < n && s[j] == '\n') {
            next = j + 1;
        } else if (j < n && last_space != (size_t)-1 && last_space > start) {
            end = last_space;
            next = last_space + 1;
        } else if (j >= n) {
            next = n + 1;
        }
        begin_line(r);
        emit_range(r, start, end);
        i = next;
        if (next > n)
            break;
    }
    para_reset(r);
}

/* ------------------------------------------------------------------ blocks */

static void emit_plain_line(struct mdr *r, const char *s, size_t n, uint16_t attr)
{
    begin_line(r);
    out_text(r, s, n, attr);
}

static void flush_code(struct mdr *r)
{
    struct md_out *o = r->out;
    o->n_code++;
    char head[80];
    int hn = snprintf(head, sizeof head, "[%zu]%s%s", o->n_code, r->lang[0] ? " " : "", r->lang);
    emit_plain_line(r, head, (size_t)hn, MD_A_MARKER);
    const char *s = r->code.data ? r->code.data : "";
    size_t n = r->code.len, i = 0;
    if (n && s[n - 1] == '\n')
        n--;
    while (i <= n) {
        size_t e = i;
        while (e < n && s[e] != '\n')
            e++;
        /* one source line: broken at the edge, never re-flowed */
        size_t a = i;
        do {
            int avail = avail_cols(r) - 2, cols = 0;
            size_t b = a;
            while (b < e) {
                uint32_t cp;
                int w;
                size_t k = b;
                if (!u8_next(s, e, &k, &cp, &w))
                    break;
                if (w < 0)
                    w = 1;
                if (cols + w > avail && b > a)
                    break;
                cols += w;
                b = k;
            }
            begin_line(r);
            out_text(r, a == i ? "│ " : "┆ ", strlen("│ "), MD_A_MARKER | MD_A_DIM);
            out_text(r, s + a, b - a, MD_A_CODEBLOCK);
            a = b;
        } while (a < e);
        i = e + 1;
    }
    r->code.len = 0;
    if (r->code.data)
        r->code.data[0] = '\0';
}

static void draw_rule(struct mdr *r)
{
    begin_line(r);
    int n = avail_cols(r);
    for (int i = 0; i < n; i++)
        out_text(r, "─", strlen("─"), MD_A_DIM);
}

static void pad(struct mdr *r, int n)
{
    for (int i = 0; i < n; i++)
        out_text(r, " ", 1, 0);
}

static void flush_table(struct mdr *r)
{
    unsigned nc = r->n_cols ? r->n_cols : 1;
    int *w = x_calloc(nc, sizeof *w);
    MD_ALIGN *al = x_calloc(nc, sizeof *al);
    for (size_t i = 0; i < r->n_cells; i++) {
        int cw = u8_width(r->cells[i].text, strlen(r->cells[i].text));
        unsigned c = (unsigned)(i % nc);
        if (cw > w[c])
            w[c] = cw;
        if (r->cells[i].head)
            al[c] = r->cells[i].align;
    }
    int total = 0;
    for (unsigned c = 0; c < nc; c++)
        total += w[c] + (c ? 3 : 0);
    size_t n_rows = (r->n_cells + nc - 1) / nc;
    if (total <= avail_cols(r)) {
        for (size_t row = 0; row < n_rows; row++) {
            begin_line(r);
            for (unsigned c = 0; c < nc; c++) {
                size_t i = row * nc + c;
                const char *t = i < r->n_cells ? r->cells[i].text : "";
                int tw = u8_width(t, strlen(t)), space = w[c] - tw;
                int left = al[c] == MD_ALIGN_RIGHT    ? space
                           : al[c] == MD_ALIGN_CENTER ? space / 2
                                                      : 0;
                if (c)
                    out_text(r, " │ ", strlen(" │ "), MD_A_DIM);
                pad(r, left);
                out_text(r, t, strlen(t), row == 0 ? MD_A_BOLD : 0);
                if (c + 1 < nc)
                    pad(r, space - left);
            }
            if (row == 0) {
                begin_line(r);
                for (unsigned c = 0; c < nc; c++) {
                    if (c)
                        out_text(r, "─┼─", strlen("─┼─"), MD_A_DIM);
                    for (int k = 0; k < w[c]; k++)
                        out_text(r, "─", strlen("─"), MD_A_DIM);
                }
            }
        }
    } else {
        /* too wide: each body row as "header: value" lines */
        for (size_t row = 1; row < n_rows; row++) {
            if (row > 1)
                r->want_gap = true;
            for (unsigned c = 0; c < nc; c++) {
                size_t i = row * nc + c;
                if (i >= r->n_cells)
                    break;
                const char *h = c < r->n_cells ? r->cells[c].text : "";
                para_add(r, h, strlen(h), MD_A_BOLD);
                para_add(r, ": ", 2, MD_A_BOLD);
                para_add(r, r->cells[i].text, strlen(r->cells[i].text), 0);
                flush_para(r);
            }
        }
    }
    for (size_t i = 0; i < r->n_cells; i++)
        free(r->cells[i].text);
    r->n_cells = 0;
    free(w);
    free(al);
}

static void push(struct mdr *r, MD_BLOCKTYPE t)
{
    if (r->depth < MAX_DEPTH) {
        memset(&r->lv[r->depth], 0, sizeof r->lv[0]);
        r->lv[r->depth].type = t;
    }
    r->depth++;
}

static void pop(struct mdr *r)
{
    if (r->depth > 0)
        r->depth--;
}

static struct level *top(struct mdr *r)
{
    return r->depth > 0 && r->depth <= MAX_DEPTH ? &r->lv[r->depth - 1] : NULL;
}

static bool in_tight_list(const struct mdr *r)
{
    for (int i = r->depth - 1; i >= 0 && i < MAX_DEPTH; i--)
        if (r->lv[i].type == MD_BLOCK_UL || r->lv[i].type == MD_BLOCK_OL)
            return r->lv[i].tight;
    return false;
}

static int enter_block(MD_BLOCKTYPE type, void *detail, void *user)
{
    struct mdr *r = user;
    if (!r->in_table)
        flush_para(r); /* a list item's text before a nested block */
    switch (type) {
    case MD_BLOCK_DOC:
        return 0;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL: {
        struct level *parent = top(r);
        if (!parent || parent->type != MD_BLOCK_LI)
            r->want_gap = r->emitted;
        push(r, type);
        struct level *l = top(r);
        if (l && type == MD_BLOCK_UL) {
            l->tight = ((MD_BLOCK_UL_DETAIL *)detail)->is_tight != 0;
        } else if (l) {
            l->tight = ((MD_BLOCK_OL_DETAIL *)detail)->is_tight != 0;
            l->ordered = true;
            l->next = ((MD_BLOCK_OL_DETAIL *)detail)->start;
        }
        return 0;
    }
    case MD_BLOCK_LI: {
        struct level *list = top(r);
        if (list && !list->tight && r->emitted)
            r->want_gap = true;
        char marker[16];
        if (list && list->ordered)
            snprintf(marker, sizeof marker, "%u. ", list->next++);
        else
            snprintf(marker, sizeof marker, "%s", r->depth > 2 ? "◦ " : "• ");
        push(r, type);
        if (top(r))
            snprintf(top(r)->marker, sizeof top(r)->marker, "%s", marker);
        return 0;
    }
    case MD_BLOCK_QUOTE:
        r->want_gap = r->emitted;
        push(r, type);
        return 0;
    case MD_BLOCK_CODE: {
        r->want_gap = r->emitted;
        MD_BLOCK_CODE_DETAIL *d = detail;
        size_t n = d->lang.size < sizeof r->lang - 1 ? d->lang.size : sizeof r->lang - 1;
        memcpy(r->lang, d->lang.text ? d->lang.text : "", n);
        r->lang[n] = '\0';
        r->in_code = true;
        return 0;
    }
    case MD_BLOCK_H:
        r->want_gap = r->emitted;
        r->n_heading++;
        return 0;
    case MD_BLOCK_HR:
        r->want_gap = r->emitted;
        draw_rule(r);
        return 0;
    case MD_BLOCK_P:
        if (!in_tight_list(r) || !(top(r) && top(r)->type == MD_BLOCK_LI))
            r->want_gap = r->emitted;
        return 0;
    case MD_BLOCK_TABLE:
        r->want_gap = r->emitted;
        r->in_table = true;
        r->n_cols = ((MD_BLOCK_TABLE_DETAIL *)detail)->col_count;
        return 0;
    case MD_BLOCK_TR:
        r->row_start = r->n_cells;
        return 0;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
        para_reset(r);
        return 0;
    default:
        return 0;
    }
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *user)
{
    struct mdr *r = user;
    switch (type) {
    case MD_BLOCK_CODE:
        flush_code(r);
        r->in_code = false;
        return 0;
    case MD_BLOCK_H:
        flush_para(r);
        r->n_heading--;
        return 0;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD: {
        if (r->n_cells == r->cap_cells) {
            r->cap_cells = r->cap_cells ? 2 * r->cap_cells : 16;
            r->cells = x_reallocarray(r->cells, r->cap_cells, sizeof *r->cells);
        }
        r->cells[r->n_cells++] = (struct cell){x_strdup(r->para.data ? r->para.data : ""),
                                               type == MD_BLOCK_TH,
                                               ((MD_BLOCK_TD_DETAIL *)detail)->align};
        para_reset(r);
        return 0;
    }
    case MD_BLOCK_TR:
        /* a short row gets empty cells: every row has n_cols */
        while (r->n_cols && r->n_cells - r->row_start < r->n_cols) {
            if (r->n_cells == r->cap_cells) {
                r->cap_cells = 2 * r->cap_cells + 16;
                r->cells = x_reallocarray(r->cells, r->cap_cells, sizeof *r->cells);
            }
            r->cells[r->n_cells++] = (struct cell){x_strdup(""), false, MD_ALIGN_DEFAULT};
        }
        return 0;
    case MD_BLOCK_TABLE:
        r->in_table = false;
        flush_table(r);
        return 0;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
    case MD_BLOCK_LI:
    case MD_BLOCK_QUOTE:
        flush_para(r);
        pop(r);
        return 0;
    default:
        if (!r->in_table)
            flush_para(r);
        return 0;
    }
}

static int enter_span(MD_SPANTYPE type, void *detail, void *user)
{
    struct mdr *r = user;
    switch (type) {
    case MD_SPAN_EM: r->n_em++; break;
    case MD_SPAN_STRONG: r->n_strong++; break;
    case MD_SPAN_CODE: r->n_code++; break;
    case MD_SPAN_DEL: r->n_del++; break;
    case MD_SPAN_A:
        r->n_link++;
        if (r->n_hrefs < 8) {
            MD_SPAN_A_DETAIL *d = detail;
            r->hrefs[r->n_hrefs] = x_strndup(d->href.text ? d->href.text : "", d->href.size);
        }
        r->n_hrefs++;
        break;
    default: break;
    }
    return 0;
}

static int leave_span(MD_SPANTYPE type, void *detail, void *user)
{
    (void)detail;
    struct mdr *r = user;
    switch (type) {
    case MD_SPAN_EM: r->n_em--; break;
    case MD_SPAN_STRONG: r->n_strong--; break;
    case MD_SPAN_CODE: r->n_code--; break;
    case MD_SPAN_DEL: r->n_del--; break;
    case MD_SPAN_A:
        r->n_link--;
        r->n_hrefs--;
        if (r->n_hrefs < 8) {
            char *h = r->hrefs[r->n_hrefs];
            /* the URL, dimmed, unless the text is the URL itself */
            size_t hl = strlen(h);
            if (hl && (r->para.len < hl || memcmp(r->para.data + r->para.len - hl, h, hl) != 0)) {
                para_add(r, " (", 2, MD_A_DIM);
                para_add(r, h, hl, MD_A_DIM);
                para_add(r, ")", 1, MD_A_DIM);
            }
            free(h);
        }
        break;
    default: break;
    }
    return 0;
}

static int text_cb(MD_TEXTTYPE type, const MD_CHAR *s, MD_SIZE n, void *user)
{
    struct mdr *r = user;
    if (r->in_code) {
        sbuf_add(&r->code, s, n);
        return 0;
    }
    switch (type) {
    case MD_TEXT_BR:
        para_add(r, "\n", 1, 0);
        break;
    case MD_TEXT_SOFTBR:
        para_add(r, " ", 1, cur_attr(r));
        break;
    case MD_TEXT_NULLCHAR:
        para_add(r, "\xEF\xBF\xBD", 3, cur_attr(r));
        break;
    default:
        para_add(r, s, n, cur_attr(r));
        break;
    }
    return 0;
}

void md_out_init(struct md_out *o)
{
    memset(o, 0, sizeof *o);
}

void md_out_fini(struct md_out *o)
{
    free(o->spans);
    sbuf_fini(&o->text);
    memset(o, 0, sizeof *o);
}

void md_render(const char *src, size_t n, int width, struct md_out *out)
{
    out->n_code = 0;
    out->n_spans = 0;
    out->text.len = 0;
    sbuf_add(&out->text, "", 0);
    out->text.data[0] = '\0';
    struct mdr r;
    memset(&r, 0, sizeof r);
    r.out = out;
    r.width = width < 1 ? 1 : width;
    MD_PARSER p = {
        .abi_version = 0,
        .flags = MD_DIALECT_GITHUB | MD_FLAG_NOHTML,
        .enter_block = enter_block,
        .leave_block = leave_block,
        .enter_span = enter_span,
        .leave_span = leave_span,
        .text = text_cb,
    };
    if (md_parse(src, (MD_SIZE)n, &p, &r) != 0) {
        /* not expected from md4c; show the text as it is */
        out->text.len = 0;
        out->n_spans = 0;
        sbuf_add(&out->text, src, n);
    }
    flush_para(&r);
    for (int i = 0; i < r.n_hrefs && i < 8; i++)
        free(r.hrefs[i]);
    for (size_t i = 0; i < r.n_cells; i++)
        free(r.cells[i].text);
    free(r.cells);
    free(r.runs);
    sbuf_fini(&r.para);
    sbuf_fini(&r.code);
}
