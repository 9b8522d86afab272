/* gguf_read.c: reading a GGUF file (v2, v3): mapping, parsing and validating the
 * header, metadata and tensor table; typed metadata getters.  Nothing in the
 * file is trusted: every count is bounded by the bytes left, every length by
 * the end of the file, every type by a table. */
#include "config.h"

#include "engine/formats/gguf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/mapfile.h"
#include "engine/base/error.h"
#include "engine/kernels/blocks.h"

#define MAX_KEY_LEN 65535u
#define MAX_NESTING 8

/* ------------------------------------------------------------ tables */

struct ggml_type_info {
    const char *name;
    uint32_t block_elems, block_bytes;
};

/* ggml's type numbers (gaps are types ggml removed).  Sizes of the types we
 * do not run are still needed to check that a file's offsets add up. */
static const struct ggml_type_info ggml_types[] = {
    [0] = {"f32", 1, 4},        [1] = {"f16", 1, 2},        [2] = {"q4_0", 32, 18},
    [3] = {"q4_1", 32, 20},     [6] = {"q5_0", 32, 22},     [7] = {"q5_1", 32, 24},
    [8] = {"q8_0", 32, 34},     [9] = {"q8_1", 32, 36},     [10] = {"q2_k", 256, 84},
    [11] = {"q3_k", 256, 110},  [12] = {"q4_k", 256, 144},  [13] = {"q5_k", 256, 176},
    [14] = {"q6_k", 256, 210},  [15] = {"q8_k", 256, 292},  [16] = {"iq2_xxs", 256, 66},
    [17] = {"iq2_xs", 256, 74}, [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s", 256, 50},
    [20] = {"iq4_nl", 32, 18},  [21] = {"iq3_s", 256, 110}, [22] = {"iq2_s", 256, 82},
    [23] = {"iq4_xs", 256, 136}, [24] = {"i8", 1, 1},       [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},       [27] = {"i64", 1, 8},       [28] = {"f64", 1, 8},
    [29] = {"iq1_m", 256, 56},  [30] = {"bf16", 1, 2},      [34] = {"tq1_0", 256, 54},
    [35] = {"tq2_0", 256, 66},  [39] = {"mxfp4", 32, 17},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

const char *elm_ggml_type_name(uint32_t type)
{
    return type < N_GGML_TYPES ? ggml_types[type].name : NULL;
}

static const struct {
    enum elm_dtype dtype;
    uint32_t ggml;
} dtype_map[] = {
    {ELM_DTYPE_F32, ELM_GGML_F32},   {ELM_DTYPE_F16, ELM_GGML_F16},
    {ELM_DTYPE_BF16, ELM_GGML_BF16}, {ELM_DTYPE_Q8_0, ELM_GGML_Q8_0},
    {ELM_DTYPE_Q4_0, ELM_GGML_Q4_0}, {ELM_DTYPE_Q4_K, ELM_GGML_Q4_K},
    {ELM_DTYPE_Q5_K, ELM_GGML_Q5_K}, {ELM_DTYPE_Q6_K, ELM_GGML_Q6_K},
};

uint32_t elm_ggml_type_of(enum elm_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
        if (dtype_map[i].dtype == dtype)
            return dtype_map[i].ggml;
    return UINT32_MAX;
}

/* The elm dtype of a ggml type number (false: not one of ours). */
static bool elm_dtype_of_ggml(uint32_t type, enum elm_dtype *out)
{
    for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++) {
        if (dtype_map[i].ggml == type) {
            *out = dtype_map[i].dtype;
            return true;
        }
    }
    return false;
}

const char *elm_gguf_vtype_name(uint32_t type)
{
    static const char *const names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

/* Bytes of a fixed-size value type; 0 for string, array and unknown. */
static size_t vtype_size(uint32_t type)
{
    switch (type) {
    case ELM_GGUF_U8:
    case ELM_GGUF_I8:
    case ELM_GGUF_BOOL: return 1;
    case ELM_GGUF_U16:
    case ELM_GGUF_I16: return 2;
    case ELM_GGUF_U32:
    case ELM_GGUF_I32:
    case ELM_GGUF_F32: return 4;
    case ELM_GGUF_U64:
    case ELM_GGUF_I64:
    case ELM_GGUF_F64: return 8;
    default: return 0;
    }
}

bool elm_gguf_vtype_is_int(uint32_t type)
{
    return type <= ELM_GGUF_I32 || type == ELM_GGUF_U64 || type == ELM_GGUF_I64;
}

/* ------------------------------------------------------------ reader */

struct rd {
    const uint8_t *base;
    size_t pos, size;
    const char *path;
    char *err;
    size_t err_size;
    const char *what; /* the field being read, for "truncated" messages */
};

static elm_status fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static elm_status fail(struct rd *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    elm_status st = elm_vset_error_at(r->err, r->err_size, ELM_E_FORMAT, r->path, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static size_t left(const struct rd *r)
{
    return r->size - r->pos;
}

static elm_status rd_bytes(struct rd *r, void *dst, size_t n)
{
    if (left(r) < n)
        return fail(r, "%s: truncated at byte %zu (file is %zu bytes)", r->what, r->pos, r->size);
    memcpy(dst, r->base + r->pos, n);
    r->pos += n;
    return ELM_OK;
}

static elm_status rd_u32(struct rd *r, uint32_t *v)
{
    return rd_bytes(r, v, 4);
}

static elm_status rd_u64(struct rd *r, uint64_t *v)
{
    return rd_bytes(r, v, 8);
}

/* A string: u64 length, then the bytes; *s points into the mapping. */
static elm_status rd_string(struct rd *r, const uint8_t **s, uint64_t *len)
{
    elm_status st = rd_u64(r, len);
    if (st)
        return st;
    if (*len > left(r))
        return fail(r, "%s: string length %llu runs past the end of the file (%zu bytes left)",
                    r->what, (unsigned long long)*len, left(r));
    *s = r->base + r->pos;
    r->pos += (size_t)*len;
    return ELM_OK;
}

/* Skip (and check) one value of type at the cursor.  depth bounds nesting. */
static elm_status skip_value(struct rd *r, uint32_t type, int depth);

static elm_status skip_array(struct rd *r, int depth, uint32_t *elem_type, uint64_t *n)
{
    elm_status st;
    if (depth > MAX_NESTING)
        return fail(r, "%s: arrays nested more than %d deep", r->what, MAX_NESTING);
    if ((st = rd_u32(r, elem_type)) || (st = rd_u64(r, n)))
        return st;
    size_t es = vtype_size(*elem_type);
    if (*elem_type > ELM_GGUF_F64)
        return fail(r, "%s: unknown array element type %u", r->what, *elem_type);
    /* Smallest encoding of one element: bounds the count before any loop. */
    size_t min = es ? es : *elem_type == ELM_GGUF_STRING ? 8 : 12;
    if (*n > left(r) / min)
        return fail(r, "%s: array of %llu %s runs past the end of the file", r->what,
                    (unsigned long long)*n, elm_gguf_vtype_name(*elem_type));
    if (es) {
        if (*elem_type == ELM_GGUF_BOOL)
            for (uint64_t i = 0; i < *n; i++)
                if (r->base[r->pos + i] > 1)
                    return fail(r, "%s: element %llu: bool value %u is not 0 or 1", r->what,
                                (unsigned long long)i, r->base[r->pos + i]);
        r->pos += (size_t)*n * es;
        return ELM_OK;
    }
    for (uint64_t i = 0; i < *n; i++)
        if ((st = skip_value(r, *elem_type, depth + 1)))
            return st;
    return ELM_OK;
}

static elm_status skip_value(struct rd *r, uint32_t type, int depth)
{
    size_t es = vtype_size(type);
    if (es) {
        if (left(r) < es)
            return fail(r, "%s: value truncated at byte %zu", r->what, r->pos);
        if (type == ELM_GGUF_BOOL && r->base[r->pos] > 1)
            return fail(r, "%s: bool value %u is not 0 or 1", r->what, r->base[r->pos]);
        r->pos += es;
        return ELM_OK;
    }
    if (type == ELM_GGUF_STRING) {
        const uint8_t *s;
        uint64_t len;
        return rd_string(r, &s, &len);
    }
    if (type == ELM_GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        return skip_array(r, depth, &et, &n);
    }
    return fail(r, "%s: unknown value type %u", r->what, type);
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct elm_gguf_kv *)a)->key, ((const struct elm_gguf_kv *)b)->key);
}

static int tensor_name_cmp(const void *a, const void *b)
{
    const struct elm_gguf_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int tensor_offset_cmp(const void *a, const void *b)
{
    const struct elm_gguf_tensor *const *x = a, *const *y = b;
    if ((*x)->offset != (*y)->offset)
        return (*x)->offset < (*y)->offset ? -1 : 1;
    return (*x)->size < (*y)->size ? -1 : (*x)->size > (*y)->size;
}

/* A NUL-free copy of a file string, for keys and tensor names. */
static elm_status own_name(struct rd *r, const uint8_t *s, uint64_t len, char **out)
{
    if (memchr(s, '\0', (size_t)len))
        return fail(r, "%s: name contains a NUL byte", r->what);
    char *c = malloc((size_t)len + 1);
    if (!c)
        return elm_set_error(r->err, r->err_size, ELM_E_NOMEM, "%s: out of memory", r->path);
    memcpy(c, s, (size_t)len);
    c[len] = '\0';
    *out = c;
    return ELM_OK;
}

static elm_status parse_kvs(struct rd *r, struct elm_gguf *g, uint64_t n_kv)
{
    elm_status st;
    /* key length (8) + type (4) + the smallest value (1) */
    if (n_kv > left(r) / 13)
        return fail(r, "header: metadata count %llu is too large for a %zu-byte file",
                    (unsigned long long)n_kv, r->size);
    g->kv = calloc(n_kv ? (size_t)n_kv : 1, sizeof *g->kv);
    if (!g->kv)
        return elm_set_error(r->err, r->err_size, ELM_E_NOMEM, "%s: out of memory", r->path);
    char what[128];
    for (uint64_t i = 0; i < n_kv; i++) {
        struct elm_gguf_kv *kv = &g->kv[i];
        const uint8_t *key;
        uint64_t klen;
        snprintf(what, sizeof what, "metadata entry %llu: key", (unsigned long long)i);
        r->what = what;
        if ((st = rd_string(r, &key, &klen)))
            return st;
        if (klen == 0 || klen > MAX_KEY_LEN)
            return fail(r, "%s: key length %llu is not in [1, %u]", what,
                        (unsigned long long)klen, MAX_KEY_LEN);
        if ((st = own_name(r, key, klen, &kv->key)))
            return st;
        g->n_kv = (size_t)i + 1;
        snprintf(what, sizeof what, "%.100s", kv->key);
        if ((st = rd_u32(r, &kv->type)))
            return st;
        if (kv->type > ELM_GGUF_F64)
            return fail(r, "%s: unknown value type %u", what, kv->type);
        kv->n = 1;
        if (kv->type == ELM_GGUF_ARRAY) {
            size_t start = r->pos;
            if ((st = skip_array(r, 1, &kv->elem_type, &kv->n)))
                return st;
            kv->data = r->base + start + 12;
            if (kv->elem_type == ELM_GGUF_STRING && kv->n) {
                /* Index the strings once (they were checked by skip_array). */
                kv->strs = malloc((size_t)kv->n * sizeof *kv->strs);
                if (!kv->strs)
                    return elm_set_error(r->err, r->err_size, ELM_E_NOMEM, "%s: out of memory",
                                         r->path);
                const uint8_t *p = kv->data;
                for (uint64_t j = 0; j < kv->n; j++) {
                    uint64_t len;
                    kv->strs[j] = p;
                    memcpy(&len, p, 8);
                    p += 8 + len;
                }
            }
        } else {
            kv->data = r->base + r->pos;
            if ((st = skip_value(r, kv->type, 1)))
                return st;
        }
    }
    qsort(g->kv, g->n_kv, sizeof *g->kv, kv_cmp);
    for (size_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv[i - 1].key, g->kv[i].key) == 0)
            return fail(r, "%.200s: duplicate metadata key", g->kv[i].key);
    return ELM_OK;
}

static elm_status parse_alignment(struct rd *r, struct elm_gguf *g)
{
    g->alignment = ELM_GGUF_DEFAULT_ALIGNMENT;
    const struct elm_gguf_kv *kv = elm_gguf_find(g, "general.alignment");
    if (!kv)
        return ELM_OK;
    if (kv->type != ELM_GGUF_U32)
        return fail(r, "general.alignment: type %s, expected u32", elm_gguf_vtype_name(kv->type));
    uint32_t a;
    memcpy(&a, kv->data, 4);
    if (a == 0 || (a & (a - 1)) || a > (1u << 20))
        return fail(r, "general.alignment: %u is not a power of two up to 2^20", a);
    g->alignment = a;
    return ELM_OK;
}

static elm_status parse_tensor(struct rd *r, struct elm_gguf_tensor *t, uint64_t idx)
{
    char what[128];
    const uint8_t *name;
    uint64_t nlen;
    uint32_t n_dims = 0;
    elm_status st;
    snprintf(what, sizeof what, "tensor %llu: name", (unsigned long long)idx);
    r->what = what;
    if ((st = rd_string(r, &name, &nlen)))
        return st;
    if (nlen == 0 || nlen >= ELM_GGUF_MAX_NAME)
        return fail(r, "%s: length %llu is not in [1, %d]", what, (unsigned long long)nlen,
                    ELM_GGUF_MAX_NAME - 1);
    if ((st = own_name(r, name, nlen, &t->name)))
        return st;
    snprintf(what, sizeof what, "tensor %s", t->name);
    if ((st = rd_u32(r, &n_dims)))
        return st;
    if (n_dims < 1 || n_dims > ELM_GGUF_MAX_DIMS)
        return fail(r, "%s: %u dimensions (1 to %d are allowed)", what, n_dims,
                    ELM_GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    uint64_t count = 1;
    for (int d = 0; d < ELM_GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if (d < t->n_dims && (st = rd_u64(r, &ne)))
            return st;
        if (ne > (uint64_t)INT64_MAX || (ne && count > (uint64_t)INT64_MAX / ne))
            return fail(r, "%s: dimension %d (%llu) makes the tensor too large", what, d,
                        (unsigned long long)ne);
        t->ne[d] = (int64_t)ne;
        count *= ne;
    }
    if ((st = rd_u32(r, &t->ggml_type)) || (st = rd_u64(r, &t->offset)))
        return st;
    const char *tn = elm_ggml_type_name(t->ggml_type);
    if (!tn)
        return fail(r, "%s: unknown tensor type %u", what, t->ggml_type);
    const struct ggml_type_info *ti = &ggml_types[t->ggml_type];
    if ((uint64_t)t->ne[0] % ti->block_elems)
        return fail(r, "%s: row length %lld is not a multiple of the %s block size %u", what,
                    (long long)t->ne[0], tn, ti->block_elems);
    uint64_t blocks = count / ti->block_elems;
    if (blocks > UINT64_MAX / ti->block_bytes)
        return fail(r, "%s: too large", what);
    t->size = blocks * ti->block_bytes;
    t->supported = elm_dtype_of_ggml(t->ggml_type, &t->dtype);
    return ELM_OK;
}

static elm_status parse_tensors(struct rd *r, struct elm_gguf *g, uint64_t n_tensors)
{
    elm_status st;
    /* name length (8) + name (1) + n_dims (4) + one dim (8) + type (4) + offset (8) */
    if (n_tensors > left(r) / 33)
        return fail(r, "header: tensor count %llu is too large for a %zu-byte file",
                    (unsigned long long)n_tensors, r->size);
    size_t n = (size_t)n_tensors;
    g->tensors = calloc(n ? n : 1, sizeof *g->tensors);
    g->by_name = calloc(n ? n : 1, sizeof *g->by_name);
    struct elm_gguf_tensor **by_off = calloc(n ? n : 1, sizeof *by_off);
    if (!g->tensors || !g->by_name || !by_off) {
        free(by_off);
        return elm_set_error(r->err, r->err_size, ELM_E_NOMEM, "%s: out of memory", r->path);
    }
    for (size_t i = 0; i < n; i++) {
        g->n_tensors = i + 1;
        if ((st = parse_tensor(r, &g->tensors[i], i))) {
            free(by_off);
            return st;
        }
        g->by_name[i] = by_off[i] = &g->tensors[i];
    }
    qsort(g->by_name, n, sizeof *g->by_name, tensor_name_cmp);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(g->by_name[i - 1]->name, g->by_name[i]->name) == 0) {
            free(by_off);
            return fail(r, "tensor %s: duplicate tensor name", g->by_name[i]->name);
        }
    }

    uint64_t a = g->alignment;
    uint64_t data = ((uint64_t)r->pos + a - 1) / a * a;
    g->data_offset = data;
    uint64_t avail = data <= r->size ? r->size - data : 0;
    if (n && data > r->size) {
        free(by_off);
        return fail(r, "data section: starts at byte %llu, past the end of the file (%zu bytes)",
                    (unsigned long long)data, r->size);
    }
    qsort(by_off, n, sizeof *by_off, tensor_offset_cmp);
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        struct elm_gguf_tensor *t = by_off[i];
        st = ELM_OK;
        if (t->offset % a)
            st = fail(r, "tensor %s: offset %llu is not a multiple of the alignment %llu",
                      t->name, (unsigned long long)t->offset, (unsigned long long)a);
        else if (t->offset > avail || t->size > avail - t->offset)
            st = fail(r,
                      "tensor %s: data [%llu, +%llu) runs past the end of the file "
                      "(data section is %llu bytes)",
                      t->name, (unsigned long long)t->offset, (unsigned long long)t->size,
                      (unsigned long long)avail);
        else if (t->offset < end)
            st = fail(r, "tensor %s: data at %llu overlaps tensor %s", t->name,
                      (unsigned long long)t->offset, by_off[i - 1]->name);
        if (st) {
            free(by_off);
            return st;
        }
        end = t->offset + t->size;
        t->data = r->base + data + t->offset;
    }
    free(by_off);
    return ELM_OK;
}

