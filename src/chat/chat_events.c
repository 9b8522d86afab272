/* chat_events.c: the worker's events (chat_poll_events): a reply's tokens
 * and its end, model loads, prefills, snapshots, drafts, dropped caches;
 * the message queued meanwhile; stopping a reply.
 *
 * Each open session is a struct conv (chat_internal.h): the session, its
 * conversation (src/conversation/conversation.h: the token sequence that is the truth
 * of the KV cache, spans, the context policy), its template and a worker
 * slot.  A new turn appends only the rendered user turn and the generation
 * prompt; the reply's sampled ids are appended as they come; every
 * GENERATE sends the whole sequence with ELM_GEN_SYNC so the worker
 * computes only what its cache lacks.  Snapshots are written with every
 * save and adopted when a session is opened (chat_sessions.c).  A model
 * switch loads in the background; the conversations are then re-prefilled
 * into the new model (chat_model.c).
 *
 * The worker is reached only through chat_post (chat_base.c), the cancel
 * and the event queue below, and its creation (chat_life.c). */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/base/xalloc.h"

/* Stop the reply being generated and any prefill queued (the worker
 * answers with DONE). */
void chat_cancel_reply(struct chat *c)
{
    elm_worker_cancel(c->worker, ELM_CANCEL_ALL);
}

static bool next_event(struct chat *c, struct elm_event *ev)
{
    elm_worker_drain_wake(c->worker);
    return elm_worker_next_event(c->worker, ev);
}

static void warn_if_near_full(struct chat *c, struct conv *v)
{
    int pct;
    bool near = chat_near_full(c, v, &pct);
    if (!near) {
        v->warned = false;
        return;
    }
    if (v->warned || v != c->cur)
        return;
    v->warned = true;
    char buf[600];
    if (c->policy.policy == CONTEXT_STOP)
        snprintf(buf, sizeof buf,
                 "The context is %d%% full (%zu of %d tokens). When a message no longer fits it "
                 "will be refused (context policy: stop): /clear, /undo or /new make room.",
                 pct, v->cv.tokens.n, v->cv.n_ctx);
    else
        snprintf(buf, sizeof buf,
                 "The context is %d%% full (%zu of %d tokens). To make room, the oldest "
                 "exchanges will be dropped from the model's context (they stay here, marked "
                 "out of context). /pin keeps an exchange; the system prompt always stays.",
                 pct, v->cv.tokens.n, v->cv.n_ctx);
    chat_info_msg(c, false, buf);
}

void chat_finish_reply(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = c->reply.conv;
    c->reply.active = false;
    c->reply.conv = NULL;
    if (!v)
        return;
    const struct conv_reply_end end = conversation_end_from_done(ev->reason);
    bool interrupted = end.interrupted;
    bool stopped = end.stop_string;
    char *content = x_strdup(c->reply.text.data ? c->reply.text.data : "");
    char err[512];
    size_t kept_end = v->cv.tokens.n;
    if (conversation_reply_end(&v->cv, end.how, content, interrupted, err, sizeof err) != 0) {
        chat_notice(c, true, "%s", err);
    } else if (v->s->n_msgs > 0 && v->s->msgs[v->s->n_msgs - 1].role == ROLE_ASSISTANT) {
        /* the reply keeps its author's name after a model switch */
        struct message *m = &v->s->msgs[v->s->n_msgs - 1];
        free(m->model);
        m->model = x_strdup(c->model.name);
    }
    free(content);
    v->dirty = true;
    /* what the worker holds: the prompt and the ids it fed (never more
     * than the ids kept) */
    int n_past = ev->n_past;
    if (stopped && (size_t)n_past > kept_end)
        n_past = (int)kept_end;
    conversation_set_cached(&v->cv, n_past);
    if (v == c->cur) {
        const struct message *m = &v->s->msgs[v->s->n_msgs - 1];
        /* a stop string: show exactly what was kept */
        if (c->view.reply_finished)
            c->view.reply_finished(c->view.user, interrupted, stopped ? m->content : NULL,
                                   (int)(v->s->n_msgs - 1));
    }
    if (ev->reason == ELM_DONE_ERROR)
        chat_notice(c, true, "generation failed: %s", ev->text ? ev->text : "error");
    else if (ev->reason == ELM_DONE_CONTEXT_FULL)
        chat_notice(c, true, "the context is full (%d tokens): the next message drops old turns",
                    ev->n_ctx);
    else if (ev->reason == ELM_DONE_LENGTH && v->s->format)
        /* a structured reply cut: whether the value is whole matters most */
        chat_format_cut_notice(c, v, c->reply.text.data ? c->reply.text.data : "");
    else if (v->edited_exchange > 0 && v == c->cur)
        chat_notice(c, false, "message #%d edited: reused %d tokens from the cache, computed %d",
                    v->edited_exchange, ev->n_reused, ev->n_prefilled);
    else if (ev->reason == ELM_DONE_LENGTH && v->n_dropped_note == 0)
        chat_notice(c, false, "reply cut at max-tokens (/set max-tokens N)");
    v->edited_exchange = 0;
    chat_save_conv(c, v, true); /* autosave after every turn, with its snapshot */
    if (v->n_dropped_note > 0 && v == c->cur) {
        char buf[300];
        snprintf(buf, sizeof buf,
                 "%d earlier message%s left the context to make room for this exchange (marked "
                 "out of context above; they stay in the session). /pin keeps an exchange.",
                 v->n_dropped_note, v->n_dropped_note == 1 ? "" : "s");
        chat_info_msg(c, false, buf);
    }
    v->n_dropped_note = 0;
    warn_if_near_full(c, v);
    chat_changed(c);
}

