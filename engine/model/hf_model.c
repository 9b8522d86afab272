/* hf_model.c: the Hugging Face loader: an OpenELM folder (config.json +
 * safetensors, single file or index + shards), binding and validating
 * every tensor, and the tokenizer beside the weights. */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/formats/jsonfile.h"
#include "engine/formats/safetensors.h"
#include "engine/kernels/kernels.h"
#include "engine/model/hf_model.h"
#include "engine/model/load_steps.h"
#include "engine/model/model.h"
#include "engine/model/sampling_defaults.h"
#include "engine/tokenizer/load.h"

struct loader {
    struct elm_model *m;
    char *err;
    size_t err_size;
    char dir[PATH_MAX];
    char weights[PATH_MAX]; /* the single file or the index: named for missing tensors */
    json_object *weight_map; /* index: tensor name -> shard file name; NULL otherwise */
    uint64_t hash;
    size_t norm_used;
    uint64_t bytes_by_dtype[3];
};

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static elm_status join(struct loader *ld, char *out, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
        return elm_set_error(ld->err, ld->err_size, ELM_E_INVALID, "%s: path too long", dir);
    return ELM_OK;
}

static elm_status open_map(struct loader *ld, const char *path, struct elm_mapping **out)
{
    struct elm_model *m = ld->m;
    for (int i = 0; i < m->n_maps; i++) {
        if (strcmp(m->maps[i]->path, path) == 0) {
            *out = m->maps[i];
            return ELM_OK;
        }
    }
    struct elm_mapping **maps = realloc(m->maps, (size_t)(m->n_maps + 1) * sizeof *maps);
    if (!maps)
        return elm_set_error(ld->err, ld->err_size, ELM_E_NOMEM, "%s: out of memory", path);
    m->maps = maps;
    elm_status st = elm_safetensors_open(path, &maps[m->n_maps], ld->err, ld->err_size);
    if (st)
        return st;
    *out = maps[m->n_maps++];
    return ELM_OK;
}

/* Find a tensor by name in the single file or through the index. */
static elm_status find_tensor(struct loader *ld, const char *name, const struct elm_mapping **map,
                              const struct elm_st_tensor **t)
{
    char path[PATH_MAX];
    struct elm_mapping *mp;
    elm_status st;
    if (ld->weight_map) {
        json_object *v;
        if (!json_object_object_get_ex(ld->weight_map, name, &v))
            return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                                 "%s: %s: missing tensor (not in weight_map)", ld->weights, name);
        const char *file = json_object_get_string(v);
        if ((st = join(ld, path, ld->dir, file)) || (st = open_map(ld, path, &mp)))
            return st;
        *t = elm_safetensors_find(mp, name);
        if (!*t)
            return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                                 "%s: %s: missing tensor (the index names this shard)", path,
                                 name);
    } else {
        if ((st = open_map(ld, ld->weights, &mp)))
            return st;
        *t = elm_safetensors_find(mp, name);
        if (!*t)
            return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT, "%s: %s: missing tensor",
                                 ld->weights, name);
    }
    *map = mp;
    return ELM_OK;
}

static elm_status check_tensor(struct loader *ld, const struct elm_mapping *map,
                               const struct elm_st_tensor *t, int n_dims, int64_t rows,
                               int64_t cols)
{
    if (!t->supported)
        return elm_set_error(ld->err, ld->err_size, ELM_E_UNSUPPORTED,
                             "%s: %s: dtype %s is not supported (F32, BF16, F16 are)", map->path,
                             t->name, t->dtype_name);
    bool same = t->n_dims == n_dims && t->shape[0] == rows && (n_dims == 1 || t->shape[1] == cols);
    if (!same) {
        char got[160] = "[", want[64];
        size_t len = 1;
        for (int i = 0; i < t->n_dims && len < sizeof got - 24; i++)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%lld", i ? ", " : "",
                                    (long long)t->shape[i]);
        snprintf(got + len, sizeof got - len, "]");
        if (n_dims == 1)
            snprintf(want, sizeof want, "[%lld]", (long long)rows);
        else
            snprintf(want, sizeof want, "[%lld, %lld]", (long long)rows, (long long)cols);
        return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                             "%s: %s: shape %s, but config.json implies %s", map->path, t->name,
                             got, want);
    }
    elm_hash_tensor(&ld->hash, t->name, (uint64_t)t->dtype, rows, cols, t->data, t->size);
    ld->bytes_by_dtype[t->dtype] += t->size;
    ld->m->info.n_params += (uint64_t)rows * (uint64_t)cols;
    ld->m->info.weight_bytes += t->size;
    return ELM_OK;
}

