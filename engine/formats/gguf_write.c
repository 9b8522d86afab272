/* gguf_write.c: writing a GGUF v3 file the way ggml's own writer lays it
 * out: metadata in the order given, tensor infos, then each tensor's data at
 * the next multiple of 32 (llama.cpp insists that offsets follow exactly
 * this packing).  Data is produced row by row by a callback, so a converted
 * model never sits whole in memory. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/formats/gguf.h"
#include "engine/base/error.h"
#include "engine/kernels/blocks.h"

#define ALIGN ELM_GGUF_DEFAULT_ALIGNMENT

struct buf {
    uint8_t *p;
    size_t len, cap;
};

struct wtensor {
    char *name;
    enum elm_dtype dtype;
    int n_dims;
    int64_t ne[ELM_GGUF_MAX_DIMS];
    elm_gguf_row_fn fill;
    void *user;
    uint64_t offset, size, rows;
    size_t row_bytes;
};

struct elm_gguf_writer {
    struct buf kv; /* serialized metadata */
    uint64_t n_kv;
    char **keys;
    struct wtensor *t;
    size_t n_t;
    bool oom;
    char bad[256]; /* first usage error */
};

static void put(struct elm_gguf_writer *w, const void *data, size_t n)
{
    struct buf *b = &w->kv;
    if (w->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            w->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u32(struct elm_gguf_writer *w, uint32_t v)
{
    put(w, &v, 4);
}

static void put_u64(struct elm_gguf_writer *w, uint64_t v)
{
    put(w, &v, 8);
}

static void put_str(struct elm_gguf_writer *w, const char *s)
{
    size_t n = strlen(s);
    put_u64(w, n);
    put(w, s, n);
}

/* Key and type; false (and the error noted) for a duplicate key. */
static bool begin_kv(struct elm_gguf_writer *w, const char *key, uint32_t type)
{
    for (uint64_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->keys[i], key) == 0) {
            if (!w->bad[0])
                snprintf(w->bad, sizeof w->bad, "%s: duplicate metadata key", key);
            return false;
        }
    }
    char **keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    char *copy = strdup(key);
    if (keys)
        w->keys = keys;
    if (!keys || !copy) {
        free(copy);
        w->oom = true;
        return false;
    }
    w->keys[w->n_kv++] = copy;
    put_str(w, key);
    put_u32(w, type);
    return true;
}

struct elm_gguf_writer *elm_gguf_writer_new(void)
{
    return calloc(1, sizeof(struct elm_gguf_writer));
}

void elm_gguf_writer_free(struct elm_gguf_writer *w)
{
    if (!w)
        return;
    for (uint64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    free(w->keys);
    for (size_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->t);
    free(w->kv.p);
    free(w);
}

void elm_gguf_add_u32(struct elm_gguf_writer *w, const char *key, uint32_t v)
{
    if (begin_kv(w, key, ELM_GGUF_U32))
        put_u32(w, v);
}

void elm_gguf_add_i32(struct elm_gguf_writer *w, const char *key, int32_t v)
{
    if (begin_kv(w, key, ELM_GGUF_I32))
        put(w, &v, 4);
}

void elm_gguf_add_f32(struct elm_gguf_writer *w, const char *key, float v)
{
    if (begin_kv(w, key, ELM_GGUF_F32))
        put(w, &v, 4);
}

void elm_gguf_add_bool(struct elm_gguf_writer *w, const char *key, bool v)
{
    uint8_t b = v ? 1 : 0;
    if (begin_kv(w, key, ELM_GGUF_BOOL))
        put(w, &b, 1);
}

void elm_gguf_add_string(struct elm_gguf_writer *w, const char *key, const char *s)
{
    if (begin_kv(w, key, ELM_GGUF_STRING))
        put_str(w, s);
}

void elm_gguf_add_array(struct elm_gguf_writer *w, const char *key, uint32_t elem_type,
                        const void *data, uint64_t n)
{
    size_t es;
    switch (elem_type) {
    case ELM_GGUF_U8:
    case ELM_GGUF_I8:
    case ELM_GGUF_BOOL: es = 1; break;
    case ELM_GGUF_U16:
    case ELM_GGUF_I16: es = 2; break;
    case ELM_GGUF_U32:
    case ELM_GGUF_I32:
    case ELM_GGUF_F32: es = 4; break;
    case ELM_GGUF_U64:
    case ELM_GGUF_I64:
    case ELM_GGUF_F64: es = 8; break;
    default:
        if (!w->bad[0])
            snprintf(w->bad, sizeof w->bad, "%s: bad array element type %u", key, elem_type);
        return;
    }
    if (!begin_kv(w, key, ELM_GGUF_ARRAY))
        return;
    put_u32(w, elem_type);
    put_u64(w, n);
    put(w, data, (size_t)n * es);
}

void elm_gguf_add_string_array(struct elm_gguf_writer *w, const char *key,
                               const char *const *strs, uint64_t n)
{
    if (!begin_kv(w, key, ELM_GGUF_ARRAY))
        return;
    put_u32(w, ELM_GGUF_STRING);
    put_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(w, strs[i]);
}

void elm_gguf_add_tensor(struct elm_gguf_writer *w, const char *name, enum elm_dtype dtype,
                         int n_dims, const int64_t *ne, elm_gguf_row_fn fill, void *user)
{
    if (w->oom || w->bad[0])
        return;
    if (strlen(name) >= ELM_GGUF_MAX_NAME || n_dims < 1 || n_dims > ELM_GGUF_MAX_DIMS ||
        !elm_row_size(dtype, ne[0])) {
        snprintf(w->bad, sizeof w->bad, "%s: bad tensor (name, dimensions or row length)", name);
        return;
    }
    for (size_t i = 0; i < w->n_t; i++) {
        if (strcmp(w->t[i].name, name) == 0) {
            snprintf(w->bad, sizeof w->bad, "%s: duplicate tensor name", name);
            return;
        }
    }
    struct wtensor *t = realloc(w->t, (w->n_t + 1) * sizeof *t);
    if (!t) {
        w->oom = true;
        return;
    }
    w->t = t;
    t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) {
        w->oom = true;
        return;
    }
    w->n_t++;
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->rows = 1;
    for (int d = 0; d < ELM_GGUF_MAX_DIMS; d++) {
        t->ne[d] = d < n_dims ? ne[d] : 1;
        if (d > 0)
            t->rows *= (uint64_t)t->ne[d];
    }
    t->row_bytes = elm_row_size(dtype, ne[0]);
    t->size = t->rows * t->row_bytes;
    t->fill = fill;
    t->user = user;
}

