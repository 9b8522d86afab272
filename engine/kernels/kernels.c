/* kernels.c: the kernel set in use and the one place that calls each
 * family's functions for it (kernels.h): the f32 family's table (f32.h),
 * the int8 rounding of activations and the rows of the block types
 * against them (Q8_0/Q4_0: q8q4*.c, K-quants: kquant*.c), the widening of
 * block rows; blocks.c's f32 kernels where a set has no int8 kernel.
 *
 * Block types decode as llama.cpp does: each token's activations rounded
 * once per call to int8 blocks of 32 (act_int8.h), then every weight block
 * meets them in an exact integer dot product and one float multiply.  The
 * f32 widening costs more than reading the weights; integers do not. */
#include "config.h"

#include "engine/kernels/kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/f32.h"
#include "engine/kernels/matrix.h"
#include "engine/kernels/q8q4.h"

/* ------------------------------------------------------ the set in use */

static enum elm_isa in_use = ELM_ISA_GENERIC;
/* The f32 table of in_use (the portable one until elm_kernels_init). */
static const struct elm_f32_set *k = &elm_f32_generic;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct elm_f32_set *f32_set(enum elm_isa isa)
{
#ifdef ELM_F32_X86
    if (elm_isa_x86(isa, ELM_ISA_AVX512))
        return &elm_f32_avx512;
    if (elm_isa_x86(isa, ELM_ISA_AVX2))
        return &elm_f32_avx2;
#endif
#ifdef ELM_F32_ARM
    if (elm_isa_arm(isa, ELM_ISA_NEON)) /* plain NEON serves every level */
        return &elm_f32_neon;
#endif
    (void)isa;
    return &elm_f32_generic;
}

static void use(enum elm_isa isa)
{
    in_use = isa;
    k = f32_set(isa);
}

static void pick(void)
{
    use(elm_cpu_preferred_isa());
}

void elm_kernels_init(void)
{
    pthread_once(&once, pick);
}

enum elm_isa elm_kernels_isa(void)
{
    elm_kernels_init();
    return in_use;
}

bool elm_kernels_select(enum elm_isa isa)
{
    elm_kernels_init();
    if (!elm_cpu_runs(isa))
        return false;
    use(isa);
    return true;
}

/* ----------------------------------------------------------- f32 family */

void elm_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n)
{
    switch (dtype) {
    case ELM_DTYPE_F32: memcpy(dst, src, n * sizeof *dst); break;
    case ELM_DTYPE_F16: k->cvt_f16(src, dst, n); break;
    case ELM_DTYPE_BF16: k->cvt_bf16(src, dst, n); break;
    default: /* block types: AVX-512 widens Q8_0/Q4_0, blocks.c the rest (and the fallback) */
#ifdef ELM_F32_X86
        if ((dtype == ELM_DTYPE_Q8_0 || dtype == ELM_DTYPE_Q4_0) && n % 32 == 0 &&
            elm_isa_x86(elm_kernels_isa(), ELM_ISA_AVX512)) {
            elm_quant_widen_avx512(src, dtype, dst, n);
            break;
        }
#endif
        elm_dequantize(src, dtype, dst, (int64_t)n);
        break;
    }
}

void elm_axpy_f32(float a, const float *x, float *y, size_t n)
{
    k->axpy(a, x, y, n);
}

void elm_scale_f32(float a, float *y, size_t n)
{
    k->scale(a, y, n);
}

void elm_rmsnorm(const float *x, const float *w, float *out, size_t n, float eps)
{
    k->rmsnorm(x, w, out, n, eps);
}

void elm_swiglu(float *g, const float *u, size_t n)
{
    k->swiglu(g, u, n);
}

void elm_attn_rows(int nr, const float *const *q, const int *nk, float scale, const float *kt,
                   const float *v, long ldv, int hd, float *m, float *l, float *o)
{
    k->attn_rows(nr, q, nk, scale, kt, v, ldv, hd, m, l, o);
}

void elm_prefetch_rows(const float *p, long ld, int rows, int cols)
{
#ifdef __GNUC__
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 16) /* a 64-byte line */
            __builtin_prefetch(p + r * ld + c);
#else
    (void)p, (void)ld, (void)rows, (void)cols;
