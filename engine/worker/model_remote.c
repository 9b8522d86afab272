/* model_remote.c: a llama-server as the worker's model: the remote kind of
 * model_kind.h (the server itself: remote_server.c) and its requests:
 * GENERATE as one streamed /completion on the server slot the worker slot
 * owns (the server keeps the common prefix itself, cache_prompt, so the
 * whole sequence is sent and its counts are what DONE reports), and the
 * cache requests as slot actions. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/elm_tokenizer.h"
#include "engine/inference/stop_strings.h"
#include "engine/worker/model_kind.h"
#include "engine/worker/remote_server.h"

/* --------------------------------------------------------------- GENERATE */

struct stream {
    elm_worker *w;
    struct remote_model *r;
    const struct elm_request *rq;
    struct lsrv_parser *parser;
    struct elm_detok_stream ds;
    struct holdback held;
    int32_t *ids; /* received, in order */
    int n_ids, cap;
    int n_decoded; /* the server's count so far */
    int limit;     /* the most ids asked for (n_predict): never more, whatever comes */
    bool final;
    struct lsrv_chunk fin;      /* its numbers (the strings are not kept) */
    enum elm_done_reason ended; /* 0, or STOP / STOP_STRING / LENGTH / CONTEXT_FULL:
                                 * we closed it */
    bool failed;
    char err[ELM_ERR_MAX];
    int interval_ms; /* the token-interval test hook */
    double last;
};

