/* test_hooks.h: what a test program changes in the engine's behaviour
 * (engine-internal).  The shipped elmchat has none: libelm's test_hooks.c
 * answers false.  A test program (tests/lib/elmchat-testing, the C tests
 * that need them) compiles tests/lib/test-hooks.c in, whose
 * elm_test_hooks takes the place of libelm's (an archive's member is
 * linked only for a name still missing) and reads them from the
 * environment at every call: tests/lib/test-hooks.c names the variables. */
#ifndef ELMCHAT_ENGINE_BASE_TEST_HOOKS_H
#define ELMCHAT_ENGINE_BASE_TEST_HOOKS_H

#include <stdbool.h>

struct elm_test_hooks {
    /* worker: every disk load takes this many ms longer (a slow disk
     * inside elm_model_load, which only its cancel points cut short) */
    int load_delay_ms;
    /* worker: at least this many ms between two sampled tokens (replies
     * stream at a known pace on any machine) */
    int token_interval_ms;
    /* worker: every reply with a draft model drafts this many ids and never
     * turns drafting off (elm_generate_params.draft_k); 0: the cost rule */
    int draft_k;
    /* worker: every reply is this file's text, tokenized; NULL: sampled */
    const char *reply_file;
    /* kernels/gemm.c: the check of BLIS against our kernels fails */
    bool blis_check_fails;
    /* kernels/arch/x86/gemm_bf16_avx512.c: > 0 the bf16 GEMM pays, < 0 it
     * does not, without measuring; 0: measured */
    int gemm_bf16;
};

/* The hooks in force into *out; false (and *out all zero): none. */
bool elm_test_hooks(struct elm_test_hooks *out);

#endif
