/* generate.c: the one sampling loop (elm_generate): sample, report the id
 * and the text that became final, stop or feed the id.  Stop strings are
 * matched here so that every front end holds back the same text. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/elm.h"
#include "engine/inference/generate_testing.h"

/* Text not reported yet because it may be the start of a stop string. */
struct holdback {
    char *buf;
    size_t n, cap;
};

static bool holdback_add(struct holdback *h, const char *s, size_t len)
{
    if (h->n + len + 1 > h->cap) {
        size_t cap = (h->n + len + 1) * 2;
        char *p = realloc(h->buf, cap);
        if (!p)
            return false;
        h->buf = p;
        h->cap = cap;
    }
    memcpy(h->buf + h->n, s, len);
    h->n += len;
    h->buf[h->n] = '\0';
    return true;
}

static void holdback_drop(struct holdback *h, size_t n)
{
    memmove(h->buf, h->buf + n, h->n - n);
    h->n -= n;
    h->buf[h->n] = '\0';
}

/* How much of the held text is final: up to the first full stop string
 * (*hit set), else up to the first suffix that begins a stop string. */
static size_t holdback_final(const struct holdback *h, const char *const *stops, int n_stops,
                             const char **hit)
{
    size_t final = h->n;
    *hit = NULL;
    for (int i = 0; i < n_stops; i++) {
        const char *s = stops[i];
        size_t sl = strlen(s);
        if (sl == 0)
            continue;
        const char *at = strstr(h->buf, s);
        if (at && (size_t)(at - h->buf) < final) {
            final = (size_t)(at - h->buf);
            *hit = s;
        }
    }
    if (*hit)
        return final;
    for (int i = 0; i < n_stops; i++) {
        const char *s = stops[i];
        size_t sl = strlen(s);
        for (size_t k = sl > 0 ? sl - 1 : 0; k > 0; k--) {
            if (k <= h->n && memcmp(h->buf + h->n - k, s, k) == 0) {
                if (h->n - k < final)
                    final = h->n - k;
                break;
            }
        }
    }
    return final;
}

struct elm_generate_params elm_generate_default_params(void)
{
    struct elm_generate_params p = {0};
    p.sampler = elm_sampler_default_params();
    p.max_tokens = 256;
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

/* forced (test hook, generate_testing.h): these ids in place of the
 * sampled ones, then EOS. */
static elm_status generate(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                           const int32_t *forced, size_t n_forced,
                           struct elm_generate_result *res, char *err, size_t err_size)
{
    *res = (struct elm_generate_result){ELM_STOP_LENGTH, 0, NULL};
    if (!ctx || !logits || !p || p->max_tokens < 1 || (p->n_stop_ids > 0 && !p->stop_ids) ||
        (p->n_stop_strings > 0 && (!p->stop_strings || !p->tokenizer))) {
        res->reason = ELM_STOP_ERROR;
        return elm_set_error(err, err_size, ELM_E_INVALID, "bad generation parameters");
    }
    const struct elm_model_info *info = elm_model_get_info(elm_ctx_model(ctx));
    int n_vocab = info->n_vocab;
    int n_ctx = elm_ctx_n_ctx(ctx);
    float *scratch = malloc((size_t)n_vocab * sizeof *scratch);
    elm_sampler *smp = elm_sampler_new(&p->sampler);
    struct holdback held = {0};
    elm_status st = ELM_OK;
    if (!scratch || !smp) {
        st = elm_set_error(err, err_size, ELM_E_NOMEM, "out of memory");
        res->reason = ELM_STOP_ERROR;
        goto out;
    }
    struct elm_detok_stream ds;
    if (p->tokenizer)
        elm_detok_stream_init(&ds, p->tokenizer);
    char piece[256];

    for (;;) {
        if (p->should_stop && p->should_stop(p->user)) {
            res->reason = ELM_STOP_CANCELLED;
            break;
        }
        /* the sampler works in place: logits must stay those of the cache */
        memcpy(scratch, logits, (size_t)n_vocab * sizeof *scratch);
        int32_t id = elm_sampler_sample(smp, scratch, n_vocab, elm_ctx_tokens(ctx),
                                        elm_ctx_n_past(ctx));
        if (forced)
            id = (size_t)res->n_generated < n_forced ? forced[res->n_generated] : info->eos_id;
        if (id < 0 || id >= n_vocab) {
            res->reason = ELM_STOP_ERROR;
            st = elm_set_error(err, err_size, ELM_E_INVALID, "sampler returned id %d", (int)id);
            break;
        }
        res->n_generated++;
        size_t len = p->tokenizer ? elm_detok_stream_push(&ds, id, piece, sizeof piece) : 0;
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
                break;
            }
        } else {
            report(p, id, piece, len);
        }
        if (id == info->eos_id && !p->ignore_eos) {
            res->reason = ELM_STOP_EOS;
            break;
        }
        if (is_stop_id(p, id)) {
            res->reason = ELM_STOP_ID;
            break;
        }
        if (res->n_generated >= p->max_tokens) {
            res->reason = ELM_STOP_LENGTH;
            break;
        }
        if (elm_ctx_n_past(ctx) >= n_ctx) {
            res->reason = ELM_STOP_CONTEXT_FULL;
            break;
        }
        elm_status dst = elm_decode(ctx, &id, 1, logits, 0);
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
out:
    free(held.buf);
    free(scratch);
    elm_sampler_free(smp);
    return st;
}

elm_status elm_generate(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                        struct elm_generate_result *res, char *err, size_t err_size)
{
    return generate(ctx, logits, p, NULL, 0, res, err, err_size);
}

elm_status elm_generate_scripted(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                                 const int32_t *ids, size_t n_ids,
                                 struct elm_generate_result *res, char *err, size_t err_size)
{
    static const int32_t none[1] = {0};
    return generate(ctx, logits, p, ids ? ids : none, ids ? n_ids : 0, res, err, err_size);
}
