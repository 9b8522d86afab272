/* fake-engine.c: a stand-in for libelm's model, ctx, sampler, state and
 * tokenizer, so the worker's queue logic is tested in isolation, quickly
 * and deterministically (linked instead of engine/libelm.a).
 *
 * A model path "fake:L=4,V=64,us=50,mb=10" loads a model of L layers and V
 * ids whose decode sleeps us microseconds per layer and per token, polling
 * the abort callback before every layer.  "ld=MS" makes the load take MS
 * milliseconds, polling the load's abort callback every millisecond.  Its greedy continuation is
 * fake_next(last id, position); the EOS id is 2.  Any other path fails
 * with ELM_E_IO.  The tokenizer writes id N as "tN "; ids that are
 * multiples of 10 are held back until the next id or the flush, like an
 * incomplete UTF-8 sequence. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/elm.h"
#include "tests/lib/fake-engine.h"
#include "engine/inference/constrain.h"
#include "engine/inference/decode_few.h"

struct elm_model {
    struct elm_model_info info;
    long us;
};

struct elm_tokenizer {
    int n_vocab;
};

static struct elm_tokenizer fake_tok = {64};

struct elm_ctx {
    const elm_model *model;
    int n_ctx, n_past;
    int32_t *tokens;
    elm_abort_cb abort_cb;
    void *abort_user;
    int few_at; /* elm_ctx_truncate's (ctx_accessors.inc) */
};

struct elm_sampler {
    struct elm_sampler_params p;
    uint64_t rng;
};

int32_t fake_next(int32_t last, int pos, int n_vocab)
{
    return 3 + (int32_t)(((uint32_t)last * 31u + (uint32_t)pos * 7u) % (uint32_t)(n_vocab - 3));
}

struct elm_model_params elm_model_default_params(void)
{
    struct elm_model_params p = {.n_threads = 0, .progress_cb = NULL, .abort_cb = NULL};
    return p;
}

