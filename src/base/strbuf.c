/* strbuf.c: the growable byte buffer. */
#include "config.h"

#include "src/base/strbuf.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/xalloc.h"

void sbuf_fini(struct sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = x_realloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}
