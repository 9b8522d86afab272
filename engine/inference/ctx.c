/* ctx.c: creating, rewinding and freeing a context (KV cache, RoPE table,
 * scratch, compute threads). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/inference/ctx.h"
#include "engine/base/pages.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/threadpool.h"

#define N_BATCH 512

struct elm_ctx_params elm_ctx_default_params(void)
{
    struct elm_ctx_params p = {.n_ctx = 0, .n_threads = 0, .exact = false, .abort_cb = NULL,
                               .abort_user = NULL};
    return p;
}

void elm_ctx_free(elm_ctx *ctx)
{
    if (!ctx)
        return;
    elm_threadpool_free(ctx->pool);
    elm_pages_free(ctx->kv_pages, ctx->kv_bytes);
    free(ctx->k_cache);
    free(ctx->v_cache);
    free(ctx->tokens);
    free(ctx->rope_cos);
    free(ctx->rope_sin);
    elm_gemm_tile_free(&ctx->tile);
    elm_pages_free(ctx->batch_pages, ctx->batch_bytes);
    free(ctx->attn_scratch);
    free(ctx->attn_part);
    free(ctx);
}

/* Cache-line aligned, so threads writing neighbouring ranges of 16 floats
 * never share a line. */
static void *alloc_floats(size_t a, size_t b)
{
    if (a && b > (SIZE_MAX - 128) / sizeof(float) / a)
        return NULL;
    return aligned_alloc(64, (a * b * sizeof(float) + 64) / 64 * 64);
}

/* The activations of a chunk (x, h, qkv, att, ffn: rows of n_batch) in one
 * elm_pages_zalloc block, each on cache lines: huge pages where there are
 * some, so a new ctx's first prefill faults a few pages in, not a 4 KiB
 * page per row touched (270M, 74 ids: ~880 faults, ~15 us each in this
 * VM).  false: out of memory. */
static bool alloc_batch(struct elm_ctx *c, const size_t *cols, float **bufs[], int n)
{
    size_t nb = (size_t)c->n_batch, total = 0, sizes[5];
    if (n > 5)
        return false;
    for (int i = 0; i < n; i++) {
        if (cols[i] > (SIZE_MAX / 2) / sizeof(float) / nb)
            return false;
        sizes[i] = (nb * cols[i] * sizeof(float) + 63) / 64 * 64;
        if (sizes[i] > SIZE_MAX / 2 - total)
            return false;
        total += sizes[i];
    }
    c->batch_pages = elm_pages_zalloc(total);
    if (!c->batch_pages)
        return false;
    c->batch_bytes = total;
    unsigned char *p = c->batch_pages;
    for (int i = 0; i < n; i++) {
        *bufs[i] = (float *)(void *)p;
        p += sizes[i];
    }
    return true;
}

/* RoPE angles as HF computes them: inv_freq and p * inv_freq in f32. */
static void fill_rope(struct elm_ctx *c)
{
    const struct elm_model_info *in = &c->model->info;
    int half = in->head_dim / 2;
    for (int j = 0; j < half; j++) {
        float e = (float)(2 * j) / (float)in->head_dim;
        float inv = 1.0f / (float)pow((double)in->rope_theta, (double)e);
        for (int p = 0; p < c->n_ctx; p++) {
            float angle = (float)p * inv;
            c->rope_cos[(size_t)p * half + j] = (float)cos((double)angle);
            c->rope_sin[(size_t)p * half + j] = (float)sin((double)angle);
        }
    }
}

