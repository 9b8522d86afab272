/* request_generate.c: GENERATE: keep the longest cached prefix (ELM_GEN_SYNC),
 * prefill the rest in chunks (progress, cancel between chunks), then
 * elm_generate with the pacing and cancel hooks; the DONE event's figures. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/base/test_hooks.h"
#include "engine/elm_tokenizer.h"
#include "engine/worker/shared_state.h"

static void done_generate(elm_worker *w, struct slot_ctx *sc, enum elm_done_reason reason,
                          elm_status st, const char *msg)
{
    struct elm_event *ev = wk_final_ev(w);
    ev->type = ELM_EV_DONE;
    ev->reason = reason;
    ev->status = st;
    if (sc) {
        ev->n_past = elm_ctx_n_past(sc->ctx);
        ev->n_ctx = elm_ctx_n_ctx(sc->ctx);
    }
    if (reason == ELM_DONE_ERROR)
        wk_set_text(ev, "%s", msg && *msg ? msg : elm_status_str(st));
    wk_finish(w);
}

/* Feed n tokens in chunks.  Returns ELM_OK or the first failure; on
 * failure the cache keeps the chunks already done. */
static elm_status prefill(elm_worker *w, struct slot_ctx *sc, const int32_t *toks, int n)
{
    w->in_prefill = n > 1;
    w->pf_total = n;
    w->pf_done = 0;
    w->pf_layers = w->cur->info->n_layers;
    w->pf_last_emit = now_sec();
    elm_status st = ELM_OK;
    while (w->pf_done < n) {
        int m = n - w->pf_done < PREFILL_CHUNK ? n - w->pf_done : PREFILL_CHUNK;
        w->pf_chunk = m;
        w->pf_polls = 0;
        st = elm_decode(sc->ctx, toks + w->pf_done, m, sc->logits, 0);
        if (st != ELM_OK)
            break;
        w->pf_done += m;
        sc->logits_at = elm_ctx_n_past(sc->ctx);
    }
    if (st == ELM_OK && w->in_prefill)
        wk_emit_progress(w, w->run, ELM_EV_PREFILL_PROGRESS, 1.0f);
    w->in_prefill = false;
    return st;
}

/* The token-interval test hook: sleep until since + ms, in short naps
 * so that a cancel or shutdown ends the wait at once. */
