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

struct elm_threadpool;

struct elm_ctx {
    const struct elm_model *model; /* borrowed */
    int n_ctx, n_past, n_threads;
    int n_batch; /* tokens per prefill chunk */
    elm_abort_cb abort_cb;
    void *abort_user;
    int32_t *tokens; /* [n_ctx] ids of the cached positions */
    float **k_cache; /* [n_layers] of [n_ctx, nkv * hd], keys after QK-norm and RoPE */
    float **v_cache; /* [n_layers] of [n_ctx, nkv * hd] */
    void *kv_pages;  /* every layer's K and V in one elm_pages_zalloc block */
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
    float *attn_scratch; /* [n_threads, attn_stride]: a key tile and query-row state */
    size_t attn_stride;  /* floats, a multiple of 16 */
    float *attn_part;    /* key-split partials: [nq x ATTN_BQ x (hd + 2)] per ATTN_KS keys */
    bool profiling;      /* elm_ctx_set_profiling: forward.c times its phases */
    struct elm_ctx_stats stats;
};

#endif
