/* safetensors.c: memory-mapped, validated safetensors files. */
#include "config.h"

#include "engine/formats/safetensors.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/jsonfile.h"
#include "engine/formats/mapfile.h"
#include "engine/base/error.h"

#define MAX_HEADER (100u << 20) /* the format's own limit */

static const struct {
    const char *name;
    unsigned size;
    int dtype; /* -1: valid safetensors type we cannot compute with */
} dtypes[] = {
    {"F32", 4, ELM_DTYPE_F32}, {"F16", 2, ELM_DTYPE_F16}, {"BF16", 2, ELM_DTYPE_BF16},
    {"F64", 8, -1}, {"I64", 8, -1}, {"U64", 8, -1}, {"I32", 4, -1}, {"U32", 4, -1},
    {"I16", 2, -1}, {"U16", 2, -1}, {"I8", 1, -1}, {"U8", 1, -1}, {"BOOL", 1, -1},
    {"F8_E4M3", 1, -1}, {"F8_E5M2", 1, -1},
};

void elm_safetensors_close(struct elm_mapping *map)
{
    if (!map)
        return;
    for (int i = 0; i < map->n_tensors; i++)
        free(map->tensors[i].name);
    free(map->tensors);
    elm_unmap_file(map->addr, map->size);
    free(map->path);
    free(map);
}

static int by_offset(const void *a, const void *b)
{
    const struct elm_st_tensor *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static int by_name(const void *a, const void *b)
{
    const struct elm_st_tensor *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static bool get_u64(json_object *v, uint64_t *out)
{
    if (!json_object_is_type(v, json_type_int))
        return false;
    errno = 0;
    int64_t i = json_object_get_int64(v);
    if (errno == ERANGE || i < 0)
        return false;
    *out = (uint64_t)i;
    return true;
}

/* One header entry; data_start is the file offset of the data section. */
static elm_status parse_entry(const struct elm_mapping *map, const char *name, json_object *v,
                              uint64_t data_start, struct elm_st_tensor *t, char *err,
                              size_t err_size)
{
    const char *f = map->path;
    json_object *jd, *js, *jo;
    if (!json_object_is_type(v, json_type_object))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: entry is not an object", f,
                             name);
    if (!json_object_object_get_ex(v, "dtype", &jd) || !json_object_is_type(jd, json_type_string))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: missing dtype", f, name);
    if (!json_object_object_get_ex(v, "shape", &js) || !json_object_is_type(js, json_type_array))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: missing shape", f, name);
    if (!json_object_object_get_ex(v, "data_offsets", &jo) ||
        !json_object_is_type(jo, json_type_array) || json_object_array_length(jo) != 2)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: missing data_offsets", f,
                             name);

    const char *ds = json_object_get_string(jd);
    unsigned elsize = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (strcmp(ds, dtypes[i].name) == 0) {
            elsize = dtypes[i].size;
            t->supported = dtypes[i].dtype >= 0;
            t->dtype = t->supported ? (enum elm_dtype)dtypes[i].dtype : ELM_DTYPE_F32;
            snprintf(t->dtype_name, sizeof t->dtype_name, "%s", ds);
        }
    }
    if (!elsize)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: unknown dtype \"%.16s\"", f,
                             name, ds);

    size_t nd = json_object_array_length(js);
    if (nd > ELM_ST_MAX_DIMS)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: %zu dimensions", f, name, nd);
    t->n_dims = (int)nd;
    uint64_t count = 1;
    for (size_t i = 0; i < nd; i++) {
        uint64_t dim;
        if (!get_u64(json_object_array_get_idx(js, i), &dim) || dim > ((uint64_t)1 << 40))
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: bad shape entry %zu", f,
                                 name, i);
        t->shape[i] = (int64_t)dim;
        if (dim && count > UINT64_MAX / 16 / dim)
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: shape overflows", f, name);
        count *= dim;
    }

    uint64_t begin, end;
    if (!get_u64(json_object_array_get_idx(jo, 0), &begin) ||
        !get_u64(json_object_array_get_idx(jo, 1), &end))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: bad data_offsets", f, name);
    uint64_t data_size = map->size - data_start;
    if (begin > end || end > data_size)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: %s: data_offsets [%llu, %llu] outside the %llu data bytes", f,
                             name, (unsigned long long)begin, (unsigned long long)end,
                             (unsigned long long)data_size);
    if (end - begin != count * elsize)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: %s: %llu data bytes, but shape x %s needs %llu", f, name,
                             (unsigned long long)(end - begin), ds,
                             (unsigned long long)(count * elsize));
    t->offset = data_start + begin;
    t->size = end - begin;
    t->data = (const char *)map->addr + t->offset;
    return ELM_OK;
}

