/* stop_strings.c: the text held back while it may be the start of a stop
 * string (stop_strings.h). */
#include "config.h"

#include "engine/inference/stop_strings.h"

#include <stdlib.h>
#include <string.h>

bool holdback_add(struct holdback *h, const char *s, size_t len)
{
    if (h->n + len + 1 > h->cap) {
        size_t cap = (h->n + len + 1) * 2;
        char *p = realloc(h->buf, cap);
        if (!p)
            return false;
        h->buf = p;
        h->cap = cap;
    }
    memcpy(h->buf + h->n, s, len);
    h->n += len;
    h->buf[h->n] = '\0';
    return true;
}

void holdback_drop(struct holdback *h, size_t n)
{
    memmove(h->buf, h->buf + n, h->n - n);
    h->n -= n;
    h->buf[h->n] = '\0';
}

/* How much of the held text is final: up to the first full stop string
 * (*hit set), else up to the first suffix that begins a stop string. */
size_t holdback_final(const struct holdback *h, const char *const *stops, int n_stops,
                      const char **hit)
{
    size_t final = h->n;
    *hit = NULL;
    for (int i = 0; i < n_stops; i++) {
        const char *s = stops[i];
        size_t sl = strlen(s);
        if (sl == 0)
            continue;
        const char *at = strstr(h->buf, s);
        if (at && (size_t)(at - h->buf) < final) {
            final = (size_t)(at - h->buf);
            *hit = s;
        }
    }
    if (*hit)
        return final;
    for (int i = 0; i < n_stops; i++) {
        const char *s = stops[i];
        size_t sl = strlen(s);
        for (size_t k = sl > 0 ? sl - 1 : 0; k > 0; k--) {
            if (k <= h->n && memcmp(h->buf + h->n - k, s, k) == 0) {
                if (h->n - k < final)
                    final = h->n - k;
                break;
            }
        }
    }
    return final;
}
