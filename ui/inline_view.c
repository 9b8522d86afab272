/* inline_view.c: the controller's notifications as lines of text (see
 * inline_view.h).  Nothing written is ever taken back: a reply rendered as
 * markdown is printed one finished block at a time (a paragraph re-flows
 * until its blank line; a fenced code block is not cut), the rest when the
 * reply ends; as written, it streams as it comes (a screen reader gets
 * whole lines). */
#include "config.h"

#include "ui/inline_view.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/base/xalloc.h"
#include "src/conversation/attachment.h"
#include "src/template/template.h"
#include "ui/sanitize.h"

#define SGR_RESET "\033[0m"
#define SGR_DIM "\033[2m"
#define SGR_BOLD "\033[1m"

/* Do out and info end up on the same terminal (one cursor)? */
static bool shared(const struct inline_view *v)
{
    return v->out == v->info || (isatty(fileno(v->out)) && isatty(fileno(v->info)));
}

static void out_write(struct inline_view *v, const char *s, size_t n)
{
    if (!n)
        return;
    fwrite(s, 1, n, v->out);
    v->out_midline = s[n - 1] != '\n';
}

/* Before a line on info: end the reply's open line. */
static void info_begin(struct inline_view *v)
{
    if (v->out_midline && shared(v)) {
        out_write(v, "\n", 1);
        fflush(v->out);
    }
}

static void info_line(struct inline_view *v, const char *sgr, const char *text)
{
    info_begin(v);
    char *clean = sanitize_dup(text, strlen(text), NULL);
    if (v->color && sgr)
        fprintf(v->info, "%s%s%s\n", sgr, clean, SGR_RESET);
    else
        fprintf(v->info, "%s\n", clean);
    free(clean);
    fflush(v->info);
}

void inline_view_say(struct inline_view *v, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    info_line(v, SGR_DIM, buf);
}

/* ------------------------------------------------------------- markdown */

static const char *sgr_of(uint16_t attr)
{
    if (attr & (MD_A_BOLD | MD_A_HEADING))
        return SGR_BOLD;
    if (attr & MD_A_ITALIC)
        return "\033[3m";
    if (attr & (MD_A_DIM | MD_A_MARKER))
        return SGR_DIM;
    if (attr & (MD_A_LINK | MD_A_CODE))
        return "\033[4m";
    return NULL;
}

/* Bytes [a, b) of the rendered text, with its spans' attributes. */
static void print_md_range(struct inline_view *v, size_t a, size_t b)
{
    const struct md_out *o = &v->md;
    size_t pos = a;
    for (size_t i = 0; v->color && i < o->n_spans && pos < b; i++) {
        const struct md_span *s = &o->spans[i];
        size_t sa = s->off, sb = (size_t)s->off + s->len;
        const char *sgr = sgr_of(s->attr);
        if (sb <= pos || sa >= b || !sgr)
            continue;
        if (sa > pos)
            out_write(v, o->text.data + pos, sa - pos);
        size_t from = sa > pos ? sa : pos, to = sb < b ? sb : b;
        fputs(sgr, v->out);
        out_write(v, o->text.data + from, to - from);
        fputs(SGR_RESET, v->out);
        pos = to;
    }
    if (pos < b)
        out_write(v, o->text.data + pos, b - pos);
}

/* Print the display lines of v->md from line v->md_lines on. */
static void print_md_lines(struct inline_view *v)
{
    const char *t = v->md.text.data ? v->md.text.data : "";
    size_t n = v->md.text.len, line = 0, a = 0;
    while (a <= n && n > 0) {
        const char *nl = memchr(t + a, '\n', n - a);
        size_t b = nl ? (size_t)(nl - t) : n;
        if (line >= v->md_lines) {
            print_md_range(v, a, b);
            out_write(v, "\n", 1);
            v->md_lines = line + 1;
        }
        line++;
        if (!nl)
            break;
        a = b + 1;
    }
}

/* The end of the last finished block of text: after a blank line outside
 * a fenced code block (0: none yet). */
static size_t stable_end(const char *s, size_t n)
{
    size_t end = 0, i = 0;
    bool fence = false;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        if (!nl)
            break;
        size_t e = (size_t)(nl - s);
        size_t k = i;
        while (k < e && k - i < 3 && s[k] == ' ')
            k++;
        if (e - k >= 3 && (memcmp(s + k, "```", 3) == 0 || memcmp(s + k, "~~~", 3) == 0))
            fence = !fence;
        else if (!fence && s[i + strspn(s + i, " \t")] == '\n')
            end = e + 1;
        i = e + 1;
    }
    return end;
}