static elm_status parse(struct elm_gguf *g, char *err, size_t err_size)
{
    struct rd r = {.base = g->addr, .size = g->size, .path = g->path, .err = err,
                   .err_size = err_size, .what = "header"};
    uint8_t magic[4];
    uint64_t n_tensors = 0, n_kv = 0;
    elm_status st;
    if (g->size < 4 || memcmp(g->addr, "GGUF", 4) != 0)
        return fail(&r, "header: not a GGUF file (no \"GGUF\" magic)");
    if ((st = rd_bytes(&r, magic, 4)) || (st = rd_u32(&r, &g->version)))
        return st;
    if (g->version == 1)
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: header: GGUF version 1 is not supported (2 and 3 are)", g->path);
    if (g->version != 2 && g->version != 3) {
        /* A byte-swapped small version is a big-endian file. */
        uint32_t v = g->version;
        uint32_t sw = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
        if (sw >= 1 && sw <= 3)
            return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                                 "%s: header: big-endian GGUF files are not supported", g->path);
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: header: GGUF version %u is not supported (2 and 3 are)", g->path,
                             g->version);
    }
    r.what = "header";
    if ((st = rd_u64(&r, &n_tensors)) || (st = rd_u64(&r, &n_kv)))
        return st;
    if ((st = parse_kvs(&r, g, n_kv)) || (st = parse_alignment(&r, g)))
        return st;
    return parse_tensors(&r, g, n_tensors);
}