static bool push_id(struct stream *s, int32_t id)
{
    if (s->n_ids == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        int32_t *p = realloc(s->ids, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        s->ids = p;
        s->cap = cap;
    }
    s->ids[s->n_ids++] = id;
    return true;
}

static bool is_stop_id(const struct elm_request *rq, int32_t id)
{
    int n = rq->n_stop_ids < ELM_MAX_STOP_IDS ? rq->n_stop_ids : ELM_MAX_STOP_IDS;
    for (int i = 0; i < n; i++)
        if (rq->stop_ids[i] == id)
            return true;
    return false;
}

/* One id of the reply: its TOKEN event (text held back while it may begin
 * a stop string), and whether it ends the reply here. */
static bool take_id(struct stream *s, int32_t id)
{
    const struct elm_request *rq = s->rq;
    if (id < 0 || id >= s->r->srv.n_vocab) {
        snprintf(s->err, sizeof s->err, "the server sent token id %d (vocabulary %d)", (int)id,
                 s->r->srv.n_vocab);
        s->failed = true;
        return false;
    }
    if (rq->max_tokens > 0 && wk_cancelled(s->w))
        return false; /* Esc: nothing more is shown; http_request closes the stream */
    if (s->n_ids >= s->limit) {
        /* one more than asked for (max_tokens, or what the context holds):
         * a server that goes on (a hostile one, one that ignores
         * n_predict) is not followed past it; the id is dropped */
        if (rq->max_tokens == 0) {
            snprintf(s->err, sizeof s->err, "the server sends more tokens than the %d asked for",
                     s->limit);
            s->failed = true;
        } else {
            s->ended = s->n_ids >= rq->max_tokens ? ELM_DONE_LENGTH : ELM_DONE_CONTEXT_FULL;
        }
        return false;
    }
    if (!push_id(s, id)) {
        snprintf(s->err, sizeof s->err, "out of memory");
        s->failed = true;
        return false;
    }
    if (rq->max_tokens == 0)
        return true; /* a prefill: the id is the server's, not a reply */
    if (s->interval_ms > 0) {
        double until = s->last + s->interval_ms * 1e-3;
        while (now_sec() < until && !wk_cancelled(s->w)) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        s->last = now_sec();
    }
    char piece[256];
    size_t len = elm_detok_stream_push(&s->ds, id, piece, sizeof piece);
    if (rq->n_stop_strings > 0) {
        if (!holdback_add(&s->held, piece, len)) {
            snprintf(s->err, sizeof s->err, "out of memory");
            s->failed = true;
            return false;
        }
        const char *hit;
        size_t final = holdback_final(&s->held, (const char *const *)rq->stop_strings,
                                      rq->n_stop_strings, &hit);
        wk_emit_token(s->w, &id, 1, s->held.buf, final);
        holdback_drop(&s->held, final);
        if (hit) {
            s->held.n = 0;
            s->ended = ELM_DONE_STOP_STRING;
            return false;
        }
    } else {
        wk_emit_token(s->w, &id, 1, piece, len);
    }
    if (id != s->r->info.eos_id && is_stop_id(rq, id)) {
        s->ended = ELM_DONE_STOP;
        return false;
    }
    return true;
}

/* The server sends no event for a token that leaves the text ending inside
 * a UTF-8 character (its partial-character rule), so n_decoded jumps: the
 * missing ids made the bytes of this event's text before its own token's.
 * They are byte pieces when the bytes are as many as the ids; otherwise
 * the bytes as byte pieces are the best guess (the text is exact; the next
 * turn recomputes from there if the ids differ from the server's). */
static bool take_gap(struct stream *s, const struct lsrv_chunk *c)
{
    /* the event's own token's bytes: one for a byte piece, else its text */
    size_t own_len = 0;
    if (c->id >= 0 && c->id < s->r->srv.n_vocab) {
        const char *p = elm_tokenizer_piece(s->r->tok, c->id);
        unsigned b;
        if (p && strlen(p) == 6 && sscanf(p, "<0x%2X>", &b) == 1) {
            own_len = 1;
        } else {
            char own[256];
            struct elm_detok_stream probe = s->ds;
            own_len = elm_detok_stream_push(&probe, c->id, own, sizeof own);
        }
    }
    size_t n = strlen(c->content);
    size_t nb = n >= own_len ? n - own_len : 0;
    for (size_t i = 0; i < nb; i++) {
        int32_t id = s->r->byte_id[(unsigned char)c->content[i]];
        if (id < 0)
            continue;
        if (!take_id(s, id))
            return false;
    }
    return true;
}

static bool on_line(void *user, const char *line, size_t len)
{
    struct stream *s = user;
    struct lsrv_chunk c;
    int rc = lsrv_parse_line(s->parser, line, len, &c, s->err, sizeof s->err);
    if (rc == 0)
        return true;
    if (rc < 0) {
        s->failed = true;
        return false;
    }
    int expect = s->n_decoded + (c.id >= 0 ? 1 : 0);
    if (c.n_decoded > expect && !take_gap(s, &c))
        return false;
    if (c.n_decoded > 0)
        s->n_decoded = c.n_decoded;
    if (c.id >= 0 && !take_id(s, c.id))
        return false;
    if (c.final) {
        s->final = true;
        s->fin = c;
        s->fin.content = NULL;
        s->fin.stop_type = strcmp(c.stop_type, "eos") == 0     ? "eos"
                           : strcmp(c.stop_type, "limit") == 0 ? "limit"
                           : strcmp(c.stop_type, "word") == 0  ? "word"
                                                               : "none";
        return false; /* nothing follows the final event */
    }
    return true;
}

static void done_remote(elm_worker *w, struct remote_model *r, enum elm_done_reason reason,
                        elm_status st, int n_past, const char *msg)
{
    struct elm_event *ev = wk_final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = reason;
    ev->status = st;
    ev->n_past = n_past;
    ev->n_ctx = r ? r->n_ctx : 0;
    if (reason == ELM_DONE_ERROR)
        wk_set_text(ev, "%s", msg && *msg ? msg : elm_status_str(st));
    wk_finish(w);
}

static void remote_generate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct remote_model *r = w->cur->remote;
    char err[ELM_ERR_MAX] = "";
    struct remote_slot *sl = remote_slot_owned(r, rq->slot);
    if (wk_cancelled(w)) {
        done_remote(w, r, ELM_DONE_CANCELLED, ELM_OK, sl ? sl->n_held : 0, NULL);
        return;
    }
    if (rq->n_tokens < 0 || (rq->n_tokens > 0 && !rq->tokens) || rq->max_tokens < 0) {
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, 0, "bad GENERATE request");
        return;
    }
    elm_status st = remote_ensure_connected(w, r, err, sizeof err);
    if (st != ELM_OK) {
        done_remote(w, r, st == ELM_E_ABORTED ? ELM_DONE_CANCELLED : ELM_DONE_ERROR, st, 0, err);
        return;
    }
    sl = remote_slot_take(r, rq->slot);
    /* The sequence the slot must hold: the whole of it (ELM_GEN_SYNC), or
     * what it holds cut to n_keep and the request's tokens after it. */
    int keep = 0;
    if (!(rq->flags & ELM_GEN_SYNC)) {
        keep = rq->n_keep >= 0 ? rq->n_keep : sl->n_held;
        if (keep > sl->n_held) {
            snprintf(err, sizeof err, "n_keep %d > n_past %d", keep, sl->n_held);
            done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, sl->n_held, err);
            return;
        }
    }
    int n_prompt = keep + rq->n_tokens;
    int32_t *prompt = malloc((size_t)(n_prompt ? n_prompt : 1) * sizeof *prompt);
    if (!prompt) {
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_NOMEM, 0, NULL);
        return;
    }
    if (keep > 0)
        memcpy(prompt, sl->held, (size_t)keep * sizeof *prompt);
    if (rq->n_tokens > 0)
        memcpy(prompt + keep, rq->tokens, (size_t)rq->n_tokens * sizeof *prompt);
    if (n_prompt == 0) {
        free(prompt);
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, 0, "nothing to sample from (empty cache)");
        return;
    }
    /* The server must never shift its context (that would change the
     * cached sequence behind our back): the reply stops where it is full. */
    if (n_prompt >= r->n_ctx) {
        free(prompt);
        done_remote(w, r, ELM_DONE_CONTEXT_FULL, ELM_E_CONTEXT_FULL, sl->n_held, NULL);
        return;
    }
    int room = r->n_ctx - n_prompt;
    struct lsrv_generate g = {prompt, n_prompt, remote_slot_index(r, sl), 1, rq->sampler, NULL};
    g.n_predict = rq->max_tokens == 0 ? 1 : rq->max_tokens < room ? rq->max_tokens : room;
    g.grammar = elm_grammar_text(rq->grammar);
    char *body = lsrv_completion_body(&g);
    struct stream s = {0};
    s.w = w;
    s.r = r;
    s.rq = rq;
    s.parser = lsrv_parser_new();
    s.limit = g.n_predict;
    s.interval_ms = atomic_load(&w->token_interval_ms);
    s.last = now_sec();
    elm_detok_stream_init(&s.ds, r->tok);
    if (!body || !s.parser) {
        free(body);
        free(prompt);
        lsrv_parser_free(s.parser);
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_NOMEM, 0, NULL);
        return;
    }
    struct http_call call = {"POST", "/completion", body, on_line, &s, remote_should_abort, w};
    long status = 0;
    char *reply = NULL;
    double t0 = now_sec();
    st = http_request(r->http, &call, &status, &reply, err, sizeof err);
    double t1 = now_sec();
    free(body);

    /* The end of the text: a partial stop string is just text. */
    if (rq->max_tokens > 0 && !s.failed &&
        (!s.ended || s.ended == ELM_DONE_LENGTH || s.ended == ELM_DONE_CONTEXT_FULL)) {
        char piece[64];
        size_t len = elm_detok_stream_flush(&s.ds, piece, sizeof piece);
        if (len)
            holdback_add(&s.held, piece, len);
        if (s.held.n > 0)
            wk_emit_token(w, NULL, 0, s.held.buf, s.held.n);
    }
    struct elm_event *fev = wk_final_ev(w);
    fev->n_generated = rq->max_tokens > 0 ? s.n_ids : 0;
    if (fev->n_generated > 0 && t1 > t0 && !s.final)
        fev->decode_tps = fev->n_generated / (t1 - t0);
    /* what the slot holds: the prompt and every id but the last (as the
     * local engine: the id that ends a reply is not fed) */
    int n_fed = s.n_ids > 0 ? s.n_ids - 1 : 0;
    if (rq->max_tokens == 0)
        n_fed = 0;
    enum elm_done_reason reason = ELM_DONE_ERROR;
    const char *msg = err;
    if (s.final) {
        fev->n_prefilled = s.fin.prompt_n > 0 ? s.fin.prompt_n : 0;
        fev->n_reused = s.fin.n_prompt - fev->n_prefilled;
        if (fev->n_reused < 0)
            fev->n_reused = 0;
        fev->prefill_tps = s.fin.prompt_tps;
        fev->decode_tps = rq->max_tokens > 0 ? s.fin.predicted_tps : 0;
        if (s.fin.n_cached - n_prompt >= 0 && s.fin.n_cached - n_prompt <= s.n_ids)
            n_fed = s.fin.n_cached - n_prompt;
        if (rq->max_tokens == 0)
            reason = ELM_DONE_OK;
        else if (strcmp(s.fin.stop_type, "eos") == 0)
            reason = ELM_DONE_EOS;
        else if (strcmp(s.fin.stop_type, "limit") == 0)
            reason = s.n_ids >= rq->max_tokens ? ELM_DONE_LENGTH : ELM_DONE_CONTEXT_FULL;
        else
            reason = ELM_DONE_STOP_STRING;
        st = reason == ELM_DONE_CONTEXT_FULL ? ELM_E_CONTEXT_FULL : ELM_OK;
    } else if (s.ended) {
        reason = s.ended; /* we closed the stream: a stop id or string, the limit */
        st = reason == ELM_DONE_CONTEXT_FULL ? ELM_E_CONTEXT_FULL : ELM_OK;
        n_fed = s.n_ids - 1;
    } else if (s.failed) {
        msg = s.err;
        st = ELM_E_FORMAT;
        r->recheck = true;
    } else if (st == ELM_E_ABORTED) {
        reason = ELM_DONE_CANCELLED; /* the stream is closed: the server stops */
        st = ELM_OK;
    } else if (st == ELM_OK && (status < 200 || status > 299)) {
        lsrv_status_error(r->http, "/completion", status, reply, err, sizeof err);
        st = ELM_E_IO;
        r->recheck = status >= 500;
    } else if (st == ELM_OK) {
        snprintf(err, sizeof err, "%s: the stream ended before the reply did",
                 http_client_url(r->http));
        st = ELM_E_IO;
        r->recheck = true;
    } else {
        r->recheck = true; /* down, broken, timed out: reconnect next time */
    }
    free(reply);
    if (n_fed < 0)
        n_fed = 0;
    if (reason == ELM_DONE_ERROR && !s.final)
        n_fed = 0; /* unknown: the next request sends everything anyway */
    remote_slot_hold(sl, prompt, n_prompt, s.ids, n_fed);
    free(prompt);
    int n_past = reason == ELM_DONE_ERROR ? 0 : sl->n_held;
    if (reason == ELM_DONE_ERROR)
        sl->n_held = 0;
    done_remote(w, r, reason, st, n_past, msg);
    free(s.ids);
    free(s.held.buf);
    lsrv_parser_free(s.parser);
}