/* What of the reply can be printed now (final: all of it). */
static void reply_progress(struct inline_view *v, bool final)
{
    const char *t = v->text.data ? v->text.data : "";
    size_t n = v->text.len;
    if (v->markdown) {
        size_t end = final ? n : stable_end(t, n);
        if (end > v->md_done || (final && end > 0)) {
            md_render(t, end, v->width, &v->md);
            print_md_lines(v);
            v->md_done = end;
        }
    } else {
        size_t end = n;
        if (v->screen_reader && !final) { /* whole lines */
            while (end > v->shown && t[end - 1] != '\n')
                end--;
        }
        if (end > v->shown)
            out_write(v, t + v->shown, end - v->shown);
        v->shown = end;
    }
    if (final && v->out_midline)
        out_write(v, "\n", 1);
    fflush(v->out);
}

static void reply_reset(struct inline_view *v)
{
    v->pending.len = 0;
    v->text.len = 0;
    if (v->text.data)
        v->text.data[0] = '\0';
    v->shown = v->md_done = v->md_lines = 0;
}

/* A whole reply (the transcript sent again, a stop string's final text). */
static void print_reply(struct inline_view *v, const char *text)
{
    reply_reset(v);
    sanitize_append(&v->text, text, strlen(text), true);
    reply_progress(v, true);
}

/* -------------------------------------------------------------- the view */

static void speaker(struct inline_view *v, const char *model)
{
    if (!v->screen_reader)
        return;
    info_begin(v);
    /* on out: the reply's own stream says who speaks */
    fprintf(v->out, "%s says:\n", model && *model ? model : "the model");
    v->out_midline = false;
    fflush(v->out);
}

static void replay_end(struct inline_view *v)
{
    if (!v->replaying)
        return;
    v->replaying = false;
    if (v->n_exchanges && v->last_user) {
        const char *name = (v->chat ? chat_session_name(v->chat) : NULL);
        inline_view_say(v, "%s: %zu exchange%s; the last one:", name ? name : "conversation",
                        v->n_exchanges, v->n_exchanges == 1 ? "" : "s");
        char *collapsed = attachment_collapse(v->last_user);
        char line[600];
        snprintf(line, sizeof line, "you #%zu: %s", v->n_exchanges,
                 collapsed ? collapsed : v->last_user);
        free(collapsed);
        info_line(v, NULL, line);
        /* on a terminal: the reply under it; never again on a pipe's stdout */
        if (v->last_reply && shared(v)) {
            speaker(v, (v->chat ? chat_model_label(v->chat) : "model"));
            print_reply(v, v->last_reply);
        }
    }
    free(v->last_user);
    free(v->last_reply);
    v->last_user = v->last_reply = NULL;
}

static void on_cleared(void *user)
{
    struct inline_view *v = user;
    replay_end(v);
    v->replaying = true;
    v->n_exchanges = 0;
}

static void on_message_added(void *user, const struct chat_message *m)
{
    struct inline_view *v = user;
    switch (m->role) {
    case CHAT_INFO:
        info_line(v, SGR_DIM, m->text);
        return;
    case CHAT_ERROR:
        info_line(v, SGR_BOLD, m->text);
        return;
    case CHAT_SYSTEM:
        return;
    case CHAT_USER:
        /* typed at the prompt or read from the pipe: already seen */
        if (v->replaying) {
            v->n_exchanges = (size_t)(m->exchange > 0 ? m->exchange : (int)v->n_exchanges + 1);
            free(v->last_user);
            free(v->last_reply);
            v->last_user = x_strdup(m->text);
            v->last_reply = NULL;
        }
        return;
    case CHAT_ASSISTANT:
        if (v->replaying) {
            free(v->last_reply);
            v->last_reply = x_strdup(m->text);
        } else {
            speaker(v, m->model);
            print_reply(v, m->text);
        }
        return;
    }
}

static void on_reply_started(void *user, const struct chat_message *m)
{
    struct inline_view *v = user;
    /* the transcript sent again just before (old turns dropped) is known */
    free(v->last_user);
    free(v->last_reply);
    v->last_user = v->last_reply = NULL;
    v->replaying = false;
    reply_reset(v);
    v->in_reply = true;
    v->interrupted = false;
    speaker(v, m->model ? m->model : (v->chat ? chat_model_label(v->chat) : "model"));
}

static void on_reply_text(void *user, const char *text, size_t n)
{
    struct inline_view *v = user;
    if (!v->in_reply)
        return;
    sbuf_add(&v->pending, text, n);
    size_t used = sanitize_append(&v->text, v->pending.data, v->pending.len, false);
    memmove(v->pending.data, v->pending.data + used, v->pending.len - used);
    v->pending.len -= used;
    reply_progress(v, false);
}

