/* gemm.c: C (+)= A x W^T: the row kernels for small batches; for larger
 * ones our AVX-512 GEMM (gemm_f32_avx512.c) or BLIS sgemm (one single-threaded
 * call per range of rows, on our pool), widening 16-bit weights tile by
 * tile; block-quantized weights with int8 activations (row kernels or
 * gemm_int8.c). */
#include "config.h"

#include "engine/kernels/gemm.h"

/* Our GEMM by default where it runs: measured equal to BLIS 'skx' on F32 at
 * 512 tokens, 6 % ahead on BF16 (no separate widening pass) and up to 20 %
 * ahead at 96-192 tokens (gemm.c's crossovers below). */
#define OWN_DEFAULT 1

#include <blis.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/test_hooks.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/arch/arm/gemm_bf16_neon.h"
#include "engine/kernels/arch/x86/gemm_bf16_avx512.h"
#include "engine/kernels/arch/x86/gemm_f32_avx512.h"
#include "engine/kernels/gemm_int8.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/threadpool.h"

/* ------------------------------------------------- BLIS configuration */

/* BLIS 0.9 chooses its kernels from CPUID and falls back to the slow
 * reference ("generic") ones on CPUs it does not know, such as AMD family
 * 1Ah (Zen 5); its only override is the BLIS_ARCH_TYPE variable (a
 * configuration number), read once when BLIS initializes.  So before main
 * (single-threaded, so setenv is safe) and only if the user has not set it,
 * name the configuration this CPU's features deserve: 'skx' with AVX-512
 * (measured here 5x the generic kernels, 1.2-1.9x 'haswell' and 'zen3' at
 * M >= 128; the small batches where those win go to our own kernels). */
static bool arch_chosen;

__attribute__((constructor)) static void choose_blis_arch(void)
{
    if (getenv("BLIS_ARCH_TYPE"))
        return;
    int id = -1;
    const struct elm_cpu *cpu = elm_cpu();
#ifdef BLIS_CONFIG_SKX
    if (id < 0 && elm_isa_x86(cpu->isa, ELM_ISA_AVX512))
        id = BLIS_ARCH_SKX;
#endif
#if defined(BLIS_CONFIG_ZEN3) && defined(BLIS_CONFIG_HASWELL)
    /* AVX2 only: BLIS knows these CPUs, unless they are AMD's newer ones. */
    if (id < 0 && cpu->amd && elm_isa_x86(cpu->isa, ELM_ISA_AVX2) && !cpu->amd_family_named)
        id = BLIS_ARCH_ZEN3;
#endif
    (void)cpu;
    if (id < 0)
        return;
    char v[16];
    snprintf(v, sizeof v, "%d", id);
    arch_chosen = setenv("BLIS_ARCH_TYPE", v, 0) == 0;
}

const char *elm_gemm_blis_arch(bool *chosen_by_us)
{
    if (chosen_by_us)
        *chosen_by_us = arch_chosen;
    bli_init(); /* querying before BLIS initializes aborts in BLIS 0.9 */
    return bli_arch_string(bli_arch_query_id());
}

/* ------------------------------------------------------------- tiles */

