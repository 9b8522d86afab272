/* elm_bench.h: libelm's benchmarking API (public): what `elmchat bench`
 * measures the engine with and compares it against.  The core API (elm.h)
 * does not need it: profiling a ctx, the machine's read bandwidth (the
 * decode roofline) and BLIS sgemm on a model's prefill products (the
 * prefill reference).  Same conventions as elm.h.
 */
#ifndef ELMCHAT_ENGINE_ELM_BENCH_H
#define ELMCHAT_ENGINE_ELM_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- profiling */

/* Where elm_decode's time goes (for `bench`): wall seconds on the calling
 * thread around each phase (a phase runs on the ctx's threads), summed over
 * the calls since profiling was turned on.  Off by default: no clock read.
 * other = total - matrix - attention: norms, RoPE, SwiGLU, embedding rows
 * and the gaps between phases.  Sampling is not part of elm_decode. */
struct elm_ctx_stats {
    uint64_t n_calls;           /* elm_decode calls */
    uint64_t n_tokens;          /* tokens they evaluated */
    double total_s;             /* inside elm_decode */
    double matrix_s;            /* weight products: QKV, out, FFN, LM head */
    double attention_s;         /* scores, softmax, weighted values */
    double norm_s;              /* RMSNorm before attention, FFN and head */
    double rope_s;              /* QK-norm, RoPE, K and V into the cache */
    double swiglu_s;
    double matrix_flops;        /* 2 m n k summed over the products */
    double matrix_weight_bytes; /* weight bytes they read (once a product) */
    double head_s, head_flops;  /* the LM head's part of the matrix figures */
    double layer_matrix_s[ELM_MAX_LAYERS];     /* each layer's four products */
    double layer_matrix_flops[ELM_MAX_LAYERS];
};
/* Turn the timing on or off; either way the counters restart at zero. */
void elm_ctx_set_profiling(elm_ctx *ctx, bool on);
/* The counters so far (zeros when profiling is off). */
void elm_ctx_get_stats(const elm_ctx *ctx, struct elm_ctx_stats *out);

/* ------------------------------------------------------------- machine */

/* This machine's read bandwidth in bytes per second: a probe kept alive,
 * to measure several times in one run (before,
 * between and after decode runs: on a shared machine the bandwidth drifts).
 * new: allocates and fills `bytes` (>= 64 MiB for a memory figure) and
 * starts n_threads - 1 threads; NULL when out of memory.  run: `passes`
 * reads of the whole buffer, bytes per second of each into bps[passes]. */
typedef struct elm_bw_probe elm_bw_probe;
elm_bw_probe *elm_bw_probe_new(int n_threads, size_t bytes);
void elm_bw_probe_run(elm_bw_probe *probe, int passes, double *bps);
void elm_bw_probe_free(elm_bw_probe *probe);

/* BLIS sgemm on the weight products of a prefill of n_tokens tokens on
 * ctx (its model, its chunking into batches), threaded over the ctx's
 * thread count (BLIS's OpenMP threads; they are idle again on return): the
 * reference for the prefill's matrix part.  Products C (+)= A W^T of QKV,
 * out, proj1, proj2 (16-bit and block-type weights widened to f32 first,
 * untimed; A random), one shot each (up to two more when the threads did
 * not get their cores), layers spread over the depth until max_seconds
 * (wall) would be exceeded; at least one layer. */
struct elm_blis_reference {
    int m;                      /* tokens per product: the first batch */
    int n_threads;              /* BLIS threads */
    int n_layers;               /* layers measured, in the order run */
    int layers[ELM_MAX_LAYERS];
    double flops;               /* those layers' products over all n_tokens */
    double seconds;             /* BLIS time for them */
    double cpu_share;           /* process CPU time / (wall time x n_threads)
                                   while BLIS ran: below ~0.9 the machine was
                                   busy and BLIS's spinning threads suffer */
    int n_reshots;              /* products run again (a shot whose threads
                                   lacked their cores; the fastest is kept) */
    double flops_share;         /* flops / the flops of every layer */
    double settle_seconds;      /* until the OpenMP threads were idle again */
    char arch[32];              /* BLIS configuration ("skx", ...) */
};
elm_status elm_blis_reference(const elm_ctx *ctx, int n_tokens, double max_seconds,
                              struct elm_blis_reference *out, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
