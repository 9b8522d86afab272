/* utf8.h: UTF-8 decoding and validation (RFC 3629): the one decoder of
 * src/, ui/ and cli/ (the engine has its own, engine/tokenizer/bpe.c: it
 * includes nothing from here).  Any thread. */
#ifndef ELMCHAT_SRC_UTF8_H
#define ELMCHAT_SRC_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT 0xFFFDu

/* Decode the sequence at s (n > 0 bytes available).  Returns the bytes used
 * (1..4) and sets *cp; an invalid or overlong sequence, a surrogate or a
 * value above U+10FFFF uses 1 byte and gives UTF8_REPLACEMENT.  When the
 * bytes are a valid but incomplete prefix, returns 0 (need more input). */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Encode cp (<= U+10FFFF) into out; returns 1..4. */
size_t utf8_encode(uint32_t cp, char out[4]);

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