/* Cache-line aligned; aligned_alloc wants a multiple of the alignment. */
static void *alloc64(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* buf if it holds need bytes, else a new 64-byte aligned buffer (contents
 * lost, buf freed; NULL on out of memory); *have follows. */
static void *grow(void *buf, size_t *have, size_t need)
{
    if (need <= *have)
        return buf;
    free(buf);
    buf = alloc64(need);
    *have = buf ? need : 0;
    return buf;
}

/* 1 Mi floats (4 MiB) a thread: BLIS repacks A once per call, so a call
 * should cover a few hundred rows of W. */
#define TILE_FLOATS ((size_t)1 << 20)

bool elm_gemm_tile_init(struct elm_gemm_tile *tile, int n_threads, size_t cols_max)
{
    elm_kernels_init(); /* every ctx comes through here before its first kernel */
    *tile = (struct elm_gemm_tile){
        .n = n_threads,
        .floats = TILE_FLOATS > 64 * cols_max ? TILE_FLOATS : 64 * cols_max,
        .buf = calloc((size_t)n_threads, sizeof *tile->buf),
        .wpack = calloc((size_t)n_threads, sizeof *tile->wpack),
    };
    return tile->buf && tile->wpack;
}

void elm_gemm_tile_free(struct elm_gemm_tile *tile)
{
    for (int i = 0; i < tile->n; i++) {
        if (tile->buf)
            free(tile->buf[i]);
        if (tile->wpack)
            free(tile->wpack[i]);
    }
    free(tile->buf);
    free(tile->wpack);
    free(tile->apack);
    free(tile->qact);
    free(tile->qa);
    free(tile->i8a);
    *tile = (struct elm_gemm_tile){0};
}

/* -------------------------------------------------------------- jobs */

struct gemm_job {
    const float *a;
    long lda, m;
    const struct elm_matrix *w;
    float *c;
    long ldc;
    bool accumulate;
    struct elm_gemm_tile *tile;
    const struct elm_qact *qa; /* the rounded activations, or NULL */
};

static void sgemm1(long m, long n, long k, const float *a, long lda, const float *b, long ldb,
                   float *c, long ldc, bool accumulate)
{
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    /* BLIS never writes A or B; its typed API just lacks const. */
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, (float *)a, lda, 1,
                 (float *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

/* ------------------------------------------------ BLIS checked once */

/* BLIS has open reports of wrong sgemm results on Apple M1 (flame/blis
 * #742, #930).  So once, when the first model loads (or bench --kernels
 * asks), a small product with ragged edges goes through BLIS and through
 * our row kernels; where they differ by more than rounding, BLIS is not
 * used: its batches go to our GEMM or the row kernels, and
 * elm_system_info says so.  A test hook makes the check fail (the
 * tests of that path: test_hooks.h). */
static bool blis_bad;
static pthread_once_t blis_once = PTHREAD_ONCE_INIT;

static void check_blis(void)
{
    enum { M = 29, N = 45, K = 261 }; /* past one micro-tile each way, odd edges */
    float *a = malloc(sizeof(float) * 2 * (M * K + N * K + M * N) + sizeof(float) * M * N);
    if (!a)
        return; /* no memory for the check: BLIS as before */
    float *b = a + M * K, *c = b + N * K, *ref = c + M * N, *abs_a = ref + M * N,
          *abs_b = abs_a + M * K, *mag = abs_b + N * K;
    unsigned s = 12345u;
    for (int i = 0; i < M * K + N * K; i++) {
        s = s * 1664525u + 1013904223u;
        a[i] = (float)((int)(s >> 9) - (1 << 22)) / (float)(1 << 22); /* [-1, 1) */
    }
    for (int i = 0; i < M * K + N * K; i++)
        abs_a[i] = fabsf(a[i]); /* abs_b follows abs_a as b follows a */
    sgemm1(M, N, K, a, K, b, K, c, N, false);
    struct elm_matrix w = {.data = b, .dtype = ELM_DTYPE_F32, .rows = N, .cols = K};
    elm_matmul_rows(&w, a, K, M, ref, N, 0, N, false);
    struct elm_matrix wa = {.data = abs_b, .dtype = ELM_DTYPE_F32, .rows = N, .cols = K};
    elm_matmul_rows(&wa, abs_a, K, M, mag, N, 0, N, false); /* sum |a b| */
    struct elm_test_hooks hooks; /* a test may make the check fail */
    elm_test_hooks(&hooks);
    bool bad = hooks.blis_check_fails;
    /* both sum K products in f32: far below 1e-4 of the sum of their sizes */
    for (int i = 0; i < M * N && !bad; i++)
        bad = !(fabsf(c[i] - ref[i]) <= 1e-4f * mag[i]);
    blis_bad = bad;
    free(a);
}

bool elm_gemm_blis_ok(void)
{
    pthread_once(&blis_once, check_blis);
    return !blis_bad;
}

/* The thread's widening buffer, allocated on first use; NULL on OOM. */
static float *tile_of(struct elm_gemm_tile *tile, int ith)
{
    if (!tile->buf[ith])
        tile->buf[ith] = alloc64(tile->floats * sizeof(float));
    return tile->buf[ith];
}

/* Batches from this many tokens take the int8 GEMM rather than the row
 * kernels: 270M, 2 threads, Q4_0 pp4 / pp8 / pp12 / pp16 / pp32 at
 * 0.48x / 0.61x / 1.23x / 1.5x / 2.0x of the row kernels, Q4_K 0.53x /
 * 0.78x / 1.03x at 4 / 8 / 12 (the GEMM repacks every weight once a call,
 * which pays from about a dozen tokens). */
#ifndef I8_GEMM_MIN_M /* -D for measurements */
#define I8_GEMM_MIN_M 12
#endif

int elm_gemm_i8_min_m(void)
{
    return I8_GEMM_MIN_M;
}

static void rows_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    const struct elm_matrix *w = j->w;
    if (j->qa) {
        elm_quant_rows_rounded(w, j->qa, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
        return;
    }
    /* no memory for the shared rounding: each range rounds on its stack */
    if (elm_dtype_is_quant(w->dtype) && j->m < I8_GEMM_MIN_M &&
        elm_quant_fast_rows(w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate))
        return;
    float *buf = j->m > 1 && elm_dtype_is_quant(w->dtype) ? tile_of(j->tile, ith) : NULL;
    if (!buf) {
        elm_matmul_rows(w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
        return;
    }
    /* Quantized weights without int8 kernels for this batch (the portable
     * set) or memory for their activations: widen tiles exactly, then the
     * f32 row kernels. */
    long cols = (long)w->cols, step = (long)(j->tile->floats / (size_t)cols);
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    for (long r = b; r < e; r += step) {
        long n = e - r < step ? e - r : step;
        elm_to_f32((const char *)w->data + (size_t)r * row_bytes, w->dtype, buf,
                   (size_t)n * (size_t)cols);
        struct elm_matrix t = {.data = buf, .dtype = ELM_DTYPE_F32, .rows = n, .cols = cols};
        elm_matmul_rows(&t, j->a, j->lda, (int)j->m, j->c + r, j->ldc, 0, n, j->accumulate);
    }
}

/* A few tokens' products, row by row: each thread streams its own stretch
 * of the weights (elm_threadpool_for_streams), in chunks of a 32nd of the
 * rows so that a thread done early takes over the end of another's.  270M
 * Q8_0 decode, 2 threads, Zen 5: 79-86 % of the read bandwidth against
 * 74-77 % with 8 chunks handed out in turn (each a new stream to ramp up,
 * and the threads' streams interleaved in DRAM); 64 or 128 no better.
 * Chunks of whole 16 rows keep each thread's outputs on its own cache
 * lines. */
static void decode_rows(struct elm_threadpool *pool, long rows, struct gemm_job *job)
{
    elm_threadpool_for_streams(pool, rows, elm_threadpool_chunk(pool, rows, 16, 16, 64),
                               rows_task, job);
}

static void blis_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    const struct elm_matrix *w = j->w;
    long cols = (long)w->cols;
    if (w->dtype == ELM_DTYPE_F32) {
        sgemm1(j->m, e - b, cols, j->a, j->lda, (const float *)w->data + (size_t)b * cols, cols,
               j->c + b, j->ldc, j->accumulate);
        return;
    }
    float *buf = tile_of(j->tile, ith);
    if (!buf) { /* out of memory: the row kernels need no scratch */
        elm_matmul_rows(w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
        return;
    }
    long step = (long)(j->tile->floats / (size_t)cols);
    size_t row_bytes = elm_row_size(w->dtype, w->cols);
    for (long r = b; r < e; r += step) {
        long n = e - r < step ? e - r : step;
        elm_to_f32((const char *)w->data + (size_t)r * row_bytes, w->dtype, buf,
                   (size_t)n * (size_t)cols);
        sgemm1(j->m, n, cols, j->a, j->lda, buf, cols, j->c + r, j->ldc, j->accumulate);
    }
}

/* ----------------------------------------------------- our own GEMM */

static void pack_a_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    long k = (long)j->w->cols;
    for (long blk = b; blk < e; blk++) {
        long t0 = blk * ELM_GEMM512_MR;
        elm_gemm512_pack_a(j->a, j->lda, j->m, k, t0, j->tile->apack + (size_t)t0 * (size_t)k);
    }
}

/* Thread ith's W panel (and widening row) for rows [b, e); NULL when there
 * is no memory for it, after the row kernels (no scratch) did the rows. */
static float *wpack_or_rows(const struct gemm_job *j, long b, long e, int ith)
{
    float **wp = &j->tile->wpack[ith];
    if (!*wp)
        *wp = alloc64(2 * elm_gemm512_wpack_floats() * sizeof(float));
    if (!*wp)
        elm_matmul_rows(j->w, j->a, j->lda, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
    return *wp;
}

static void own_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    float *wp = wpack_or_rows(j, b, e, ith);
    if (wp)
        elm_gemm512_rows(j->tile->apack, j->m, j->w, b, e, j->c, j->ldc, j->accumulate, wp,
                         wp + elm_gemm512_wpack_floats());
}

/* BF16 weights by bf16 pairs (gemm_bf16_avx512.c): A rounded into pairs
 * once per call, then W panels per thread. */
static void pack_bf16_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    for (long blk = b; blk < e; blk++)
        elm_gemm_bf16_pack_a(j->a, j->lda, j->m, (long)j->w->cols, blk * ELM_GBF16_MR,
                             (uint32_t *)j->tile->apack);
}

static void bf16_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    float *wp = wpack_or_rows(j, b, e, ith); /* its 32 KiB panel fits in the f32 one */
    if (wp)
        elm_gemm_bf16_rows((const uint32_t *)j->tile->apack, j->m, j->w, b, e, j->c, j->ldc,
                           j->accumulate, (uint32_t *)wp);
}

/* BF16 weights by bfmmla (arch/arm/gemm_bf16_neon.c): the same two steps. */
static void pack_bf16n_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    for (long blk = b; blk < e; blk++)
        elm_gemm_bf16_neon_pack_a(j->a, j->lda, j->m, (long)j->w->cols, blk * ELM_GBF16N_MR,
                                  (uint16_t *)j->tile->apack);
}

