/* gemm.h: C (+)= A x W^T for a batch of tokens (engine-internal).
 *
 * Small batches go through the row kernels (kernels.h) (weights are read
 * once for four tokens at a time); larger ones through our packed AVX-512
 * GEMM or BLIS sgemm, one single-threaded call per range of weight rows on
 * the ctx's pool, so no OpenMP thread ever runs.  BF16/F16 weights are
 * widened a tile of rows at a time, never as a whole f32 copy.  Block-
 * quantized weights meet int8 activations at every batch size (act_int8.h):
 * the row kernels, or the int8 GEMM (gemm_int8.c) for larger batches.
 */
#ifndef ELMCHAT_ENGINE_GEMM_H
#define ELMCHAT_ENGINE_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/matrix.h"

struct elm_threadpool;
struct elm_qact;

/* Scratch of the products, reused across calls (one per ctx); every
 * buffer is allocated on first use (an F32 model never needs most). */
struct elm_gemm_tile {
    float **buf;   /* [n_threads] buffers of `floats` each, owned: widened
                    * weights, or the int8 GEMM's weight panel */
    int n;         /* buffers */
    size_t floats; /* capacity of each */
    /* Our own AVX-512 GEMM (gemm_f32_avx512.c): the packed activations, and a
     * W panel plus a widening row per thread. */
    float *apack;
    size_t apack_bytes;
    float **wpack; /* [n_threads] */
    /* Block-quantized weights: the activations rounded to int8 once per
     * product (kernels.h) and their descriptors, then packed for the int8
     * GEMM (gemm_int8.c); grown on use. */
    void *qact;
    size_t qact_bytes;
    struct elm_qact *qa;
    size_t qa_bytes;
    void *i8a;
    size_t i8a_bytes;
    /* BF16 weights keep f32 activations (elm_ctx_params.exact): not the
     * bf16 dot products of gemm_bf16_avx512.c and gemm_bf16_neon.c */
    bool exact;
};

/* Batches below this many tokens use the row kernels, not the large GEMM
 * (ours or BLIS; measured crossovers, see gemm.c). */
int elm_gemm_min_blis_m(enum elm_dtype dtype);

/* Batches of block-quantized weights from this many tokens take the int8
 * GEMM where the CPU has one (gemm_int8.c), else their weights are widened. */
int elm_gemm_i8_min_m(void);

/* Allocate n_threads tiles able to hold a useful block of rows of cols_max
 * columns; false on out of memory. */
bool elm_gemm_tile_init(struct elm_gemm_tile *tile, int n_threads, size_t cols_max);
void elm_gemm_tile_free(struct elm_gemm_tile *tile);

/* C[m, W.rows] (+)= A[m, W.cols] x W^T, row strides lda and ldc (floats):
 * the row kernels for small m, else our packed AVX-512 GEMM
 * (gemm_f32_avx512.c; BF16 weights: gemm_bf16_avx512.c, or on AArch64
 * with FEAT_BF16 arch/arm/gemm_bf16_neon.c) or, where none fits or with
 * ELM_GEMM=blis, BLIS. */
void elm_gemm(const float *a, long lda, long m, const struct elm_matrix *w, float *c, long ldc,
              bool accumulate, struct elm_threadpool *pool, struct elm_gemm_tile *tile);

/* One token's products with the listed rows of W only (ascending ids):
 * c[rows[i]] = A[W.cols] . W[rows[i]], the bits elm_gemm gives them; the
 * other entries of c are not written.  An LM head where a grammar allows
 * few ids next. */
void elm_gemm_rows_of(const float *a, const struct elm_matrix *w, const int32_t *rows, int n_rows,
                      float *c, struct elm_threadpool *pool, struct elm_gemm_tile *tile);

/* "own" or "blis": which GEMM runs batches from elm_gemm_min_blis_m tokens
 * (ELM_GEMM=own|blis in the environment forces one). */
const char *elm_gemm_large_name(void);

/* BLIS computed a small sgemm right in a one-shot check against our row
 * kernels (run on the first call: model load, bench --kernels); when it
 * did not, elm_gemm never calls BLIS. */
bool elm_gemm_blis_ok(void);

/* The BLIS configuration in use ("skx", "haswell", "generic" ...), and
 * whether elmchat chose it (BLIS 0.9 does not know recent CPUs). */
const char *elm_gemm_blis_arch(bool *chosen_by_us);

#endif