static void pace_wait(elm_worker *w, double since, int ms)
{
    double until = since + ms * 1e-3;
    for (;;) {
        double left = until - now_sec();
        if (left <= 0 || wk_cancelled(w))
            return;
        if (left > 0.005)
            left = 0.005;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* The reply test hook (test_hooks.h): a script's ids, then EOS, in place
 * of the sampled ones.  Before each sample every other logit goes far down
 * (finite: the loop refuses infinite ones), so that the sampler, whatever
 * its settings, picks the script's id; the decode, pacing, cancel, stop
 * strings and events run as for a sampled reply.  The model's own logits
 * of the last step are put back afterwards: the cache keeps them. */
struct script {
    int32_t *ids;
    size_t n, at;
    int32_t eos;
    float *logits, *saved; /* the loop's logits; the model's, before steering */
    int n_vocab;
    bool steered;
};

/* The script of $reply_file's text, tokenized; false: none (the hook is
 * off, the file unreadable, no tokenizer, out of memory). */
static bool script_open(struct script *s, const char *reply_file, const elm_tokenizer *tok,
                        float *logits, const struct elm_model_info *info)
{
    *s = (struct script){0};
    if (!reply_file || !tok)
        return false;
    FILE *f = fopen(reply_file, "rb");
    if (!f)
        return false;
    char buf[16384];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    s->saved = malloc((size_t)info->n_vocab * sizeof *s->saved);
    if (!s->saved || elm_tokenize(tok, buf, len, false, &s->ids, &s->n) != ELM_OK) {
        free(s->saved);
        return false;
    }
    s->eos = info->eos_id;
    s->logits = logits;
    s->n_vocab = info->n_vocab;
    return true;
}

static void script_steer(struct script *s)
{
    int32_t id = s->at < s->n ? s->ids[s->at] : s->eos;
    s->at++;
    memcpy(s->saved, s->logits, (size_t)s->n_vocab * sizeof *s->saved);
    s->steered = true;
    for (int i = 0; i < s->n_vocab; i++)
        s->logits[i] = i == id ? 0.0f : -1e20f;
}

static void script_close(struct script *s)
{
    if (s->steered)
        memcpy(s->logits, s->saved, (size_t)s->n_vocab * sizeof *s->logits);
    free(s->ids);
    free(s->saved);
}

/* elm_generate's hooks: TOKEN events, and before each sample the pacing
 * wait (the token-interval test hook), the cancel check and the script. */
struct gen_pace {
    elm_worker *w;
    int interval_ms;
    int n_sampled;
    double last;
    struct script *script; /* NULL: sampled */
};

static void gen_on_token(void *user, int32_t id, const char *text, size_t len)
{
    struct gen_pace *g = user;
    if (id >= 0)
        wk_emit_token(g->w, &id, 1, text, len);
    else
        wk_emit_token(g->w, NULL, 0, text, len);
}

static bool gen_should_stop(void *user)
{
    struct gen_pace *g = user;
    if (g->interval_ms > 0 && g->n_sampled > 0) {
        pace_wait(g->w, g->last, g->interval_ms);
        g->last = now_sec();
    } else if (g->n_sampled == 0) {
        g->last = now_sec();
    }
    g->n_sampled++;
    if (wk_cancelled(g->w))
        return true;
    if (g->script)
        script_steer(g->script);
    return false;
}

static enum elm_done_reason done_reason_of(enum elm_stop_reason r)
{
    switch (r) {
    case ELM_STOP_EOS: return ELM_DONE_EOS;
    case ELM_STOP_LENGTH: return ELM_DONE_LENGTH;
    case ELM_STOP_ID: return ELM_DONE_STOP;
    case ELM_STOP_STRING: return ELM_DONE_STOP_STRING;
    case ELM_STOP_CANCELLED: return ELM_DONE_CANCELLED;
    case ELM_STOP_CONTEXT_FULL: return ELM_DONE_CONTEXT_FULL;
    case ELM_STOP_ERROR: break;
    }
    return ELM_DONE_ERROR;
}

void wk_do_generate(elm_worker *w)
{
    const struct elm_request *rq = &w->run->req;
    struct slot_ctx *sc = NULL;
    char err[ELM_ERR_MAX];
    err[0] = '\0';

    if (wk_cancelled(w)) {
        done_generate(w, wk_slot_find(w->cur, rq->slot), ELM_DONE_CANCELLED, ELM_OK, NULL);
        return;
    }
    if (!w->cur) {
        done_generate(w, NULL, ELM_DONE_ERROR, ELM_E_INVALID, "no model loaded");
        return;
    }
    if (rq->n_tokens < 0 || (rq->n_tokens > 0 && !rq->tokens) || rq->max_tokens < 0) {
        done_generate(w, NULL, ELM_DONE_ERROR, ELM_E_INVALID, "bad GENERATE request");
        return;
    }
    elm_status st = wk_slot_get(w, rq->slot, &sc, err, sizeof err);
    if (st != ELM_OK) {
        done_generate(w, NULL, ELM_DONE_ERROR, st, err);
        return;
    }
    int n_past = elm_ctx_n_past(sc->ctx);
    int n_ctx = elm_ctx_n_ctx(sc->ctx);
    const int32_t *cached = elm_ctx_tokens(sc->ctx);

    /* What to keep, what to feed. */
    int keep;
    const int32_t *feed = rq->tokens;
    int n_feed = rq->n_tokens;
    int32_t refeed;
    if (rq->flags & ELM_GEN_SYNC) {
        keep = 0;
        while (keep < n_past && keep < rq->n_tokens && cached[keep] == rq->tokens[keep])
            keep++;
        if (keep == rq->n_tokens && keep > 0 && rq->max_tokens > 0 &&
            !(keep == n_past && sc->logits_at == keep))
            keep--; /* logits needed: recompute the last token */
        feed = rq->tokens + keep;
        n_feed = rq->n_tokens - keep;
    } else {
        keep = rq->n_keep >= 0 ? rq->n_keep : n_past;
        if (keep > n_past) {
            snprintf(err, sizeof err, "n_keep %d > n_past %d", keep, n_past);
            done_generate(w, sc, ELM_DONE_ERROR, ELM_E_INVALID, err);
            return;
        }
        if (n_feed == 0 && rq->max_tokens > 0 && sc->logits_at != keep && keep > 0) {
            refeed = cached[keep - 1];
            keep--;
            feed = &refeed;
            n_feed = 1;
        }
    }
    if (n_feed == 0 && rq->max_tokens > 0 && sc->logits_at != keep) {
        done_generate(w, sc, ELM_DONE_ERROR, ELM_E_INVALID, "nothing to sample from (empty cache)");
        return;
    }
    if (keep + n_feed > n_ctx) {
        done_generate(w, sc, ELM_DONE_CONTEXT_FULL, ELM_E_CONTEXT_FULL, NULL);
        return;
    }
    if (keep < n_past) {
        st = elm_ctx_truncate(sc->ctx, keep);
        if (st != ELM_OK) {
            done_generate(w, sc, ELM_DONE_ERROR, st, "truncate failed");
            return;
        }
        if (sc->logits_at > keep)
            sc->logits_at = -1;
    }
    struct elm_event *fev = wk_final_ev(w);
    fev->n_reused = keep;

    double t0 = now_sec();
    st = prefill(w, sc, feed, n_feed);
    double t1 = now_sec();
    fev->n_prefilled = elm_ctx_n_past(sc->ctx) - keep;
    if (fev->n_prefilled > 0 && t1 > t0)
        fev->prefill_tps = fev->n_prefilled / (t1 - t0);
    if (st == ELM_E_ABORTED) {
        done_generate(w, sc, ELM_DONE_CANCELLED, ELM_OK, NULL);
        return;
    }
    if (st != ELM_OK) {
        done_generate(w, sc, ELM_DONE_ERROR, st, "decode failed during prefill");
        return;
    }
    if (rq->max_tokens == 0) {
        done_generate(w, sc, ELM_DONE_OK, ELM_OK, NULL);
        return;
    }

    /* Sampling. */
    struct gen_pace pace = {w, atomic_load(&w->token_interval_ms), 0, 0, NULL};
    struct elm_generate_params gp = elm_generate_default_params();
    gp.sampler = rq->sampler;
    gp.max_tokens = rq->max_tokens;
    gp.stop_ids = rq->stop_ids;
    gp.n_stop_ids = rq->n_stop_ids < ELM_MAX_STOP_IDS ? rq->n_stop_ids : ELM_MAX_STOP_IDS;
    gp.tokenizer = elm_model_tokenizer(w->cur->model);
    if (gp.tokenizer) { /* stop strings are matched on text */
        gp.stop_strings = (const char *const *)rq->stop_strings;
        gp.n_stop_strings = rq->n_stop_strings;
    }
    gp.lookup = !(rq->flags & ELM_GEN_NO_LOOKUP);
    gp.grammar = gp.tokenizer ? rq->grammar : NULL;
    if (!(rq->flags & ELM_GEN_NO_DRAFT))
        gp.draft = wk_draft_ctx(w, rq->slot, elm_ctx_n_ctx(sc->ctx));
    if (gp.draft)
        gp.draft_k = w->test_draft_k;
    gp.lookup_extra = rq->lookup_tokens;
    gp.n_lookup_extra = rq->n_lookup_tokens;
    gp.on_token = gen_on_token;
    gp.should_stop = gen_should_stop;
    gp.user = &pace;
    struct elm_test_hooks hooks; /* none in the shipped program */
    struct script script;
    if (elm_test_hooks(&hooks) &&
        script_open(&script, hooks.reply_file, gp.tokenizer, sc->logits, w->cur->info)) {
        pace.script = &script;
        gp.lookup = false; /* a script is not sampled: no draft to verify */
        gp.draft = NULL;
    }
    struct elm_generate_result res;
    double t2 = now_sec();
    elm_status fst = elm_generate(sc->ctx, sc->logits, &gp, &res, err, sizeof err);
    if (pace.script)
        script_close(pace.script);
    double t3 = now_sec();
    sc->logits_at = elm_ctx_n_past(sc->ctx);
    enum elm_done_reason reason = done_reason_of(res.reason);
    if (reason == ELM_DONE_CONTEXT_FULL)
        fst = ELM_E_CONTEXT_FULL;
    fev->n_generated = res.n_generated;
    fev->lookup = res.lookup;
    fev->draft = res.draft;
    if (res.n_generated > 0 && t3 > t2)
        fev->decode_tps = res.n_generated / (t3 - t2);
    done_generate(w, sc, reason, fst, err);
}