void elm_gguf_close(struct elm_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].strs);
    }
    free(g->kv);
    for (size_t i = 0; i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->tensors);
    free(g->by_name);
    elm_unmap_file(g->addr, g->size);
    free(g->path);
    free(g);
}

elm_status elm_gguf_open(const char *path, struct elm_gguf **out, char *err, size_t err_size)
{
    struct elm_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    }
    elm_status st = elm_map_file(path, SIZE_MAX / 2, &g->addr, &g->size, err, err_size);
    if (!st && g->size < 24)
        st = elm_set_error(err, err_size, ELM_E_FORMAT,
                           "%s: header: truncated (%zu bytes; a GGUF header is 24)", path, g->size);
    if (!st)
        st = parse(g, err, err_size);
    if (st) {
        elm_gguf_close(g);
        return st;
    }
    *out = g;
    return ELM_OK;
}

const struct elm_gguf_kv *elm_gguf_find(const struct elm_gguf *g, const char *key)
{
    struct elm_gguf_kv k = {.key = (char *)key};
    return g->n_kv ? bsearch(&k, g->kv, g->n_kv, sizeof *g->kv, kv_cmp) : NULL;
}

const struct elm_gguf_tensor *elm_gguf_find_tensor(const struct elm_gguf *g, const char *name)
{
    struct elm_gguf_tensor k = {.name = (char *)name}, *kp = &k;
    if (!g->n_tensors)
        return NULL;
    struct elm_gguf_tensor **hit =
        bsearch(&kp, g->by_name, g->n_tensors, sizeof *g->by_name, tensor_name_cmp);
    return hit ? *hit : NULL;
}

