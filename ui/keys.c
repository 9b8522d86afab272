/* keys.c: cutting a read into keys, the Esc-or-Alt-prefix decision and the
 * binding lookup (keys.h). */
#include "config.h"

#include "ui/keys.h"

#include <poll.h>
#include <string.h>

/* The man page's Alt-prefix timeout. */
#define ALT_PREFIX_MS 30

size_t key_length(const char *buf, size_t n)
{
    if (n >= 3 && buf[0] == '\033' && buf[1] == 'O')
        return 3;
    if (n >= 2 && buf[0] == '\033' && buf[1] == '[') {
        size_t i = 2;
        while (i < n && !((unsigned char)buf[i] >= 0x40 && (unsigned char)buf[i] <= 0x7e))
            i++;
        return i < n ? i + 1 : n;
    }
    if (n >= 2 && buf[0] == '\033')
        return 2;
    unsigned char c = (unsigned char)buf[0];
    size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return k <= n ? k : n;
}

struct key key_at(struct key_read *r, size_t off)
{
    struct key k = {r->buf + off, key_length(r->buf + off, r->len - off), r};
    return k;
}

enum key_esc key_read_tail(struct key_read *r)
{
    const char *b = r->buf;
    size_t n = r->len - r->from;
    if (n == 0 || b[r->len - 1] != '\033' || (n >= 2 && b[r->len - 2] == '\033'))
        return KEY_ESC_NONE;
    /* The one wait: whatever follows within the timeout stays unread (the
     * next read brings it), so a later question about this read gets the
     * same answer. */
    if (!r->waited) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        r->waited = poll(&p, 1, ALT_PREFIX_MS) == 0 ? 2 : 1;
    }
    return r->waited == 2 ? KEY_ESC_ALONE : KEY_ESC_PREFIX;
}

enum key_esc key_escape(const struct key *k)
{
    const struct key_read *r = k->read;
    if (k->len != 1 || k->bytes[0] != '\033' || k->bytes + 1 != r->buf + r->len)
        return KEY_ESC_NONE;
    return key_read_tail(k->read) == KEY_ESC_ALONE ? KEY_ESC_ALONE : KEY_ESC_PREFIX;
}

const struct key_binding *key_binding_find(const struct key_binding *table, size_t n,
                                           enum key_mode mode, const struct key *k,
                                           struct tui *t)
{
    for (size_t i = 0; i < n; i++) {
        const struct key_binding *b = &table[i];
        if (b->mode != mode)
            continue;
        if (b->seq && (strlen(b->seq) != k->len || memcmp(b->seq, k->bytes, k->len) != 0))
            continue;
        if (b->when && !b->when(t))
            continue;
        return b;
    }
    return NULL;
}
