/* config.c: reading and validating an OpenELM config.json (docs/OPENELM.md §1, §3). */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/jsonfile.h"
#include "engine/model/model.h"


struct cfg {
    const char *file;
    json_object *root;
    char *err;
    size_t err_size;
};

static elm_status bad(struct cfg *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static elm_status bad(struct cfg *c, const char *key, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return elm_set_error(c->err, c->err_size, ELM_E_FORMAT, "%s: %s: %s", c->file, key, what);
}

/* An integer value (json int, or a double with an integral value). */
static bool json_to_int64(json_object *v, int64_t *out)
{
    if (json_object_is_type(v, json_type_int)) {
        errno = 0;
        int64_t i = json_object_get_int64(v);
        if (errno == ERANGE)
            return false;
        *out = i;
        return true;
    }
    if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9e15)
            return false;
        *out = (int64_t)d;
        return true;
    }
    return false;
}

static bool json_to_double(json_object *v, double *out)
{
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return false;
    double d = json_object_get_double(v);
    if (!isfinite(d))
        return false;
    *out = d;
    return true;
}

/* Required when def is NULL. */
static elm_status get_int(struct cfg *c, const char *key, const int *def, long min, long max,
                          int *out)
{
    json_object *v;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null)) {
        if (!def)
            return bad(c, key, "missing");
        *out = *def;
        return ELM_OK;
    }
    int64_t i;
    if (!json_to_int64(v, &i))
        return bad(c, key, "expected an integer");
    if (i < min || i > max)
        return bad(c, key, "%lld is out of range [%ld, %ld]", (long long)i, min, max);
    *out = (int)i;
    return ELM_OK;
}

static elm_status get_double(struct cfg *c, const char *key, double def, double min, double max,
                             double *out)
{
    json_object *v;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null)) {
        *out = def;
        return ELM_OK;
    }
    double d;
    if (!json_to_double(v, &d))
        return bad(c, key, "expected a number");
    if (!(d > min && d <= max))
        return bad(c, key, "%g is out of range (%g, %g]", d, min, max);
    *out = d;
    return ELM_OK;
}

/* A boolean that must have the value OpenELM uses (absent means that value). */
static elm_status want_bool(struct cfg *c, const char *key, bool want)
{
    json_object *v;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null))
        return ELM_OK;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(c, key, "expected true or false");
    if ((bool)json_object_get_boolean(v) != want)
        return elm_set_error(c->err, c->err_size, ELM_E_UNSUPPORTED,
                             "%s: %s: only %s is supported", c->file, key,
                             want ? "true" : "false");
    return ELM_OK;
}

static elm_status want_string(struct cfg *c, const char *key, const char *const *allowed)
{
    json_object *v;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null))
        return ELM_OK;
    if (!json_object_is_type(v, json_type_string))
        return bad(c, key, "expected a string");
    const char *s = json_object_get_string(v);
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(s, *a) == 0)
            return ELM_OK;
    return elm_set_error(c->err, c->err_size, ELM_E_UNSUPPORTED, "%s: %s: \"%.64s\" is not supported",
                         c->file, key, s);
}

/* numpy round(x, 2) on float64: round half to even of x*100, then /100. */
static double round2(double x)
{
    return nearbyint(x * 100.0) / 100.0;
}

/* np.linspace(a, b, n)[i] */
static double linspace_at(double a, double b, int n, int i)
{
    if (n == 1)
        return a;
    double step = (b - a) / (n - 1);
    if (i == n - 1)
        return b;
    return a + i * step;
}

/* corenet make_divisible (docs/OPENELM.md §1.1), in double. */
static long make_divisible(double v, long divisor)
{
    long new_v = (long)(v + divisor / 2.0) / divisor * divisor;
    if (new_v < divisor)
        new_v = divisor;
    if (new_v < 0.9 * v)
        new_v += divisor;
    return new_v;
}

/* A per-layer list of length n_layers, or (for multipliers) a scalar or a
 * [min, max] pair to spread with linspace, as the HF config allows. */
