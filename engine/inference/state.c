/* state.c: KV-cache snapshots (elm_state_save / elm_state_load).
 *
 * File layout, little-endian:
 *   "ELMSTATE"  u32 version  u32 n_layers  u64 model fingerprint
 *   u32 head_dim  u32 n_past  u32 n_kv_heads[n_layers]
 *   i32 tokens[n_past]
 *   per layer: f32 K[n_past][nkv * hd], then f32 V[n_past][nkv * hd]
 *   u64 checksum of everything before it
 * The file is layer-major whatever the cache's layout in memory (stripes
 * of positions, ctx.h).  A load reads it with pread, twice: once through a
 * small buffer to check everything (and the checksum) before it touches
 * the ctx, then straight into the cache rows.  Mapping it instead made
 * every page of the file and of the rows fault in through the mapping
 * (27 MB: ~13,000 first touches, most of the load's time in a VM). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/inference/ctx.h"
#include "engine/base/pages.h"
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
 * the pieces to be contiguous; a piece may come in parts, all but the last
 * a multiple of 8 bytes (sum_add's word). */
static bool put(FILE *f, struct sum *s, const void *data, size_t n)
{
    sum_add(s, data, n);
    return fwrite(data, 1, n, f) == n;
}

/* A layer's rows [0, n_past) of base (k_cache or v_cache), stripe by stripe
 * (ELM_KV_STRIPE rows: a multiple of 8 bytes) as one piece of the file. */
static bool put_rows(FILE *f, struct sum *s, const elm_ctx *ctx, float *base, int layer)
{
    size_t row = row_floats(ctx, layer);
    bool okay = true;
    for (int p = 0; okay && p < ctx->n_past; p += ELM_KV_STRIPE) {
        int n = ctx->n_past - p < ELM_KV_STRIPE ? ctx->n_past - p : ELM_KV_STRIPE;
        okay = put(f, s, elm_kv_row(ctx, base, row, p), (size_t)n * row * sizeof(float));
    }
    return okay;
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
    for (int i = 0; okay && i < in->n_layers; i++)
        okay = put_rows(f, &s, ctx, ctx->k_cache[i], i) && put_rows(f, &s, ctx, ctx->v_cache[i], i);
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


/* n bytes at off, all of them (pread may return fewer); false with errno,
 * 0 at the end of the file. */
static bool read_at(int fd, void *buf, size_t n, uint64_t off)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            errno = 0;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return true;
}

/* Bytes of K (or V) of one layer in the file. */
static size_t piece_bytes(const elm_ctx *ctx, int layer, uint32_t n_past)
{
    return (size_t)n_past * row_floats(ctx, layer) * sizeof(float);
}

/* The buffer of the check's pass: in the cache while it is summed, under
 * glibc's mmap threshold (the heap's pages, not fresh ones at each load),
 * a multiple of 8 bytes (sum_add's word). */
#define STAGE_BYTES (64u * 1024)

/* The header, kv heads and ids of a snapshot of size bytes at fd, read
 * and checked (against ctx's model and context), and the checksum of the
 * whole file, read in STAGE_BYTES parts: on success *head (free it) holds
 * the file's bytes before the first layer. */
