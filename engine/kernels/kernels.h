/* kernels.h: the inner loops of the forward pass (engine-internal), for
 * the kernel set in use (kernels.c calls its functions).
 *
 * Each kernel has a portable C version and AVX2+FMA+F16C and AVX-512
 * versions (a file per set and family: f32_*.c, q8q4*.c, kquant*.c); one
 * set is chosen once at run time from the CPU's features (cpu.h:
 * ELM_KERNELS=generic|avx2|avx512 in the environment, or
 * elm_kernels_select(), forces a set: the tests run every set the CPU has).
 * The f32 family reads weights as stored (F32, BF16, F16) and computes in
 * f32; the block types meet int8 activations (act_int8.h).
 *
 * Determinism: every output of elm_matmul_rows is one dot product whose
 * summation order depends only on the column count and the kernel set,
 * never on the row range, the token count or the thread that computes it.
 */
#ifndef ELMCHAT_ENGINE_KERNELS_H
#define ELMCHAT_ENGINE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "engine/kernels/cpu.h"

struct elm_matrix;
struct elm_qact;

/* Pick the kernels for this CPU (elm_cpu_preferred_isa); idempotent,
 * thread-safe. */
void elm_kernels_init(void);
/* The set in use (elm_isa_name says it). */
enum elm_isa elm_kernels_isa(void);
/* Switch to isa; false (nothing changed) when this CPU cannot run it.  Not
 * while another thread computes (tests). */
bool elm_kernels_select(enum elm_isa isa);

/* Widen n elements of dtype to f32 (exact). */
void elm_to_f32(const void *src, enum elm_dtype dtype, float *dst, size_t n);
/* y[i] += a * x[i] */
void elm_axpy_f32(float a, const float *x, float *y, size_t n);
/* y[i] *= a */
void elm_scale_f32(float a, float *y, size_t n);
/* out[i] = x[i] * rsqrt(mean(x^2) + eps) * w[i]; the sum of squares in
 * double (the SIMD sets too: cheap, and it keeps the f32 engine close to
 * the float64 reference); out may be x. */
void elm_rmsnorm(const float *x, const float *w, float *out, size_t n, float eps);
/* g[i] = silu(g[i]) * u[i] */
void elm_swiglu(float *g, const float *u, size_t n);
/* y[r - r0] (+)= dot(W[r, :], x) for rows r in [r0, r1). */
void elm_matvec_rows(const struct elm_matrix *w, const float *x, float *y, int64_t r0, int64_t r1,
                     bool accumulate);
/* Y[t, r - r0] (+)= dot(W[r, :], X[t, :]) for t < m and rows r in [r0, r1):
 * X has row stride ldx, Y row stride ldy (floats).  Weight rows are read
 * once for up to four tokens at a time (small batches, decode). */
void elm_matmul_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                     long ldy, int64_t r0, int64_t r1, bool accumulate);

/* Block-quantized rows as elm_matmul_rows, with int8 activations
 * (act_int8.h: each token rounded once per call, then the set's Q8_0/Q4_0
 * or K-quant kernel); false (nothing done) when the set in use has none for
 * this dtype: then blocks.c's f32 kernels run. */
bool elm_quant_fast_rows(const struct elm_matrix *w, const float *x, long ldx, int m, float *y,
                         long ldy, int64_t r0, int64_t r1, bool accumulate);
/* The same in two steps, so that a product split over threads rounds its
 * activations once (gemm.c), not once per row range:
 * elm_quant_act_bytes: the buffer m tokens need, 0 when the set in use has
 * no int8 kernel for w; elm_quant_round: round them into
 * buf (that many bytes, 64-byte aligned), qa[m] describing them;
 * elm_quant_rows_rounded: the rows [r0, r1) against them. */
/* elm_quant_fast_rows rounds up to this many tokens at once (stack) */
#define ELM_QUANT_MAX_M 16
size_t elm_quant_act_bytes(const struct elm_matrix *w, int m);
void elm_quant_round(const struct elm_matrix *w, const float *x, long ldx, int m, void *buf,
                     struct elm_qact *qa);
void elm_quant_rows_rounded(const struct elm_matrix *w, const struct elm_qact *qa, int m,
                            float *y, long ldy, int64_t r0, int64_t r1, bool accumulate);

/* Keys per block of the tiled attention. */
#define ELM_ATTN_BK 64
/* Query rows per elm_attn_rows call: the SIMD sets keep the scores and
 * outputs of this many rows in registers, so each load of K^T and V serves
 * all of them (prefill's tokens; the grouped query heads of one kv head). */
#define ELM_ATTN_BR 4
/* One step of attention with an online softmax for nr <= ELM_ATTN_BR query
 * rows q[r][hd] against one block of keys given transposed,
 * kt[d * ELM_ATTN_BK + s] (columns past the block's keys zero), and their
 * value rows v + s * ldv.  Row r sees the first nk[r] keys (causal limit,
 * 0 <= nk[r] <= ELM_ATTN_BK; 0 leaves the row as it is) and updates its
 * running maximum m[r] (start -INFINITY), running sum l[r] (start 0) and
 * unnormalized output o + r * hd (start 0).  Scores are (q . k) * scale; the
 * caller divides o by l.  A row's result depends on its own inputs only,
 * never on nr or the other rows (bit for bit). */
void elm_attn_rows(int nr, const float *const *q, const int *nk, float scale, const float *kt,
                   const float *v, long ldv, int hd, float *m, float *l, float *o);

/* Ask for rows x cols floats at p (row stride ld) to be cached: the next
 * key block while the kernel works on this one (a no-op where the compiler
 * has no prefetch). */
void elm_prefetch_rows(const float *p, long ld, int rows, int cols);

/* out[c * ld_out + r] = in[r * ld_in + c] for r < rows, c < cols. */
void elm_transpose(const float *in, long ld_in, int rows, int cols, float *out, long ld_out);

/* Sum of n floats read as fast as the CPU can (the bandwidth probe). */
float elm_read_sum(const float *p, size_t n);

#endif
