/* test-state.c: elm_state_save / elm_state_load: a round trip that
 * continues exactly like an uninterrupted run, and refusals (another model,
 * same shape but other weights, corrupt, truncated, too long for the ctx)
 * that leave the ctx unchanged.  A cache of several stripes (ctx.h): the
 * file is still version 1's layer-major image, byte for byte, and loads;
 * damage in any stripe is refused with the file's name and the reason. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "tests/lib/engine-fixtures.h"

#include <stdint.h>
#include <sys/stat.h>

#include "engine/base/pages.h"
#include "engine/inference/ctx.h"
#include "engine/inference/state.h"

#define N 12
#define G 8
/* A prompt over two stripes and part of a third. */
#define LONG (2 * ELM_KV_STRIPE + 23)

/* Version 1's file of ctx, built here from the documented layout (state.c:
 * header, kv heads, ids, then per layer every K row, then every V row, and
 * the checksum), not by the code under test. */
static unsigned char *v1_image(const elm_ctx *ctx, size_t *size)
{
    const struct elm_model_info *in = &ctx->model->info;
    int n = ctx->n_past, L = in->n_layers, hd = in->head_dim;
    size_t bytes = 32 + 4 * (size_t)L + 4 * (size_t)n + 8;
    for (int i = 0; i < L; i++)
        bytes += 2 * (size_t)n * (size_t)ctx->model->layers[i].nkv * (size_t)hd * 4;
    unsigned char *p = calloc(1, bytes), *q = p;
    uint32_t u;
    uint64_t fp = in->fingerprint;
    memcpy(q, "ELMSTATE", 8);
    u = 1;
    memcpy(q + 8, &u, 4);
    u = (uint32_t)L;
    memcpy(q + 12, &u, 4);
    memcpy(q + 16, &fp, 8);
    u = (uint32_t)hd;
    memcpy(q + 24, &u, 4);
    u = (uint32_t)n;
    memcpy(q + 28, &u, 4);
    q += 32;
    for (int i = 0; i < L; i++, q += 4) {
        u = (uint32_t)ctx->model->layers[i].nkv;
        memcpy(q, &u, 4);
    }
    memcpy(q, ctx->tokens, 4 * (size_t)n);
    q += 4 * (size_t)n;
    for (int i = 0; i < L; i++) {
        size_t row = (size_t)ctx->model->layers[i].nkv * (size_t)hd;
        for (int kv = 0; kv < 2; kv++)
            for (int t = 0; t < n; t++, q += row * 4)
                memcpy(q, elm_kv_row(ctx, kv ? ctx->v_cache[i] : ctx->k_cache[i], row, t),
                       row * 4);
    }
    uint64_t sum = elm_state_checksum(ctx, p, (uint32_t)n);
    memcpy(q, &sum, 8);
    *size = bytes;
    return p;
}

/* The offset in a file of ctx's model of layer's K (v: V) row t, n_past n. */
static size_t row_offset(const elm_ctx *ctx, int n, int layer, bool v, int t)
{
    const struct elm_model_info *in = &ctx->model->info;
    size_t off = 32 + 4 * (size_t)in->n_layers + 4 * (size_t)n;
    for (int i = 0; i < layer; i++)
        off += 2 * (size_t)n * (size_t)ctx->model->layers[i].nkv * (size_t)in->head_dim * 4;
    size_t row = (size_t)ctx->model->layers[layer].nkv * (size_t)in->head_dim * 4;
    return off + (v ? (size_t)n * row : 0) + (size_t)t * row;
}

