/* generate.c: the one sampling loop (elm_generate): sample, report the id
 * and the text that became final, stop or feed the id.  Stop strings are
 * matched here so that every front end holds back the same text. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/platform.h"
#include "engine/base/error.h"
#include "engine/inference/constrain.h"
#include "engine/inference/decode_few.h"
#include "engine/elm.h"
#include "engine/inference/draft.h"
#include "engine/inference/lookup.h"
#include "engine/inference/stop_strings.h"

struct elm_generate_params elm_generate_default_params(void)
{
    struct elm_generate_params p = {0};
    p.sampler = elm_sampler_default_params();
    p.max_tokens = 256;
    p.lookup = true;
    return p;
}

static bool is_stop_id(const struct elm_generate_params *p, int32_t id)
{
    for (int i = 0; i < p->n_stop_ids; i++)
        if (p->stop_ids[i] == id)
            return true;
    return false;
}

static void report(const struct elm_generate_params *p, int32_t id, const char *text, size_t len)
{
    if (p->on_token)
        p->on_token(p->user, id, text, len);
}

/* A model with NaN or infinite weights gives such logits, and a sampler
 * fed them emits token 0 forever: the reply stops with an error instead. */
static bool all_finite(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* The chain's sample, under the grammar when there is one (constrain.h:
 * CONSTRAIN_DONE, CONSTRAIN_ERROR). */
static int32_t sample_next(elm_sampler *smp, struct constrain *gc, float *logits, int n_vocab,
                           const int32_t *history, int n_history)
{
    if (gc)
        return constrain_sample(gc, smp, logits, n_vocab, history, n_history);
    return elm_sampler_sample(smp, logits, n_vocab, history, n_history);
}

/* Ids that come next without a sample of their own: the drafts a pass
 * accepted (already in the cache at pos) and the id the pass sampled after
 * them (not fed).  row: where that id's successor logits are (fed ones). */
struct queued {
    int32_t id;
    bool fed;
    int pos;  /* fed: its position in the cache */
    int row;  /* fed: the logits after it, in rows */
};

struct pass {
    float *rows;              /* (K_MAX + 1) x n_vocab logits of a pass */
    int32_t ids[ELM_LOOKUP_K_MAX + 1];
    struct queued q[ELM_LOOKUP_K_MAX + 1];
    int n_q, at_q;
    /* a plain step's logits of these ids only (constrain_few_next), the
     * others -INFINITY; n_few 0: every logit */
    const int32_t *few;
    int n_few;
};

/* Are the logits the step computed finite? */
static bool step_finite(const float *logits, int n_vocab, const struct pass *ps)
{
    if (ps->n_few == 0)
        return all_finite(logits, n_vocab);
    for (int i = 0; i < ps->n_few; i++)
        if (!isfinite(logits[ps->few[i]]))
            return false;
    return true;
}

/* Feed id (at the cache's end), with a lookup draft when there is one:
 * returns the status; on return `logits` are those after the cache's last
 * token, and pass->q holds what the drafts gave (empty: a plain step, the
 * next id is to be sampled). */
