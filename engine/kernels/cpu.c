/* cpu.c: the one probe of the CPU's features (cpu.h) and the names of the
 * kernel sets.  The only file that asks the CPU what it has: CPUID on
 * x86-64 (not __builtin_cpu_supports, whose names clang before 18 lacks),
 * the kernel's hardware capabilities on AArch64 Linux, sysctl on macOS,
 * and elsewhere what the compiler was told the target has. */
#include "config.h"

#include "engine/kernels/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#include <sys/types.h>
#endif

static struct elm_cpu cpu;
static char features[200];
static pthread_once_t probed = PTHREAD_ONCE_INIT;

/* Append " name" to the feature list when on. */
static void feature(bool on, const char *name)
{
    size_t n = strlen(features);
    if (on)
        snprintf(features + n, sizeof features - n, " %s", name);
}

#if defined(__x86_64__) && defined(__GNUC__)
static bool bit(unsigned reg, int b)
{
    return (reg >> b) & 1u;
}

/* XCR0: which register states the OS saves on a context switch. */
static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

static void probe_x86(void)
{
    unsigned a, b, c, d;
    unsigned max = __get_cpuid_max(0, NULL);
    if (max < 1 || !__get_cpuid(1, &a, &b, &c, &d)) {
        cpu.isa = ELM_ISA_GENERIC;
        return;
    }
    unsigned fam = (a >> 8) & 15u;
    if (fam == 15u)
        fam += (a >> 20) & 255u;
    bool fma = bit(c, 12), f16c = bit(c, 29), osxsave = bit(c, 27), avx = bit(c, 28);
    unsigned long long xs = osxsave ? xcr0() : 0;
    bool os_ymm = (xs & 6u) == 6u;       /* XMM and YMM state */
    bool os_zmm = os_ymm && (xs & 0xe0u) == 0xe0u; /* opmask, ZMM0-15 high, ZMM16-31 */
    unsigned b7 = 0, c7 = 0, a71 = 0;
    if (max >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d);
        if (a >= 1) { /* the highest sub-leaf */
            unsigned b71, c71, d71;
            __cpuid_count(7, 1, a71, b71, c71, d71);
            (void)b71, (void)c71, (void)d71;
        }
    }
    bool avx2 = avx && os_ymm && fma && f16c && bit(b7, 5);
    bool avx512 = avx2 && os_zmm && bit(b7, 16) /* F */ && bit(b7, 30) /* BW */ &&
                  bit(b7, 31) /* VL */ && bit(b7, 17) /* DQ */;
    bool vnni = avx512 && bit(c7, 11);
    cpu.isa = vnni ? ELM_ISA_AVX512_VNNI : avx512 ? ELM_ISA_AVX512 : avx2 ? ELM_ISA_AVX2
                                                                      : ELM_ISA_GENERIC;
    cpu.gfni = bit(c7, 8);
    cpu.avx512_bf16 = avx512 && bit(a71, 5);
    __cpuid(0, a, b, c, d);
    cpu.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "AuthenticAMD" */
    cpu.amd_family_named = cpu.amd && (fam == 0x10 || fam == 0x15 || fam == 0x17 || fam == 0x19);
    cpu.source = "cpuid";
    snprintf(features, sizeof features, "x86-64 (cpuid):");
    feature(avx2, "avx2");
    feature(avx512, "avx512");
    feature(vnni, "vnni");
    feature(cpu.gfni, "gfni");
    feature(cpu.avx512_bf16, "avx512_bf16");
}
#endif

#if defined(__aarch64__)
/* The features AArch64 kernels ask for, however they were read. */
struct arm_features {
    bool dotprod, i8mm, bf16, fp16, sve;
};

#if defined(__linux__)
/* The bits of linux/arch/arm64/include/uapi/asm/hwcap.h, for a C library
 * older than them. */
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1UL << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
static const char *read_arm(struct arm_features *f)
{
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->dotprod = hw & HWCAP_ASIMDDP;
    f->fp16 = hw & HWCAP_ASIMDHP;
    f->sve = hw & HWCAP_SVE;
    f->i8mm = hw2 & HWCAP2_I8MM;
    f->bf16 = hw2 & HWCAP2_BF16;
    return "getauxval";
}
#elif defined(__APPLE__)
static bool sysctl_on(const char *name)
{
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}