/* A notice of something the worker finished in the background: added
 * after the one showing rather than hiding it (it is usually about what
 * the user did meanwhile: a /format, a failed /export). */
static void notice_beside(struct chat *c, const char *msg)
{
    if (c->notice[0] && chat_now() < c->notice_until && !strstr(c->notice, msg)) {
        char both[sizeof c->notice + 320];
        snprintf(both, sizeof both, "%s · %s", c->notice, msg);
        chat_notice(c, c->notice_error, "%s", both);
    } else {
        chat_notice(c, false, "%s", msg);
    }
}

/* The queued message, once nothing is in its way; back into the input line
 * when the user has moved to another conversation meanwhile. */
static void send_queued(struct chat *c)
{
    if (!c->queued || c->reply.active || !c->model_ready)
        return;
    char *line = c->queued;
    bool same = c->queued_conv == c->cur;
    c->queued = NULL;
    c->queued_conv = NULL;
    if (c->view.queued_changed)
        c->view.queued_changed(c->view.user, NULL);
    if (!same) {
        chat_put_input(c, line);
        chat_notice(c, false, "the queued message is back in the input line (another "
                              "conversation is open now)");
        free(line);
        chat_changed(c);
        return;
    }
    chat_submit(c, line);
}

/* At most this many ids after a snapshot are left to the next reply: a
 * pass reads every weight whatever its width, so a few more ids in the
 * reply's prefill cost next to nothing, and a prefill of them alone costs
 * a whole pass.  More (the session went on elsewhere): prefilled now,
 * while the user reads. */
#define FOLD_MAX 32

/* The snapshot that stood for the background prefill is loaded (or not:
 * ok false): the worker kept its common prefix with the sequence. */
static void snapshot_loaded(struct chat *c, const struct elm_event *ev, bool ok)
{
    if (ev->request_id == c->prefill_req) {
        c->prefill_req = 0;
        c->prefill_conv = NULL;
    }
    struct conv *v = chat_conv_by_slot(c, ev->slot);
    if (!v || !v->kv_loaded)
        return;
    size_t n = ok && ev->n_past > 0 ? (size_t)ev->n_past : 0;
    conversation_set_cached(&v->cv, n);
    n = v->cv.cache.n; /* a server's count may pass the sequence */
    size_t rest = v->cv.tokens.n - n;
    v->n_reused = (int)n;
    v->n_computed = 0;
    bool replying = c->reply.active && c->reply.conv == v;
    v->kv_loaded = false;
    if (v != c->cur)
        return; /* switched away meanwhile: switching back prefills it */
    if (n == 0 || (rest > FOLD_MAX && !replying)) {
        /* nothing usable (another model, a damaged file) or much to add:
         * a prefill, as without a snapshot (its DONE says what it reused);
         * a reply under way computes it itself */
        v->kv_loaded = n > 0;
        if (!replying)
            chat_post_prefill(c, v);
        return;
    }
    char msg[160];
    if (rest > 0)
        snprintf(msg, sizeof msg,
                 "resumed from the KV snapshot: %zu tokens reused, %zu computed with the next reply",
                 n, rest);
    else
        snprintf(msg, sizeof msg, "resumed from the KV snapshot: %zu tokens reused", n);
    notice_beside(c, msg);
}

