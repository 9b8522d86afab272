/* fuzz-state.c: KV-cache snapshots (engine/inference/state.c's elm_state_load) into
 * the context of a small hand-made model.
 *
 * A random checksum never matches, so when an input has exactly the size
 * its header announces, the harness writes the right checksum first (state.c's
 * own elm_state_checksum) and the checks behind it get fuzzed too. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/inference/ctx.h"
#include "engine/inference/state.h"

#define N_LAYERS 3
#define HEAD_DIM 4
#define N_CTX 16
#define FINGERPRINT 0x0123456789abcdefull
static const int layer_nkv[N_LAYERS] = {1, 2, 1};

static elm_ctx *get_ctx(void)
{
    static struct elm_model model;
    static struct elm_layer layers[N_LAYERS];
    static elm_ctx *ctx;
    if (ctx)
        return ctx;
    struct elm_model_info *in = &model.info;
    in->n_layers = N_LAYERS;
    in->model_dim = 8;
    in->head_dim = HEAD_DIM;
    in->n_vocab = 50;
    in->n_ctx_train = N_CTX;
    in->num_gqa_groups = 1;
    in->fingerprint = FINGERPRINT;
    snprintf(in->name, sizeof in->name, "fuzz");
    for (int i = 0; i < N_LAYERS; i++) {
        layers[i].nq = 2;
        layers[i].nkv = layer_nkv[i];
        layers[i].ff = 8;
        in->n_query_heads[i] = 2;
        in->n_kv_heads[i] = layer_nkv[i];
        in->ffn_dim[i] = 8;
    }
    model.layers = layers;
    model.n_threads = 1;
    struct elm_ctx_params p = elm_ctx_default_params();
    p.n_ctx = N_CTX;
    p.n_threads = 1;
    char err[ELM_ERR_MAX];
    if (elm_ctx_new(&model, &p, &ctx, err, sizeof err) != ELM_OK) {
        fprintf(stderr, "fuzz: %s\n", err);
        abort();
    }
    return ctx;
}

enum { HEADER = 32 }; /* magic, version, n_layers, fingerprint, head_dim, n_past */

static void fix_checksum(unsigned char *p, size_t size)
{
    if (size < HEADER + 4 * N_LAYERS + 8)
        return;
    uint32_t n_past;
    memcpy(&n_past, p + 28, 4);
    if (n_past > N_CTX)
        return;
    size_t need = HEADER + 4 * N_LAYERS + 4 * (size_t)n_past + 8;
    for (int i = 0; i < N_LAYERS; i++)
        need += 2 * (size_t)n_past * (size_t)layer_nkv[i] * HEAD_DIM * 4;
    if (size != need)
        return;
    uint64_t h = elm_state_checksum(get_ctx(), p, n_past);
    memcpy(p + size - 8, &h, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    elm_ctx *ctx = get_ctx();
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    fix_checksum(copy, size);
    const char *path = fuzz_write_file("state.kv", copy, size);
    free(copy);
    char err[ELM_ERR_MAX];
    elm_status st = elm_state_load(ctx, path, err, sizeof err);
    int n_past = elm_ctx_n_past(ctx);
    if (n_past < 0 || n_past > N_CTX)
        abort();
    const int32_t *ids = elm_ctx_tokens(ctx);
    for (int i = 0; st == ELM_OK && i < n_past; i++)
        if (ids[i] < 0 || ids[i] >= 50)
            abort();
    elm_ctx_truncate(ctx, 0);
    return 0;
}
