/* cpu.c: the one probe of the CPU's features (cpu.h) and the names of the
 * kernel sets.  The only file that asks the CPU what it has. */
#include "config.h"

#include "engine/kernels/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

static struct elm_cpu cpu;
static pthread_once_t probed = PTHREAD_ONCE_INIT;

#if defined(__aarch64__) && defined(__APPLE__)
/* hw.optional.arm.FEAT_* is 1 where the CPU has the feature. */
static bool sysctl_flag(const char *name)
{
    int v = 0;
    size_t n = sizeof v;
    return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v == 1;
}
#endif

#if defined(__aarch64__)
/* The AArch64 level: Advanced SIMD is in every AArch64 CPU; FEAT_DotProd
 * and FEAT_I8MM from the kernel's hwcaps (Linux) or sysctl (macOS); a
 * system that says neither gets plain NEON. */
static enum elm_isa probe_arm(void)
{
    bool dotprod = false, i8mm = false;
#if defined(__linux__)
    /* HWCAP_ASIMDDP (bit 20) and HWCAP2_I8MM (bit 13), by value for old headers */
    dotprod = (getauxval(AT_HWCAP) >> 20) & 1;
    i8mm = (getauxval(AT_HWCAP2) >> 13) & 1;
#elif defined(__APPLE__)
    dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
#endif
    return dotprod && i8mm ? ELM_ISA_NEON_I8MM : dotprod ? ELM_ISA_NEON_DOTPROD : ELM_ISA_NEON;
}
#endif

static void probe(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                __builtin_cpu_supports("f16c");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq");
    cpu.isa = avx512 && __builtin_cpu_supports("avx512vnni") ? ELM_ISA_AVX512_VNNI
              : avx512                                     ? ELM_ISA_AVX512
              : avx2                                       ? ELM_ISA_AVX2
                                                           : ELM_ISA_GENERIC;
    cpu.gfni = __builtin_cpu_supports("gfni");
    cpu.avx512_bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    cpu.amd = __builtin_cpu_is("amd");
    cpu.amd_family_named = __builtin_cpu_is("amdfam10h") || __builtin_cpu_is("amdfam15h") ||
                           __builtin_cpu_is("amdfam17h") || __builtin_cpu_is("amdfam19h");
#elif defined(__aarch64__)
    cpu.isa = probe_arm();
#else
    cpu.isa = ELM_ISA_GENERIC;
#endif
}

const struct elm_cpu *elm_cpu(void)
{
    pthread_once(&probed, probe);
    return &cpu;
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

bool elm_cpu_runs(enum elm_isa isa)
{
    enum elm_isa best = elm_cpu()->isa;
    if (isa == ELM_ISA_GENERIC)
        return true;
    if (elm_isa_x86(isa, ELM_ISA_AVX2))
        return elm_isa_x86(best, ELM_ISA_AVX2) && isa <= best;
    if (elm_isa_arm(isa, ELM_ISA_NEON))
        return elm_isa_arm(best, ELM_ISA_NEON) && isa <= best;
    return false;
}

enum elm_isa elm_cpu_preferred_isa(void)
{
    enum elm_isa best = elm_cpu()->isa;
    const char *env = getenv("ELM_KERNELS");
    /* the highest level of that name this CPU runs ("avx512": VNNI where
     * it has it); a set it cannot run, or no such set: the best */
    for (int i = (int)best; env && *env && i >= 0; i--)
        if (elm_cpu_runs((enum elm_isa)i) && strcmp(env, elm_isa_name((enum elm_isa)i)) == 0)
            return (enum elm_isa)i;
    return best;
}