static elm_status feed(elm_ctx *ctx, int32_t id, float *logits, float *scratch, int n_vocab,
                       elm_sampler *smp, struct constrain *gc, const struct elm_generate_params *p,
                       struct elm_lookup *lookup, struct elm_lookup *drafting, struct pass *ps)
{
    ps->n_q = ps->at_q = 0;
    ps->n_few = 0;
    int base = elm_ctx_n_past(ctx), n_ctx = elm_ctx_n_ctx(ctx);
    int k = 0;
    int room = n_ctx - base - 1;
    struct elm_lookup *lk = lookup;
    double t0 = elm_now_seconds(), draft_steps_s = -1;
    /* two plain steps first: what a token costs without drafts, the
     * break-even of both */
    bool calibrated = lookup->n_plain >= 2;
    bool want_lookup = p->lookup && !lookup->off && calibrated;
    bool want_draft = p->draft && !drafting->off && calibrated;
    if (ps->rows && room > 0 && (want_lookup || want_draft)) {
        /* the sequence with id: the key of lookup, the prompt of the draft */
        /* room for a draft model's ids after it (draft.h) */
        int32_t *h = malloc(((size_t)base + 1 + ELM_LOOKUP_K_MAX) * sizeof *h);
        if (h) {
            memcpy(h, elm_ctx_tokens(ctx), (size_t)base * sizeof *h);
            h[base] = id;
            if (want_lookup) {
                int max = lookup->k < room ? lookup->k : room;
                k = elm_lookup_draft(h, base + 1, p->lookup_extra, p->n_lookup_extra, max,
                                     ps->ids + 1);
            }
            if (k == 0 && want_draft) {
                lk = drafting;
                t0 = elm_now_seconds(); /* the draft's own steps are part of the pass */
                int max = drafting->k < room ? drafting->k : room;
                double catchup = 0;
                k = elm_draft_propose(p->draft, smp, h, base + 1, max, ps->ids + 1, scratch,
                                      &catchup);
                draft_steps_s = elm_now_seconds() - t0 - catchup;
                /* the first catch-up is the new prompt, work of the turn's
                 * (like the model's own prefill), not a cost per token */
                if (drafting->n_passes == 0)
                    t0 += catchup;
            }
            free(h);
        }
    }
    if (gc && k > 0) /* drafts the grammar refuses could never be kept */
        k = constrain_drafts(gc, ps->ids + 1, k);
    if (k == 0) {
        t0 = elm_now_seconds();
        const int32_t *few = NULL;
        int n_few = gc ? constrain_few_next(gc, &few) : 0;
        elm_status st = n_few > 0 ? elm_decode_few(ctx, id, logits, few, n_few)
                                  : elm_decode(ctx, &id, 1, logits, 0);
        if (st == ELM_OK) {
            ps->few = few;
            ps->n_few = n_few;
        }
        if (st == ELM_OK && ps->rows) {
            double t = elm_now_seconds() - t0;
            elm_lookup_plain(lookup, t);
            elm_lookup_plain(drafting, t);
        }
        return st;
    }
    ps->ids[0] = id;
    double tv = elm_now_seconds();
    elm_status st = elm_decode(ctx, ps->ids, k + 1, ps->rows, ELM_DECODE_ALL_LOGITS);
    if (st != ELM_OK)
        return st;
    if (draft_steps_s >= 0)
        elm_lookup_draft_costs(lk, k, draft_steps_s, elm_now_seconds() - tv);
    /* Each draft against the model's own sample there (a draft is a point
     * mass: keeping it when the sample equals it gives exactly the model's
     * distribution); the first miss is the next id. */
    int accepted = 0;
    int32_t next = -1;
    for (int i = 0; i <= k; i++) {
        if (!all_finite(ps->rows + (size_t)i * (size_t)n_vocab, n_vocab)) {
            /* the plain step that follows says what is wrong */
            elm_ctx_truncate(ctx, base + 1 + i);
            memcpy(logits, ps->rows + (size_t)i * (size_t)n_vocab,
                   (size_t)n_vocab * sizeof *logits);
            elm_lookup_pass(lk, k, accepted, elm_now_seconds() - t0);
            return ELM_OK;
        }
        memcpy(scratch, ps->rows + (size_t)i * (size_t)n_vocab, (size_t)n_vocab * sizeof *scratch);
        int32_t t = sample_next(smp, gc, scratch, n_vocab, elm_ctx_tokens(ctx), base + 1 + i);
        if (i < k && t == ps->ids[i + 1]) {
            ps->q[ps->n_q++] = (struct queued){t, true, base + 1 + i, i + 1};
            accepted++;
            continue;
        }
        next = t;
        break;
    }
    if (accepted < k)
        elm_ctx_truncate(ctx, base + 1 + accepted);
    ps->q[ps->n_q++] = (struct queued){next, false, 0, 0};
    memcpy(logits, ps->rows + (size_t)accepted * (size_t)n_vocab, (size_t)n_vocab * sizeof *logits);
    elm_lookup_pass(lk, k, accepted, elm_now_seconds() - t0);
    return ELM_OK;
}