static elm_status get_layer_doubles(struct cfg *c, const char *key, int n_layers, bool allow_pair,
                                    double *out, bool *present)
{
    json_object *v;
    *present = false;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null))
        return ELM_OK;
    *present = true;
    double d;
    if (json_to_double(v, &d)) {
        for (int i = 0; i < n_layers; i++)
            out[i] = d;
        return ELM_OK;
    }
    if (!json_object_is_type(v, json_type_array))
        return bad(c, key, "expected a list of numbers");
    size_t n = json_object_array_length(v);
    if (n != (size_t)n_layers && !(allow_pair && n == 2))
        return bad(c, key, "has %zu entries, num_transformer_layers is %d", n, n_layers);
    double pair[2];
    for (size_t i = 0; i < n; i++) {
        if (!json_to_double(json_object_array_get_idx(v, i), &d))
            return bad(c, key, "entry %zu is not a number", i);
        if (n == (size_t)n_layers)
            out[i] = d;
        else
            pair[i] = d;
    }
    if (n != (size_t)n_layers)
        for (int i = 0; i < n_layers; i++)
            out[i] = round2(linspace_at(pair[0], pair[1], n_layers, i));
    return ELM_OK;
}

static elm_status get_layer_ints(struct cfg *c, const char *key, int n_layers, long min, long max,
                                 int *out, bool *present)
{
    json_object *v;
    *present = false;
    if (!json_object_object_get_ex(c->root, key, &v) || json_object_is_type(v, json_type_null))
        return ELM_OK;
    *present = true;
    if (!json_object_is_type(v, json_type_array))
        return bad(c, key, "expected a list of integers");
    size_t n = json_object_array_length(v);
    if (n != (size_t)n_layers)
        return bad(c, key, "has %zu entries, num_transformer_layers is %d", n, n_layers);
    for (size_t i = 0; i < n; i++) {
        int64_t x;
        if (!json_to_int64(json_object_array_get_idx(v, i), &x))
            return bad(c, key, "entry %zu is not an integer", i);
        if (x < min || x > max)
            return bad(c, key, "entry %zu (%lld) is out of range [%ld, %ld]", i, (long long)x, min,
                       max);
        out[i] = (int)x;
    }
    return ELM_OK;
}

