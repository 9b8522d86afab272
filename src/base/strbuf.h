/* strbuf.h: a growable, NUL-terminated byte buffer (templates, the UI's
 * sanitizer).  Allocation failure ends the program (xalloc.h). */
#ifndef ELMCHAT_SRC_STRBUF_H
#define ELMCHAT_SRC_STRBUF_H

#include <stddef.h>

/* Zero-initialise; owned: free with sbuf_fini (or keep data). */
struct sbuf {
    char *data; /* NUL terminated when non-NULL */
    size_t len, cap;
};
void sbuf_fini(struct sbuf *b);
/* Append n bytes; data is allocated even when n is 0. */
void sbuf_add(struct sbuf *b, const char *s, size_t n);

#endif
