/* chat_controller.c: the chat's life cycle, the worker's events, replies,
 * submitted lines and the status (chat_controller.h).
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
 * The worker is reached only through chat_post (chat_base.c),
 * cancel_reply and next_event below (and its creation in chat_init). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/store/paths.h"
#include "src/template/roles.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

/* ------------------------------------------------------------ the worker */

/* Stop the reply being generated and any prefill queued (the worker
 * answers with DONE). */
static void cancel_reply(struct chat *c)
{
    elm_worker_cancel(c->worker, ELM_CANCEL_ALL);
}

static bool next_event(struct chat *c, struct elm_event *ev)
{
    elm_worker_drain_wake(c->worker);
    return elm_worker_next_event(c->worker, ev);
}

static void remember_line(struct chat *c, const char *line)
{
    if (c->view.line_remembered)
        c->view.line_remembered(c->view.user, line);
}


/* The context fill note, once per conversation when it gets near full. */
static bool near_full(const struct chat *c, const struct conv *v, int *pct)
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

static void warn_if_near_full(struct chat *c, struct conv *v)
{
    int pct;
    bool near = near_full(c, v, &pct);
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

static void finish_reply(struct chat *c, const struct elm_event *ev)
{
    struct conv *v = c->gen_conv;
    c->generating = false;
    c->gen_conv = NULL;
    if (!v)
        return;
    bool interrupted = ev->reason == ELM_DONE_CANCELLED || ev->reason == ELM_DONE_LENGTH ||
                       ev->reason == ELM_DONE_ERROR || ev->reason == ELM_DONE_CONTEXT_FULL;
    /* a stop string: its ids stay in the sequence (TEMPLATE_END_STOP), its
     * text never came */
    bool stopped = ev->reason == ELM_DONE_STOP_STRING;
    char *content = x_strdup(c->reply_text.data ? c->reply_text.data : "");
    enum template_end how = conversation_end_from_done(ev->reason);
    char err[512];
    size_t kept_end = v->cv.tokens.n;
    if (conversation_reply_end(&v->cv, how, content, interrupted, err, sizeof err) != 0) {
        chat_notice(c, true, "%s", err);
    } else if (v->s->n_msgs > 0 && v->s->msgs[v->s->n_msgs - 1].role == ROLE_ASSISTANT) {
        /* the reply keeps its author's name after a model switch */
        struct message *m = &v->s->msgs[v->s->n_msgs - 1];
        free(m->model);
        m->model = x_strdup(c->model_name);
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

/* ----------------------------------------------------------------- events */

static void send_queued(struct chat *c);

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
                        c->draft_name, c->model_name);
        return;
    }
    if (ev->request_type != ELM_REQ_GENERATE)
        return; /* LOAD_STATE: the prefill that follows says what it gave */
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
    if (c->generating && ev->request_id == c->gen_req) {
        c->last_lookup = ev->lookup;
        c->last_draft = ev->draft;
        finish_reply(c, ev);
        if (c->has_pending_ready) {
            c->has_pending_ready = false;
            chat_model_ready(c, &c->pending_ready);
            elm_event_fini(&c->pending_ready);
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
            if (ev->n_reused > 0)
                chat_notice(c, false, "resumed from the KV snapshot: %d tokens reused, %d computed",
                            ev->n_reused, ev->n_prefilled);
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
    /* Usually a side effect of what the user just did (/new, /switch):
     * added after that notice rather than hiding it. */
    if (c->notice[0] && chat_now() < c->notice_until && !strstr(c->notice, msg)) {
        char both[sizeof c->notice + sizeof msg + 8];
        snprintf(both, sizeof both, "%s · %s", c->notice, msg);
        chat_notice(c, c->notice_error, "%s", both);
    } else {
        chat_notice(c, false, "%s", msg);
    }
}

/* A request other than GENERATE failed (a reply's failure ends the reply:
 * on_done). */
static void on_failure(struct chat *c, const struct elm_event *ev)
{
    if (ev->request_id == c->load_req) {
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
        /* another model or a damaged file: the prefill recomputes */
        struct conv *v = chat_conv_by_slot(c, ev->slot);
        if (v)
            v->kv_loaded = false;
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
            if (ev.request_id == c->load_req)
                c->load_progress = ev.progress;
            break;
        case ELM_EV_MODEL_READY:
            if (ev.request_id != c->load_req)
                break;
            if (c->generating) {
                /* switch after the reply's DONE (on_done) */
                elm_event_fini(&c->pending_ready);
                c->pending_ready = ev;
                c->has_pending_ready = true;
                continue; /* ev is kept: not finished here */
            }
            chat_model_ready(c, &ev);
            send_queued(c);
            break;
        case ELM_EV_PREFILL_PROGRESS:
            if (ev.request_id == c->gen_req)
                c->prefill_progress = ev.progress;
            break;
        case ELM_EV_TOKEN:
            if (c->generating && ev.request_id == c->gen_req) {
                conversation_reply_push(&c->gen_conv->cv, ev.ids, (size_t)ev.n_ids);
                c->reply_n_ids += (size_t)ev.n_ids;
                if (ev.text) {
                    size_t n = strlen(ev.text);
                    sbuf_add(&c->reply_text, ev.text, n);
                    if (c->gen_conv == c->cur && c->view.reply_text)
                        c->view.reply_text(c->view.user, ev.text, n);
                }
                if (!c->got_token)
                    c->ttft_ms = (chat_now() - c->reply_t0) * 1000.0;
                c->got_token = true;
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
    if (c->generating)
        cancel_reply(c);
    else
        chat_pull_cancel(c);
}

void chat_tick(struct chat *c)
{
    chat_pull_tick(c);
}

bool chat_unqueue(struct chat *c)
{
    if (!c->queued)
        return false;
    chat_put_input(c, c->queued);
    free(c->queued);
    c->queued = NULL;
    c->queued_conv = NULL;
    if (c->view.queued_changed)
        c->view.queued_changed(c->view.user, NULL);
    chat_notice(c, false, "unqueued: the message is back in the input line");
    chat_changed(c);
    return true;
}

const char *chat_queued(const struct chat *c)
{
    return c->queued;
}

/* The queued message, once nothing is in its way; back into the input line
 * when the user has moved to another conversation meanwhile. */
static void send_queued(struct chat *c)
{
    if (!c->queued || c->generating || !c->model_ready)
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

/* Send text in place of the message /edit chose: the conversation keeps
 * the longest common prefix (the worker's cache with it) and computes only
 * the changed turn.  false: nothing was sent (the text stays in the input). */
static bool submit_edit(struct chat *c, const char *text)
{
    struct conv *v = c->cur;
    size_t i = c->edit_msg;
    int k = c->edit_exchange;
    c->edit_conv = NULL;
    if (i >= v->s->n_msgs || v->s->msgs[i].role != ROLE_USER) {
        chat_notice(c, true, "message #%d is gone: send it again to add it", k);
        return false;
    }
    char err[1024];
    struct conv_plan plan;
    int rc = conversation_edit(&v->cv, i, text, chat_reply_reserve(c), &plan, err, sizeof err);
    v->dirty = true;
    chat_show_conv(c);
    if (rc) {
        /* messages i.. left the path already (kept as a branch: conversation_edit) */
        chat_notice(c, true, "%s", err);
        return false;
    }
    v->n_dropped_note = plan.n_dropped;
    v->edited_exchange = k;
    chat_start_reply(c);
    return true;
}

void chat_submit(struct chat *c, char *line)
{
    if (!line) {
        c->quit = true;
        return;
    }
    if (chat_pull_answer(c, line) || chat_shell_answer(c, line)) {
        free(line);
        return;
    }
    struct cmd cmd;
    size_t start;
    char err[1024];
    enum cmd_parse_result r = cmd_parse(line, &cmd, &start, err, sizeof err);
    if (r == CMD_ERROR) {
        chat_notice(c, true, "%s", err);
        remember_line(c, line);
        free(line);
        return;
    }
    if (r == CMD_OK) {
        remember_line(c, line);
        free(line);
        chat_run_command(c, &cmd);
        cmd_fini(&cmd);
        return;
    }
    const char *text = line + start;
    /* blank lines are not messages */
    if (text[strspn(text, " \t\n")] == '\0') {
        if (c->edit_conv) {
            c->edit_conv = NULL;
            chat_notice(c, false, "edit cancelled: the message stays as it was");
        }
        free(line);
        return;
    }
    if (c->generating || !c->model_ready) {
        /* typing ahead: one message waits for the reply (or the load) */
        if (c->queued || c->edit_conv) {
            chat_notice(c, true, c->queued ? "a message is already queued: Esc on an empty line "
                                             "takes it back"
                                           : "the edited message is sent when the reply ends: "
                                             "Esc or Ctrl-C stops the reply");
            chat_put_input(c, line);
            free(line);
            return;
        }
        c->queued = line;
        c->queued_conv = c->cur;
        if (c->view.queued_changed)
            c->view.queued_changed(c->view.user, line + start);
        chat_notice(c, false, "queued: sent when the %s (Esc on an empty line takes it back)",
                    c->generating ? "reply ends" : "model is ready");
        chat_changed(c);
        return;
    }
    remember_line(c, line);
    if (c->edit_conv == c->cur && c->edit_conv) {
        if (!submit_edit(c, text))
            chat_put_input(c, line);
        free(line);
        return;
    }
    c->edit_conv = NULL;
    struct conv *v = c->cur;
    struct conv_plan plan;
    char *with_file = chat_attach_to(c, text);
    int rc = conversation_user_turn(&v->cv, with_file ? with_file : text, chat_reply_reserve(c),
                                    &plan, err, sizeof err);
    free(with_file);
    if (rc) {
        /* nothing changed: the text stays in the input (and the file attached) */
        chat_notice(c, true, "%s", err);
        chat_put_input(c, line);
        free(line);
        return;
    }
    if (with_file)
        chat_attach_sent(c);
    free(line);
    v->dirty = true;
    if (plan.n_dropped > 0) {
        chat_show_conv(c); /* the dropped messages get their mark */
        v->n_dropped_note = plan.n_dropped; /* said after the reply */
        chat_notice(c, false,
                    "%d earlier message%s dropped from the context to make room (/pin keeps an "
                    "exchange)",
                    plan.n_dropped, plan.n_dropped == 1 ? "" : "s");
    } else {
        struct chat_message m = chat_session_message(v->s, v->s->n_msgs - 1);
        chat_add_message(c, &m);
    }
    chat_start_reply(c);
}

/* ------------------------------------------------------------- the status */

void chat_get_status(struct chat *c, struct chat_status *st, double now)
{
    memset(st, 0, sizeof *st);
    struct conv *v = c->cur;
    st->model = c->model_name;
    st->template_name = v ? v->tpl->name : NULL;
    st->session = v ? v->s->name : NULL;
    st->attached = c->attach.name;
    st->n_past = v ? (int)v->cv.tokens.n : 0;
    st->n_ctx = v ? v->cv.n_ctx : c->n_ctx;
    if (!c->model_ready)
        st->n_ctx = c->n_ctx;
    st->prefill_tps = c->prefill_tps;
    st->decode_tps = c->decode_tps;
    if (c->model_loading && !c->generating) {
        /* a small progress bar: 10 cells */
        char bar[64] = "";
        int cells = (int)(c->load_progress * 10.0f + 0.5f);
        for (int i = 0; i < 10; i++)
            strcat(bar, i < cells ? "█" : "░");
        snprintf(c->state_text, sizeof c->state_text, "loading %.40s %s %d%%", c->load_name, bar,
                 (int)(c->load_progress * 100));
        st->busy = true;
    } else if (c->model_loading) {
        /* the current model answers while the next one loads */
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · loading %.24s %d%%",
                 c->reply_n_ids, c->load_name, (int)(c->load_progress * 100));
        st->busy = true;
    } else if (c->generating && !c->got_token) {
        snprintf(c->state_text, sizeof c->state_text, "prefill %d%%",
                 (int)(c->prefill_progress * 100));
        st->hint = CHAT_HINT_STOP;
        st->busy = true;
    } else if (c->generating && c->queued) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu · 1 queued",
                 c->reply_n_ids);
        st->hint = CHAT_HINT_UNQUEUE;
        st->busy = true;
    } else if (c->generating) {
        snprintf(c->state_text, sizeof c->state_text, "generating %zu", c->reply_n_ids);
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
    if (v && c->model_ready && near_full(c, v, &pct)) {
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

/* ------------------------------------------------------------- accessors */

int chat_wake_fd(const struct chat *c)
{
    return elm_worker_wake_fd(c->worker);
}

bool chat_generating(const struct chat *c)
{
    return c->generating;
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
    return c->model_name;
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
        .model_loading = c->model_loading,
        .generating = c->generating,
        .prefilling = c->prefill_req != 0,
        .saving = c->n_kv_saves > 0,
        .reply_ids = c->reply_n_ids,
        .n_tokens = c->cur ? c->cur->cv.tokens.n : 0,
    };
}

const struct elm_model_info *chat_model_info(const struct chat *c)
{
    return c->info;
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

/* --------------------------------------------------------- life and death */

/* ELMCHAT_MEM_BUDGET: what the worker keeps (models and the caches of the
 * open sessions; the least recently used go first): bytes, or with K, M
 * or G. */
static bool parse_mem_budget(const char *budget, uint64_t *out, char *err, size_t err_size)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(budget, &end, 10);
    int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
                : *end == 'G' || *end == 'g' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == budget || *end || v == 0 || v > (UINT64_MAX >> shift)) {
        snprintf(err, err_size, "ELMCHAT_MEM_BUDGET: '%s' is not a size (bytes, or NK, NM, NG)",
                 budget);
        return false;
    }
    *out = (uint64_t)v << shift;
    return true;
}

/* The session the chat starts with (-s NAME, else a new one), with the
 * command line's system prompt, template choice and sampling. */
static bool same_text(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static struct session *first_session(struct chat *c, bool *changed, char *err, size_t err_size)
{
    const struct chat_options *opt = &c->opt;
    struct session *s;
    if (opt->continue_last) {
        char *last = chat_last_session_name();
        if (!last) {
            snprintf(err, err_size, "no saved conversation to continue (elmchat without -c "
                                    "starts a new one)");
            return NULL;
        }
        s = chat_session_load(last, false, err, err_size);
        free(last);
        if (!s)
            return NULL;
    } else if (opt->session_name) {
        s = chat_session_load(opt->session_name, true, err, err_size);
        if (!s)
            return NULL;
    } else {
        char *name = chat_auto_session_name();
        s = session_new(name);
        free(name);
    }
    /* what the command line changes is saved with it; nothing else is */
    struct sampling was;
    memcpy(&was, &s->sampling, sizeof was); /* padding too: compared with memcmp */
    *changed = (opt->system && !same_text(s->system, opt->system)) ||
               (opt->template_name && !same_text(s->template_name, opt->template_name));
    if (opt->system) {
        free(s->system);
        s->system = x_strdup(opt->system);
        free(s->role);
        s->role = NULL;
    } else if (opt->role) {
        struct role_preset *r = role_load(opt->role, err, err_size);
        if (!r) {
            session_free(s);
            return NULL;
        }
        *changed = *changed || !same_text(s->system, r->system) || !same_text(s->role, r->name);
        free(s->system);
        s->system = x_strdup(r->system);
        free(s->role);
        s->role = x_strdup(r->name);
        role_free(r);
    }
    if (opt->template_name) {
        free(s->template_name);
        s->template_name = NULL;
    }
    chat_apply_cli_sampling(c, s);
    *changed = *changed || memcmp(&was, &s->sampling, sizeof was) != 0;
    return s;
}

/* The model: -m, else the session's own (its model:), else the default.
 * A session's model that cannot be opened gives way to the default, and
 * note says why and which one is used. */
static bool init_model(struct chat *c, const struct session *s, char **note, char *err,
                       size_t err_size)
{
    const char *arg = c->opt.common.model;
    if (arg || !s->model)
        return chat_model_init(c, arg ? arg : c->cfg.default_model, err, err_size);
    if (chat_model_init(c, s->model, err, err_size))
        return true;
    char why[1024];
    snprintf(why, sizeof why, "%s", err);
    free(c->model_arg);
    c->model_arg = NULL;
    free(c->tokenizer_from);
    c->tokenizer_from = NULL;
    if (!chat_model_init(c, c->cfg.default_model, err, err_size))
        return false;
    *note = x_asprintf(
             "This conversation was with %s, which cannot be opened (%s): it goes on with %s. "
             "The session keeps %s as its model (-m NAME or /model NAME chooses another).",
             s->model, why, c->model_name, s->model);
    return true;
}

bool chat_init(struct chat *c, const struct chat_options *opt, const struct chat_view *view,
               char *err, size_t err_size)
{
    memset(c, 0, sizeof *c);
    c->opt = *opt;
    if (view)
        c->view = *view;
    c->markdown_off = opt->raw;
    c->lookup_off = opt->common.no_lookup;
    if (opt->raw && c->view.markdown_changed)
        c->view.markdown_changed(c->view.user, false);
    config_init(&c->cfg);
    if (config_load(&c->cfg, NULL, err, err_size) != 0)
        return false;
    c->policy = conv_policy_from_config(&c->cfg);
    const char *budget = getenv("ELMCHAT_MEM_BUDGET");
    if (budget && *budget && !parse_mem_budget(budget, &c->mem_budget, err, err_size))
        return false;
    /* The session first: it names its model and may name its template. */
    bool cli_changed = false;
    struct session *s = first_session(c, &cli_changed, err, err_size);
    if (!s)
        return false;
    char *model_note = NULL;
    if (!init_model(c, s, &model_note, err, err_size)) {
        session_free(s);
        return false;
    }
    c->cur = chat_conv_open(c, s, err, err_size);
    if (!c->cur) {
        free(model_note);
        return false;
    }
    /* no view to show it read-only (bench --chat): a clear error instead */
    if (c->cur->read_only && !view) {
        snprintf(err, err_size, "session '%s' is open in another elmchat (pid %ld)", s->name,
                 c->cur->lock_holder);
        free(model_note);
        return false;
    }
    /* what the command line changed in a saved session is saved with it */
    if (cli_changed && s->n_msgs > 0)
        c->cur->dirty = true;
    c->cur->sampling_by_cli = chat_cli_sampling(c, NULL); /* first_session applied them */
    chat_show_conv(c);
    if (model_note)
        chat_info_msg(c, true, model_note);
    free(model_note);

    /* Decoding may run behind the caller's thread (the TUI: a keystroke
     * is drawn at once even while every core computes). */
    struct elm_worker_params wp = elm_worker_default_params();
    wp.mem_budget = c->mem_budget;
    wp.nice = opt->worker_nice;
    c->worker = elm_worker_new(&wp, err, err_size);
    if (!c->worker)
        return false;
    /* what a killed run left half-written (a minute old: no live writer's) */
    const char *kinds[] = {"sessions", "kv"};
    for (int i = 0; i < 2; i++) {
        char *dir = paths_dir(i ? PATHS_CACHE : PATHS_DATA, kinds[i]);
        store_remove_stale_temps(dir, time(NULL) - 60);
        free(dir);
    }
    chat_post_load_model(c);
    const char *draft = opt->common.draft ? opt->common.draft
                                          : config_alias_draft(&c->cfg, c->model_arg);
    if (draft && !chat_set_draft(c, draft, err, err_size))
        return false;
    if (c->bundled && !s->n_msgs) {
        char line[512];
        snprintf(line, sizeof line,
                 "%s is elmchat's own tiny model: it knows elmchat and what 3,000 English words "
                 "mean, nothing else. For real answers load OpenELM: /model PATH (README: "
                 "Getting models). /help lists the commands.",
                 c->model_name);
        chat_info_msg(c, false, line);
    } else if (!s->n_msgs)
        chat_info_msg(c, false, "Type a message and press Enter. /help lists the commands.");
    return true;
}

void chat_save_all(struct chat *c)
{
    if (c->generating && c->gen_conv) {
        /* keep the partial reply, marked interrupted; the worker stops
         * within a layer, before the snapshot is written */
        struct elm_event ev = {.type = ELM_EV_DONE, .reason = ELM_DONE_CANCELLED};
        cancel_reply(c);
        c->gen_req = 0; /* its DONE will be ignored */
        finish_reply(c, &ev);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        chat_save_conv(c, c->convs[i], true);
}

/* The snapshots posted by the last saves are written by the worker: give
 * it a moment (elm_worker_free drops queued requests). */
static void wait_kv_saves(struct chat *c, double limit)
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

void chat_fini(struct chat *c)
{
    chat_pull_fini(c);
    chat_shell_fini(c);
    if (c->worker) {
        chat_save_all(c);
        wait_kv_saves(c, 3.0);
        elm_worker_free(c->worker);
    }
    for (size_t i = 0; i < c->n_convs; i++)
        chat_conv_free(c->convs[i]);
    free(c->convs);
    elm_tokenizer_free(c->tok);
    elm_tokenizer_free(c->load_tok);
    free(c->info);
    free(c->model_arg);
    free(c->load_arg);
    free(c->queued);
    free(c->tokenizer_from);
    free(c->load_tokenizer_from);
    attachment_fini(&c->attach);
    elm_event_fini(&c->pending_ready);
    sbuf_fini(&c->reply_text);
    config_fini(&c->cfg);
    memset(c, 0, sizeof *c);
}
