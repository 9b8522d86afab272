/* sanitize.c: UTF-8 decoding, widths, and the display filter for untrusted
 * text (model output, pasted text, file names).  Nothing that goes through
 * sanitize_append can move the cursor or change the terminal's state. */
#include "config.h"

#include "ui/sanitize.h"

#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "src/base/utf8.h"

int u8_cp_width(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
        return -1;
    if (cp == 0x2028 || cp == 0x2029) /* line/paragraph separators move the cursor in some terminals */
        return -1;
    int w = wcwidth((wchar_t)cp);
    if (w < 0 || w > 2)
        return -1;
    return w;
}

bool u8_next(const char *s, size_t n, size_t *i, uint32_t *cp, int *cols)
{
    if (*i >= n)
        return false;
    size_t k = utf8_decode(s + *i, n - *i, cp);
    if (k == 0)
        return false;
    *cols = u8_cp_width(*cp);
    *i += k;
    return true;
}

int u8_width(const char *s, size_t n)
{
    int cols = 0, w;
    size_t i = 0;
    uint32_t cp;
    while (u8_next(s, n, &i, &cp, &w))
        cols += w > 0 ? w : 0;
    return cols;
}

static void add_cp(struct sbuf *out, uint32_t cp)
{
    char tmp[4];
    sbuf_add(out, tmp, utf8_encode(cp, tmp));
}

/* Column of the end of out's last line (for tab stops). */
static int last_line_width(const struct sbuf *out)
{
    if (!out->len)
        return 0;
    size_t start = out->len; /* after the last '\n' (memrchr is a GNU extension) */
    while (start > 0 && out->data[start - 1] != '\n')
        start--;
    return u8_width(out->data + start, out->len - start);
}

/* Escape sequences longer than this are dropped even when unfinished. */
#define MAX_PENDING_ESC 256

enum esc_result { ESC_DONE, ESC_INCOMPLETE };

/* Skip the body of an escape sequence.  s[i] is the first byte after the
 * introducer: kind 'C' (CSI), 'S' (a string: OSC, DCS, APC, PM, SOS).  Sets
 * *end to the index after the sequence. */
static enum esc_result skip_esc_body(const char *s, size_t n, size_t i, int kind, size_t *end)
{
    const unsigned char *p = (const unsigned char *)s;
    if (kind == 'C') {
        /* parameters 0x30-0x3F, intermediates 0x20-0x2F, final 0x40-0x7E;
         * anything else ends it early (and is handled as text). */
        while (i < n && p[i] >= 0x20 && p[i] <= 0x3F)
            i++;
        if (i >= n)
            return ESC_INCOMPLETE;
        if (p[i] >= 0x40 && p[i] <= 0x7E)
            i++;
        *end = i;
        return ESC_DONE;
    }
    /* String: ends with BEL, ESC \, or the C1 ST (U+009C). */
    while (i < n) {
        if (p[i] == 0x07) {
            *end = i + 1;
            return ESC_DONE;
        }
        if (p[i] == 0x1B) {
            if (i + 1 >= n)
                return ESC_INCOMPLETE;
            *end = i + (p[i + 1] == '\\' ? 2 : 1);
            return ESC_DONE;
        }
        if (p[i] == 0xC2 && i + 1 < n && p[i + 1] == 0x9C) {
            *end = i + 2;
            return ESC_DONE;
        }
        i++;
    }
    return ESC_INCOMPLETE;
}

size_t sanitize_append(struct sbuf *out, const char *s, size_t n, bool final)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    if (!out->data)
        sbuf_add(out, "", 0);
    while (i < n) {
        unsigned c = p[i];
        if (c == '\n') {
            sbuf_add(out, "\n", 1);
            i++;
            continue;
        }
        if (c == '\r') {
            i++;
            continue;
        }
        if (c == '\t') {
            int col = last_line_width(out);
            int pad = 4 - col % 4;
            sbuf_add(out, "    ", (size_t)pad);
            i++;
            continue;
        }
        if (c == 0x1B) {
            size_t end = i + 1;
            enum esc_result r = ESC_DONE;
            if (i + 1 >= n) {
                r = ESC_INCOMPLETE;
            } else {
                unsigned d = p[i + 1];
                if (d == '[')
                    r = skip_esc_body(s, n, i + 2, 'C', &end);
                else if (d == ']' || d == 'P' || d == '_' || d == '^' || d == 'X')
                    r = skip_esc_body(s, n, i + 2, 'S', &end);
                else if (d >= 0x20 && d <= 0x2F) {
                    /* ESC intermediates final (e.g. charset designation) */
                    size_t j = i + 1;
                    while (j < n && p[j] >= 0x20 && p[j] <= 0x2F)
                        j++;
                    if (j >= n)
                        r = ESC_INCOMPLETE;
                    else
                        end = j + (p[j] >= 0x30 && p[j] <= 0x7E ? 1 : 0);
                } else if (d >= 0x30 && d <= 0x7E)
                    end = i + 2;
            }
            if (r == ESC_INCOMPLETE) {
                if (!final && n - i < MAX_PENDING_ESC)
                    return i;
                end = n; /* unfinished at the end of the text: drop the rest */
            }
            i = end;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        if (k == 0) {
            if (!final)
                return i;
            cp = UTF8_REPLACEMENT;
            k = 1;
        }
        if (cp == 0x9B || cp == 0x9D || cp == 0x90 || cp == 0x9F || cp == 0x9E || cp == 0x98) {
            /* C1 introducers: drop the whole sequence, like their ESC forms */
            size_t end;
            enum esc_result r = skip_esc_body(s, n, i + k, cp == 0x9B ? 'C' : 'S', &end);
            if (r == ESC_INCOMPLETE) {
                if (!final && n - i < MAX_PENDING_ESC)
                    return i;
                end = n;
            }
            i = end;
            continue;
        }
        if (u8_cp_width(cp) < 0)
            cp = UTF8_REPLACEMENT;
        add_cp(out, cp);
        i += k;
    }
    return n;
}

char *sanitize_dup(const char *s, size_t n, size_t *out_len)
{
    struct sbuf b = {0};
    sanitize_append(&b, s, n, true);
    if (!b.data)
        sbuf_add(&b, "", 0);
    if (out_len)
        *out_len = b.len;
    return b.data;
}