/* ------------------------------------------------------------ the cache */

/* The server's file for a snapshot path: a name without folders (the
 * server refuses them), one per path. */
static void slot_file_name(const char *path, char *out, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    snprintf(out, size, "elmchat-%016llx.bin", (unsigned long long)h);
}

static void remote_state(elm_worker *w, bool save)
{
    const struct elm_request *rq = &w->run->req;
    struct remote_model *r = w->cur->remote;
    char err[ELM_ERR_MAX] = "";
    struct remote_slot *sl = remote_slot_owned(r, rq->slot);
    if (!rq->path || !*rq->path) {
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, 0, "no path given");
        return;
    }
    if (!r->srv.snapshots) {
        /* nothing kept on the server: the next turn re-prefills */
        if (save)
            done_remote(w, r, ELM_DONE_OK, ELM_OK, sl ? sl->n_held : 0, NULL);
        else
            done_remote(w, r, ELM_DONE_ERROR, ELM_E_UNSUPPORTED, 0,
                        "the server keeps no KV snapshots (no --slot-save-path)");
        return;
    }
    if (save && (!sl || sl->n_held == 0)) {
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, 0, "the slot has no cache to save");
        return;
    }
    elm_status st = remote_ensure_connected(w, r, err, sizeof err);
    if (st != ELM_OK) {
        done_remote(w, r, ELM_DONE_ERROR, st, 0, err);
        return;
    }
    if (!save)
        sl = remote_slot_take(r, rq->slot);
    char file[64];
    slot_file_name(rq->path, file, sizeof file);
    int n = 0;
    st = lsrv_slot_action(r->http, remote_slot_index(r, sl), save ? "save" : "restore", file,
                          remote_should_abort, w, &n, err, sizeof err);
    if (st != ELM_OK) {
        if (st == ELM_E_IO && !save)
            sl->n_held = 0;
        done_remote(w, r, ELM_DONE_ERROR, st, sl->n_held, err);
        return;
    }
    if (!save)
        sl->n_held = 0; /* its ids: the next GENERATE sends them all */
    done_remote(w, r, ELM_DONE_OK, ELM_OK, save ? sl->n_held : n, NULL);
}

