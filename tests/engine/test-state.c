/* test-state.c: elm_state_save / elm_state_load: a round trip that
 * continues exactly like an uninterrupted run, and refusals (another model,
 * same shape but other weights, corrupt, truncated, too long for the ctx)
 * that leave the ctx unchanged. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "tests/lib/engine-fixtures.h"

#define N 12
#define G 8

int main(void)
{
    plan_lazy();
    char d1[4096], d2[4096], d3[4096];
    te_dir("micro", d1, sizeof d1);
    te_dir("micro-seed2", d2, sizeof d2);
    te_dir("varied", d3, sizeof d3);
    if (!te_gen("--preset micro --dtype bf16", d1) ||
        !te_gen("--preset micro --dtype bf16 --seed 2", d2) || !te_gen("--preset varied", d3))
        bail_out("tests/lib/gen-checkpoint failed");
    elm_model *m = te_load(d1, 2), *m2 = te_load(d2, 2), *mv = te_load(d3, 2);
    if (!m || !m2 || !mv)
        bail_out("cannot load the checkpoints");
    ok(elm_model_get_info(m)->fingerprint != elm_model_get_info(m2)->fingerprint,
       "same shape, other weights: other fingerprint");

    int32_t prompt[N];
    for (int i = 0; i < N; i++)
        prompt[i] = i ? (int32_t)(i * 83 % 1024) : 1;
    /* Uninterrupted: prompt, then G greedy tokens. */
    int32_t want[G], got[G];
    elm_ctx *a = te_ctx(m, 64, 2);
    ok(elm_decode(a, prompt, N - 1, NULL, 0) == ELM_OK &&
           te_greedy(a, &prompt[N - 1], 1, G, want),
       "uninterrupted greedy run");

    /* Save after the prompt, load into a fresh ctx, continue. */
    char path[8192], err[ELM_ERR_MAX];
    snprintf(path, sizeof path, "%s/state.bin", tap_tmpdir());
    elm_ctx *b = te_ctx(m, 64, 2);
    float *logits = malloc(1024 * sizeof *logits);
    ok(elm_decode(b, prompt, N - 1, NULL, 0) == ELM_OK, "prefill");
    is_int(elm_state_save(b, path, err, sizeof err), ELM_OK, "save after the prompt");
    elm_ctx *c = te_ctx(m, 64, 1);
    is_int(elm_state_load(c, path, err, sizeof err), ELM_OK, "load into a fresh ctx");
    is_int(elm_ctx_n_past(c), N - 1, "n_past restored");
    ok(memcmp(elm_ctx_tokens(c), prompt, (N - 1) * sizeof *prompt) == 0, "token ids restored");
    ok(te_greedy(c, &prompt[N - 1], 1, G, got), "continue after the load");
    ok(memcmp(got, want, sizeof got) == 0, "load + continue == uninterrupted (%d tokens)", G);

    /* Refusals leave the ctx as it was. */
    elm_ctx *d = te_ctx(m, 64, 2);
    elm_decode(d, prompt, 3, NULL, 0);
    elm_ctx *dv = te_ctx(mv, 64, 2);
    is_int(elm_state_load(dv, path, err, sizeof err), ELM_E_MISMATCH, "another model: MISMATCH");
    diag("  %s", err);
    is_int(elm_ctx_n_past(dv), 0, "ctx of the other model unchanged");
    elm_ctx *d2c = te_ctx(m2, 64, 2);
    is_int(elm_state_load(d2c, path, err, sizeof err), ELM_E_MISMATCH,
           "same shape, other weights: MISMATCH");
    elm_ctx *small = te_ctx(m, 8, 1);
    is_int(elm_state_load(small, path, err, sizeof err), ELM_E_CONTEXT_FULL,
           "11 tokens into a ctx of 8: CONTEXT_FULL");

    size_t n;
    unsigned char *bytes = te_read(path, &n);
    char bad[8192];
    snprintf(bad, sizeof bad, "%s/bad.bin", tap_tmpdir());
    unsigned char *e = malloc(n);
    memcpy(e, bytes, n);
    e[n / 2] ^= 0x40;
    te_write(bad, e, n);
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_FORMAT, "one flipped bit: FORMAT");
    diag("  %s", err);
    te_write(bad, bytes, n - 4);
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_FORMAT, "truncated: FORMAT");
    te_write(bad, bytes, 20);
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_FORMAT, "header only: FORMAT");
    te_write(bad, "not a state file at all, no", 27);
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_FORMAT, "other file: FORMAT");
    memcpy(e, bytes, n);
    e[8] = 99; /* version */
    te_write(bad, e, n);
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_UNSUPPORTED, "unknown version");
    snprintf(bad, sizeof bad, "%s/missing.bin", tap_tmpdir());
    is_int(elm_state_load(d, bad, err, sizeof err), ELM_E_IO, "missing file: IO");
    is_int(elm_ctx_n_past(d), 3, "n_past unchanged by every refusal");
    ok(memcmp(elm_ctx_tokens(d), prompt, 3 * sizeof *prompt) == 0, "tokens unchanged");
    /* And the refused ctx still computes what a fresh one does. */
    float *l2 = malloc(1024 * sizeof *l2);
    elm_ctx *f = te_ctx(m, 64, 2);
    ok(elm_decode(d, &prompt[3], 1, logits, 0) == ELM_OK &&
           elm_decode(f, prompt, 3, NULL, 0) == ELM_OK &&
           elm_decode(f, &prompt[3], 1, l2, 0) == ELM_OK &&
           te_max_diff_f(logits, l2, 1024) == 0.0,
       "the refused ctx decodes exactly like a fresh one");
    snprintf(bad, sizeof bad, "%s/no-such-dir/state.bin", tap_tmpdir());
    is_int(elm_state_save(d, bad, err, sizeof err), ELM_E_IO, "save into a missing folder: IO");

    /* An empty cache round-trips too. */
    elm_ctx *z = te_ctx(m, 64, 1);
    is_int(elm_state_save(z, path, err, sizeof err), ELM_OK, "save an empty ctx");
    is_int(elm_state_load(d, path, err, sizeof err), ELM_OK, "load it");
    is_int(elm_ctx_n_past(d), 0, "n_past 0");

    free(e);
    free(bytes);
    free(l2);
    free(logits);
    elm_ctx_free(a);
    elm_ctx_free(b);
    elm_ctx_free(c);
    elm_ctx_free(d);
    elm_ctx_free(dv);
    elm_ctx_free(d2c);
    elm_ctx_free(small);
    elm_ctx_free(f);
    elm_ctx_free(z);
    elm_model_free(m);
    elm_model_free(m2);
    elm_model_free(mv);
    return done_testing();
}