static void on_done(struct chat *c, struct elm_event *ev)
{
    if (ev->request_type == ELM_REQ_SAVE_STATE) {
        if (c->n_kv_saves > 0)
            c->n_kv_saves--;
        return;
    }
    if (ev->request_type == ELM_REQ_SET_DRAFT && ev->request_id == c->draft_req) {
        c->draft_req = 0;
        c->draft_ready = c->draft_name[0] != '\0';
        if (c->draft_ready)
            chat_notice(c, false, "draft %s ready: it proposes tokens that %s checks in one pass "
                                  "(the same replies; /set draft off)",
                        c->draft_name, c->model.name);
        return;
    }
    if (ev->request_type == ELM_REQ_LOAD_STATE) {
        snapshot_loaded(c, ev, true);
        return;
    }
    if (ev->request_type != ELM_REQ_GENERATE)
        return;
    c->n_past = ev->n_past;
    if (ev->n_ctx > 0)
        c->n_ctx = ev->n_ctx;
    /* a handful of tokens gives no meaningful speed */
    if (ev->prefill_tps > 0 && ev->n_prefilled >= 8)
        c->prefill_tps = ev->prefill_tps;
    if (ev->decode_tps > 0 && ev->n_generated >= 4)
        c->decode_tps = ev->decode_tps;
    struct conv *v = chat_conv_by_slot(c, ev->slot);
    if (v) {
        v->n_reused = ev->n_reused;
        v->n_computed = ev->n_prefilled;
    }
    if (c->reply.active && ev->request_id == c->reply.req) {
        c->last_lookup = ev->lookup;
        c->last_draft = ev->draft;
        chat_finish_reply(c, ev);
        if (c->load.has_pending_ready) {
            c->load.has_pending_ready = false;
            chat_model_ready(c, &c->load.pending_ready);
            elm_event_fini(&c->load.pending_ready);
        }
        send_queued(c);
        return;
    }
    if (ev->request_id == c->prefill_req) {
        c->prefill_req = 0;
        c->prefill_conv = NULL;
        if (v)
            conversation_set_cached(&v->cv, ev->n_past);
        if (v && v->kv_loaded) {
            v->kv_loaded = false;
            if (ev->n_reused > 0) {
                char msg[160];
                snprintf(msg, sizeof msg, "resumed from the KV snapshot: %d tokens reused, %d computed",
                         ev->n_reused, ev->n_prefilled);
                notice_beside(c, msg);
            }
        }
        if (v && v->branch_note[0]) {
            if (v == c->cur)
                chat_notice(c, false, "%s: reused %d tokens from the cache, computed %d",
                            v->branch_note, ev->n_reused, ev->n_prefilled);
            v->branch_note[0] = '\0';
        }
    }
}

/* The worker dropped a conversation's cache to stay within the memory
 * budget: its next reply recomputes the whole sequence, which for a long
 * conversation is slow enough to deserve a word beforehand. */
static void cache_dropped(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = chat_conv_by_slot(c, ev->slot);
    if (!v)
        return;
    conversation_set_cached(&v->cv, 0); /* nothing to snapshot now */
    size_t n = v->cv.tokens.n > (size_t)ev->n_dropped ? v->cv.tokens.n : (size_t)ev->n_dropped;
    char msg[300];
    if (v == c->cur)
        snprintf(msg, sizeof msg, "cache dropped (memory budget); the next reply recomputes %zu tokens",
                 n);
    else
        snprintf(msg, sizeof msg,
                 "session %s: cache dropped (memory budget); its next reply recomputes %zu tokens",
                 v->s->name, n);
    /* Usually a side effect of what the user just did (/new, /switch). */
    notice_beside(c, msg);
}

/* A request other than GENERATE failed (a reply's failure ends the reply:
 * on_done). */
