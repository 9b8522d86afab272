/* chat_base.c: what every part of the chat controller uses (commands,
 * sessions, model switches, the events): the one way to the worker
 * (chat_post), the view's notifications and notices, the sampling in
 * effect.  It calls none of those parts. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/base/platform.h"
#include "src/conversation/session_tree.h"
#include "src/base/xalloc.h"

/* ------------------------------------------------------------ the worker */

uint64_t chat_post(struct chat *c, const struct elm_request *req)
{
    return elm_worker_post(c->worker, req);
}

double chat_now(void)
{
    return platform_now();
}

void chat_notice(struct chat *c, bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notice, sizeof c->notice, fmt, ap);
    va_end(ap);
    /* one line */
    for (char *p = c->notice; *p; p++)
        if (*p == '\n')
            *p = ' ';
    c->notice_error = error;
    c->notice_until = chat_now() + (error ? 8.0 : 5.0);
    if (c->view.noticed)
        c->view.noticed(c->view.user, error, c->notice);
    chat_changed(c);
}

/* ------------------------------------------------------------- the view */

void chat_changed(struct chat *c)
{
    if (c->view.changed)
        c->view.changed(c->view.user);
}

void chat_add_message(struct chat *c, const struct chat_message *m)
{
    if (c->view.message_added)
        c->view.message_added(c->view.user, m);
}

void chat_info_msg(struct chat *c, bool error, const char *text)
{
    chat_add_message(c, &(struct chat_message){
                       .role = error ? CHAT_ERROR : CHAT_INFO, .text = text, .ref = -1});
    chat_changed(c);
}

const char *chat_key_name(const struct chat *c, enum chat_hint hint)
{
    const char *k = c->view.key_name ? c->view.key_name(c->view.user, hint) : NULL;
    return k ? k : "Esc";
}

void chat_put_input(struct chat *c, const char *text)
{
    if (c->view.input_replaced)
        c->view.input_replaced(c->view.user, text);
}

void chat_session_list_changed(struct chat *c)
{
    if (c->view.session_list_changed)
        c->view.session_list_changed(c->view.user);
    chat_changed(c);
}


bool chat_busy_refuse(struct chat *c)
{
    if (c->reply.active) {
        chat_notice(c, true, "a reply is being generated: Esc or Ctrl-C stops it");
        return true;
    }
    return false;
}

size_t chat_find_exchange(struct chat *c, const struct session *s, const char *arg,
                          const char *verb)
{
    int want = 0;
    if (arg) {
        char *end;
        errno = 0;
        long k = strtol(arg, &end, 10);
        if (errno || *end || k < 1 || k > INT_MAX) {
            chat_notice(c, true, "/%s N: N is an exchange number (1 = the first)", verb);
            return SIZE_MAX;
        }
        want = (int)k;
    }
    return chat_exchange_index(c, s, want, verb);
}

size_t chat_exchange_index(struct chat *c, const struct session *s, int n, const char *verb)
{
    size_t want = n > 0 ? (size_t)n : 0;
    size_t last = 0, idx = SIZE_MAX;
    for (size_t i = 0; i < s->n_msgs; i++) {
        if (s->msgs[i].role != ROLE_USER)
            continue;
        last++;
        if (last == want || want == 0)
            idx = i;
    }
    if (idx == SIZE_MAX) {
        if (last)
            chat_notice(c, true, "there is no exchange %zu (1 to %zu)", want, last);
        else
            chat_notice(c, true, "nothing to %s yet", verb);
    }
    return idx;
}

/* Exchange numbers (for /pin N): the k-th user message is exchange k. */
size_t chat_exchange_of(const struct session *s, size_t i)
{
    size_t k = 0;
    for (size_t j = 0; j <= i && j < s->n_msgs; j++)
        k += s->msgs[j].role == ROLE_USER;
    return k;
}

/* Session message i, its exchange number known (chat_show_conv counts
 * them) and its siblings from an index (NULL: a scan). */
static struct chat_message message_numbered(const struct session *s, size_t i, size_t exchange,
                                            const struct session_sibling_index *siblings)
{
    const struct message *m = &s->msgs[i];
    size_t k, n;
    if (siblings)
        session_siblings_indexed(siblings, s, i, &k, &n);
    else
        session_siblings(s, i, &k, &n);
    return (struct chat_message){
        .version = (int)k,
        .n_versions = (int)n,
        .role = m->role == ROLE_USER        ? CHAT_USER
                : m->role == ROLE_ASSISTANT ? CHAT_ASSISTANT
                                            : CHAT_SYSTEM,
        .text = m->content,
        .ref = (int)i,
        .exchange = m->role == ROLE_USER ? (int)exchange : 0,
        .interrupted = m->interrupted,
        .out_of_context = m->out_of_context,
        .pinned = m->pinned,
        .model = m->model,
    };
}

/* Session message i as the view gets it. */
struct chat_message chat_session_message(const struct session *s, size_t i)
{
    return message_numbered(s, i, chat_exchange_of(s, i), NULL);
}

/* The line that says a conversation is shown read-only, and the way on. */
static void chat_read_only_note(struct chat *c, const struct conv *v)
{
    char pid[32] = "";
    if (v->lock_holder > 0)
        snprintf(pid, sizeof pid, " (pid %ld)", v->lock_holder);
    char *line = x_asprintf(
        "'%s' is open in another elmchat%s: shown here read-only, its file stays as that one "
        "writes it. To go on here, /save NEWNAME makes this a copy under a new name (any change "
        "is saved as '%s-copy' otherwise); /quit leaves it untouched.",
        v->s->name, pid, v->s->name);
    chat_info_msg(c, false, line);
    free(line);
}

