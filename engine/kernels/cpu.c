/* cpu.c: the one probe of the CPU's features (cpu.h) and the names of the
 * kernel sets.  The only file that asks the CPU what it has. */
#include "config.h"

#include "engine/kernels/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct elm_cpu cpu;
static pthread_once_t probed = PTHREAD_ONCE_INIT;

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
    }
    return "?";
}

enum elm_isa elm_cpu_preferred_isa(void)
{
    enum elm_isa best = elm_cpu()->isa;
    const char *env = getenv("ELM_KERNELS");
    /* the highest level of that name this CPU runs ("avx512": VNNI where
     * it has it); a set it cannot run, or no such set: the best */
    for (int i = (int)best; env && *env && i >= 0; i--)
        if (strcmp(env, elm_isa_name((enum elm_isa)i)) == 0)
            return (enum elm_isa)i;
    return best;
}
