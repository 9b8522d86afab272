/* template_impl.h: what the template files share (src/template*.c only):
 * the split of a template string into text and placeholders. */
#ifndef ELMCHAT_SRC_TEMPLATE_IMPL_H
#define ELMCHAT_SRC_TEMPLATE_IMPL_H

#include <stddef.h>

#include "src/base/strbuf.h"

enum seg { SEG_TEXT, SEG_BOS, SEG_EOS, SEG_CONTENT };

/* Receives the pieces of a template string in order. */
struct seg_sink {
    void (*fn)(struct seg_sink *sink, enum seg kind, const char *text, size_t len);
};

/* Split s into text and placeholders.  Returns NULL when s is well formed,
 * else a pointer to the offending brace (and *why says what is wrong). */
const char *tpl_scan(const char *s, struct seg_sink *sink, const char **why);

/* Counts placeholders, for validation. */
struct count_sink {
    struct seg_sink base;
    int n[4];
};
void tpl_count_fn(struct seg_sink *sink, enum seg kind, const char *text, size_t len);

/* Append s[0..n) to b with the YAML-level escapes of a turn string undone. */
void tpl_add_unescaped(struct sbuf *b, const char *s, size_t n);

#endif
