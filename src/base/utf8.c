/* utf8.c: strict UTF-8 checking (RFC 3629). */
#include "config.h"

#include "src/base/utf8.h"

#include <stdio.h>

#include <string.h>

#include "src/base/xalloc.h"

size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
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