static uint64_t pad_to(uint64_t n)
{
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

static bool write_zeros(FILE *f, uint64_t n)
{
    static const uint8_t zeros[ALIGN];
    return n == 0 || fwrite(zeros, 1, (size_t)n, f) == n;
}

elm_status elm_gguf_writer_write(struct elm_gguf_writer *w, const char *path,
                                 void (*progress)(float, void *), void *progress_user, char *err,
                                 size_t err_size)
{
    if (w->oom)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    if (w->bad[0])
        return elm_set_error(err, err_size, ELM_E_INVALID, "%s: %s", path, w->bad);

    /* Header + metadata + tensor infos, in one buffer after the metadata. */
    size_t kv_len = w->kv.len;
    uint64_t off = 0, total = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        struct wtensor *t = &w->t[i];
        t->offset = off;
        off = pad_to(off + t->size);
        total += t->size;
        put_str(w, t->name);
        put_u32(w, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(w, (uint64_t)t->ne[d]);
        put_u32(w, elm_ggml_type_of(t->dtype));
        put_u64(w, t->offset);
    }
    if (w->oom)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);

    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return elm_set_error(err, err_size, ELM_E_INVALID, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", tmp, strerror(errno));
    uint8_t *row = NULL;
    size_t row_cap = 0;
    elm_status st = ELM_OK;
    uint32_t version = 3;
    uint64_t n_t = w->n_t;
    bool io = fwrite("GGUF", 1, 4, f) == 4 && fwrite(&version, 4, 1, f) == 1 &&
              fwrite(&n_t, 8, 1, f) == 1 && fwrite(&w->n_kv, 8, 1, f) == 1 &&
              fwrite(w->kv.p, 1, w->kv.len, f) == w->kv.len;
    uint64_t head = 24 + w->kv.len;
    io = io && write_zeros(f, pad_to(head) - head);
    w->kv.len = kv_len; /* drop the tensor infos: write may be called again */

    uint64_t done = 0;
    for (size_t i = 0; io && !st && i < w->n_t; i++) {
        struct wtensor *t = &w->t[i];
        if (t->row_bytes > row_cap) {
            uint8_t *p = realloc(row, t->row_bytes);
            if (!p) {
                st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
                break;
            }
            row = p;
            row_cap = t->row_bytes;
        }
        for (uint64_t r = 0; io && r < t->rows; r++) {
            if ((st = t->fill(t->user, (int64_t)r, row, err, err_size)))
                break;
            io = fwrite(row, 1, t->row_bytes, f) == t->row_bytes;
        }
        io = io && write_zeros(f, pad_to(t->size) - t->size);
        done += t->size;
        if (progress && total)
            progress((float)((double)done / (double)total), progress_user);
    }
    free(row);
    if (!st && !io)
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: write: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && !st)
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: close: %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = elm_set_error(err, err_size, ELM_E_IO, "%s: rename: %s", path, strerror(errno));
    if (st)
        unlink(tmp);
    return st;
}
