/* state.c: KV-cache snapshots (elm_state_save / elm_state_load).
 *
 * File layout, little-endian:
 *   "ELMSTATE"  u32 version  u32 n_layers  u64 model fingerprint
 *   u32 head_dim  u32 n_past  u32 n_kv_heads[n_layers]
 *   i32 tokens[n_past]
 *   per layer: f32 K[n_past][nkv * hd], then f32 V[n_past][nkv * hd]
 *   u64 checksum of everything before it
 * A load checks everything (and the checksum) before it touches the ctx. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/inference/ctx.h"
#include "engine/base/pages.h"
#include "engine/formats/mapfile.h"
#include "engine/inference/state.h"

#define MAGIC "ELMSTATE"
#define STATE_VERSION 1u

struct sum {
    uint64_t h;
};

static void sum_init(struct sum *s)
{
    s->h = 0x243f6a8885a308d3ull;
}

/* A fast word-wise hash: it guards against truncation and corruption, it
 * is not cryptographic.  Callers feed whole 4-byte multiples. */
static void sum_add(struct sum *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = s->h;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    s->h = h;
}

struct header {
    char magic[8];
    uint32_t version, n_layers;
    uint64_t fingerprint;
    uint32_t head_dim, n_past;
};

static size_t row_floats(const struct elm_ctx *ctx, int layer)
{
    return (size_t)ctx->model->layers[layer].nkv * (size_t)ctx->model->info.head_dim;
}

uint64_t elm_state_checksum(const struct elm_ctx *ctx, const unsigned char *p, uint32_t n_past)
{
    const struct elm_model_info *in = &ctx->model->info;
    struct sum s;
    sum_init(&s);
    sum_add(&s, p, sizeof(struct header));
    sum_add(&s, p + sizeof(struct header), (size_t)in->n_layers * 4);
    const unsigned char *q = p + sizeof(struct header) + (size_t)in->n_layers * 4;
    sum_add(&s, q, (size_t)n_past * 4);
    q += (size_t)n_past * 4;
    for (int i = 0; i < in->n_layers; i++) {
        size_t bytes = (size_t)n_past * row_floats(ctx, i) * sizeof(float);
        sum_add(&s, q, bytes);
        sum_add(&s, q + bytes, bytes);
        q += 2 * bytes;
    }
    return s.h;
}

/* Each piece is hashed on its own, so save and load agree without needing
 * the pieces to be contiguous. */
static bool put(FILE *f, struct sum *s, const void *data, size_t n)
{
    sum_add(s, data, n);
    return fwrite(data, 1, n, f) == n;
}

elm_status elm_state_save(const elm_ctx *ctx, const char *path, char *err, size_t err_size)
{
    if (!ctx || !path)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_state_save: no ctx or path");
    const struct elm_model_info *in = &ctx->model->info;
    char tmp[PATH_MAX];
    /* the pid: a later start can tell a dead writer's file (src/store/store.c) */
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.XXXXXX", path, (long)getpid()) >= sizeof tmp)
        return elm_set_error(err, err_size, ELM_E_INVALID, "%s: path too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    }
    struct header h = {.version = STATE_VERSION, .n_layers = (uint32_t)in->n_layers,
                       .fingerprint = in->fingerprint, .head_dim = (uint32_t)in->head_dim,
                       .n_past = (uint32_t)ctx->n_past};
    memcpy(h.magic, MAGIC, 8);
    struct sum s;
    sum_init(&s);
    uint32_t nkv[ELM_MAX_LAYERS];
    for (int i = 0; i < in->n_layers; i++)
        nkv[i] = (uint32_t)ctx->model->layers[i].nkv;
    bool okay = put(f, &s, &h, sizeof h) && put(f, &s, nkv, (size_t)in->n_layers * sizeof *nkv);
    okay = okay && put(f, &s, ctx->tokens, (size_t)ctx->n_past * sizeof *ctx->tokens);
    for (int i = 0; okay && i < in->n_layers; i++) {
        size_t bytes = (size_t)ctx->n_past * row_floats(ctx, i) * sizeof(float);
        okay = put(f, &s, ctx->k_cache[i], bytes) && put(f, &s, ctx->v_cache[i], bytes);
    }
    okay = okay && fwrite(&s.h, sizeof s.h, 1, f) == 1;
    int saved_errno = errno;
    if (fclose(f) != 0 && okay) {
        okay = false;
        saved_errno = errno;
    }
    if (!okay || rename(tmp, path) != 0) {
        if (okay)
            saved_errno = errno;
        unlink(tmp);
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(saved_errno));
    }
    return ELM_OK;
}

