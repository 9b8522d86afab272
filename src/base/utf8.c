/* utf8.c: strict UTF-8 (RFC 3629): the one decoder above the engine. */
#include "config.h"

#include "src/base/utf8.h"

#include <stdio.h>

#include <string.h>

#include "src/base/xalloc.h"

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = UTF8_REPLACEMENT;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if (i >= n)
            return 0; /* a valid prefix so far: wait for the rest */
        if ((p[i] & 0xC0) != 0x80) {
            *cp = UTF8_REPLACEMENT;
            return 1;
        }
        v = (v << 6) | (p[i] & 0x3F);
        /* Reject overlongs and out-of-range values as early as the second
         * byte, so that an impossible prefix never waits for more input. */
        if (i == 1 && ((len == 3 && c == 0xE0 && p[1] < 0xA0) ||
                       (len == 3 && c == 0xED && p[1] > 0x9F) ||
                       (len == 4 && c == 0xF0 && p[1] < 0x90) ||
                       (len == 4 && c == 0xF4 && p[1] > 0x8F))) {
            *cp = UTF8_REPLACEMENT;
            return 1;
        }
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = UTF8_REPLACEMENT;
        return 1;
    }
    *cp = v;
    return len;
}

size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid
 * (overlong, surrogate, > U+10FFFF, truncated). */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    uint32_t cp;
    size_t n = utf8_decode((const char *)s, avail, &cp);
    /* a valid prefix waits for more (0); a bad byte is 1 byte of U+FFFD */
    return n == 1 && s[0] >= 0x80 ? 0 : n;
}

bool utf8_valid(const char *s, size_t len, size_t *bad)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq_len(p + i, len - i);
        if (!n) {
            if (bad)
                *bad = i;
            return false;
        }
        i += n;
    }
    return true;
}

char *utf8_sanitize(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = x_malloc(len * 3 + 1); /* each bad byte may become 3 */
    size_t o = 0, i = 0;
    while (i < len) {
        size_t n = utf8_seq_len(p + i, len - i);
        if (n) {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

bool utf8_check_text(const char *name, const char *s, size_t len, char *err, size_t err_size)
{
    size_t bad;
    if (utf8_valid(s, len, &bad))
        return true;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < bad; i++) {
        if (s[i] == '\n')
            line++, col = 1;
        else if (((unsigned char)s[i] & 0xC0) != 0x80)
            col++;
    }
    snprintf(err, err_size, "%s:%zu:%zu: not UTF-8 text (byte 0x%02x): convert it first, e.g. "
                            "iconv -f latin1 -t utf-8",
             name, line, col, (unsigned char)s[bad]);
    return false;
}