static const char *read_arm(struct arm_features *f)
{
    f->dotprod = sysctl_on("hw.optional.arm.FEAT_DotProd");
    f->i8mm = sysctl_on("hw.optional.arm.FEAT_I8MM");
    f->bf16 = sysctl_on("hw.optional.arm.FEAT_BF16");
    f->fp16 = sysctl_on("hw.optional.arm.FEAT_FP16");
    f->sve = false; /* no Apple CPU has it */
    return "sysctl";
}
#else
/* No probe here: what the compiler targets (-march / -mcpu). */
static const char *read_arm(struct arm_features *f)
{
    memset(f, 0, sizeof *f);
#ifdef __ARM_FEATURE_DOTPROD
    f->dotprod = true;
#endif
#ifdef __ARM_FEATURE_MATMUL_INT8
    f->i8mm = true;
#endif
#ifdef __ARM_FEATURE_BF16
    f->bf16 = true;
#endif
#ifdef __ARM_FEATURE_FP16_VECTOR_ARITHMETIC
    f->fp16 = true;
#endif
#ifdef __ARM_FEATURE_SVE
    f->sve = true;
#endif
    return "compiler target";
}
#endif

static void probe_arm(void)
{
    struct arm_features f;
    cpu.source = read_arm(&f);
    /* every AArch64 CPU has NEON; i8mm counts only with dotprod (the
     * levels include each other; no CPU has one without the other) */
    cpu.isa = f.dotprod && f.i8mm ? ELM_ISA_NEON_I8MM
              : f.dotprod         ? ELM_ISA_NEON_DOTPROD
                                  : ELM_ISA_NEON;
    cpu.arm_bf16 = f.bf16;
    cpu.arm_fp16 = f.fp16;
    cpu.arm_sve = f.sve;
    snprintf(features, sizeof features, "aarch64 (%s): neon", cpu.source);
    feature(f.dotprod, "dotprod");
    feature(f.i8mm, "i8mm");
    feature(f.bf16, "bf16");
    feature(f.fp16, "fp16");
    feature(f.sve, "sve");
}
#endif

static void probe(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    probe_x86();
#elif defined(__aarch64__)
    probe_arm();
#else
    cpu.isa = ELM_ISA_GENERIC;
    cpu.source = "none";
    snprintf(features, sizeof features, "no SIMD kernels for this architecture");
#endif
}

const struct elm_cpu *elm_cpu(void)
{
    pthread_once(&probed, probe);
    return &cpu;
}

const char *elm_cpu_features(void)
{
    elm_cpu();
    return features;
}

bool elm_cpu_runs(enum elm_isa isa)
{
    enum elm_isa best = elm_cpu()->isa;
    if (isa == ELM_ISA_GENERIC)
        return true;
    if (elm_isa_x86(best, ELM_ISA_AVX2))
        return elm_isa_x86(isa, ELM_ISA_AVX2) && isa <= best;
    if (elm_isa_arm(best, ELM_ISA_NEON))
        return elm_isa_arm(isa, ELM_ISA_NEON) && isa <= best;
    return false;
}

int elm_cpu_sets(enum elm_isa out[ELM_ISA_COUNT])
{
    enum elm_isa best = elm_cpu()->isa;
    int n = 0;
    const char *env = getenv("ELM_KERNELS");
    if (env && *env && strcmp(env, elm_isa_name(elm_cpu_preferred_isa())) == 0) {
        out[n++] = elm_cpu_preferred_isa(); /* the set ELM_KERNELS names, alone */
        return n;
    }
    out[n++] = ELM_ISA_GENERIC;
    if (elm_isa_x86(best, ELM_ISA_AVX2)) {
        out[n++] = ELM_ISA_AVX2;
        if (best >= ELM_ISA_AVX512)
            out[n++] = best; /* avx512 at its best level */
    }
    for (int i = ELM_ISA_NEON; elm_isa_arm(best, ELM_ISA_NEON) && i <= (int)best; i++)
        out[n++] = (enum elm_isa)i;
    return n;
}

const char *elm_isa_name(enum elm_isa isa)
{
    switch (isa) {
    case ELM_ISA_GENERIC: return "generic";
    case ELM_ISA_AVX2: return "avx2";
    case ELM_ISA_AVX512:
    case ELM_ISA_AVX512_VNNI: return "avx512";
    case ELM_ISA_NEON: return "neon";
    case ELM_ISA_NEON_DOTPROD: return "dotprod";
    case ELM_ISA_NEON_I8MM: return "i8mm";
    }
    return "?";
}

enum elm_isa elm_cpu_preferred_isa(void)
{
    const char *env = getenv("ELM_KERNELS");
    /* the highest level of that name this CPU runs ("avx512": VNNI where
     * it has it); a set it cannot run, or no such set: the best */
    for (int i = ELM_ISA_COUNT - 1; env && *env && i >= 0; i--)
        if (elm_cpu_runs((enum elm_isa)i) && strcmp(env, elm_isa_name((enum elm_isa)i)) == 0)
            return (enum elm_isa)i;
    return elm_cpu()->isa;
}
