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

/* The instruction sets the kernels are written for.  Within one
 * architecture each level includes the ones before it; generic runs
 * everywhere.  Compare levels only within one architecture (elm_isa_x86,
 * elm_isa_arm): an x86 set is never "below" an ARM one. */
enum elm_isa {
    ELM_ISA_GENERIC,      /* portable C */
    ELM_ISA_AVX2,         /* x86-64: AVX2, FMA, F16C */
    ELM_ISA_AVX512,       /* and AVX-512 F, BW, VL, DQ: int8 products by vpmaddubsw */
    ELM_ISA_AVX512_VNNI,  /* and AVX512-VNNI: int8 products by vpdpbusd (the same bits) */
    ELM_ISA_NEON,         /* AArch64: Advanced SIMD (every AArch64 CPU) */
    ELM_ISA_NEON_DOTPROD, /* and FEAT_DotProd: int8 products by SDOT */
    ELM_ISA_NEON_I8MM,    /* and FEAT_I8MM: int8 tiles by SMMLA */
};
#define ELM_ISA_COUNT 7

/* isa is an x86 (ARM) set at level at_least or above; at_least is one of
 * that architecture's levels. */
static inline bool elm_isa_x86(enum elm_isa isa, enum elm_isa at_least)
{
    return isa >= at_least && isa >= ELM_ISA_AVX2 && isa <= ELM_ISA_AVX512_VNNI;
}
static inline bool elm_isa_arm(enum elm_isa isa, enum elm_isa at_least)
{
    return isa >= at_least && isa >= ELM_ISA_NEON && isa <= ELM_ISA_NEON_I8MM;
}

/* The CPU, probed once (thread-safe; fine before main). */
struct elm_cpu {
    enum elm_isa isa; /* the best set it runs */
    /* x86-64 (CPUID) */
    bool gfni;        /* GFNI: the VNNI Q4_0 kernel unpacks nibbles with it */
    bool avx512_bf16; /* AVX512_BF16: vdpbf16ps for the BF16 prefill GEMM */
    bool amd;         /* vendor AMD ... */
    bool amd_family_named; /* ... of a family GCC names: 10h, 15h, 17h, 19h */
    /* AArch64 (getauxval on Linux, sysctlbyname on macOS; elsewhere what
     * the compiler was told the target has) */
    bool arm_bf16; /* FEAT_BF16: BFDOT, BFMMLA */
    bool arm_fp16; /* FEAT_FP16: half-precision arithmetic (conversion needs none) */
    bool arm_sve;  /* SVE (no kernel uses it yet) */
    const char *source; /* how the features were read: "cpuid", "getauxval", ... */
};
const struct elm_cpu *elm_cpu(void);

/* This CPU runs the set: generic, or a level of its own architecture at
 * or below its best. */
bool elm_cpu_runs(enum elm_isa isa);

/* The sets a test runs, generic first, then each level of this CPU's
 * architecture it runs (x86: avx2, then avx512 at its best level, as
 * ELM_KERNELS=avx512 picks; ARM: neon, dotprod, i8mm); their number.
 * With ELM_KERNELS naming a set this CPU runs, that set alone (the ARM CI
 * stage tests one level per emulated CPU). */
int elm_cpu_sets(enum elm_isa out[ELM_ISA_COUNT]);

/* The set to use unless a test selects another (kernels.h): the one
 * ELM_KERNELS names (generic, avx2, avx512, neon, dotprod, i8mm) when this
 * CPU runs it, else the best. */
enum elm_isa elm_cpu_preferred_isa(void);

/* The set's name as ELM_KERNELS and `bench --kernels` say it: "generic",
 * "avx2", "avx512" (both AVX-512 levels: VNNI is used where the CPU has
 * it), "neon", "dotprod", "i8mm".  For display only. */
const char *elm_isa_name(enum elm_isa isa);

/* What the probe found, for `bench --kernels` and `info`: e.g. "x86-64
 * (cpuid): avx2 avx512 vnni gfni" or "aarch64 (getauxval): neon dotprod
 * i8mm bf16 fp16"; static storage. */
const char *elm_cpu_features(void);

#endif