/* ------------------------------------------------------------ getters */

/* A number of type at p, as double (exact for every integer up to 2^53;
 * larger ones only matter for range errors). */
static double number_at(uint32_t type, const uint8_t *p)
{
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        float f32;
        uint64_t u64;
        int64_t i64;
        double f64;
    } v;
    memcpy(&v, p, vtype_size(type));
    switch (type) {
    case ELM_GGUF_U8:
    case ELM_GGUF_BOOL: return v.u8;
    case ELM_GGUF_I8: return v.i8;
    case ELM_GGUF_U16: return v.u16;
    case ELM_GGUF_I16: return v.i16;
    case ELM_GGUF_U32: return v.u32;
    case ELM_GGUF_I32: return v.i32;
    case ELM_GGUF_F32: return v.f32;
    case ELM_GGUF_U64: return (double)v.u64;
    case ELM_GGUF_I64: return (double)v.i64;
    case ELM_GGUF_F64: return v.f64;
    }
    return 0.0;
}

/* Integer of type at p, or false when it does not fit int64 */
static bool int_at(uint32_t type, const uint8_t *p, int64_t *out)
{
    if (type == ELM_GGUF_U64) {
        uint64_t u;
        memcpy(&u, p, 8);
        if (u > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)u;
        return true;
    }
    if (type == ELM_GGUF_I64) {
        memcpy(out, p, 8);
        return true;
    }
    *out = (int64_t)number_at(type, p);
    return true;
}