static elm_status parse(struct cfg *c, struct elm_model_info *info)
{
    static const char *const model_types[] = {"openelm", NULL};
    static const char *const acts[] = {"swish", "silu", NULL};
    static const char *const norms[] = {"rms_norm", NULL};
    elm_status st;
    int one = 1, two = 2, four = 4, d256 = 256, ctx2048 = 2048;

    if (!json_object_is_type(c->root, json_type_object))
        return elm_set_error(c->err, c->err_size, ELM_E_FORMAT, "%s: not a JSON object", c->file);
    if ((st = want_string(c, "model_type", model_types)) ||
        (st = want_string(c, "activation_fn_name", acts)) ||
        (st = want_string(c, "normalization_layer_name", norms)) ||
        (st = want_bool(c, "ffn_with_glu", true)) ||
        (st = want_bool(c, "normalize_qk_projections", true)) ||
        (st = want_bool(c, "share_input_output_layers", true)))
        return st;

    if ((st = get_int(c, "num_transformer_layers", NULL, 1, ELM_MAX_LAYERS, &info->n_layers)) ||
        (st = get_int(c, "model_dim", NULL, 1, MAX_MODEL_DIM, &info->model_dim)) ||
        (st = get_int(c, "head_dim", NULL, 2, MAX_HEAD_DIM, &info->head_dim)) ||
        (st = get_int(c, "vocab_size", NULL, 1, MAX_VOCAB, &info->n_vocab)) ||
        (st = get_int(c, "max_context_length", &ctx2048, 1, MAX_CTX, &info->n_ctx_train)) ||
        (st = get_int(c, "num_gqa_groups", &four, 1, MAX_HEADS, &info->num_gqa_groups)) ||
        (st = get_int(c, "ffn_dim_divisor", &d256, 1, 65536, &info->ffn_dim_divisor)) ||
        (st = get_int(c, "bos_token_id", &one, 0, info->n_vocab - 1, &info->bos_id)) ||
        (st = get_int(c, "eos_token_id", &two, 0, info->n_vocab - 1, &info->eos_id)))
        return st;
    if (info->head_dim % 2)
        return bad(c, "head_dim", "%d is odd (RoPE rotates half-head pairs)", info->head_dim);

    double theta, eps;
    if ((st = get_double(c, "rope_freq_constant", 10000.0, 1.0, 1e12, &theta)) ||
        (st = get_double(c, "rms_norm_eps", 1e-6, 0.0, 1.0, &eps)))
        return st;
    info->rope_theta = (float)theta;
    info->rms_eps = (float)eps;

    int L = info->n_layers, d = info->model_dim, hd = info->head_dim;
    bool have_q, have_kv, have_ffn;
    if ((st = get_layer_ints(c, "num_query_heads", L, 1, MAX_HEADS, info->n_query_heads, &have_q)) ||
        (st = get_layer_ints(c, "num_kv_heads", L, 1, MAX_HEADS, info->n_kv_heads, &have_kv)))
        return st;
    if (!have_q || !have_kv) {
        /* Older configs: derive the heads from qkv_multipliers (§1.1). */
        double qkv_m[ELM_MAX_LAYERS];
        bool have_m;
        if ((st = get_layer_doubles(c, "qkv_multipliers", L, true, qkv_m, &have_m)))
            return st;
        if (!have_m)
            return bad(c, have_q ? "num_kv_heads" : "num_query_heads",
                       "missing (and no qkv_multipliers to derive it from)");
        long div = (long)hd * info->num_gqa_groups;
        for (int i = 0; i < L; i++) {
            if (!(qkv_m[i] > 0 && qkv_m[i] <= 64))
                return bad(c, "qkv_multipliers", "entry %d (%g) is out of range", i, qkv_m[i]);
            long q_dim = make_divisible(d * qkv_m[i], div);
            long nq = q_dim / hd;
            if (nq > MAX_HEADS)
                return bad(c, "qkv_multipliers", "layer %d gives %ld query heads", i, nq);
            if (!have_q)
                info->n_query_heads[i] = (int)nq;
            if (!have_kv)
                info->n_kv_heads[i] = info->n_query_heads[i] / info->num_gqa_groups;
        }
    }
    for (int i = 0; i < L; i++) {
        int nq = info->n_query_heads[i], nkv = info->n_kv_heads[i];
        if (nkv < 1 || nkv > nq || nq % nkv)
            return bad(c, "num_kv_heads", "layer %d: %d kv heads do not divide %d query heads", i,
                       nkv, nq);
        if ((long)nq * hd > MAX_FFN)
            return bad(c, "num_query_heads", "layer %d: %d heads of %d is too wide", i, nq, hd);
    }

    double ffn_m[ELM_MAX_LAYERS];
    if ((st = get_layer_doubles(c, "ffn_multipliers", L, true, ffn_m, &have_ffn)))
        return st;
    if (!have_ffn)
        return bad(c, "ffn_multipliers", "missing");
    for (int i = 0; i < L; i++) {
        if (!(ffn_m[i] > 0 && ffn_m[i] <= 256))
            return bad(c, "ffn_multipliers", "entry %d (%g) is out of range (0, 256]", i,
                       ffn_m[i]);
        long ff = make_divisible(ffn_m[i] * d, info->ffn_dim_divisor);
        if (ff < 1 || ff > MAX_FFN)
            return bad(c, "ffn_multipliers", "layer %d gives an FFN width of %ld", i, ff);
        info->ffn_multipliers[i] = (float)ffn_m[i];
        info->ffn_dim[i] = (int)ff;
    }
    return ELM_OK;
}

elm_status elm_config_load(const char *path, struct elm_model_info *info, char *err,
                           size_t err_size)
{
    json_object *root;
    elm_status st = elm_json_load(path, 1 << 24, &root, err, err_size);
    if (st)
        return st;
    struct cfg c = {.file = path, .root = root, .err = err, .err_size = err_size};
    st = parse(&c, info);
    json_object_put(root);
    return st;
}
