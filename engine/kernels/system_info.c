/* system_info.c: elm_system_info, the one line that names the compute
 * kernels this process runs (for `elmchat bench --kernels` and its
 * reports). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/elm.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/cpu.h"
#include "engine/kernels/arch/arm/gemm_bf16_neon.h"
#include "engine/kernels/arch/x86/gemm_bf16_avx512.h"
#include "engine/kernels/gemm_int8.h"
#include "engine/kernels/act_int8.h"
#include "engine/kernels/kernels.h"

const char *elm_system_info(void)
{
    static char line[800];
    bool ours = false;
    const char *arch = elm_gemm_blis_arch(&ours);
    enum elm_isa isa = elm_kernels_isa();
    const char *set = elm_isa_name(isa);
    bool vnni = isa == ELM_ISA_AVX512_VNNI;
    /* a set without its own int8 kernels runs the portable ones (kernels.c) */
    bool own_q = elm_q80_q40_rows(ELM_DTYPE_Q8_0, isa) != NULL;
    const char *i8 = elm_gemm_i8_name();
    char bf16[120];
    double ratio = elm_gemm_bf16_measured_ratio();
    if (elm_gemm_bf16_neon_available())
        snprintf(bf16, sizeof bf16, "bfmmla 8x8, activations rounded to bf16");
    else if (ratio == 0.0)
        snprintf(bf16, sizeof bf16, "widened to f32%s",
                 elm_isa_x86(elm_cpu()->isa, ELM_ISA_AVX2) ? " (no AVX512_BF16)"
                 : !elm_isa_arm(elm_cpu()->isa, ELM_ISA_NEON) ? ""
                 : elm_cpu()->arm_bf16 ? " (FEAT_BF16 unused: ELM_GEMM_BF16=off or the generic set)"
                                       : " (no FEAT_BF16)");
    else if (ratio < 0.0)
        snprintf(bf16, sizeof bf16, "%s (set by a test hook)",
                 elm_gemm_bf16_available() ? "vdpbf16ps, activations rounded to bf16"
                                           : "widened to f32");
    else
        snprintf(bf16, sizeof bf16, "%s (vdpbf16ps measured at %.2fx the FMA's flops)",
                 elm_gemm_bf16_available() ? "vdpbf16ps, activations rounded to bf16"
                                           : "widened to f32", ratio);
    snprintf(line, sizeof line,
             "cpu: %s; matvec/small batches: %s (f32 bf16 f16; q8_0 q4_0 q4_k q5_k q6_k x int8 "
             "activations%s); prefill gemm (from %d f32 / %d bf16,f16 tokens): %s; quantized "
             "prefill (from %d tokens): %s%s; bf16 prefill: %s; BLIS '%s'%s%s",
             elm_cpu_features(), set, vnni ? ", VNNI" : own_q ? "" : ", portable int8 kernels",
             elm_gemm_min_blis_m(ELM_DTYPE_F32),
             elm_gemm_min_blis_m(ELM_DTYPE_BF16),
             elm_gemm_large_name()[0] == 'o' ? "own AVX-512 14x32 packed kernel"
                                             : "BLIS, single-threaded per row range",
             elm_gemm_i8_min_m(), i8 ? "int8 GEMM " : "weights widened to f32", i8 ? i8 : "",
             bf16, arch,
             ours ? " (chosen by elmchat)" : getenv("BLIS_ARCH_TYPE") ? " (BLIS_ARCH_TYPE)" : "",
             elm_gemm_blis_ok() ? ""
                                : ", WRONG in the start check (a small sgemm): not used, our "
                                  "kernels run its batches");
    return line;
}