static elm_status bind_matrix(void *user, const char *name, int64_t rows, int64_t cols,
                              struct elm_matrix *out)
{
    struct loader *ld = user;
    const struct elm_mapping *map;
    const struct elm_st_tensor *t;
    elm_status st;
    /* Each tensor may fault pages in from a slow disk: a cancel point. */
    if ((st = elm_load_check(ld->m, ld->weights, ld->err, ld->err_size)) ||
        (st = find_tensor(ld, name, &map, &t)) || (st = check_tensor(ld, map, t, 2, rows, cols)))
        return st;
    const void *data = t->data;
    size_t align = elm_dtype_size(t->dtype);
    if ((uintptr_t)data % align) {
        /* The format does not promise alignment; copy the rare odd tensor. */
        void *copy = elm_model_own_copy(ld->m, (size_t)t->size);
        if (!copy)
            return elm_set_error(ld->err, ld->err_size, ELM_E_NOMEM, "%s: %s: out of memory",
                                 map->path, name);
        if ((st = elm_load_copy(ld->m, copy, data, (size_t)t->size, map->path, ld->err,
                                ld->err_size)))
            return st;
        data = copy;
    }
    *out = (struct elm_matrix){.data = data, .dtype = t->dtype, .rows = rows, .cols = cols};
    return ELM_OK;
}

static elm_status bind_vector(void *user, const char *name, int64_t n, const float **out)
{
    struct loader *ld = user;
    const struct elm_mapping *map;
    const struct elm_st_tensor *t;
    elm_status st;
    if ((st = elm_load_check(ld->m, ld->weights, ld->err, ld->err_size)) ||
        (st = find_tensor(ld, name, &map, &t)) || (st = check_tensor(ld, map, t, 1, n, 1)))
        return st;
    float *dst = ld->m->norm_store + ld->norm_used;
    ld->norm_used += (size_t)n;
    if ((uintptr_t)t->data % elm_dtype_size(t->dtype)) {
        void *tmp = malloc((size_t)t->size);
        if (!tmp)
            return elm_set_error(ld->err, ld->err_size, ELM_E_NOMEM, "%s: %s: out of memory",
                                 map->path, name);
        memcpy(tmp, t->data, (size_t)t->size);
        elm_to_f32(tmp, t->dtype, dst, (size_t)n);
        free(tmp);
    } else {
        elm_to_f32(t->data, t->dtype, dst, (size_t)n);
    }
    *out = dst;
    return ELM_OK;
}

/* A layer's tensors: transformer.layers.N.attn_norm.weight and so on. */
static const struct elm_layer_binding layer_binding = {
    .prefix = "transformer.layers.", .attn_norm = "attn_norm", .qkv = "attn.qkv_proj",
    .q_norm = "attn.q_norm", .k_norm = "attn.k_norm", .out = "attn.out_proj",
    .ffn_norm = "ffn_norm", .proj1 = "ffn.proj_1", .proj2 = "ffn.proj_2",
    .vector = bind_vector, .matrix = bind_matrix};

static elm_status bind_all(struct loader *ld)
{
    struct elm_model *m = ld->m;
    elm_status st;
    if ((st = bind_matrix(ld, "transformer.token_embeddings.weight", m->info.n_vocab,
                          m->info.model_dim, &m->embed)) ||
        (st = elm_model_bind_layers(m, &layer_binding, ld)))
        return st;
    return bind_vector(ld, "transformer.norm.weight", m->info.model_dim, &m->final_norm);
}

/* Index json: {"weight_map": {"tensor": "shard file name"}}. */
static elm_status load_index(struct loader *ld, json_object **root)
{
    elm_status st = elm_json_load(ld->weights, 64u << 20, root, ld->err, ld->err_size);
    if (st)
        return st;
    json_object *wm;
    if (!json_object_is_type(*root, json_type_object) ||
        !json_object_object_get_ex(*root, "weight_map", &wm) ||
        !json_object_is_type(wm, json_type_object))
        return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT, "%s: no weight_map object",
                             ld->weights);
    json_object_object_foreach(wm, key, val)
    {
        const char *file = json_object_is_type(val, json_type_string) ? json_object_get_string(val)
                                                                       : NULL;
        /* Shards live beside the index: no paths, no way out of the folder. */
        if (!file || !*file || strchr(file, '/') || strcmp(file, ".") == 0 ||
            strcmp(file, "..") == 0)
            return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                                 "%s: %s: bad shard file name", ld->weights, key);
    }
    ld->weight_map = wm;
    return ELM_OK;
}