static void on_failure(struct chat *c, const struct elm_event *ev)
{
    if (ev->request_id == c->load.req) {
        chat_model_failed(c, ev);
    } else if (ev->request_type == ELM_REQ_SAVE_STATE) {
        if (c->n_kv_saves > 0)
            c->n_kv_saves--;
        chat_notice(c, true, "KV snapshot not saved: %s", ev->text ? ev->text : "error");
    } else if (ev->request_type == ELM_REQ_SET_DRAFT) {
        c->draft_req = 0;
        c->draft_ready = false;
        chat_notice(c, true, "draft %s: %s", c->draft_name, ev->text ? ev->text : "error");
        c->draft_name[0] = '\0';
    } else if (ev->request_type == ELM_REQ_LOAD_STATE) {
        snapshot_loaded(c, ev, false); /* another model or a damaged file */
    } else {
        chat_notice(c, true, "%s", ev->text ? ev->text : "worker error");
    }
}

void chat_poll_events(struct chat *c)
{
    struct elm_event ev;
    while (next_event(c, &ev)) {
        chat_changed(c);
        switch (ev.type) {
        case ELM_EV_LOAD_PROGRESS:
            if (ev.request_id == c->load.req)
                c->load.progress = ev.progress;
            break;
        case ELM_EV_MODEL_READY:
            if (ev.request_id != c->load.req)
                break;
            if (c->reply.active) {
                /* switch after the reply's DONE (on_done) */
                elm_event_fini(&c->load.pending_ready);
                c->load.pending_ready = ev;
                c->load.has_pending_ready = true;
                continue; /* ev is kept: not finished here */
            }
            chat_model_ready(c, &ev);
            send_queued(c);
            break;
        case ELM_EV_PREFILL_PROGRESS:
            if (ev.request_id == c->reply.req)
                c->reply.prefill_progress = ev.progress;
            break;
        case ELM_EV_TOKEN:
            if (c->reply.active && ev.request_id == c->reply.req) {
                conversation_reply_push(&c->reply.conv->cv, ev.ids, (size_t)ev.n_ids);
                c->reply.n_ids += (size_t)ev.n_ids;
                if (ev.text) {
                    size_t n = strlen(ev.text);
                    sbuf_add(&c->reply.text, ev.text, n);
                    if (c->reply.conv == c->cur && c->view.reply_text)
                        c->view.reply_text(c->view.user, ev.text, n);
                }
                if (!c->reply.got_token)
                    c->ttft_ms = (chat_now() - c->reply.t0) * 1000.0;
                c->reply.got_token = true;
            }
            break;
        case ELM_EV_DONE:
            if (ev.reason == ELM_DONE_ERROR && ev.request_type != ELM_REQ_GENERATE)
                on_failure(c, &ev);
            else
                on_done(c, &ev);
            break;
        case ELM_EV_CACHE_DROPPED:
            cache_dropped(c, &ev);
            break;
        }
        elm_event_fini(&ev);
    }
}

void chat_cancel(struct chat *c)
{
    if (c->reply.active)
        chat_cancel_reply(c);
    else
        chat_pull_cancel(c);
}

void chat_tick(struct chat *c)
{
    chat_pull_tick(c);
}

void chat_wait_events(struct chat *c, int timeout_ms)
{
    struct pollfd p = {.fd = chat_wake_fd(c), .events = POLLIN};
    poll(&p, 1, timeout_ms);
    chat_poll_events(c);
}

void chat_drop_cache(struct chat *c)
{
    struct elm_request req = elm_request_default(ELM_REQ_FREE_CTX);
    req.slot = c->cur->slot;
    if (chat_post(c, &req) != 0)
        conversation_set_cached(&c->cur->cv, 0);
}

/* The snapshots posted by the last saves are written by the worker: give
 * it a moment (elm_worker_free drops queued requests). */
void chat_wait_kv_saves(struct chat *c, double limit)
{
    double end = chat_now() + limit;
    while (c->n_kv_saves > 0) {
        double left = end - chat_now();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = chat_wake_fd(c), .events = POLLIN};
        poll(&p, 1, (int)(left * 1000) + 1);
        struct elm_event ev;
        while (next_event(c, &ev)) {
            if (ev.type == ELM_EV_DONE && ev.request_type == ELM_REQ_SAVE_STATE &&
                c->n_kv_saves > 0)
                c->n_kv_saves--;
            elm_event_fini(&ev);
        }
    }
}
