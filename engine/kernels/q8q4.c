/* kernels_quant.c: block-quantized weights in the matvec path: the int8
 * rounding of activations and the rows x int8 kernels for the kernel set in
 * use (quant_act.h), the portable Q8_0 / Q4_0 kernels, and the dispatch
 * behind elm_matmul_rows (elm_quant_fast_rows) and elm_to_f32.
 *
 * Decode with Q8_0 / Q4_0 (and the K-quants, kernels_kquant.c) is
 * llama.cpp's scheme: each token's activations are rounded once per call to
 * int8 blocks of 32, then every weight block meets them in an exact integer
 * dot product and one float multiply by d_w * d_x.  The f32 widening costs
 * more than reading the weights; integers do not.  A set without kernels for
 * a type returns NULL and quant.c's f32 kernels run. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/kernels/kernels.h"
#include "engine/kernels/q8q4.h"
#include "engine/model/model.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86_KERNELS 1
#endif

/* ------------------------------------------------------------ portable */

/* Exact int32 block sums; the float sums alternate between two partial
 * sums (even and odd blocks), a fixed order for a given cols. */
static void q4_0_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                         float *y, long nrows, bool accumulate)
{
    long nb = (long)(cols / 32);
    for (long r = 0; r < nrows; r++, w += ldw) {
        float s[2] = {0.0f, 0.0f};
        const uint8_t *b = w;
        for (long i = 0; i < nb; i++, b += ELM_Q4_0_BYTES) {
            const int8_t *q = x->q + 32 * i;
            int32_t isum = 0;
            for (int j = 0; j < 16; j++)
                isum += (b[2 + j] & 15) * q[j] + (b[2 + j] >> 4) * q[j + 16];
            isum -= 8 * (x->sum16[2 * i] + x->sum16[2 * i + 1]);
            s[i & 1] += elm_f16_at(b) * x->d[i] * (float)isum;
        }
        y[r] = accumulate ? y[r] + (s[0] + s[1]) : s[0] + s[1];
    }
}

static void q8_0_generic(const uint8_t *w, size_t ldw, int64_t cols, const struct elm_qact *x,
                         float *y, long nrows, bool accumulate)
{
    long nb = (long)(cols / 32);
    for (long r = 0; r < nrows; r++, w += ldw) {
        float s[2] = {0.0f, 0.0f};
        const uint8_t *b = w;
        for (long i = 0; i < nb; i++, b += ELM_Q8_0_BYTES) {
            const int8_t *q = x->q + 32 * i;
            int32_t isum = 0;
            for (int j = 0; j < 32; j++)
                isum += (int8_t)b[2 + j] * q[j];
            s[i & 1] += elm_f16_at(b) * x->d[i] * (float)isum;
        }
        y[r] = accumulate ? y[r] + (s[0] + s[1]) : s[0] + s[1];
    }
}

/* ------------------------------------------------------------ dispatch */

void elm_quantize_act(const float *x, struct elm_qact *a)
{
#ifdef HAVE_X86_KERNELS
    const char *set = elm_kernels_name();
    if (strcmp(set, "avx512") == 0) {
        elm_quantize_act_avx512(x, a);
        return;
    }
    if (strcmp(set, "avx2") == 0) {
        elm_quantize_act_avx2(x, a);
        return;
    }
#endif
    elm_quantize_act_ref(x, a);
}

elm_qrows_fn elm_q80_q40_rows(enum elm_dtype dtype, const char *set)
{
    if (dtype != ELM_DTYPE_Q8_0 && dtype != ELM_DTYPE_Q4_0)
        return NULL;
    if (strcmp(set, "generic") == 0)
        return dtype == ELM_DTYPE_Q8_0 ? q8_0_generic : q4_0_generic;
    if (strcmp(set, "avx2") == 0)
        return elm_q80_q40_rows_avx2(dtype);
    if (strcmp(set, "avx512") == 0)
        return elm_q80_q40_rows_avx512(dtype);
    return NULL;
}

