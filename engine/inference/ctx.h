/* ctx.h: the mutable state of one conversation (engine-internal). */
#ifndef ELMCHAT_ENGINE_CTX_H
#define ELMCHAT_ENGINE_CTX_H

#include <stdint.h>

#include "engine/elm_bench.h"
#include "engine/kernels/gemm.h"
#include "engine/model/model.h"

/* Query tokens per task of the tiled attention (forward.c): each task
 * transposes its keys once, so larger blocks transpose less; 270M pp512,
 * 2 threads: attention 37 / 33 / 31 ms at 16 / 32 / 64; 32 still makes
 * 16 blocks x kv heads tasks of a 512-token prompt to balance over cores. */
#define ATTN_BQ 32
/* Keys per task when one query block attends a long context (decode):
 * a multiple of ELM_ATTN_BK. */
#define ATTN_KS 256
/* Cache positions per stripe.  The K and V rows of every layer for
 * ELM_KV_STRIPE positions sit together, stripe after stripe, so a cache of
 * n tokens uses the first n / ELM_KV_STRIPE stripes of its block, not a
 * piece of every layer's n_ctx rows: huge pages (pages.h) then cost what
 * the tokens use (270M: 31.5 KiB a token, a stripe about one 2 MiB page).  A
 * multiple of ELM_ATTN_BK: the attention's key blocks never straddle two. */
#define ELM_KV_STRIPE 64

struct elm_threadpool;

struct elm_ctx {
    const struct elm_model *model; /* borrowed */
    int n_ctx, n_past, n_threads;
    int n_batch; /* tokens per prefill chunk */
    elm_abort_cb abort_cb;
    void *abort_user;
    int32_t *tokens; /* [n_ctx] ids of the cached positions */
    /* [n_layers]: the layer's rows of stripe 0, keys after QK-norm and RoPE
     * and values, nkv * hd floats a row; position p: elm_kv_row */
    float **k_cache;
    float **v_cache;
    size_t kv_stripe; /* floats from one stripe to the next */
    void *kv_pages;   /* every stripe in one elm_pages_zalloc block */
    size_t kv_bytes;
    float *rope_cos, *rope_sin; /* [n_ctx, hd / 2] */
    struct elm_threadpool *pool;
    struct elm_gemm_tile tile;
    /* Activations of one chunk of up to n_batch tokens. */
    float *x;      /* [n_batch, d] residual stream */
    float *h;      /* [n_batch, d] normed */
    float *qkv;    /* [n_batch, max (nq + 2 nkv) hd] */
    float *att;    /* [n_batch, max nq hd] */
    float *ffn;    /* [n_batch, max 2 ff] */
    void *batch_pages; /* the five above in one elm_pages_zalloc block */
    size_t batch_bytes;
    float *attn_scratch; /* [n_threads, attn_stride]: a key tile and query-row state */
    size_t attn_stride;  /* floats, a multiple of 16 */
    float *attn_part;    /* key-split partials: [nq x ATTN_BQ x (hd + 2)] per ATTN_KS keys */
    bool profiling;      /* elm_ctx_set_profiling: forward.c times its phases */
    /* elm_decode_few's last token: n_past after it while h still holds its
     * normed state (elm_decode_head_rest can finish its logits), else -1 */
    int few_at;
    struct elm_ctx_stats stats;
};

/* The row of position p in a layer's cache (base: k_cache[layer] or
 * v_cache[layer], row: nkv * hd of that layer).  Rows of positions in one
 * stripe are contiguous. */
static inline float *elm_kv_row(const struct elm_ctx *c, float *base, size_t row, int p)
{
    return base + (size_t)(p / ELM_KV_STRIPE) * c->kv_stripe + (size_t)(p % ELM_KV_STRIPE) * row;
}

#endif
