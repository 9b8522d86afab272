/* markdown.h: a reply's markdown (md4c, GitHub dialect) laid out for a
 * width: display lines joined by '\n', each at most width columns, with
 * attribute spans over them.  Headings, emphasis, inline code, nested and
 * numbered lists, block quotes, links (text, then the URL dimmed), rules,
 * fenced code blocks (numbered "[N] lang" as src/conversation/code_blocks.c counts them,
 * framed, long lines broken, never re-flowed), GFM tables (aligned, or one "header: value" line per cell
 * when too wide).  Pure: no curses.  Any thread. */
#ifndef ELMCHAT_UI_MARKDOWN_H
#define ELMCHAT_UI_MARKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/base/strbuf.h"

enum md_attr {
    MD_A_BOLD = 1u << 0,
    MD_A_ITALIC = 1u << 1,
    MD_A_CODE = 1u << 2,      /* inline code */
    MD_A_CODEBLOCK = 1u << 3, /* a fenced or indented block's text */
    MD_A_HEADING = 1u << 4,
    MD_A_LINK = 1u << 5,      /* a link's text */
    MD_A_DIM = 1u << 6,       /* a link's URL, frames and rules */
    MD_A_STRIKE = 1u << 7,
    MD_A_MARKER = 1u << 8,    /* bullets, numbers, quote bars, "[N] lang" */
};

struct md_span {
    uint32_t off, len; /* bytes of md_out.text */
    uint16_t attr;     /* enum md_attr bits */
};

struct md_out {
    struct sbuf text;
    struct md_span *spans;
    size_t n_spans, cap_spans;
    size_t n_code; /* code blocks laid out ("[N]"; /copy N finds them: src/conversation/code_blocks.h) */
};

void md_out_init(struct md_out *o);
void md_out_fini(struct md_out *o);

/* Lay out src (n bytes of sanitized UTF-8: no controls but '\n') for width
 * columns (>= 8 is useful; less still terminates), replacing what out held.
 * A construct still open at the end renders as the text so far (md4c's
 * rules: an unclosed ** is literal). */
void md_render(const char *src, size_t n, int width, struct md_out *out);

#endif