_Static_assert(ELM_GBF16N_KC / 4 * ELM_GBF16N_NR * 4 * 2 <=
                   2 * ELM_GEMM512_KC * ELM_GEMM512_NR * sizeof(float),
               "the bfmmla W panel fits in the f32 one");

static void bf16n_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    float *wp = wpack_or_rows(j, b, e, ith);
    if (wp)
        elm_gemm_bf16_neon_rows((const uint16_t *)j->tile->apack, j->m, j->w, b, e, j->c, j->ldc,
                                j->accumulate, (uint16_t *)wp);
}

/* A packed (apack_bytes) by the pool in blocks of mr tokens, then the
 * rows in ranges of nr by the micro-kernel's task; false if no memory. */
static bool packed_gemm(struct gemm_job *job, struct elm_threadpool *pool, size_t apack_bytes,
                        long mr, long nr, void (*pack)(void *, long, long, int),
                        void (*rows_of)(void *, long, long, int))
{
    struct elm_gemm_tile *tile = job->tile;
    if (!(tile->apack = grow(tile->apack, &tile->apack_bytes, apack_bytes)))
        return false;
    long blocks = (job->m + mr - 1) / mr, rows = (long)job->w->rows;
    elm_threadpool_for(pool, blocks, elm_threadpool_chunk(pool, blocks, 2, 1, 1), pack, job);
    elm_threadpool_for(pool, rows, elm_threadpool_chunk(pool, rows, 4, nr, 64), rows_of, job);
    return true;
}