elm_status elm_generate(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                        struct elm_generate_result *res, char *err, size_t err_size)
{
    *res = (struct elm_generate_result){.reason = ELM_STOP_LENGTH};
    if (!ctx || !logits || !p || p->max_tokens < 1 || (p->n_stop_ids > 0 && !p->stop_ids) ||
        p->draft_k < 0 || p->draft_k > ELM_DRAFT_MAX ||
        (p->n_stop_strings > 0 && (!p->stop_strings || !p->tokenizer)) ||
        (p->grammar && !p->tokenizer)) {
        res->reason = ELM_STOP_ERROR;
        return elm_set_error(err, err_size, ELM_E_INVALID, "bad generation parameters");
    }
    const struct elm_model_info *info = elm_model_get_info(elm_ctx_model(ctx));
    int n_vocab = info->n_vocab;
    int n_ctx = elm_ctx_n_ctx(ctx);
    float *scratch = malloc((size_t)n_vocab * sizeof *scratch);
    elm_sampler *smp = elm_sampler_new(&p->sampler);
    struct holdback held = {0};
    struct elm_lookup lk, dk;
    elm_lookup_init(&lk);
    elm_lookup_init_model(&dk);
    elm_status st = ELM_OK;
    /* A draft step must cost a fraction of the model's for drafts to pay:
     * one half the model's size or more (the model itself) never does, and
     * its catch-up on the prompt alone would cost a short reply time. */
    if (p->draft && 2 * elm_model_get_info(elm_ctx_model(p->draft))->weight_bytes >
                        info->weight_bytes)
        dk.off = true;
    if (p->draft_k > 0) {
        elm_lookup_fix(&lk, p->draft_k);
        elm_lookup_fix(&dk, p->draft_k);
    }
    struct constrain *gc = NULL;
    struct pass ps = {0};
    if (p->lookup || p->draft)
        ps.rows = malloc((size_t)(ELM_LOOKUP_K_MAX + 1) * (size_t)n_vocab * sizeof *ps.rows);
    if (!scratch || !smp) {
        st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        res->reason = ELM_STOP_ERROR;
        goto out;
    }
    if (p->grammar && !(gc = constrain_new(p, info->eos_id, err, err_size))) {
        res->reason = ELM_STOP_ERROR;
        st = ELM_E_INVALID;
        goto out;
    }
    struct elm_detok_stream ds;
    if (p->tokenizer)
        elm_detok_stream_init(&ds, p->tokenizer);
    char piece[256];

    for (;;) {
        if (p->should_stop && p->should_stop(p->user)) {
            res->reason = ELM_STOP_CANCELLED;
            /* drafts a pass fed but the reply never showed leave the cache */
            if (ps.at_q < ps.n_q && ps.q[ps.at_q].fed) {
                elm_ctx_truncate(ctx, ps.q[ps.at_q].pos);
                memcpy(logits, ps.rows + (size_t)(ps.q[ps.at_q].row - 1) * (size_t)n_vocab,
                       (size_t)n_vocab * sizeof *logits);
                ps.n_few = 0; /* every logit again */
            }
            break;
        }
        int32_t id;
        const struct queued *qd = ps.at_q < ps.n_q ? &ps.q[ps.at_q++] : NULL;
        if (qd) {
            id = qd->id;
        } else {
            if (!step_finite(logits, n_vocab, &ps)) {
                res->reason = ELM_STOP_ERROR;
                st = elm_set_error(err, err_size, ELM_E_INVALID,
                                   "%s computes NaN or infinite logits: its weights are damaged "
                                   "(elmchat info --check %s names the tensors)",
                                   info->name, info->name);
                break;
            }
            /* the sampler works in place: logits must stay those of the cache */
            memcpy(scratch, logits, (size_t)n_vocab * sizeof *scratch);
            id = sample_next(smp, gc, scratch, n_vocab, elm_ctx_tokens(ctx),
                             elm_ctx_n_past(ctx));
        }
        if (id == CONSTRAIN_DONE) { /* the grammar is complete, no end id may come */
            res->reason = ELM_STOP_EOS;
            break;
        }
        if (id == CONSTRAIN_ERROR) {
            res->reason = ELM_STOP_ERROR;
            st = elm_set_error(err, err_size, ELM_E_INVALID, "grammar: %s", constrain_error(gc));
            break;
        }
        if (id < 0 || id >= n_vocab) {
            res->reason = ELM_STOP_ERROR;
            st = elm_set_error(err, err_size, ELM_E_INVALID, "sampler returned id %d", (int)id);
            break;
        }
        res->n_generated++;
        size_t len = p->tokenizer ? elm_detok_stream_push(&ds, id, piece, sizeof piece) : 0;
        bool end = false;
        if (p->n_stop_strings > 0) {
            if (!holdback_add(&held, piece, len)) {
                res->reason = ELM_STOP_ERROR;
                st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
                break;
            }
            const char *hit;
            size_t final = holdback_final(&held, p->stop_strings, p->n_stop_strings, &hit);
            report(p, id, held.buf, final);
            holdback_drop(&held, final);
            if (hit) {
                held.n = 0; /* the stop string and what follows never come */
                res->reason = ELM_STOP_STRING;
                res->stop_string = hit;
                end = true;
            }
        } else {
            report(p, id, piece, len);
        }
        if (!end && id == info->eos_id && !p->ignore_eos) {
            res->reason = ELM_STOP_EOS;
            end = true;
        }
        if (!end && is_stop_id(p, id)) {
            res->reason = ELM_STOP_ID;
            end = true;
        }
        if (!end && res->n_generated >= p->max_tokens) {
            res->reason = ELM_STOP_LENGTH;
            end = true;
        }
        if (end) {
            /* the id that ends the reply is not fed: a draft a pass fed goes */
            if (qd && qd->fed) {
                elm_ctx_truncate(ctx, qd->pos);
                memcpy(logits, ps.rows + (size_t)(qd->row - 1) * (size_t)n_vocab,
                       (size_t)n_vocab * sizeof *logits);
                ps.n_few = 0; /* every logit again */
            }
            break;
        }
        if (qd && qd->fed)
            continue; /* in the cache already */
        if (elm_ctx_n_past(ctx) >= n_ctx) {
            res->reason = ELM_STOP_CONTEXT_FULL;
            break;
        }
        elm_status dst = feed(ctx, id, logits, scratch, n_vocab, smp, gc, p, &lk, &dk, &ps);
        if (dst == ELM_E_ABORTED) {
            res->reason = ELM_STOP_CANCELLED;
            break;
        }
        if (dst != ELM_OK) {
            res->reason = ELM_STOP_ERROR;
            st = elm_set_error(err, err_size, dst, "decode failed: %s", elm_status_str(dst));
            break;
        }
    }
    if (p->tokenizer && res->reason != ELM_STOP_STRING) {
        size_t len = elm_detok_stream_flush(&ds, piece, sizeof piece);
        if (len && !holdback_add(&held, piece, len) && st == ELM_OK) {
            res->reason = ELM_STOP_ERROR;
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        }
        /* the end: a partial stop string is just text */
        if (held.n > 0)
            report(p, -1, held.buf, held.n);
    }
    /* the last step computed only the ids the grammar allowed: the cache's
     * logits are kept whole (a later call goes on from them) */
    if (ps.n_few > 0 && elm_decode_head_rest(ctx, logits) != ELM_OK && st == ELM_OK) {
        res->reason = ELM_STOP_ERROR;
        st = elm_set_error(err, err_size, ELM_E_INVALID, "the last logits were lost");
    }
out:
    if (gc)
        constrain_stats(gc, &res->grammar);
    constrain_free(gc);
    res->lookup = elm_lookup_stats(&lk);
    res->draft = elm_lookup_stats(&dk);
    res->lookup_profile = lk.profile;
    res->draft_profile = dk.profile;
    free(ps.rows);
    free(held.buf);
    free(scratch);
    elm_sampler_free(smp);
    return st;
}