static void on_reply_finished(void *user, bool interrupted, const char *final_text, int ref)
{
    struct inline_view *v = user;
    (void)ref;
    if (!v->in_reply)
        return;
    if (final_text) {
        /* a stop string ended it: the kept text, from where the printing is */
        reply_reset(v);
        sanitize_append(&v->text, final_text, strlen(final_text), true);
        size_t printed = v->shown;
        v->shown = printed < v->text.len ? printed : v->text.len;
    } else {
        sanitize_append(&v->text, v->pending.data, v->pending.len, true);
        v->pending.len = 0;
    }
    reply_progress(v, true);
    v->in_reply = false;
    v->interrupted = interrupted;
    v->status_owed = true;
}

static void on_noticed(void *user, bool error, const char *text)
{
    struct inline_view *v = user;
    char line[700];
    snprintf(line, sizeof line, "%s%s", error ? "error: " : "", text);
    info_line(v, error ? SGR_BOLD : SGR_DIM, line);
}

static void on_session_list_toggled(void *user)
{
    struct inline_view *v = user;
    char **names = v->chat ? chat_names(v->chat, ARG_SESSION) : NULL;
    const char *cur = (v->chat ? chat_session_name(v->chat) : NULL);
    struct sbuf b = {0};
    sbuf_add(&b, "sessions (/switch NAME opens one):", strlen("sessions (/switch NAME opens one):"));
    for (size_t i = 0; names && names[i]; i++) {
        bool here = cur && strcmp(cur, names[i]) == 0;
        sbuf_add(&b, "\n  ", 3);
        sbuf_add(&b, names[i], strlen(names[i]));
        if (here)
            sbuf_add(&b, " (open)", 7);
    }
    info_line(v, NULL, b.data);
    sbuf_fini(&b);
    strv_free(names);
}

static void on_markdown_changed(void *user, bool on)
{
    struct inline_view *v = user;
    v->markdown = on;
}

void inline_view_init(struct inline_view *v, struct chat *chat, struct chat_view *ops)
{
    memset(v, 0, sizeof *v);
    v->chat = chat;
    v->out = stdout;
    v->info = stdout;
    v->width = 80;
    md_out_init(&v->md);
    *ops = (struct chat_view){
        .user = v,
        .cleared = on_cleared,
        .message_added = on_message_added,
        .reply_started = on_reply_started,
        .reply_text = on_reply_text,
        .reply_finished = on_reply_finished,
        .session_list_toggled = on_session_list_toggled,
        .markdown_changed = on_markdown_changed,
        .noticed = on_noticed,
    };
}

/* "guide-small-instruct · reused 0, computed 31 tokens · 250.1 t/s ·
 * context 120/2048 (5%)" */
static void status_line(struct inline_view *v)
{
    struct chat_status st;
    if (!v->chat)
        return;
    chat_get_status(v->chat, &st, chat_now());
    char speed[64] = "", ctx[96] = "";
    if (st.decode_tps > 0)
        snprintf(speed, sizeof speed, v->screen_reader ? ", %.1f tokens a second" : " · %.1f t/s",
                 st.decode_tps);
    if (st.n_ctx > 0)
        snprintf(ctx, sizeof ctx,
                 v->screen_reader ? ", context %d of %d tokens (%d%%)" : " · context %d/%d (%d%%)",
                 st.n_past, st.n_ctx, (int)((long long)st.n_past * 100 / st.n_ctx));
    char line[512];
    if (v->screen_reader)
        snprintf(line, sizeof line, "End of reply%s. %s, reused %d and computed %d tokens%s%s.%s%s",
                 v->interrupted ? " (stopped)" : "", st.model ? st.model : "", st.reused,
                 st.computed, speed, ctx, st.warning ? " " : "", st.warning ? st.warning : "");
    else
        snprintf(line, sizeof line, "[%s%s · reused %d, computed %d tokens%s%s%s%s]",
                 v->interrupted ? "stopped · " : "", st.model ? st.model : "", st.reused,
                 st.computed, speed, ctx, st.warning ? " · " : "", st.warning ? st.warning : "");
    info_line(v, SGR_DIM, line);
}

void inline_view_flush(struct inline_view *v)
{
    replay_end(v);
    if (v->status_owed) {
        v->status_owed = false;
        status_line(v);
    }
}

void inline_view_fini(struct inline_view *v)
{
    free(v->last_user);
    free(v->last_reply);
    sbuf_fini(&v->pending);
    sbuf_fini(&v->text);
    md_out_fini(&v->md);
    memset(v, 0, sizeof *v);
}
