/* code_blocks.c: md4c's block callbacks, keeping only code blocks. */
#include "config.h"

#include "src/conversation/code_blocks.h"

#include <md4c.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "src/base/strbuf.h"
#include "src/base/xalloc.h"

struct finder {
    struct code_block *v;
    size_t n;
    bool in_code;
    struct sbuf text;
};

static int enter_block(MD_BLOCKTYPE type, void *detail, void *user)
{
    struct finder *f = user;
    if (type != MD_BLOCK_CODE)
        return 0;
    MD_BLOCK_CODE_DETAIL *d = detail;
    f->v = x_reallocarray(f->v, f->n + 1, sizeof *f->v);
    f->v[f->n].lang = x_strndup(d->lang.text ? d->lang.text : "", d->lang.size);
    f->v[f->n].text = NULL;
    f->n++;
    f->in_code = true;
    f->text.len = 0;
    sbuf_add(&f->text, "", 0);
    return 0;
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *user)
{
    (void)detail;
    struct finder *f = user;
    if (type == MD_BLOCK_CODE && f->in_code) {
        f->v[f->n - 1].text = x_strdup(f->text.data);
        f->in_code = false;
    }
    return 0;
}

static int no_span(MD_SPANTYPE type, void *detail, void *user)
{
    (void)type, (void)detail, (void)user;
    return 0;
}

static int text(MD_TEXTTYPE type, const MD_CHAR *s, MD_SIZE n, void *user)
{
    (void)type;
    struct finder *f = user;
    if (f->in_code)
        sbuf_add(&f->text, s, n);
    return 0;
}

size_t code_blocks_find(const char *md, size_t n, struct code_block **out)
{
    struct finder f = {0};
    MD_PARSER p = {
        .abi_version = 0,
        .flags = MD_DIALECT_GITHUB | MD_FLAG_NOHTML, /* as the chat view (ui/markdown.c) */
        .enter_block = enter_block,
        .leave_block = leave_block,
        .enter_span = no_span,
        .leave_span = no_span,
        .text = text,
    };
    md_parse(md, (MD_SIZE)n, &p, &f);
    if (f.in_code) /* an open fence at the end: what it holds so far */
        f.v[f.n - 1].text = x_strdup(f.text.data ? f.text.data : "");
    sbuf_fini(&f.text);
    *out = f.v;
    return f.n;
}

void code_blocks_free(struct code_block *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].lang);
        free(v[i].text);
    }
    free(v);
}
