/* chat_attach.c: /read FILE [LINES], a text file attached to the next
 * message (attachment.h).  Its tokens are counted when it is read, against
 * the most the context can give a turn (everything but the system prompt
 * and the reply's reserve), so that a file too large is refused with its
 * size in tokens and the number of first lines that would fit. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/conversation/attachment.h"
#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/base/xalloc.h"

/* Sentencepiece pieces are at most 16 bytes: a text has at least len / 16
 * tokens, so a file that long need not be encoded to be refused. */
#define MAX_PIECE_BYTES 16

static size_t count_tokens(const struct chat *c, const char *text, size_t len)
{
    int32_t *ids = NULL;
    size_t n = 0;
    if (elm_tokenize(c->model.tok, text, len, false, &ids, &n) != ELM_OK)
        n = len; /* cannot happen for valid UTF-8; count it as too many */
    free(ids);
    return n;
}

/* The most tokens a turn can hold once old turns are dropped. */
static size_t turn_room(const struct chat *c, const struct conv *v)
{
    long room = (long)v->cv.n_ctx - (long)v->cv.system_end - chat_reply_reserve(c) - 16;
    return room > 0 ? (size_t)room : 0;
}

/* The first lines of a that fit in room tokens: their count (0: none). */
static size_t lines_that_fit(const struct chat *c, const struct attachment *a, size_t room,
                             size_t *n_tokens)
{
    /* offsets of line ends, then a binary search on the line count */
    size_t lo = 0, hi = a->n_lines;
    *n_tokens = 0;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2, end = 0, seen = 0;
        while (end < a->len && seen < mid) {
            if (a->text[end] == '\n')
                seen++;
            if (seen < mid)
                end++;
        }
        size_t t = end / MAX_PIECE_BYTES > room ? room + 1 : count_tokens(c, a->text, end);
        if (t <= room) {
            lo = mid;
            *n_tokens = t;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

/* "FILE 120": the file and a line count, unless "FILE 120" is itself a
 * file. */
static void split_lines_arg(const char *arg, char *path, size_t size, size_t *max_lines)
{
    *max_lines = 0;
    snprintf(path, size, "%s", arg);
    struct stat st;
    if (stat(path, &st) == 0)
        return;
    char *sp = strrchr(path, ' ');
    if (!sp || !sp[1])
        return;
    char *end;
    errno = 0;
    long n = strtol(sp + 1, &end, 10);
    if (errno || *end || n < 1)
        return;
    *sp = '\0';
    *max_lines = (size_t)n;
}

void chat_read_command(struct chat *c, struct conv *v, const char *arg)
{
    if (strcmp(arg, "off") == 0) {
        if (c->attach.name) {
            chat_notice(c, false, "%s is no longer attached", c->attach.name);
            attachment_fini(&c->attach);
            chat_changed(c);
        } else {
            chat_notice(c, false, "no file is attached");
        }
        return;
    }
    if (!c->model.tok) {
        chat_notice(c, true, "wait for the model: its tokenizer counts the file's tokens");
        return;
    }
    char path[4096], err[1024];
    size_t max_lines;
    split_lines_arg(arg, path, sizeof path, &max_lines);
    struct attachment a;
    if (attachment_load(path, max_lines, &a, err, sizeof err) != 0) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_attach_take(c, v, &a, path);
}

bool chat_attach_take(struct chat *c, struct conv *v, struct attachment *a, const char *path)
{
    size_t room = turn_room(c, v);
    size_t n_tokens = a->len / MAX_PIECE_BYTES > room ? room + 1 : count_tokens(c, a->text, a->len);
    char size[32];
    attachment_size_text(a->len, size, sizeof size);
    if (n_tokens > room) {
        size_t fit_tokens, fit = lines_that_fit(c, a, room, &fit_tokens);
        char count[64], err[1024];
        if (n_tokens == room + 1 && a->len / MAX_PIECE_BYTES > room)
            snprintf(count, sizeof count, "at least %zu tokens", a->len / MAX_PIECE_BYTES);
        else
            snprintf(count, sizeof count, "%zu tokens", n_tokens);
        struct attachment cut;
        if (fit > 0 && !path &&
            attachment_from_text(a->name, a->text, a->len, fit, &cut, err, sizeof err) == 0) {
            /* no file to name in a hint: the lines that fit, the cut said */
            cut.n_lines_total = a->n_lines_total;
            attachment_fini(a);
            *a = cut;
            n_tokens = fit_tokens;
            attachment_size_text(a->len, size, sizeof size);
        } else {
            if (fit > 0)
                chat_notice(c, true, "%s: %s, %s; a message has room for %zu: /read %s %zu takes "
                                     "its first %zu lines (%zu tokens)",
                            a->name, size, count, room, path, fit, fit, fit_tokens);
            else
                chat_notice(c, true, "%s: %s, %s; a message has room for %zu, not even its first "
                                     "line fits",
                            a->name, size, count, room);
            attachment_fini(a);
            return false;
        }
    }
    attachment_fini(&c->attach);
    c->attach = *a;
    memset(a, 0, sizeof *a);
    c->attach_tokens = n_tokens;
    const struct attachment *t = &c->attach;
    size_t free_now = v->cv.n_ctx > (int)v->cv.tokens.n ? (size_t)v->cv.n_ctx - v->cv.tokens.n : 0;
    char cut[96] = "";
    if (t->n_lines < t->n_lines_total)
        snprintf(cut, sizeof cut, ", its first %zu of %zu lines%s", t->n_lines,
                 t->n_lines_total, path ? "" : ": cut to fit");
    chat_notice(c, false, "attached %s (%s%s, %zu tokens) to your next message%s · /read off "
                          "drops it",
                t->name, size, cut, n_tokens,
                n_tokens + (size_t)chat_reply_reserve(c) > free_now
                    ? ": sending it drops older turns from the context"
                    : "");
    chat_changed(c);
    return true;
}

char *chat_attach_to(struct chat *c, const char *text)
{
    if (!c->attach.name)
        return NULL;
    return attachment_compose(text, &c->attach);
}

void chat_attach_sent(struct chat *c)
{
    attachment_fini(&c->attach);
    c->attach_tokens = 0;
}