/* Our GEMMs: BF16 weights by bf16 pairs where that pays (x86) or by
 * bfmmla (AArch64), else f32 with AVX-512; false (BLIS runs) where none
 * fits. */
static bool own_gemm(struct gemm_job *job, struct elm_threadpool *pool)
{
    long k = (long)job->w->cols;
    bool bf16 = job->w->dtype == ELM_DTYPE_BF16 && !job->tile->exact;
    if (bf16 && elm_gemm_bf16_available())
        return packed_gemm(job, pool, elm_gemm_bf16_apack_words(job->m, k) * sizeof(uint32_t),
                           ELM_GBF16_MR, ELM_GBF16_NR, pack_bf16_task, bf16_task);
    if (bf16 && elm_gemm_bf16_neon_available())
        return packed_gemm(job, pool, elm_gemm_bf16_neon_apack_halves(job->m, k) * sizeof(uint16_t),
                           ELM_GBF16N_MR, ELM_GBF16N_NR, pack_bf16n_task, bf16n_task);
    if (!elm_gemm512_available())
        return false;
    return packed_gemm(job, pool, elm_gemm512_apack_floats(job->m, k) * sizeof(float),
                       ELM_GEMM512_MR, ELM_GEMM512_NR, pack_a_task, own_task);
}

static bool own_wanted;

