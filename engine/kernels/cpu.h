/* cpu.h: what this CPU runs, and which kernel set the engine uses
 * (engine-internal).
 *
 * The CPU is probed once, here and nowhere else; every kernel family (the
 * f32 rows, Q8_0/Q4_0, K-quants, the GEMMs, the int8 rounding of
 * activations) picks its functions from the one enum below, never from
 * feature tests or set names of its own.
 *
 * The set in use is kernels.h's (elm_kernels_isa).
 */
#ifndef ELMCHAT_ENGINE_KERNELS_CPU_H
#define ELMCHAT_ENGINE_KERNELS_CPU_H

#include <stdbool.h>

/* The instruction sets the kernels are written for, each including the
 * ones before it. */
enum elm_isa {
    ELM_ISA_GENERIC,     /* portable C */
    ELM_ISA_AVX2,        /* AVX2, FMA, F16C */
    ELM_ISA_AVX512,      /* and AVX-512 F, BW, VL, DQ: int8 products by vpmaddubsw */
    ELM_ISA_AVX512_VNNI, /* and AVX512-VNNI: int8 products by vpdpbusd (the same bits) */
};
#define ELM_ISA_COUNT 4

/* The CPU, probed once (thread-safe; fine before main). */
struct elm_cpu {
    enum elm_isa isa; /* the best set it runs */
    bool gfni;        /* GFNI: the VNNI Q4_0 kernel unpacks nibbles with it */
    bool avx512_bf16; /* AVX512_BF16: vdpbf16ps for the BF16 prefill GEMM */
    bool amd;         /* vendor AMD ... */
    bool amd_family_named; /* ... of a family GCC names: 10h, 15h, 17h, 19h */
};
const struct elm_cpu *elm_cpu(void);

/* The set to use unless a test selects another (kernels.h): the one
 * ELM_KERNELS names (generic, avx2, avx512) when this CPU runs it, else
 * the best. */
enum elm_isa elm_cpu_preferred_isa(void);

/* The set's name as ELM_KERNELS and `bench --kernels` say it: "generic",
 * "avx2", "avx512" (both AVX-512 levels: VNNI is used where the CPU has
 * it).  For display only. */
const char *elm_isa_name(enum elm_isa isa);

#endif