/* Several stripes: the file's bytes, a round trip, damage in each stripe. */
static void test_stripes(elm_model *m)
{
    char path[8192], bad[8192], err[ELM_ERR_MAX];
    snprintf(path, sizeof path, "%s/long.bin", tap_tmpdir());
    snprintf(bad, sizeof bad, "%s/long-bad.bin", tap_tmpdir());
    int32_t prompt[LONG + 1], want[G], got[G];
    for (int i = 0; i <= LONG; i++)
        prompt[i] = i ? (int32_t)(i * 37 % 1024) : 1;
    elm_ctx *a = te_ctx(m, 4 * ELM_KV_STRIPE, 2);
    ok(elm_decode(a, prompt, LONG, NULL, 0) == ELM_OK, "prefill %d tokens (3 stripes)", LONG);
    is_int(elm_state_save(a, path, err, sizeof err), ELM_OK, "save them");
    size_t n, n1;
    unsigned char *bytes = te_read(path, &n), *v1 = v1_image(a, &n1);
    ok(bytes && n == n1 && memcmp(bytes, v1, n) == 0,
       "the file is version 1's layer-major image, byte for byte (%zu bytes)", n);
    ok(te_greedy(a, &prompt[LONG], 1, G, want), "uninterrupted: %d more tokens", G);

    /* a file written as version 1 by hand, into a ctx holding more */
    te_write(bad, v1, n1);
    elm_ctx *b = te_ctx(m, 4 * ELM_KV_STRIPE, 1);
    int32_t other[200];
    for (int i = 0; i < 200; i++)
        other[i] = (int32_t)(i * 11 % 1000 + 2);
    ok(elm_decode(b, other, 200, NULL, 0) == ELM_OK, "another ctx holds 200 other tokens");
    is_int(elm_state_load(b, bad, err, sizeof err), ELM_OK, "a version 1 file written by hand loads into it");
    is_int(elm_ctx_n_past(b), LONG, "n_past %d", LONG);
    ok(te_greedy(b, &prompt[LONG], 1, G, got) && memcmp(got, want, sizeof got) == 0,
       "load + continue == uninterrupted across stripes");

    /* one flipped bit in each stripe of the last layer's V: refused, the
     * ctx as it was */
    elm_ctx *c = te_ctx(m, 4 * ELM_KV_STRIPE, 2);
    ok(elm_decode(c, prompt, 5, NULL, 0) == ELM_OK, "a ctx of 5 tokens");
    int last = elm_model_get_info(m)->n_layers - 1;
    for (int s = 0; s < 3; s++) {
        memcpy(v1, bytes, n);
        v1[row_offset(a, LONG, last, true, s * ELM_KV_STRIPE + 3) + 5] ^= 0x10;
        te_write(bad, v1, n);
        err[0] = '\0';
        is_int(elm_state_load(c, bad, err, sizeof err), ELM_E_FORMAT,
               "a flipped bit in stripe %d: FORMAT", s);
        ok(strstr(err, bad) && strstr(err, "checksum mismatch"), "  the message names the file and the reason: %s", err);
    }
    te_write(bad, bytes, n - 9);
    is_int(elm_state_load(c, bad, err, sizeof err), ELM_E_FORMAT, "9 bytes short: FORMAT");
    ok(strstr(err, bad) && strstr(err, "truncated"), "  the message says truncated: %s", err);
    te_write(bad, bytes, n);
    FILE *f = fopen(bad, "ab");
    ok(f && fputc('x', f) != EOF && fclose(f) == 0, "one byte appended");
    is_int(elm_state_load(c, bad, err, sizeof err), ELM_E_FORMAT, "trailing data: FORMAT");
    ok(strstr(err, "trailing data") != NULL, "  the message says so: %s", err);
    te_write(bad, "", 0);
    is_int(elm_state_load(c, bad, err, sizeof err), ELM_E_FORMAT, "an empty file: FORMAT");
    ok(strstr(err, "empty file") != NULL, "  the message says so: %s", err);
    is_int(elm_state_load(c, tap_tmpdir(), err, sizeof err), ELM_E_IO, "a folder: IO");
    ok(strstr(err, "not a regular file") != NULL, "  the message says so: %s", err);
    is_int(elm_ctx_n_past(c), 5, "n_past unchanged by every refusal");
    ok(memcmp(elm_ctx_tokens(c), prompt, 5 * sizeof *prompt) == 0, "tokens unchanged");
    elm_ctx *d = te_ctx(m, 4 * ELM_KV_STRIPE, 2);
    float *l1 = malloc(1024 * sizeof *l1), *l2 = malloc(1024 * sizeof *l2);
    ok(elm_decode(c, &prompt[5], 1, l1, 0) == ELM_OK && elm_decode(d, prompt, 6, l2, 0) == ELM_OK &&
           te_max_diff_f(l1, l2, 1024) == 0.0,
       "the refused ctx decodes exactly like a fresh one");
    free(l1);
    free(l2);
    free(v1);
    free(bytes);
    elm_ctx_free(a);
    elm_ctx_free(b);
    elm_ctx_free(c);
    elm_ctx_free(d);
}

/* The KV block: zeros, aligned to a huge page where it asks for them. */
static void test_pages(void)
{
    size_t bytes = ((size_t)5 << 20) + 12345;
    unsigned char *p = elm_pages_zalloc(bytes);
    ok(p != NULL, "elm_pages_zalloc of %zu bytes", bytes);
    if (!p)
        return;
    bool zero = true;
    for (size_t i = 0; i < bytes; i += 4093)
        zero = zero && p[i] == 0;
    ok(zero && p[bytes - 1] == 0, "reads as zeros");
    memset(p, 0x5a, bytes); /* every byte writable */
    ok(p[bytes - 1] == 0x5a, "every byte writable");
#ifdef __linux__
    ok((uintptr_t)p % ((uintptr_t)2 << 20) == 0, "aligned to 2 MiB (a huge page)");
#endif
    elm_pages_free(p, bytes);
}

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

    test_stripes(m);
    test_pages();

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