#endif
}

void elm_transpose(const float *in, long ld_in, int rows, int cols, float *out, long ld_out)
{
    k->transpose(in, ld_in, rows, cols, out, ld_out);
}

float elm_read_sum(const float *p, size_t n)
{
    elm_kernels_init();
    return k->read_sum(p, n);
}

void elm_matmul_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                     long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    if (r1 <= r0 || m <= 0)
        return;
    if (elm_dtype_is_quant(w->dtype)) { /* block types: int8 kernels, else blocks.c per token */
        if (elm_quant_fast_rows(w, x, ldx, m, y, ldy, r0, r1, accumulate))
            return;
        for (int t = 0; t < m; t++)
            elm_quant_matvec_rows(w->data, w->dtype, w->cols, x + t * ldx, y + t * ldy, r0, r1,
                                  accumulate);
        return;
    }
    size_t ldw = (size_t)w->cols * elm_dtype_size(w->dtype);
    k->mm[w->dtype]((const char *)w->data + (size_t)r0 * ldw, ldw, (long)w->cols, x, ldx, m, y,
                   ldy, (long)(r1 - r0), accumulate);
}

void elm_matvec_rows(const struct elm_matrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                     bool accumulate)
{
    elm_matmul_rows(w, x, 0, 1, y, 0, r0, r1, accumulate);
}

/* ----------------------------------------------- block types x int8 */

void elm_quantize_act(const float *x, struct elm_qact *a)
{
    enum elm_isa set = elm_kernels_isa();
    if (elm_isa_x86(set, ELM_ISA_AVX512))
        elm_quantize_act_avx512(x, a);
    else if (elm_isa_x86(set, ELM_ISA_AVX2))
        elm_quantize_act_avx2(x, a);
    else if (elm_isa_arm(set, ELM_ISA_NEON))
        elm_quantize_act_neon(x, a);
    else
        elm_quantize_act_ref(x, a);
}

static elm_qrows_fn set_rows(enum elm_dtype dtype, enum elm_isa set)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0:
    case ELM_DTYPE_Q4_0: return elm_q80_q40_rows(dtype, set);
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
    case ELM_DTYPE_Q6_K: return elm_kquant_rows(dtype, set);
    default: return NULL;
    }
}

/* The int8 kernel for dtype with the set in use, or NULL.  A set without
 * its own kernel for a block type (the AArch64 sets built by a compiler
 * without GCC's NEON intrinsics) runs the portable int8 one: the same bits
 * as the generic set, where blocks.c's f32 kernels would give others. */
static elm_qrows_fn rows_for(enum elm_dtype dtype)
{
    elm_qrows_fn f = set_rows(dtype, elm_kernels_isa());
    return f ? f : set_rows(dtype, ELM_ISA_GENERIC);
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

static elm_qrows_multi_fn rows_multi_for(enum elm_dtype dtype, int64_t cols)
{
    switch (dtype) {
    case ELM_DTYPE_Q8_0:
    case ELM_DTYPE_Q4_0: return elm_q80_q40_rows_multi(dtype, elm_kernels_isa(), cols);
    case ELM_DTYPE_Q4_K:
    case ELM_DTYPE_Q5_K:
    case ELM_DTYPE_Q6_K: return elm_kquant_rows_multi(dtype, elm_kernels_isa(), cols);
    default: return NULL;
    }
}

void elm_quant_rows_rounded(const struct elm_matrix *w, const struct elm_qact *qa, int m,
                            float *y, long ldy, int64_t r0, int64_t r1, bool accumulate)
{
    elm_qrows_fn rows = rows_for(w->dtype);
    elm_qrows_multi_fn multi = rows_multi_for(w->dtype, w->cols);
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
        if (multi) {
            for (int t = 0; t < m; t += ELM_QROWS_MULTI_MAX)
                multi(base + (size_t)r * ldw, ldw, w->cols, &qa[t],
                      m - t < ELM_QROWS_MULTI_MAX ? m - t : ELM_QROWS_MULTI_MAX, y + t * ldy + r,
                      ldy, n, accumulate);
            continue;
        }
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
        return false; /* out of memory: blocks.c's kernels need none */
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
