/* gemm_int8_tiles.h: the packed layouts of the int8 GEMM (engine-internal),
 * shared by gemm_int8.c (packing, the x86 kernels) and the AArch64 smmla
 * and sdot kernels (arch/arm/gemm_int8_neon.c).
 *
 * A tile of the activations: MR tokens' int8 values in groups of g bytes
 * ([k/g][MR][g]: g = 4 feeds x86's 32-bit broadcasts and sdot's lanes, g = 8
 * smmla's 2x8 operands), then per weight sub-block each token's scale d and its
 * correction (int32 -bias * sum(q) for the bias types, float d * sum(q)
 * for the types with mins).  A weight panel: NR rows' unsigned (or, for
 * Q8_0 without VNNI, signed) bytes in the same groups, [k/g][NR][g], their
 * per-sub-block scales s and (mins) offsets o as [nsb][NR], and room for
 * the rows unpacked before they are interleaved. */
#ifndef ELMCHAT_ENGINE_KERNELS_GEMM_INT8_TILES_H
#define ELMCHAT_ENGINE_KERNELS_GEMM_INT8_TILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels/matrix.h"

#define ELM_GI8_MR 4  /* tokens per micro-tile */
#define ELM_GI8_NR 32 /* weight rows per panel (x86: two vectors) */

/* A weight type's sub-block width, the bias added to make its weights
 * unsigned (0: none; Q4_K/Q5_K have float mins instead). */
struct elm_gi8_kind {
    int sb;
    int bias;
    bool mins;
};

static inline size_t elm_gi8_up64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* One A tile of k columns: q [k/g][MR][g], d [nsb][MR], corrections [nsb][MR]. */
static inline size_t elm_gi8_tile_bytes(long k, int sb)
{
    size_t nsb = (size_t)k / (size_t)sb;
    return elm_gi8_up64((size_t)k * ELM_GI8_MR) + 2 * elm_gi8_up64(nsb * ELM_GI8_MR * 4);
}

/* The parts of the tile at p; ci and cf are the same corrections, int32
 * (bias types) or float (mins). */
struct elm_gi8_atile {
    int32_t *q, *ci;
    float *d, *cf;
};

static inline struct elm_gi8_atile elm_gi8_atile_at(const void *p, long k, int sb)
{
    char *base = (char *)(uintptr_t)p; /* const for the kernels, written by pack_a */
    size_t nsb = (size_t)k / (size_t)sb, qb = elm_gi8_up64((size_t)k * ELM_GI8_MR);
    char *corr = base + qb + elm_gi8_up64(nsb * ELM_GI8_MR * 4);
    return (struct elm_gi8_atile){.q = (int32_t *)(void *)base,
                                  .ci = (int32_t *)(void *)corr,
                                  .d = (float *)(void *)(base + qb),
                                  .cf = (float *)(void *)corr};
}

/* The weight panel of NR rows (zeros past the matrix's last row). */
struct elm_gi8_panel {
    uint32_t *q;
    float *s, *o;
    uint8_t *u; /* the rows unpacked, [NR][k] */
    float *us, *uo; /* their scales and offsets, [NR][nsb] */
};

static inline struct elm_gi8_panel elm_gi8_panel_at(void *wp, long k, int sb)
{
    size_t nsb = (size_t)k / (size_t)sb;
    size_t qb = elm_gi8_up64((size_t)k * ELM_GI8_NR), sbb = elm_gi8_up64(nsb * ELM_GI8_NR * 4);
    char *p = wp;
    return (struct elm_gi8_panel){.q = (uint32_t *)(void *)p,
                                  .s = (float *)(void *)(p + qb),
                                  .o = (float *)(void *)(p + qb + sbb),
                                  .u = (uint8_t *)(p + qb + 2 * sbb),
                                  .us = (float *)(void *)(p + 2 * qb + 2 * sbb),
                                  .uo = (float *)(void *)(p + 2 * qb + 3 * sbb)};
}

/* The panel's bytes (same for every layout). */
static inline size_t elm_gi8_panel_bytes(long k, int sb)
{
    size_t nsb = (size_t)k / (size_t)sb;
    return 2 * elm_gi8_up64((size_t)k * ELM_GI8_NR) + 4 * elm_gi8_up64(nsb * ELM_GI8_NR * 4);
}

#if defined(__aarch64__) && defined(__GNUC__)
/* The AArch64 GEMM (arch/arm/gemm_int8_neon.c): smmla (i8mm true, the CPU
 * must have FEAT_I8MM; A packed in groups of 8) or sdot by lane (FEAT_DotProd;
 * groups of 4): C[:, r0..r1) (+)= A W[r0..r1)^T, each thread's panel
 * repacked in wp (elm_gi8_panel_bytes).  The same bits either way. */
void elm_gemm_i8_rows_neon(const void *apack, long m, const struct elm_matrix *w,
                           const struct elm_gi8_kind *kd, bool i8mm, long r0, long r1, float *c,
                           long ldc, bool accumulate, void *wp);
/* False when the compiler could not build that kernel (clang before 16). */
bool elm_gemm_i8_neon_built(bool i8mm);
#endif

#endif
