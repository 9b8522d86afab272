/* sampling_defaults.c: a model's own sampling defaults, from
 * generation_config.json (Hugging Face) or general.sampling.* (GGUF, the
 * keys llama.cpp's gguf-py defines), and back into a GGUF. */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/base/error.h"
#include "engine/formats/gguf.h"
#include "engine/formats/jsonfile.h"
#include "engine/model/sampling_defaults.h"

/* One field: its bit, the two files' names for it, its bounds. */
struct field {
    unsigned bit;
    const char *hf_key;   /* NULL: generation_config.json has no such key */
    const char *gguf_key; /* without the general.sampling. prefix */
    bool integer;
    double min, max;
};

static const struct field fields[] = {
    {ELM_SAMPLING_TEMPERATURE, "temperature", "temp", false, 0.0, 100.0},
    {ELM_SAMPLING_TOP_K, "top_k", "top_k", true, 0.0, (double)INT_MAX},
    {ELM_SAMPLING_TOP_P, "top_p", "top_p", false, 0.0, 1.0},
    {ELM_SAMPLING_MIN_P, "min_p", "min_p", false, 0.0, 1.0},
    {ELM_SAMPLING_REPEAT_PENALTY, "repetition_penalty", "penalty_repeat", false, 0.01, 100.0},
    {ELM_SAMPLING_REPEAT_LAST_N, NULL, "penalty_last_n", true, -1.0, (double)INT_MAX},
};

static void store(struct elm_model_sampling *s, const struct field *f, double v)
{
    s->set |= f->bit;
    switch (f->bit) {
    case ELM_SAMPLING_TEMPERATURE: s->temperature = (float)v; break;
    case ELM_SAMPLING_TOP_K: s->top_k = (int)v; break;
    case ELM_SAMPLING_TOP_P: s->top_p = (float)v; break;
    case ELM_SAMPLING_MIN_P: s->min_p = (float)v; break;
    case ELM_SAMPLING_REPEAT_PENALTY: s->repeat_penalty = (float)v; break;
    case ELM_SAMPLING_REPEAT_LAST_N: s->repeat_last_n = (int)v; break;
    default: break;
    }
}

static elm_status check(const char *file, const char *key, const struct field *f, double v,
                        char *err, size_t err_size)
{
    if (!isfinite(v) || v < f->min || v > f->max)
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: %g is out of range [%g, %g]",
                             file, key, v, f->min, f->max);
    if (f->integer && v != floor(v))
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: %g is not an integer", file,
                             key, v);
    return ELM_OK;
}

elm_status elm_sampling_from_generation_config(const char *dir, struct elm_model_sampling *out,
                                               char *err, size_t err_size)
{
    char path[PATH_MAX];
    struct stat sb;
    if ((size_t)snprintf(path, sizeof path, "%s/generation_config.json", dir) >= sizeof path ||
        stat(path, &sb) != 0)
        return ELM_OK;
    json_object *root;
    elm_status st = elm_json_load(path, 1 << 20, &root, err, err_size);
    if (st)
        return st;
    struct elm_model_sampling s = {0};
    if (!json_object_is_type(root, json_type_object)) {
        st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: not a JSON object", path);
        goto done;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !st; i++) {
        const struct field *f = &fields[i];
        json_object *v;
        if (!f->hf_key || !json_object_object_get_ex(root, f->hf_key, &v) ||
            json_object_is_type(v, json_type_null))
            continue;
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
            st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: %s: expected a number", path,
                               f->hf_key);
            break;
        }
        double d = json_object_get_double(v);
        if (!(st = check(path, f->hf_key, f, d, err, err_size)))
            store(&s, f, d);
    }
    /* Hugging Face samples only when do_sample is true: an explicit false
     * is greedy whatever temperature says. */
    json_object *ds;
    if (!st && json_object_object_get_ex(root, "do_sample", &ds)) {
        if (!json_object_is_type(ds, json_type_boolean))
            st = elm_set_error(err, err_size, ELM_E_FORMAT, "%s: do_sample: expected true or false",
                               path);
        else if (!json_object_get_boolean(ds))
            store(&s, &fields[0], 0.0);
    }
    if (!st)
        *out = s;
done:
    json_object_put(root);
    return st;
}

elm_status elm_sampling_from_gguf(const struct elm_gguf *g, struct elm_model_sampling *out,
                                  char *err, size_t err_size)
{
    struct elm_model_sampling s = {0};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const struct field *f = &fields[i];
        char key[64];
        snprintf(key, sizeof key, "general.sampling.%s", f->gguf_key);
        if (!elm_gguf_find(g, key))
            continue;
        double v;
        elm_status st;
        if (f->integer) {
            int64_t n;
            st = elm_gguf_get_int(g, key, true, (int64_t)f->min, (int64_t)f->max, &n, err,
                                  err_size);
            v = (double)n;
        } else {
            st = elm_gguf_get_float(g, key, true, &v, err, err_size);
        }
        if (st || (st = check(g->path, key, f, v, err, err_size)))
            return st;
        store(&s, f, v);
    }
    *out = s;
    return ELM_OK;
}

void elm_sampling_to_gguf(struct elm_gguf_writer *w, const struct elm_model_sampling *s)
{
    const double values[] = {s->temperature, s->top_k,          s->top_p,
                             s->min_p,       s->repeat_penalty, s->repeat_last_n};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const struct field *f = &fields[i];
        if (!(s->set & f->bit))
            continue;
        char key[64];
        snprintf(key, sizeof key, "general.sampling.%s", f->gguf_key);
        if (f->bit == ELM_SAMPLING_REPEAT_LAST_N)
            elm_gguf_add_i32(w, key, (int32_t)values[i]);
        else if (f->integer)
            elm_gguf_add_u32(w, key, (uint32_t)values[i]);
        else
            elm_gguf_add_f32(w, key, (float)values[i]);
    }
}