elm_status elm_model_load(const char *path, const struct elm_model_params *params, elm_model **out,
                          char *err, size_t err_size)
{
    if (strncmp(path, "fake:", 5) != 0) {
        snprintf(err, err_size, "%s: not a fake model", path);
        return ELM_E_IO;
    }
    int L = 4, V = 64, mb = 1;
    long us = 0, ld = 0;
    const char *s = path + 5;
    while (*s) {
        char key[8];
        long val;
        int used = 0;
        if (sscanf(s, "%7[a-zA-Z]=%ld%n", key, &val, &used) != 2) {
            snprintf(err, err_size, "%s: bad fake spec", path);
            return ELM_E_FORMAT;
        }
        if (!strcmp(key, "L"))
            L = (int)val;
        else if (!strcmp(key, "V"))
            V = (int)val;
        else if (!strcmp(key, "us"))
            us = val;
        else if (!strcmp(key, "mb"))
            mb = (int)val;
        else if (!strcmp(key, "ld"))
            ld = val;
        s += used;
        if (*s == ',')
            s++;
    }
    for (long i = 0; i <= ld; i++) {
        if (params && params->abort_cb && params->abort_cb(params->abort_user)) {
            snprintf(err, err_size, "%s: load cancelled", path);
            return ELM_E_ABORTED;
        }
        if (i < ld) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    elm_model *m = calloc(1, sizeof *m);
    if (!m)
        return ELM_E_NOMEM;
    m->us = us;
    m->info.n_layers = L;
    m->info.model_dim = 16;
    m->info.head_dim = 8;
    m->info.n_vocab = V;
    m->info.n_ctx_train = 2048;
    m->info.bos_id = 1;
    m->info.eos_id = 2;
    for (int l = 0; l < L && l < ELM_MAX_LAYERS; l++)
        m->info.n_kv_heads[l] = m->info.n_query_heads[l] = 1;
    m->info.weight_bytes = (uint64_t)mb << 20;
    uint64_t h = 1469598103934665603u;
    for (const char *p = path; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    m->info.fingerprint = h;
    snprintf(m->info.name, sizeof m->info.name, "fake");
    for (int i = 0; i <= 10; i++)
        if (params && params->progress_cb)
            params->progress_cb((float)i / 10.0f, params->progress_user);
    *out = m;
    return ELM_OK;
}

void elm_model_free(elm_model *model)
{
    free(model);
}

const struct elm_model_info *elm_model_get_info(const elm_model *model)
{
    return &model->info;
}

/* The fake's one tokenizer is static: sharing and freeing it are no-ops. */
elm_tokenizer *elm_tokenizer_share(elm_tokenizer *tok)
{
    return tok;
}

void elm_tokenizer_free(elm_tokenizer *tok)
{
    (void)tok;
}

const elm_tokenizer *elm_model_tokenizer(const elm_model *model)
{
    (void)model;
    return &fake_tok;
}

struct elm_ctx_params elm_ctx_default_params(void)
{
    struct elm_ctx_params p = {.n_ctx = 0, .n_threads = 0, .exact = false, .abort_cb = NULL,
                               .abort_user = NULL};
    return p;
}

elm_status elm_ctx_new(const elm_model *model, const struct elm_ctx_params *params, elm_ctx **out,
                       char *err, size_t err_size)
{
    (void)err;
    (void)err_size;
    elm_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ELM_E_NOMEM;
    c->model = model;
    c->few_at = -1;
    c->n_ctx = params->n_ctx > 0 ? params->n_ctx : model->info.n_ctx_train;
    c->tokens = calloc((size_t)c->n_ctx, sizeof *c->tokens);
    if (!c->tokens) {
        free(c);
        return ELM_E_NOMEM;
    }
    c->abort_cb = params->abort_cb;
    c->abort_user = params->abort_user;
    *out = c;
    return ELM_OK;
}

void elm_ctx_free(elm_ctx *ctx)
{
    if (!ctx)
        return;
    free(ctx->tokens);
    free(ctx);
}

static void sleep_us(long us)
{
    if (us <= 0)
        return;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

elm_status elm_decode(elm_ctx *ctx, const int32_t *tokens, int n, float *logits, unsigned flags)
{
    const elm_model *m = ctx->model;
    if (n <= 0)
        return ELM_E_INVALID;
    if (ctx->n_past + n > ctx->n_ctx)
        return ELM_E_CONTEXT_FULL;
    for (int l = 0; l < m->info.n_layers; l++) {
        if (ctx->abort_cb && ctx->abort_cb(ctx->abort_user))
            return ELM_E_ABORTED;
        sleep_us(m->us * n);
    }
    memcpy(ctx->tokens + ctx->n_past, tokens, (size_t)n * sizeof *tokens);
    ctx->few_at = -1;
    int base = ctx->n_past;
    ctx->n_past += n;
    if (logits) {
        /* every token's row (ELM_DECODE_ALL_LOGITS: prompt lookup), else the last */
        int V = m->info.n_vocab, first = flags & ELM_DECODE_ALL_LOGITS ? 0 : n - 1;
        for (int i = first; i < n; i++) {
            int32_t want = fake_next(tokens[i], base + i, V);
            float *row = logits + (size_t)(i - first) * (size_t)V;
            for (int j = 0; j < V; j++)
                row[j] = -(float)abs(j - want);
        }
    }
    return ELM_OK;
}

/* Never called: the stand-in has no grammars (constrain_few_next is 0). */
elm_status elm_decode_few(elm_ctx *ctx, int32_t token, float *logits, const int32_t *ids,
                          int n_ids)
{
    (void)ctx, (void)token, (void)logits, (void)ids, (void)n_ids;
    return ELM_E_INVALID;
}

elm_status elm_decode_head_rest(elm_ctx *ctx, float *logits)
{
    (void)ctx, (void)logits;
    return ELM_E_INVALID;
}

#include "engine/inference/ctx_accessors.inc"

elm_status elm_state_save(const elm_ctx *ctx, const char *path, char *err, size_t err_size)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, err_size, "%s: cannot write", path);
        return ELM_E_IO;
    }
    fwrite(&ctx->model->info.fingerprint, sizeof(uint64_t), 1, f);
    fwrite(&ctx->n_past, sizeof(int), 1, f);
    fwrite(ctx->tokens, sizeof(int32_t), (size_t)ctx->n_past, f);
    return fclose(f) == 0 ? ELM_OK : ELM_E_IO;
}

elm_status elm_state_load(elm_ctx *ctx, const char *path, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: cannot read", path);
        return ELM_E_IO;
    }
    uint64_t fp = 0;
    int n = 0;
    elm_status st = ELM_OK;
    if (fread(&fp, sizeof fp, 1, f) != 1 || fread(&n, sizeof n, 1, f) != 1 || n < 0 ||
        n > ctx->n_ctx) {
        snprintf(err, err_size, "%s: truncated", path);
        st = ELM_E_FORMAT;
    } else if (fp != ctx->model->info.fingerprint) {
        snprintf(err, err_size, "%s: snapshot of another model", path);
        st = ELM_E_MISMATCH;
    } else if (fread(ctx->tokens, sizeof(int32_t), (size_t)n, f) != (size_t)n) {
        snprintf(err, err_size, "%s: truncated", path);
        st = ELM_E_FORMAT;
    } else {
        ctx->n_past = n;
    }
    fclose(f);
    return st;
}