static elm_status check(const elm_ctx *ctx, const char *path, int fd, uint64_t size,
                        unsigned char **head, char *err, size_t err_size)
{
    const struct elm_model_info *in = &ctx->model->info;
    struct header h;
    if (size == 0)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: empty file", path);
    if (size < sizeof h || !read_at(fd, &h, sizeof h, 0) || memcmp(h.magic, MAGIC, 8) != 0)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: not an elmchat state file", path);
    if (h.version != STATE_VERSION)
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: state file version %u (this build reads %u)", path,
                             (unsigned)h.version, STATE_VERSION);
    if (h.fingerprint != in->fingerprint || h.n_layers != (uint32_t)in->n_layers ||
        h.head_dim != (uint32_t)in->head_dim)
        return elm_set_error(err, err_size, ELM_E_MISMATCH, "%s: saved from another model", path);
    size_t heads = sizeof h + (size_t)in->n_layers * 4;
    if (size < heads)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: truncated", path);
    if (h.n_past > (uint32_t)ctx->n_ctx)
        return elm_set_error(err, err_size, ELM_E_CONTEXT_FULL,
                             "%s: %u tokens do not fit in a context of %d", path,
                             (unsigned)h.n_past, ctx->n_ctx);
    size_t head_bytes = heads + (size_t)h.n_past * 4, need = head_bytes + 8;
    for (int i = 0; i < in->n_layers; i++)
        need += 2 * piece_bytes(ctx, i, h.n_past);
    unsigned char *p = malloc(head_bytes);
    unsigned char *stage = malloc(STAGE_BYTES);
    elm_status st = ELM_OK;
    if (!p || !stage) {
        st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if (!read_at(fd, p, size < head_bytes ? (size_t)size : head_bytes, 0)) {
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path,
                           errno ? strerror(errno) : "short read");
        goto out;
    }
    for (int i = 0; i < in->n_layers; i++) {
        uint32_t nkv;
        memcpy(&nkv, p + sizeof h + (size_t)i * 4, 4);
        if (nkv != (uint32_t)ctx->model->layers[i].nkv) {
            st = elm_set_error(err, err_size, ELM_E_MISMATCH, "%s: saved from another model",
                               path);
            goto out;
        }
    }
    if (size != need) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %llu bytes, expected %zu (%s)", path,
                           (unsigned long long)size, need,
                           size < need ? "truncated" : "trailing data");
        goto out;
    }
    /* the pieces of elm_state_checksum, the layers' in parts */
    struct sum s;
    sum_init(&s);
    sum_add(&s, p, sizeof h);
    sum_add(&s, p + sizeof h, (size_t)in->n_layers * 4);
    sum_add(&s, p + heads, (size_t)h.n_past * 4);
    uint64_t off = head_bytes;
    for (int i = 0; i < 2 * in->n_layers; i++) {
        for (size_t left = piece_bytes(ctx, i / 2, h.n_past); left > 0;) {
            size_t n = left < STAGE_BYTES ? left : STAGE_BYTES;
            if (!read_at(fd, stage, n, off)) {
                st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path,
                                   errno ? strerror(errno) : "short read");
                goto out;
            }
            sum_add(&s, stage, n);
            off += n;
            left -= n;
        }
    }
    uint64_t stored;
    if (!read_at(fd, &stored, sizeof stored, off)) {
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path,
                           errno ? strerror(errno) : "short read");
        goto out;
    }
    if (stored != s.h) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: checksum mismatch (corrupt file)",
                           path);
        goto out;
    }
    for (uint32_t i = 0; i < h.n_past; i++) {
        int32_t id;
        memcpy(&id, p + heads + (size_t)i * 4, 4);
        if (id < 0 || id >= in->n_vocab) {
            st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: token %u is out of range", path,
                               (unsigned)i);
            goto out;
        }
    }
out:
    free(stage);
    if (st)
        free(p);
    else
        *head = p;
    return st;
}

/* Layer layer's rows [0, n_past) of base (k_cache or v_cache) from the
 * file at off, a stripe of rows a read. */
static bool read_rows(int fd, elm_ctx *ctx, float *base, int layer, uint32_t n_past,
                      uint64_t off)
{
    size_t row = row_floats(ctx, layer);
    for (uint32_t p = 0; p < n_past; p += ELM_KV_STRIPE) {
        uint32_t n = n_past - p < ELM_KV_STRIPE ? n_past - p : ELM_KV_STRIPE;
        size_t bytes = (size_t)n * row * sizeof(float);
        if (!read_at(fd, elm_kv_row(ctx, base, row, (int)p), bytes, off))
            return false;
        off += bytes;
    }
    return true;
}

elm_status elm_state_load(elm_ctx *ctx, const char *path, char *err, size_t err_size)
{
    if (!ctx || !path)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_state_load: no ctx or path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    unsigned char *head = NULL;
    elm_status st = ELM_OK;
    if (fstat(fd, &sb) != 0)
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: not a regular file", path);
    else
        st = check(ctx, path, fd, (uint64_t)sb.st_size, &head, err, err_size);
    if (st || !head) { /* head: set whenever st is ELM_OK */
        close(fd);
        return st;
    }
    const struct elm_model_info *in = &ctx->model->info;
    struct header h;
    memcpy(&h, head, sizeof h);
    size_t heads = sizeof h + (size_t)in->n_layers * 4;
    /* The stripes the rows go to made present in one call instead of a
     * fault per page as they are written (pages.h). */
    size_t stripes = (h.n_past + ELM_KV_STRIPE - 1) / ELM_KV_STRIPE;
    elm_pages_prefault(ctx->kv_pages, stripes * ctx->kv_stripe * sizeof(float), true);
    uint64_t off = heads + (size_t)h.n_past * 4;
    bool okay = true;
    for (int i = 0; okay && i < in->n_layers; i++) {
        size_t bytes = piece_bytes(ctx, i, h.n_past);
        okay = read_rows(fd, ctx, ctx->k_cache[i], i, h.n_past, off) &&
               read_rows(fd, ctx, ctx->v_cache[i], i, h.n_past, off + bytes);
        off += 2 * bytes;
    }
    if (okay) {
        memcpy(ctx->tokens, head + heads, (size_t)h.n_past * 4);
        ctx->n_past = (int)h.n_past;
        ctx->few_at = -1;
    } else {
        /* the file was checked a moment ago: an I/O error, and the rows
         * read so far have replaced the cache's */
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: %s (the cache is emptied)", path,
                           errno ? strerror(errno) : "short read");
        ctx->n_past = 0;
        ctx->few_at = -1;
    }
    free(head);
    close(fd);
    return st;
}
