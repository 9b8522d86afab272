/* utf8.h: UTF-8 validation for text that goes into YAML files.  Any thread. */
#ifndef ELMCHAT_SRC_UTF8_H
#define ELMCHAT_SRC_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid
 * (overlong, surrogate, > U+10FFFF, truncated). */
size_t utf8_seq_len(const unsigned char *s, size_t avail);
/* True when all len bytes are valid UTF-8; otherwise *bad (may be NULL) is
 * the offset of the first invalid byte. */
bool utf8_valid(const char *s, size_t len, size_t *bad);
/* Copy with each invalid byte replaced by U+FFFD (owned, NUL-terminated). */
char *utf8_sanitize(const char *s, size_t len);

#endif