static elm_status missing(const struct elm_gguf *g, const char *key, char *err, size_t err_size)
{
    return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: missing metadata key", g->path,
                         key);
}

static elm_status wrong_type(const struct elm_gguf *g, const struct elm_gguf_kv *kv,
                             const char *want, char *err, size_t err_size)
{
    return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: type %s, expected %s", g->path,
                         kv->key, elm_gguf_vtype_name(kv->type), want);
}

elm_status elm_gguf_get_int(const struct elm_gguf *g, const char *key, bool required,
                            int64_t min, int64_t max, int64_t *out, char *err, size_t err_size)
{
    const struct elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv)
        return required ? missing(g, key, err, err_size) : ELM_OK;
    int64_t v;
    if (!elm_gguf_vtype_is_int(kv->type))
        return wrong_type(g, kv, "an integer", err, err_size);
    if (!int_at(kv->type, kv->data, &v) || v < min || v > max)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: %.0f is out of range [%lld, %lld]",
                             g->path, key, number_at(kv->type, kv->data), (long long)min,
                             (long long)max);
    *out = v;
    return ELM_OK;
}

elm_status elm_gguf_get_float(const struct elm_gguf *g, const char *key, bool required,
                              double *out, char *err, size_t err_size)
{
    const struct elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv)
        return required ? missing(g, key, err, err_size) : ELM_OK;
    if (kv->type != ELM_GGUF_F32 && kv->type != ELM_GGUF_F64)
        return wrong_type(g, kv, "f32", err, err_size);
    double v = number_at(kv->type, kv->data);
    if (!isfinite(v))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: not a finite number", g->path,
                             key);
    *out = v;
    return ELM_OK;
}

