/* kquant_x86.h: what the AVX2 and AVX-512 K-quant files share
 * (engine-internal; kquant_avx2.c, kquant_avx512.c): the AVX2 and AVX-512
 * Q4_K, Q5_K and Q6_K rows against int8 activations (the math is in
 * kquant.c's comment).
 *
 * The integer core is u8 x s8 -> int32: weights as unsigned bytes (nibbles
 * plus high bits, 0..31 or 0..63), activations as signed bytes.  AVX2 and
 * AVX-512BW use vpmaddubsw + vpmaddwd (pairs of products stay below 2 * 63
 * * 127 = 16002: no int16 saturation); AVX512-VNNI does both in one
 * vpdpbusd.  The int32 lanes of each sub-block are then summed into one
 * integer per sub-block (a transposing reduction), and only those meet the
 * float scales: a few float operations per 256 weights.  What does not
 * depend on the row is computed once per call, not once per row: for
 * Q4_K/Q5_K each sub-block's dx and -dx * sum(qx) for the mins (and, for
 * AVX-512, the activations reordered to match the weights' nibbles); for
 * AVX2 Q6_K the -32 offsets (32 * sum(qx) per sub-block, int32) and the dx
 * in the order of the reduction.  The rows then cost about what Q4_0's do
 * per weight (AVX-512, measured in cache: 76 G weights/s on one Zen 5
 * core, both).  AVX2 multiplies the 6-bit (Q6_K: int8) scales into the
 * integer sums (exact, below 2^24) and reduces the int16 pair sums with
 * hadds in int16 as far as they cannot wrap.
 *
 * Compiled with per-function target attributes (as the f32 kernels): the
 * files build with the default flags, and their kernels are looked up
 * (kquant.c) only on CPUs that have the set. */
#ifndef ELMCHAT_ENGINE_KERNELS_KQUANT_X86_H
#define ELMCHAT_ENGINE_KERNELS_KQUANT_X86_H

#include "engine/kernels/kquant.h"

#ifdef ELM_KQUANT_X86

#include <stdbool.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/arch/x86/simd_x86.h"

#define AVX512VNNI                                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
/* Software prefetch this many bytes ahead in a row's super-blocks, as the
 * Q8_0/Q4_0 and 16-bit kernels do: decode streams the weights once, and
 * the hardware prefetchers alone leave bandwidth unused.  AVX-512, 2
 * threads, interleaved (probe ~45 GB/s): 270M Q4_K tg128 246-252 -> 269-271
 * t/s, Q6_K 188-190 -> 202-203, 1.1B Q4_K 63-64 -> 71. */
#define KQ_PF_BYTES 8192

/* The lines of one super-block of `bytes`, KQ_PF_BYTES ahead. */
static INLINE void kq_prefetch(const uint8_t *b, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)b + KQ_PF_BYTES + o, _MM_HINT_T0);
}

/* The 6-bit scales (sc) and mins (m) of the 8 sub-blocks of a Q4_K/Q5_K
 * block as 8 bytes each, from the 12 packed bytes read as three words:
 * sub-blocks 0..3 are the low 6 bits of words 0 and 1; 4..7 take their low
 * 4 bits from word 2 and their top 2 from the spare top bits of words 0
 * (scales) and 1 (mins). */
static INLINE void k_scales(const uint8_t *s, uint64_t *sc, uint64_t *m)
{
    uint32_t a, b, c;
    memcpy(&a, s, 4);
    memcpy(&b, s + 4, 4);
    memcpy(&c, s + 8, 4);
    uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    *sc = (a & 0x3f3f3f3fu) | (uint64_t)sc_hi << 32;
    *m = (b & 0x3f3f3f3fu) | (uint64_t)m_hi << 32;
}

AVX2 static INLINE float half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

/* Activations of up to this many columns get their per-call tables (below)
 * on the stack (AVX2: 4 or 8 KiB, AVX-512: 20 KiB); wider rows (not OpenELM's)
 * remake them per group of super-blocks and row: the same values in the same
 * order, so the same bits, only slower. */
#define KQ_STACK_COLS 16384

#endif
#endif