static elm_status locate(struct loader *ld, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return elm_set_error(ld->err, ld->err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        if ((size_t)snprintf(ld->dir, sizeof ld->dir, "%s", path) >= sizeof ld->dir)
            return elm_set_error(ld->err, ld->err_size, ELM_E_INVALID, "%s: path too long", path);
        elm_status st = join(ld, ld->weights, ld->dir, "model.safetensors.index.json");
        if (st || is_file(ld->weights))
            return st;
        if ((st = join(ld, ld->weights, ld->dir, "model.safetensors")))
            return st;
        if (!is_file(ld->weights))
            return elm_set_error(ld->err, ld->err_size, ELM_E_IO,
                                 "%s: no model.safetensors or model.safetensors.index.json", path);
        return ELM_OK;
    }
    if (!ends_with(path, ".safetensors") && !ends_with(path, ".safetensors.index.json"))
        return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                             "%s: not a model folder, .safetensors or .gguf file", path);
    if ((size_t)snprintf(ld->weights, sizeof ld->weights, "%s", path) >= sizeof ld->weights)
        return elm_set_error(ld->err, ld->err_size, ELM_E_INVALID, "%s: path too long", path);
    snprintf(ld->dir, sizeof ld->dir, "%s", path);
    char *slash = strrchr(ld->dir, '/');
    if (!slash)
        snprintf(ld->dir, sizeof ld->dir, ".");
    else if (slash == ld->dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    return ELM_OK;
}

static void name_model(struct loader *ld)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", ld->dir);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    const char *base = strrchr(tmp, '/');
    base = base && base[1] ? base + 1 : tmp;
    struct elm_model_info *in = &ld->m->info;
    snprintf(in->name, sizeof in->name, "%.127s", base);
}

/* Every step, in order; ld is filled as they go. */
static elm_status load_steps(struct loader *ld, const char *path, json_object **index)
{
    struct elm_model *m = ld->m;
    char cfg[PATH_MAX];
    elm_status st;
    if ((st = locate(ld, path)) || (st = join(ld, cfg, ld->dir, "config.json")) ||
        (st = elm_config_load(cfg, &m->info, ld->err, ld->err_size)) ||
        (st = elm_sampling_from_generation_config(ld->dir, &m->info.sampling, ld->err,
                                                  ld->err_size)))
        return st;
    elm_load_progress(m, 0.05f);
    if (ends_with(ld->weights, ".index.json") && (st = load_index(ld, index)))
        return st;
    elm_hash_config(&ld->hash, &m->info);
    if (!elm_model_alloc_layers(m))
        return elm_set_error(ld->err, ld->err_size, ELM_E_NOMEM, "%s: out of memory", ld->dir);
    if ((st = bind_all(ld)) || (st = elm_load_check(m, path, ld->err, ld->err_size)))
        return st;
    elm_load_progress(m, 0.9f);
    /* The tokenizer beside the weights; none there is no error. */
    if (m->loading->tokenizer)
        m->tokenizer = elm_tokenizer_share(m->loading->tokenizer);
    else if ((st = tokenizer_load_beside(ld->dir, &m->tokenizer, ld->err, ld->err_size)))
        return st;
    return elm_load_check(m, path, ld->err, ld->err_size);
}

elm_status elm_hf_model_load(struct elm_model *m, const char *path, char *err, size_t err_size)
{
    struct loader *ld = calloc(1, sizeof *ld);
    if (!ld)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    ld->m = m;
    ld->err = err;
    ld->err_size = err_size;
    ld->hash = 0xcbf29ce484222325ull; /* FNV-1a offset basis */
    json_object *index = NULL;
    elm_status st = load_steps(ld, path, &index);
    json_object_put(index);
    if (!st) {
        struct elm_model_info *in = &m->info;
        in->fingerprint = ld->hash;
        in->dtype = elm_dominant_dtype(ld->bytes_by_dtype, 3);
        name_model(ld);
    }
    free(ld);
    return st;
}