struct key_span {
    const char *p;
    size_t n;
};

static int by_span(const void *a, const void *b)
{
    const struct key_span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* json-c keeps the last of two equal keys, so a tensor named twice would
 * pass silently: find the top-level keys in the (already valid) JSON text
 * and report the first one given twice in name (raw, as written); false
 * when every key is unique or memory runs out. */
static bool duplicate_key(const char *s, size_t n, int n_keys, char *name, size_t name_size)
{
    struct key_span *keys = calloc((size_t)n_keys + 1, sizeof *keys);
    if (!keys)
        return false;
    int depth = 0, found = 0;
    bool expect_key = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            j = j < n ? j : n;
            if (depth == 1 && expect_key && found <= n_keys)
                keys[found++] = (struct key_span){s + i + 1, j - i - 1};
            expect_key = false;
            i = j;
        } else if (c == '{' || c == '[') {
            depth++;
            expect_key = c == '{' && depth == 1;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',' && depth == 1) {
            expect_key = true;
        }
    }
    qsort(keys, (size_t)found, sizeof *keys, by_span);
    bool dup = false;
    for (int i = 1; i < found && !dup; i++)
        if (by_span(&keys[i - 1], &keys[i]) == 0) {
            snprintf(name, name_size, "%.*s", (int)(keys[i].n < 200 ? keys[i].n : 200), keys[i].p);
            dup = true;
        }
    free(keys);
    return dup;
}

static elm_status parse_header(struct elm_mapping *map, char *err, size_t err_size)
{
    const char *f = map->path;
    if (map->size < 8)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: truncated (%zu bytes, no header)",
                             f, map->size);
    const unsigned char *p = map->addr;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | p[i];
    if (n > map->size - 8)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: header length %llu runs past the end of the file (%zu bytes)", f,
                             (unsigned long long)n, map->size);
    if (n > MAX_HEADER || n < 2)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: implausible header length %llu", f,
                             (unsigned long long)n);

    json_object *root;
    elm_status st = elm_json_parse((const char *)p + 8, (size_t)n, f, &root, err, err_size);
    if (st)
        return st;
    if (!json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: header is not a JSON object", f);
    }
    int count = json_object_object_length(root);
    char dup[256];
    if (duplicate_key((const char *)p + 8, (size_t)n, count, dup, sizeof dup)) {
        json_object_put(root);
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: \"%s\" appears twice in the header", f, dup);
    }
    map->tensors = calloc(count ? (size_t)count : 1, sizeof *map->tensors);
    if (!map->tensors) {
        json_object_put(root);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", f);
    }
    json_object_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        struct elm_st_tensor *t = &map->tensors[map->n_tensors];
        st = parse_entry(map, key, val, 8 + n, t, err, err_size);
        if (st)
            break;
        t->name = strdup(key);
        if (!t->name) {
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", f);
            break;
        }
        map->n_tensors++;
    }
    json_object_put(root);
    if (st)
        return st;

    qsort(map->tensors, (size_t)map->n_tensors, sizeof *map->tensors, by_offset);
    for (int i = 1; i < map->n_tensors; i++) {
        const struct elm_st_tensor *a = &map->tensors[i - 1], *b = &map->tensors[i];
        if (b->offset < a->offset + a->size)
            return elm_set_error(err, err_size, ELM_E_FORMAT,
                                 "%s: %s: data overlaps tensor %s", f, b->name, a->name);
    }
    qsort(map->tensors, (size_t)map->n_tensors, sizeof *map->tensors, by_name);
    return ELM_OK;
}

elm_status elm_safetensors_open(const char *path, struct elm_mapping **out, char *err,
                                size_t err_size)
{
    struct elm_mapping *map = calloc(1, sizeof *map);
    if (!map || !(map->path = strdup(path))) {
        free(map);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    }
    elm_status st = elm_map_file(path, SIZE_MAX, &map->addr, &map->size, err, err_size);
    if (!st)
        st = parse_header(map, err, err_size);
    if (st) {
        elm_safetensors_close(map);
        return st;
    }
    *out = map;
    return ELM_OK;
}

const struct elm_st_tensor *elm_safetensors_find(const struct elm_mapping *map, const char *name)
{
    struct elm_st_tensor key = {.name = (char *)name};
    return bsearch(&key, map->tensors, (size_t)map->n_tensors, sizeof *map->tensors, by_name);
}
