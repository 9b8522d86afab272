/* sanitize.h: display widths (decoding: src/base/utf8.h), and the filter that makes
 * model (or any untrusted) text safe to draw.  Pure functions: no curses, no
 * global state except the C library's LC_CTYPE (wcwidth).  Any thread. */
#ifndef ELMCHAT_UI_SANITIZE_H
#define ELMCHAT_UI_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "src/base/strbuf.h" /* struct sbuf */
#include "src/base/utf8.h"    /* utf8_decode, UTF8_REPLACEMENT */

/* Display columns of one code point: 0 (combining), 1 or 2; -1 for a
 * control or anything the terminal cannot be trusted to draw. */
int u8_cp_width(uint32_t cp);
/* Step over the code point at s[*i] (of n bytes): *cp, its columns *cols
 * (u8_cp_width), *i moved past it.  False at the end or before an
 * incomplete sequence (nothing moved). */
bool u8_next(const char *s, size_t n, size_t *i, uint32_t *cp, int *cols);
/* Columns of a sanitized (valid, control-free except '\n') string. */
int u8_width(const char *s, size_t n);


/* Filter n bytes of untrusted text into out (appended), so that what is
 * drawn is valid UTF-8 with no C0/C1 control other than '\n':
 *  - CSI (ESC [ ... final, or U+009B ...), OSC/DCS/APC/PM/SOS strings (up to
 *    BEL or ST) and two-byte ESC sequences are removed whole;
 *  - '\t' becomes spaces to the next multiple of 4 columns of the line;
 *    '\r' is dropped; any other control, an invalid sequence or a code point
 *    without a sane width becomes U+FFFD.
 * final: the text is complete; otherwise an incomplete UTF-8 sequence or
 * escape sequence at the end is left out (it may complete later).  Returns
 * the number of input bytes consumed (n when final). */
size_t sanitize_append(struct sbuf *out, const char *s, size_t n, bool final);
/* Convenience: a new NUL-terminated sanitized copy (owned, free()). */
char *sanitize_dup(const char *s, size_t n, size_t *out_len);

#endif