struct elm_sampler_params elm_sampler_default_params(void)
{
    struct elm_sampler_params p = {0.0f, 0, 1.0f, 0.0f, 1.0f, -1, 0};
    return p;
}

elm_sampler *elm_sampler_new(const struct elm_sampler_params *params)
{
    elm_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p = *params;
    s->rng = params->seed * 2654435761u + 1;
    return s;
}

void elm_sampler_free(elm_sampler *sampler)
{
    free(sampler);
}

int32_t elm_sampler_sample(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                           int n_history)
{
    (void)history;
    (void)n_history;
    if (s->p.temperature > 0) {
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        return 3 + (int32_t)(s->rng % (uint64_t)(n_vocab - 3));
    }
    return elm_sampler_greedy(s, logits, n_vocab, history, n_history);
}

int32_t elm_sampler_greedy(elm_sampler *s, float *logits, int n_vocab, const int32_t *history,
                           int n_history)
{
    (void)s, (void)history, (void)n_history;
    int best = 0;
    for (int j = 1; j < n_vocab; j++)
        if (logits[j] > logits[best])
            best = j;
    return best;
}

void elm_detok_stream_init(struct elm_detok_stream *s, const elm_tokenizer *tok)
{
    memset(s, 0, sizeof *s);
    s->tok = tok;
}

static size_t piece(int32_t id, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "t%d ", (int)id);
    return n < 0 ? 0 : (size_t)n;
}

/* pending[0..3] holds a held-back id (as bytes), n_pending 4 when set. */
size_t elm_detok_stream_push(struct elm_detok_stream *s, int32_t id, char *out, size_t out_size)
{
    size_t len = elm_detok_stream_flush(s, out, out_size);
    if (id % 10 == 0) {
        memcpy(s->pending, &id, sizeof id);
        s->n_pending = 4;
        return len;
    }
    return len + piece(id, out + len, out_size - len);
}

size_t elm_detok_stream_flush(struct elm_detok_stream *s, char *out, size_t out_size)
{
    out[0] = '\0';
    if (s->n_pending != 4)
        return 0;
    int32_t id;
    memcpy(&id, s->pending, sizeof id);
    s->n_pending = 0;
    return piece(id, out, out_size);
}

elm_status elm_detokenize(const elm_tokenizer *tok, const int32_t *ids, size_t n_ids, char **text,
                          size_t *len)
{
    (void)tok;
    char *t = malloc(n_ids * 16 + 1);
    if (!t)
        return ELM_E_NOMEM;
    size_t k = 0;
    t[0] = '\0';
    for (size_t i = 0; i < n_ids; i++)
        k += piece(ids[i], t + k, 16);
    *text = t;
    *len = k;
    return 0;
}

/* The fake vocabulary has no text to encode: the worker's reply test hook
 * (ELM_WORKER_TEST_REPLY_FILE) is not exercised against it. */
elm_status elm_tokenize(const elm_tokenizer *tok, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids)
{
    (void)tok, (void)text, (void)len, (void)add_bos;
    *ids = NULL;
    *n_ids = 0;
    return ELM_E_UNSUPPORTED;
}

/* Fake models share one vocabulary when their sizes match. */
bool elm_model_can_draft(const elm_model *target, const elm_model *draft, char *err,
                         size_t err_size)
{
    if (target->info.n_vocab == draft->info.n_vocab)
        return true;
    snprintf(err, err_size, "another vocabulary");
    return false;
}

/* Grammars are the real engine's (engine/grammar/): the stand-in refuses
 * them, and generate.c's and the queue's calls link to these. */
elm_grammar *elm_grammar_share(elm_grammar *g)
{
    return g;
}

void elm_grammar_free(elm_grammar *g)
{
    (void)g;
}

struct constrain *constrain_new(const struct elm_generate_params *p, int32_t eos_id, char *err,
                                size_t err_size)
{
    (void)p;
    (void)eos_id;
    snprintf(err, err_size, "the stand-in engine has no grammars");
    return NULL;
}

void constrain_free(struct constrain *c)
{
    (void)c;
}

int32_t constrain_sample(struct constrain *c, elm_sampler *smp, float *logits, int n_vocab,
                         const int32_t *history, int n_history)
{
    (void)c;
    return elm_sampler_sample(smp, logits, n_vocab, history, n_history);
}

int constrain_few_next(struct constrain *c, const int32_t **ids)
{
    (void)c;
    (void)ids;
    return 0;
}

int constrain_drafts(struct constrain *c, const int32_t *ids, int n)
{
    (void)c;
    (void)ids;
    return n;
}

const char *constrain_error(const struct constrain *c)
{
    (void)c;
    return "no grammars";
}

void constrain_stats(const struct constrain *c, struct elm_grammar_stats *out)
{
    (void)c;
    *out = (struct elm_grammar_stats){0};
}