static void remote_truncate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct remote_model *r = w->cur->remote;
    struct remote_slot *sl = remote_slot_owned(r, rq->slot);
    int n_past = sl ? sl->n_held : 0;
    if (rq->n_keep < 0 || rq->n_keep > n_past) {
        char msg[96];
        snprintf(msg, sizeof msg, "cannot truncate %d tokens to %d", n_past, rq->n_keep);
        done_remote(w, r, ELM_DONE_ERROR, ELM_E_INVALID, n_past, msg);
        return;
    }
    if (sl)
        sl->n_held = rq->n_keep; /* the server drops the rest at the next prompt */
    done_remote(w, r, ELM_DONE_OK, ELM_OK, rq->n_keep, NULL);
}

/* ------------------------------------------------------------- the kind */

static const elm_model *remote_draft_target(const struct model_rec *m)
{
    (void)m;
    return NULL; /* a draft runs beside the model's weights, which are on the server */
}

const struct model_kind wk_model_remote = {
    .name = "remote",
    .claims = remote_claims,
    .load = remote_load,
    .unload = remote_unload,
    .adopted = remote_adopted,
    .generate = remote_generate,
    .truncate = remote_truncate,
    .state = remote_state,
    .free_slot = remote_free_slot,
    .draft_target = remote_draft_target,
};