static void choose_large(void)
{
    const char *e = getenv("ELM_GEMM");
    own_wanted = e && strcmp(e, "blis") == 0 ? false : e && strcmp(e, "own") == 0 ? true
                                                                                  : OWN_DEFAULT;
}

static pthread_once_t large_once = PTHREAD_ONCE_INIT;

/* ELM_GEMM is not "blis" (our GEMMs run where they fit the CPU). */
static bool own_wanted_now(void)
{
    pthread_once(&large_once, choose_large);
    return own_wanted;
}

/* Checked per call: the tests switch kernel sets at run time. */
const char *elm_gemm_large_name(void)
{
    return own_wanted_now() && elm_gemm512_available() ? "own" : "blis";
}

/* Crossovers measured on Zen 5 (CPU time per flop, weights 26 MB, one
 * thread): the row kernels (4 rows x 4 tokens, no packing) reach ~105
 * GFLOPS on F32 and ~170 on BF16 at any batch; our GEMM from ~80 at 32
 * tokens to ~140 at 128 and ~195 at 512 (BF16 too: it widens while
 * packing); BLIS 'skx' from ~60 at 32 to ~150-180 at 512, 16-bit weights
 * widened first.  F32: the row kernels up to 56 tokens with our GEMM, 96
 * with BLIS; BF16/F16: up to 192.  (Quantized weights: quant_gemm.) */
int elm_gemm_min_blis_m(enum elm_dtype dtype)
{
    switch (dtype) {
    case ELM_DTYPE_F16:
    case ELM_DTYPE_BF16: return 192;
    default: return elm_gemm_large_name()[0] == 'o' ? 56 : 96;
    }
}

/* ------------------------------------------- block-quantized weights */

static void round_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    size_t one = elm_qact_bytes(j->w->cols);
    elm_quant_round(j->w, j->a + b * j->lda, j->lda, (int)(e - b),
                    (char *)j->tile->qact + (size_t)b * one, j->tile->qa + b);
}

static void pack_i8_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct gemm_job *j = arg;
    for (long blk = b; blk < e; blk++)
        elm_gemm_i8_pack_a(j->w->dtype, j->qa, j->m, blk * ELM_GI8_MR, j->tile->i8a);
}

static void i8_task(void *arg, long b, long e, int ith)
{
    const struct gemm_job *j = arg;
    void *wp = tile_of(j->tile, ith);
    if (!wp) { /* out of memory: the row kernels need no scratch */
        elm_quant_rows_rounded(j->w, j->qa, (int)j->m, j->c + b, j->ldc, b, e, j->accumulate);
        return;
    }
    elm_gemm_i8_rows(j->tile->i8a, j->m, j->w, b, e, j->c, j->ldc, j->accumulate, wp);
}

/* The product's activations rounded to int8 once, into the tile (threads
 * split the tokens), job->qa set; false without memory for them. */
static bool round_once(struct gemm_job *job, struct elm_threadpool *pool)
{
    struct elm_gemm_tile *tile = job->tile;
    long m = job->m;
    size_t qbytes = elm_quant_act_bytes(job->w, (int)m);
    if (!qbytes || !(tile->qact = grow(tile->qact, &tile->qact_bytes, qbytes)) ||
        !(tile->qa = grow(tile->qa, &tile->qa_bytes, (size_t)m * sizeof *tile->qa)))
        return false;
    if (m <= ELM_QUANT_MAX_M)
        round_task(job, 0, m, 0);
    else
        elm_threadpool_for(pool, m, elm_threadpool_chunk(pool, m, 2, 1, 16), round_task, job);
    job->qa = tile->qa;
    return true;
}

/* Quantized weights meet int8 activations at every batch size, as in
 * llama.cpp: the activations are rounded once per product (threads split
 * the tokens), then the row kernels (small batches: blocks of rows stay in
 * L2 while the tokens pass over them) or the int8 GEMM (AVX2, AVX-512).
 * False (nothing done) when the set has no int8 kernel for the batch (the
 * portable set from I8_GEMM_MIN_M tokens: the f32 path widens the weights
 * exactly) or memory is short. */