elm_status elm_ctx_new(const elm_model *model, const struct elm_ctx_params *params, elm_ctx **out,
                       char *err, size_t err_size)
{
    struct elm_ctx_params defaults = elm_ctx_default_params();
    if (!params)
        params = &defaults;
    if (!model || !out)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_ctx_new: no model");
    const struct elm_model_info *in = &model->info;
    if (params->n_ctx > in->n_ctx_train)
        return elm_set_error(err, err_size, ELM_E_INVALID,
                             "%s: context of %d tokens is longer than the model's %d", in->name,
                             params->n_ctx, in->n_ctx_train);
    struct elm_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", in->name);
    c->model = model;
    c->few_at = -1;
    c->n_ctx = params->n_ctx > 0 ? params->n_ctx : in->n_ctx_train;
    c->n_threads = params->n_threads > 0 ? params->n_threads : model->n_threads;
    c->n_batch = c->n_ctx < N_BATCH ? c->n_ctx : N_BATCH;
    c->abort_cb = params->abort_cb;
    c->abort_user = params->abort_user;

    int d = in->model_dim, hd = in->head_dim, L = in->n_layers;
    size_t max_nq = 1, max_r = 0, max_q = 0, max_f = 0, max_cols = (size_t)d, max_grp = 1;
    for (int i = 0; i < L; i++) {
        const struct elm_layer *l = &model->layers[i];
        size_t r = (size_t)(l->nq + 2 * l->nkv) * (size_t)hd, q = (size_t)l->nq * (size_t)hd;
        max_r = r > max_r ? r : max_r;
        size_t grp = (size_t)(l->nq / l->nkv);
        max_grp = grp > max_grp ? grp : max_grp;
        max_q = q > max_q ? q : max_q;
        max_nq = (size_t)l->nq > max_nq ? (size_t)l->nq : max_nq;
        max_f = 2 * (size_t)l->ff > max_f ? 2 * (size_t)l->ff : max_f;
        max_cols = q > max_cols ? q : max_cols;
        max_cols = (size_t)l->ff > max_cols ? (size_t)l->ff : max_cols;
    }
    c->tokens = calloc((size_t)c->n_ctx, sizeof *c->tokens);
    c->k_cache = calloc((size_t)L, sizeof *c->k_cache);
    c->v_cache = calloc((size_t)L, sizeof *c->v_cache);
    c->rope_cos = alloc_floats((size_t)c->n_ctx, (size_t)hd / 2);
    c->rope_sin = alloc_floats((size_t)c->n_ctx, (size_t)hd / 2);
    bool tiles = elm_gemm_tile_init(&c->tile, c->n_threads, max_cols);
    c->tile.exact = params->exact;
    size_t cols[] = {(size_t)d, (size_t)d, max_r, max_q, max_f};
    float **bufs[] = {&c->x, &c->h, &c->qkv, &c->att, &c->ffn};
    bool batch = alloc_batch(c, cols, bufs, 5);
    /* per thread, on its own cache lines: a transposed key tile, and the
     * output, max and sum of ATTN_BQ tokens x grp query heads */
    size_t attn = (size_t)hd * ELM_ATTN_BK + (size_t)ATTN_BQ * max_grp * ((size_t)hd + 2);
    c->attn_stride = (attn + 15) / 16 * 16;
    c->attn_scratch = alloc_floats((size_t)c->n_threads, c->attn_stride);
    /* untouched pages cost nothing: a short context never faults these in */
    size_t splits = ((size_t)c->n_ctx + ATTN_KS - 1) / ATTN_KS;
    c->attn_part = alloc_floats(splits * max_nq * ATTN_BQ, (size_t)hd + 2);
    bool okay = c->tokens && c->k_cache && c->v_cache && c->rope_cos && c->rope_sin && tiles &&
                batch && c->attn_scratch && c->attn_part;
    /* Pages that are only made when written (pages.h), in stripes of
     * ELM_KV_STRIPE positions (ctx.h): a snapshot's load or a prefill pays
     * for the tokens it holds, not for all of n_ctx (calloc from a heap
     * that glibc had grown cleared every byte of every layer first: 0.4 s
     * on the 270M shape at each new slot). */
    size_t stripe = 0;
    for (int i = 0; i < L; i++) /* ELM_KV_STRIPE rows: whole cache lines */
        stripe += 2 * (size_t)ELM_KV_STRIPE * (size_t)model->layers[i].nkv * (size_t)hd;
    size_t n_stripes = ((size_t)c->n_ctx + ELM_KV_STRIPE - 1) / ELM_KV_STRIPE;
    if (okay) {
        c->kv_stripe = stripe;
        c->kv_bytes = n_stripes * stripe * sizeof(float);
        c->kv_pages = elm_pages_zalloc(c->kv_bytes);
        okay = c->kv_pages != NULL;
    }
    float *kv = c->kv_pages;
    for (int i = 0; okay && i < L; i++) {
        size_t rows = (size_t)ELM_KV_STRIPE * (size_t)model->layers[i].nkv * (size_t)hd;
        c->k_cache[i] = kv;
        kv += rows;
        c->v_cache[i] = kv;
        kv += rows;
    }
    if (!okay) {
        int n_ctx = c->n_ctx;
        elm_ctx_free(c);
        return elm_set_error(err, err_size, ELM_E_NOMEM,
                             "%s: out of memory for a %d-token context", in->name, n_ctx);
    }
    if (elm_threadpool_new(c->n_threads, &c->pool) != ELM_OK) {
        elm_ctx_free(c);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: cannot start %d threads", in->name,
                             c->n_threads);
    }
    fill_rope(c);
    *out = c;
    return ELM_OK;
}

#include "engine/inference/ctx_accessors.inc"

void elm_ctx_set_profiling(elm_ctx *ctx, bool on)
{
    if (!ctx)
        return;
    ctx->profiling = on;
    memset(&ctx->stats, 0, sizeof ctx->stats);
}

void elm_ctx_get_stats(const elm_ctx *ctx, struct elm_ctx_stats *out)
{
    if (ctx && out)
        *out = ctx->stats;
}
