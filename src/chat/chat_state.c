/* chat_state.c: what the controller is doing, as the status bar shows it
 * (chat_get_status, chat_status.h) and as callers ask for it (the
 * accessors of chat_controller.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"

void chat_get_status(struct chat *c, struct chat_status *st, double now)
{
    memset(st, 0, sizeof *st);
    struct conv *v = c->cur;
    st->model = c->model.name;
    st->template_name = v ? v->tpl->name : NULL;
    st->session = v ? v->s->name : NULL;
    st->attached = c->attach.name;
    st->format = chat_format_label(v);
    st->n_past = v ? (int)v->cv.tokens.n : 0;
    st->n_ctx = v ? v->cv.n_ctx : c->n_ctx;
    if (!c->model_ready)
        st->n_ctx = c->n_ctx;
    st->prefill_tps = c->prefill_tps;
    st->decode_tps = c->decode_tps;
    if (c->load.active && !c->reply.active) {
        /* a small progress bar: 10 cells */
        char bar[64] = "";
        int cells = (int)(c->load.progress * 10.0f + 0.5f);
        for (int i = 0; i < 10; i++)
            strcat(bar, i < cells ? "█" : "░");
        snprintf(c->state_text, sizeof c->state_text, "loading %.40s %s %d%%", c->load.next.name, bar,
                 (int)(c->load.progress * 100));
        st->busy = true;
    } else if (c->load.active) {
        /* the current model answers while the next one loads */
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · loading %.24s %d%%",
                 c->reply.n_ids, c->load.next.name, (int)(c->load.progress * 100));
        st->busy = true;
    } else if (c->reply.active && !c->reply.got_token) {
        snprintf(c->state_text, sizeof c->state_text, "prefill %d%%",
                 (int)(c->reply.prefill_progress * 100));
        st->hint = CHAT_HINT_STOP;
        st->busy = true;
    } else if (c->reply.active && c->queued) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · 1 queued",
                 c->reply.n_ids);
        st->hint = CHAT_HINT_UNQUEUE;
        st->busy = true;
    } else if (c->reply.active) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu", c->reply.n_ids);
        st->hint = CHAT_HINT_STOP;
        st->busy = true;
    } else if (chat_pull_status(c, c->state_text, sizeof c->state_text)) {
        st->hint = CHAT_HINT_STOP;
        st->busy = true;
    } else if (!c->model_ready) {
        snprintf(c->state_text, sizeof c->state_text, "no model");
    } else if (c->edit_conv && c->edit_conv == v) {
        snprintf(c->state_text, sizeof c->state_text, "idle · editing #%d", c->edit_exchange);
    } else {
        snprintf(c->state_text, sizeof c->state_text, "idle");
    }
    st->state = c->state_text;
    if (v && !st->busy) {
        st->reused = v->n_reused;
        st->computed = v->n_computed;
    }
    int pct;
    if (v && c->model_ready && chat_near_full(c, v, &pct)) {
        snprintf(c->warn_text, sizeof c->warn_text, "ctx %d%%: %s", pct,
                 c->policy.policy == CONTEXT_STOP ? "full soon, then refused"
                                                  : "oldest turns drop next");
        st->warning = c->warn_text;
    }
    if (c->notice[0] && now < c->notice_until) {
        st->notice = c->notice;
        st->notice_error = c->notice_error;
    } else {
        c->notice[0] = '\0';
    }
}

const char *chat_session_name(const struct chat *c)
{
    return c->cur ? c->cur->s->name : NULL;
}

int chat_wake_fd(const struct chat *c)
{
    return elm_worker_wake_fd(c->worker);
}

bool chat_generating(const struct chat *c)
{
    return c->reply.active;
}

bool chat_quit_requested(const struct chat *c)
{
    return c->quit;
}

bool chat_has_notice(const struct chat *c)
{
    return c->notice[0] != '\0' || chat_pull_active(c);
}

const char *chat_model_label(const struct chat *c)
{
    return c->model.name;
}

void chat_last_request(const struct chat *c, int *reused, int *computed)
{
    *reused = c->cur ? c->cur->n_reused : 0;
    *computed = c->cur ? c->cur->n_computed : 0;
}

void chat_get_activity(const struct chat *c, struct chat_activity *a)
{
    *a = (struct chat_activity){
        .model_ready = c->model_ready,
        .model_loading = c->load.active,
        .generating = c->reply.active,
        .prefilling = c->prefill_req != 0,
        .n_prefills = c->n_prefills,
        .saving = c->n_kv_saves > 0,
        .reply_ids = c->reply.n_ids,
        .n_tokens = c->cur ? c->cur->cv.tokens.n : 0,
    };
}

const struct elm_model_info *chat_model_info(const struct chat *c)
{
    return c->info;
}