static bool quant_gemm(struct gemm_job *job, struct elm_threadpool *pool)
{
    const struct elm_matrix *w = job->w;
    struct elm_gemm_tile *tile = job->tile;
    long m = job->m, rows = (long)w->rows, k = (long)w->cols;
    bool gemm = m >= I8_GEMM_MIN_M && elm_gemm_i8_available(w->dtype, k);
    if (m >= I8_GEMM_MIN_M && !gemm)
        return false; /* the portable set: widened weights and BLIS beat its int8 rows */
    if (!round_once(job, pool))
        return false;
    size_t wneed = elm_gemm_i8_wpack_bytes(w->dtype, k);
    if (gemm && wneed <= tile->floats * sizeof(float) &&
        (tile->i8a = grow(tile->i8a, &tile->i8a_bytes, elm_gemm_i8_apack_bytes(w->dtype, m, k)))) {
        long tiles = (m + ELM_GI8_MR - 1) / ELM_GI8_MR;
        elm_threadpool_for(pool, tiles, elm_threadpool_chunk(pool, tiles, 2, 1, 4), pack_i8_task,
                           job);
        elm_threadpool_for(pool, rows, elm_threadpool_chunk(pool, rows, 4, ELM_GI8_NR, 64),
                           i8_task, job);
        return true;
    }
    decode_rows(pool, rows, job);
    return true;
}

/* elm_gemm_rows_of: runs of consecutive listed rows, a range of the list a
 * task. */
struct rows_of_job {
    struct gemm_job *job;
    const int32_t *rows;
};

static void rows_of_task(void *arg, long b, long e, int ith)
{
    const struct rows_of_job *r = arg;
    for (long i = b; i < e;) {
        long j = i + 1;
        while (j < e && r->rows[j] == r->rows[j - 1] + 1)
            j++;
        rows_task(r->job, r->rows[i], r->rows[j - 1] + 1, ith);
        i = j;
    }
}

void elm_gemm_rows_of(const float *a, const struct elm_matrix *w, const int32_t *rows, int n_rows,
                      float *c, struct elm_threadpool *pool, struct elm_gemm_tile *tile)
{
    struct gemm_job job = {.a = a, .lda = (long)w->cols, .m = 1, .w = w, .c = c,
                           .ldc = (long)w->rows, .tile = tile};
    /* the activations rounded once, as quant_gemm does for decode (without
     * memory for them each run rounds its own, as rows_task does) */
    if (elm_dtype_is_quant(w->dtype))
        (void)round_once(&job, pool);
    struct rows_of_job r = {.job = &job, .rows = rows};
    elm_threadpool_for(pool, n_rows, elm_threadpool_chunk(pool, n_rows, 1, 1, 64), rows_of_task,
                       &r);
}

void elm_gemm(const float *a, long lda, long m, const struct elm_matrix *w, float *c, long ldc,
              bool accumulate, struct elm_threadpool *pool, struct elm_gemm_tile *tile)
{
    struct gemm_job job = {.a = a, .lda = lda, .m = m, .w = w, .c = c, .ldc = ldc,
                           .accumulate = accumulate, .tile = tile};
    if (elm_dtype_is_quant(w->dtype) && quant_gemm(&job, pool))
        return;
    long rows = (long)w->rows;
    if (m < elm_gemm_min_blis_m(w->dtype)) {
        decode_rows(pool, rows, &job);
    } else if (own_wanted_now() && own_gemm(&job, pool)) {
        return;
    } else if (!elm_gemm_blis_ok()) { /* BLIS failed its check: the row kernels */
        elm_threadpool_for(pool, rows, elm_threadpool_chunk(pool, rows, 4, 16, 64), rows_task,
                           &job);
    } else {
        /* Two ranges a thread: a thread the OS parks costs at most half its
         * share; more ranges would repack A (the activations) more often. */
        long chunk = elm_threadpool_chunk(pool, rows, 2, 16, 256);
        elm_threadpool_for(pool, rows, chunk, blis_task, &job);
    }
}