static elm_status check(const elm_ctx *ctx, const char *path, const unsigned char *p, size_t size,
                        char *err, size_t err_size)
{
    const struct elm_model_info *in = &ctx->model->info;
    struct header h;
    if (size < sizeof h || memcmp(p, MAGIC, 8) != 0)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: not an elmchat state file", path);
    memcpy(&h, p, sizeof h);
    if (h.version != STATE_VERSION)
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: state file version %u (this build reads %u)", path,
                             (unsigned)h.version, STATE_VERSION);
    if (h.fingerprint != in->fingerprint || h.n_layers != (uint32_t)in->n_layers ||
        h.head_dim != (uint32_t)in->head_dim)
        return elm_set_error(err, err_size, ELM_E_MISMATCH, "%s: saved from another model", path);
    size_t need = sizeof h + (size_t)in->n_layers * 4;
    if (size < need)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: truncated", path);
    for (int i = 0; i < in->n_layers; i++) {
        uint32_t nkv;
        memcpy(&nkv, p + sizeof h + (size_t)i * 4, 4);
        if (nkv != (uint32_t)ctx->model->layers[i].nkv)
            return elm_set_error(err, err_size, ELM_E_MISMATCH, "%s: saved from another model",
                                 path);
    }
    if (h.n_past > (uint32_t)ctx->n_ctx)
        return elm_set_error(err, err_size, ELM_E_CONTEXT_FULL,
                             "%s: %u tokens do not fit in a context of %d", path,
                             (unsigned)h.n_past, ctx->n_ctx);
    need += (size_t)h.n_past * 4;
    for (int i = 0; i < in->n_layers; i++)
        need += 2 * (size_t)h.n_past * row_floats(ctx, i) * sizeof(float);
    need += 8;
    if (size != need)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %zu bytes, expected %zu (%s)", path,
                             size, need, size < need ? "truncated" : "trailing data");
    uint64_t stored; /* the last 8 bytes: size == need */
    memcpy(&stored, p + size - sizeof stored, sizeof stored);
    if (stored != elm_state_checksum(ctx, p, h.n_past))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: checksum mismatch (corrupt file)",
                             path);
    const unsigned char *tok = p + sizeof h + (size_t)in->n_layers * 4;
    for (uint32_t i = 0; i < h.n_past; i++) {
        int32_t id;
        memcpy(&id, tok + (size_t)i * 4, 4);
        if (id < 0 || id >= in->n_vocab)
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: token %u is out of range",
                                 path, (unsigned)i);
    }
    return ELM_OK;
}

elm_status elm_state_load(elm_ctx *ctx, const char *path, char *err, size_t err_size)
{
    if (!ctx || !path)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_state_load: no ctx or path");
    void *map;
    size_t size;
    elm_status st = elm_map_file(path, SIZE_MAX, &map, &size, err, err_size);
    if (st)
        return st;
    if (size == 0)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: empty file", path);
    const unsigned char *p = map;
    /* The file's pages and the cache rows it fills made present in one call
     * each: faulted in 4 KiB at a time they were most of the load's cost
     * (851 ids of the 270M shape: 27 MB, ~13,000 faults). */
    elm_pages_prefault(p, size, false);
    st = check(ctx, path, p, size, err, err_size);
    if (!st) {
        const struct elm_model_info *in = &ctx->model->info;
        struct header h;
        memcpy(&h, p, sizeof h);
        const unsigned char *q = p + sizeof h + (size_t)in->n_layers * 4;
        memcpy(ctx->tokens, q, (size_t)h.n_past * 4);
        q += (size_t)h.n_past * 4;
        for (int i = 0; i < in->n_layers; i++) {
            size_t bytes = (size_t)h.n_past * row_floats(ctx, i) * sizeof(float);
            elm_pages_prefault(ctx->k_cache[i], bytes, true);
            elm_pages_prefault(ctx->v_cache[i], bytes, true);
            memcpy(ctx->k_cache[i], q, bytes);
            memcpy(ctx->v_cache[i], q + bytes, bytes);
            q += 2 * bytes;
        }
        ctx->n_past = (int)h.n_past;
    }
    elm_unmap_file(map, size);
    return st;
}