/* The int8 kernel for dtype with the set in use, or NULL. */
static elm_qrows_fn rows_for(enum elm_dtype dtype)
{
    const char *set = elm_kernels_name();
    switch (dtype) {
    case ELM_DTYPE_Q8_0:
    case ELM_DTYPE_Q4_0: return elm_q80_q40_rows(dtype, set);
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
    case ELM_DTYPE_Q6_K: return elm_kquant_rows(dtype, set);
    default: return NULL;
    }
}

/* The rounded activations live on the stack (no allocation per call):
 * 64 KiB, one token of up to 50,000 columns or up to 16 tokens (gemm.c's
 * small batches) of fewer; wider rows go to the heap. */
#define STACK_BYTES 65536
/* Several tokens: the rows go by blocks of about this many weight bytes
 * (kept in L2 while every token passes over them). */
#define BLOCK_BYTES (256 * 1024)

size_t elm_quant_act_bytes(const struct elm_matrix *w, int m)
{
    if (!rows_for(w->dtype) || w->cols % ELM_QA_BLOCK != 0 || w->cols <= 0 || m <= 0)
        return 0;
    return (size_t)m * elm_qact_bytes(w->cols);
}

void elm_quant_round(const struct elm_matrix *w, const float *x, long ldx, int m, void *buf,
                     struct elm_qact *qa)
{
    size_t one = elm_qact_bytes(w->cols);
    for (int t = 0; t < m; t++) {
        elm_qact_init(&qa[t], w->cols, (unsigned char *)buf + (size_t)t * one);
        elm_quantize_act(x + t * ldx, &qa[t]);
    }
}

void elm_quant_rows_rounded(const struct elm_matrix *w, const struct elm_qact *qa, int m,
                            float *y, long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    elm_qrows_fn rows = rows_for(w->dtype);
    size_t ldw = elm_row_size(w->dtype, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * ldw;
    long nrows = (long)(r1 - r0);
    if (m == 1) {
        rows(base, ldw, w->cols, &qa[0], y, nrows, accumulate);
        return;
    }
    /* several tokens: blocks of rows stay in L2 while every token passes;
     * any row range gives the same bits (every kernel's contract) */
    long step = (long)(BLOCK_BYTES / ldw);
    step = step < 1 ? 1 : step;
    for (long r = 0; r < nrows; r += step) {
        long n = nrows - r < step ? nrows - r : step;
        for (int t = 0; t < m; t++)
            rows(base + (size_t)r * ldw, ldw, w->cols, &qa[t], y + t * ldy + r, n, accumulate);
    }
}

bool elm_quant_fast_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                         long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    if (!rows_for(w->dtype) || w->cols % ELM_QA_BLOCK != 0 || w->cols <= 0 || m <= 0)
        return false;
    _Alignas(64) unsigned char stack[STACK_BYTES];
    size_t one = elm_qact_bytes(w->cols);
    /* all m tokens rounded first when they fit, else one at a time */
    int nq = m <= ELM_QUANT_MAX_M && (size_t)m * one <= sizeof stack ? m : 1;
    void *buf = (size_t)nq * one <= sizeof stack ? stack : aligned_alloc(64, (one + 63) / 64 * 64);
    if (!buf)
        return false; /* out of memory: quant.c's kernels need none */
    struct elm_qact qa[ELM_QUANT_MAX_M];
    if (nq == m) {
        elm_quant_round(w, x, ldx, m, buf, qa);
        elm_quant_rows_rounded(w, qa, m, y, ldy, r0, r1, accumulate);
    } else {
        for (int t = 0; t < m; t++) {
            elm_quant_round(w, x + t * ldx, ldx, 1, buf, qa);
            elm_quant_rows_rounded(w, qa, 1, y + t * ldy, ldy, r0, r1, accumulate);
        }
    }
    if (buf != stack)
        free(buf);
    return true;
}

bool elm_quant_fast_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
#ifdef HAVE_X86_KERNELS
    if ((dtype == ELM_DTYPE_Q8_0 || dtype == ELM_DTYPE_Q4_0) && n % 32 == 0 &&
        strcmp(elm_kernels_name(), "avx512") == 0) {
        elm_quant_widen_avx512(src, dtype, dst, n);
        return true;
    }
#else
    (void)src, (void)dtype, (void)dst, (void)n;
#endif
    return false;
}
