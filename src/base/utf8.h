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
/* Text from outside (a file, standard input) that must be UTF-8: false with
 * err = "NAME:LINE:COLUMN: not UTF-8 text (byte 0xNN): ..." at the first
 * bad byte. */
bool utf8_check_text(const char *name, const char *s, size_t len, char *err, size_t err_size);
/* Copy with each invalid byte replaced by U+FFFD (owned, NUL-terminated). */
char *utf8_sanitize(const char *s, size_t len);

#endif