elm_status elm_gguf_get_bool(const struct elm_gguf *g, const char *key, bool *out, char *err,
                             size_t err_size)
{
    const struct elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv)
        return ELM_OK;
    if (kv->type != ELM_GGUF_BOOL)
        return wrong_type(g, kv, "bool", err, err_size);
    *out = kv->data[0] != 0;
    return ELM_OK;
}

elm_status elm_gguf_get_string(const struct elm_gguf *g, const char *key, bool required,
                               const char **s, size_t *len, char *err, size_t err_size)
{
    const struct elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv)
        return required ? missing(g, key, err, err_size) : ELM_OK;
    if (kv->type != ELM_GGUF_STRING)
        return wrong_type(g, kv, "string", err, err_size);
    uint64_t n;
    memcpy(&n, kv->data, 8);
    *s = (const char *)kv->data + 8;
    *len = (size_t)n;
    return ELM_OK;
}

elm_status elm_gguf_get_ints(const struct elm_gguf *g, const char *key, int n, int64_t min,
                             int64_t max, int *out, char *err, size_t err_size)
{
    const struct elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv)
        return missing(g, key, err, err_size);
    if (elm_gguf_vtype_is_int(kv->type)) {
        int64_t v;
        elm_status st = elm_gguf_get_int(g, key, true, min, max, &v, err, err_size);
        if (st)
            return st;
        for (int i = 0; i < n; i++)
            out[i] = (int)v;
        return ELM_OK;
    }
    if (kv->type != ELM_GGUF_ARRAY || !elm_gguf_vtype_is_int(kv->elem_type))
        return wrong_type(g, kv, "an integer or an array of integers", err, err_size);
    if (kv->n != (uint64_t)n)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: %s: %llu entries, expected %d (one per layer)", g->path, key,
                             (unsigned long long)kv->n, n);
    size_t es = vtype_size(kv->elem_type);
    for (int i = 0; i < n; i++) {
        int64_t v;
        const uint8_t *p = kv->data + (size_t)i * es;
        if (!int_at(kv->elem_type, p, &v) || v < min || v > max)
            return elm_set_error(err, err_size, ELM_E_FORMAT,
                                 "%s: %s: entry %d (%.0f) is out of range [%lld, %lld]", g->path,
                                 key, i, number_at(kv->elem_type, p), (long long)min,
                                 (long long)max);
        out[i] = (int)v;
    }
    return ELM_OK;
}

void elm_gguf_array_string(const struct elm_gguf_kv *kv, uint64_t i, const char **s, size_t *len)
{
    uint64_t n;
    memcpy(&n, kv->strs[i], 8);
    *s = (const char *)kv->strs[i] + 8;
    *len = (size_t)n;
}

double elm_gguf_array_number(const struct elm_gguf_kv *kv, uint64_t i)
{
    return number_at(kv->elem_type, kv->data + (size_t)i * vtype_size(kv->elem_type));
}