/* The view starts over from the current conversation (after anything that
 * changes more than the last message: load, eviction, undo...). */
void chat_show_conv(struct chat *c)
{
    if (c->view.cleared)
        c->view.cleared(c->view.user);
    struct session *s = c->cur->s;
    const char *sys = s->system ? s->system : c->cur->tpl->default_system;
    if (sys && *sys)
        chat_add_message(c, &(struct chat_message){.role = CHAT_SYSTEM, .text = sys, .ref = -1});
    /* exchange numbers counted on the way and siblings from one index:
     * linear in the messages */
    struct session_sibling_index *siblings = session_sibling_index_new(s);
    size_t exchange = 0;
    for (size_t i = 0; i < s->n_msgs; i++) {
        exchange += s->msgs[i].role == ROLE_USER;
        struct chat_message m = message_numbered(s, i, exchange, siblings);
        chat_add_message(c, &m);
    }
    session_sibling_index_free(siblings);
    if (c->cur->read_only)
        chat_read_only_note(c, c->cur);
    chat_changed(c);
}

/* A branch switch still computing would end with a note about the path
 * that is gone, so the note goes with it; an /edit in progress names a
 * message by its place on the old path, so it ends too (else it would
 * edit whatever took that place, or refuse the next message). */
void chat_path_replaced(struct chat *c, struct conv *v)
{
    v->dirty = true;
    v->branch_note[0] = '\0';
    if (c->edit_conv == v)
        c->edit_conv = NULL;
    chat_show_conv(c);
}

/* --------------------------------------------------------------- sampling */

/* Each layer's values over the ones below, and who set each field (the
 * field's bit number: SAMPLING_*). */
void chat_sampling_sources(const struct chat *c, struct elm_sampler_params *p, int *max_tokens,
                           enum sampling_origin from[SAMPLING_N_FIELDS])
{
    const struct conv *v = c->cur;
    const struct sampling_layers layers = {
        .tpl = v ? &v->tpl->sampling : NULL,
        .model = c->info ? &c->info->sampling : NULL,
        .cfg = &c->cfg,
        .own = v ? &v->s->sampling : NULL, /* saved with it, or given in this run */
    };
    enum sampling_layer layer[SAMPLING_N_FIELDS];
    sampling_resolve(&layers, CHAT_DEFAULT_MAX_TOKENS, p, max_tokens, layer);
    for (int bit = 0; from && bit < SAMPLING_N_FIELDS; bit++) {
        from[bit] = (enum sampling_origin)layer[bit];
        /* the session's own values that the command line or /set gave
         * in this run (saved with it too) */
        if (v && (v->sampling_by_set & (1u << bit)))
            from[bit] = ORIGIN_SET;
        else if (v && (v->sampling_by_cli & (1u << bit)))
            from[bit] = ORIGIN_COMMAND_LINE;
    }
}

void chat_effective_sampling(const struct chat *c, struct elm_sampler_params *p, int *max_tokens)
{
    chat_sampling_sources(c, p, max_tokens, NULL);
}

unsigned chat_cli_sampling(const struct chat *c, struct sampling *out)
{
    const struct elm_sampler_params d = elm_sampler_default_params();
    const struct elm_sampler_params *o = &c->opt.common.sampler;
    struct sampling sp = {0};
    if (o->temperature != d.temperature)
        sp.set |= ELM_SAMPLING_TEMPERATURE, sp.p.temperature = o->temperature;
    if (o->top_k != d.top_k)
        sp.set |= ELM_SAMPLING_TOP_K, sp.p.top_k = o->top_k;
    if (o->top_p != d.top_p)
        sp.set |= ELM_SAMPLING_TOP_P, sp.p.top_p = o->top_p;
    if (o->min_p != d.min_p)
        sp.set |= ELM_SAMPLING_MIN_P, sp.p.min_p = o->min_p;
    if (o->repeat_penalty != d.repeat_penalty)
        sp.set |= ELM_SAMPLING_REPEAT_PENALTY, sp.p.repeat_penalty = o->repeat_penalty;
    if (o->seed != d.seed)
        sp.set |= SAMPLING_SEED, sp.p.seed = o->seed;
    if (c->opt.common.max_tokens >= 0)
        sp.set |= SAMPLING_MAX_TOKENS, sp.max_tokens = c->opt.common.max_tokens;
    if (out)
        *out = sp;
    return sp.set;
}

/* Command-line sampling options become the session's (and are saved). */
void chat_apply_cli_sampling(struct chat *c, struct session *s)
{
    struct sampling cli;
    chat_cli_sampling(c, &cli);
    struct sampling *sp = &s->sampling;
    sampling_apply(&cli, &sp->p, &sp->max_tokens);
    sp->set |= cli.set;
}

/* Tokens kept free for the reply: max-tokens (conversation.c caps it at a
 * quarter of the context). */
int chat_reply_reserve(const struct chat *c)
{
    struct elm_sampler_params p;
    int max_tokens;
    chat_effective_sampling(c, &p, &max_tokens);
    return max_tokens;
}

/* ------------------------------------------------------------ the context */

bool chat_near_full(const struct chat *c, const struct conv *v, int *pct)
{
    int n_ctx = v->cv.n_ctx;
    if (n_ctx <= 0)
        return false;
    int reserve = chat_reply_reserve(c);
    if (reserve > n_ctx / 4)
        reserve = n_ctx / 4;
    int used = (int)v->cv.tokens.n;
    if (pct)
        *pct = (int)((long long)used * 100 / n_ctx);
    /* less than a sixth of the window left after the reply's reserve:
     * the next exchanges will make room by dropping the oldest ones */
    return n_ctx - used - reserve < n_ctx / 6;
}
