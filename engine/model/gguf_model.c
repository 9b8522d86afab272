/* gguf_model.c: an OpenELM GGUF file (llama.cpp's layout, docs/OPENELM.md §7)
 * bound into a struct elm_model: hyperparameters from the openelm.* keys,
 * weights pointing into the mapping, the tokenizer as tokenizer/load.c
 * finds it for this file (its tokenizer.ggml.* vocabulary, else beside). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/gguf.h"
#include "engine/kernels/blocks.h"
#include "engine/model/gguf_model.h"
#include "engine/model/load_steps.h"
#include "engine/model/model.h"
#include "engine/model/sampling_defaults.h"
#include "engine/tokenizer/load.h"

struct gld {
    struct elm_model *m;
    struct elm_gguf *g;
    char *err;
    size_t err_size;
    uint64_t hash;
    size_t norm_used;
    uint64_t bytes_by_dtype[8];
};

static elm_status nomem(struct gld *ld)
{
    return elm_set_error(ld->err, ld->err_size, ELM_E_NOMEM, "%s: out of memory", ld->g->path);
}

/* The tensor name, checked to exist with shape ne[0..n_dims) (ggml order). */
static elm_status get_tensor(struct gld *ld, const char *name, int n_dims, int64_t ne0,
                             int64_t ne1, const struct elm_gguf_tensor **out)
{
    const char *path = ld->g->path;
    /* Each tensor may fault pages in from a slow disk: a cancel point. */
    elm_status cst = elm_load_check(ld->m, path, ld->err, ld->err_size);
    if (cst)
        return cst;
    const struct elm_gguf_tensor *t = elm_gguf_find_tensor(ld->g, name);
    if (!t)
        return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT, "%s: %s: missing tensor", path,
                             name);
    if (!t->supported) {
        const char *tn = elm_ggml_type_name(t->ggml_type);
        return elm_set_error(ld->err, ld->err_size, ELM_E_UNSUPPORTED,
                             "%s: %s: tensor type %s is not supported (f32, f16, bf16, q8_0, "
                             "q4_0, q4_k, q5_k, q6_k are)",
                             path, name, tn ? tn : "?");
    }
    int64_t want[ELM_GGUF_MAX_DIMS] = {ne0, n_dims > 1 ? ne1 : 1, 1, 1};
    bool same = true;
    for (int d = 0; d < ELM_GGUF_MAX_DIMS; d++)
        same = same && t->ne[d] == want[d];
    /* A trailing dimension of 1 is the same shape (writers differ). */
    if (!same || t->n_dims < n_dims) {
        char got[128];
        size_t len = (size_t)snprintf(got, sizeof got, "[");
        for (int d = 0; d < t->n_dims; d++)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%lld", d ? ", " : "",
                                    (long long)t->ne[d]);
        snprintf(got + len, sizeof got - len, "]");
        if (n_dims == 1)
            return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                                 "%s: %s: shape %s, but the metadata implies [%lld]", path, name,
                                 got, (long long)ne0);
        return elm_set_error(ld->err, ld->err_size, ELM_E_FORMAT,
                             "%s: %s: shape %s, but the metadata implies [%lld, %lld]", path,
                             name, got, (long long)ne0, (long long)ne1);
    }
    elm_hash_tensor(&ld->hash, name, t->ggml_type, ne0, ne1, t->data, t->size);
    ld->bytes_by_dtype[t->dtype] += t->size;
    ld->m->info.n_params += (uint64_t)ne0 * (uint64_t)(n_dims > 1 ? ne1 : 1);
    ld->m->info.weight_bytes += t->size;
    *out = t;
    return ELM_OK;
}

/* Dense data must sit at a multiple of its element size for the kernels. */
static elm_status usable(struct gld *ld, const struct elm_gguf_tensor *t, const void **out)
{
    size_t es = elm_dtype_is_quant(t->dtype) ? 1 : elm_quant_block_bytes(t->dtype);
    *out = t->data;
    if ((uintptr_t)t->data % es == 0)
        return ELM_OK;
    void *p = elm_model_own_copy(ld->m, (size_t)t->size);
    if (!p)
        return nomem(ld);
    *out = p;
    return elm_load_copy(ld->m, p, t->data, (size_t)t->size, ld->g->path, ld->err, ld->err_size);
}

/* PyTorch [rows, cols] = ggml ne {cols, rows}. */
static elm_status bind_matrix(void *user, const char *name, int64_t rows, int64_t cols,
                              struct elm_matrix *out)
{
    struct gld *ld = user;
    const struct elm_gguf_tensor *t;
    const void *data;
    elm_status st = get_tensor(ld, name, 2, cols, rows, &t);
    if (st || (st = usable(ld, t, &data)))
        return st;
    *out = (struct elm_matrix){.data = data, .dtype = t->dtype, .rows = rows, .cols = cols};
    return ELM_OK;
}

static elm_status bind_vector(void *user, const char *name, int64_t n, const float **out)
{
    struct gld *ld = user;
    const struct elm_gguf_tensor *t;
    elm_status st = get_tensor(ld, name, 1, n, 1, &t);
    if (st)
        return st;
    float *dst = ld->m->norm_store + ld->norm_used;
    ld->norm_used += (size_t)n;
    elm_dequantize(t->data, t->dtype, dst, n);
    *out = dst;
    return ELM_OK;
}

/* The engine wants gate and up as one [2 ff, d] matrix (HF's proj_1).  The
 * converter writes them back to back, so usually they already are; else
 * the two are copied together once. */
static elm_status bind_gate_up(void *user, int li, int64_t ff, int64_t d,
                               struct elm_matrix *out)
{
    struct gld *ld = user;
    char gname[64], uname[64];
    const struct elm_gguf_tensor *gt, *ut;
    snprintf(gname, sizeof gname, "blk.%d.ffn_gate.weight", li);
    snprintf(uname, sizeof uname, "blk.%d.ffn_up.weight", li);
    elm_status st;
    if ((st = get_tensor(ld, gname, 2, d, ff, &gt)) || (st = get_tensor(ld, uname, 2, d, ff, &ut)))
        return st;
    const void *data;
    size_t es = elm_dtype_is_quant(gt->dtype) ? 1 : elm_quant_block_bytes(gt->dtype);
    if (gt->dtype == ut->dtype && (const char *)gt->data + gt->size == (const char *)ut->data &&
        (uintptr_t)gt->data % es == 0) {
        data = gt->data;
    } else if (gt->dtype == ut->dtype) {
        char *p = elm_model_own_copy(ld->m, (size_t)(gt->size + ut->size));
        if (!p)
            return nomem(ld);
        const char *path = ld->g->path;
        if ((st = elm_load_copy(ld->m, p, gt->data, (size_t)gt->size, path, ld->err,
                                ld->err_size)) ||
            (st = elm_load_copy(ld->m, p + gt->size, ut->data, (size_t)ut->size, path, ld->err,
                                ld->err_size)))
            return st;
        data = p;
    } else {
        /* Two types in one matrix: widen both, exactly, to f32 (rare: llama.cpp's
         * mixes give gate and up the same type). */
        float *p = elm_model_own_copy(ld->m, (size_t)(2 * ff * d) * sizeof(float));
        if (!p)
            return nomem(ld);
        elm_dequantize(gt->data, gt->dtype, p, ff * d);
        if ((st = elm_load_check(ld->m, ld->g->path, ld->err, ld->err_size)))
            return st;
        elm_dequantize(ut->data, ut->dtype, p + ff * d, ff * d);
        *out = (struct elm_matrix){.data = p, .dtype = ELM_DTYPE_F32, .rows = 2 * ff, .cols = d};
        return ELM_OK;
    }
    *out = (struct elm_matrix){.data = data, .dtype = gt->dtype, .rows = 2 * ff, .cols = d};
    return ELM_OK;
}

/* A layer's tensors: blk.N.attn_norm.weight and so on; ffn_gate and ffn_up
 * are proj1. */
static const struct elm_layer_binding layer_binding = {
    .prefix = "blk.", .attn_norm = "attn_norm", .qkv = "attn_qkv", .q_norm = "attn_q_norm",
    .k_norm = "attn_k_norm", .out = "attn_output", .ffn_norm = "ffn_norm", .proj2 = "ffn_down",
    .vector = bind_vector, .matrix = bind_matrix, .gate_up = bind_gate_up};

static elm_status bind_all(struct gld *ld)
{
    struct elm_model *m = ld->m;
    elm_status st;
    if (elm_gguf_find_tensor(ld->g, "output.weight"))
        return elm_set_error(ld->err, ld->err_size, ELM_E_UNSUPPORTED,
                             "%s: output.weight: a separate output matrix is not supported "
                             "(OpenELM ties it to token_embd)",
                             ld->g->path);
    if ((st = bind_matrix(ld, "token_embd.weight", m->info.n_vocab, m->info.model_dim,
                          &m->embed)) ||
        (st = elm_model_bind_layers(m, &layer_binding, ld)))
        return st;
    return bind_vector(ld, "output_norm.weight", m->info.model_dim, &m->final_norm);
}

static elm_status read_hparams(struct gld *ld)
{
    struct elm_gguf *g = ld->g;
    struct elm_model_info *in = &ld->m->info;
    char *err = ld->err;
    size_t es = ld->err_size;
    const char *arch;
    size_t arch_len;
    elm_status st = elm_gguf_get_string(g, "general.architecture", true, &arch, &arch_len, err, es);
    if (st)
        return st;
    if (arch_len != 7 || memcmp(arch, "openelm", 7) != 0)
        return elm_set_error(err, es, ELM_E_UNSUPPORTED,
                             "%s: general.architecture: \"%.*s\" is not supported (openelm is)",
                             g->path, (int)(arch_len > 64 ? 64 : arch_len), arch);
    int64_t L, d, ctx, hd = -1, vl = -1, rot = -1;
    if ((st = elm_gguf_get_int(g, "openelm.block_count", true, 1, ELM_MAX_LAYERS, &L, err, es)) ||
        (st = elm_gguf_get_int(g, "openelm.embedding_length", true, 1, MAX_MODEL_DIM, &d, err,
                               es)) ||
        (st = elm_gguf_get_int(g, "openelm.context_length", true, 1, MAX_CTX, &ctx, err, es)) ||
        (st = elm_gguf_get_int(g, "openelm.attention.key_length", false, 2, MAX_HEAD_DIM, &hd,
                               err, es)) ||
        (st = elm_gguf_get_int(g, "openelm.attention.value_length", false, 2, MAX_HEAD_DIM, &vl,
                               err, es)) ||
        (st = elm_gguf_get_int(g, "openelm.rope.dimension_count", false, 2, MAX_HEAD_DIM, &rot,
                               err, es)))
        return st;
    if (hd < 0)
        hd = rot;
    if (hd < 0)
        return elm_set_error(err, es, ELM_E_FORMAT,
                             "%s: openelm.attention.key_length: missing metadata key", g->path);
    if (hd % 2)
        return elm_set_error(err, es, ELM_E_FORMAT,
                             "%s: openelm.attention.key_length: %lld is odd", g->path,
                             (long long)hd);
    if (vl >= 0 && vl != hd)
        return elm_set_error(err, es, ELM_E_UNSUPPORTED,
                             "%s: openelm.attention.value_length: %lld differs from key_length "
                             "%lld",
                             g->path, (long long)vl, (long long)hd);
    if (rot >= 0 && rot != hd)
        return elm_set_error(err, es, ELM_E_UNSUPPORTED,
                             "%s: openelm.rope.dimension_count: %lld, only full rotation (%lld) "
                             "is supported",
                             g->path, (long long)rot, (long long)hd);
    in->n_layers = (int)L;
    in->model_dim = (int)d;
    in->head_dim = (int)hd;
    in->n_ctx_train = (int)ctx;
    int n = in->n_layers;
    if ((st = elm_gguf_get_ints(g, "openelm.attention.head_count", n, 1, MAX_HEADS,
                                in->n_query_heads, err, es)) ||
        (st = elm_gguf_get_ints(g, "openelm.attention.head_count_kv", n, 1, MAX_HEADS,
                                in->n_kv_heads, err, es)) ||
        (st = elm_gguf_get_ints(g, "openelm.feed_forward_length", n, 1, MAX_FFN, in->ffn_dim, err,
                                es)))
        return st;
    for (int i = 0; i < n; i++) {
        int nq = in->n_query_heads[i], nkv = in->n_kv_heads[i];
        if (nkv > nq || nq % nkv)
            return elm_set_error(err, es, ELM_E_FORMAT,
                                 "%s: openelm.attention.head_count_kv: layer %d: %d kv heads do "
                                 "not divide %d query heads",
                                 g->path, i, nkv, nq);
        if ((int64_t)nq * hd > MAX_FFN)
            return elm_set_error(err, es, ELM_E_FORMAT,
                                 "%s: openelm.attention.head_count: layer %d: too wide", g->path,
                                 i);
        in->ffn_multipliers[i] = (float)in->ffn_dim[i] / (float)d; /* not stored in GGUF */
    }
    in->num_gqa_groups = in->n_query_heads[0] / in->n_kv_heads[0];
    in->ffn_dim_divisor = 256; /* not stored in GGUF */
    double theta = 10000.0, eps = 1e-6;
    if ((st = elm_gguf_get_float(g, "openelm.rope.freq_base", false, &theta, err, es)) ||
        (st = elm_gguf_get_float(g, "openelm.attention.layer_norm_rms_epsilon", false, &eps, err,
                                 es)))
        return st;
    if (!(theta >= 1.0 && theta <= 1e12))
        return elm_set_error(err, es, ELM_E_FORMAT, "%s: openelm.rope.freq_base: %g is out of range",
                             g->path, theta);
    if (!(eps > 0.0 && eps <= 1.0))
        return elm_set_error(err, es, ELM_E_FORMAT,
                             "%s: openelm.attention.layer_norm_rms_epsilon: %g is out of range",
                             g->path, eps);
    in->rope_theta = (float)theta;
    in->rms_eps = (float)eps;

    /* The vocabulary size is the embedding's row count. */
    const struct elm_gguf_tensor *e = elm_gguf_find_tensor(g, "token_embd.weight");
    if (!e)
        return elm_set_error(err, es, ELM_E_FORMAT, "%s: token_embd.weight: missing tensor",
                             g->path);
    if (e->n_dims != 2 || e->ne[1] < 1 || e->ne[1] > MAX_VOCAB)
        return elm_set_error(err, es, ELM_E_FORMAT,
                             "%s: token_embd.weight: not a [%d, n_vocab] matrix", g->path,
                             in->model_dim);
    in->n_vocab = (int)e->ne[1];
    int64_t bos = 1, eos = 2;
    if ((st = elm_gguf_get_int(g, "tokenizer.ggml.bos_token_id", false, 0, in->n_vocab - 1, &bos,
                               err, es)) ||
        (st = elm_gguf_get_int(g, "tokenizer.ggml.eos_token_id", false, 0, in->n_vocab - 1, &eos,
                               err, es)))
        return st;
    in->bos_id = (int)bos;
    in->eos_id = (int)eos;
    if ((st = elm_sampling_from_gguf(g, &in->sampling, err, es)))
        return st;

    elm_hash_config(&ld->hash, in);
    return ELM_OK;
}

static void name_model(struct elm_model_info *in, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".gguf") == 0)
        n -= 5;
    snprintf(in->name, sizeof in->name, "%.*s", (int)(n > 127 ? 127 : n), base);
}

elm_status elm_gguf_model_load(struct elm_model *m, const char *path, char *err, size_t err_size)
{
    struct gld ld = {.m = m, .err = err, .err_size = err_size, .hash = 0xcbf29ce484222325ull};
    elm_status st = elm_gguf_open(path, &ld.g, err, err_size);
    if (st)
        return st;
    m->gguf = ld.g; /* owned by the model from here, whatever happens */
    if ((st = elm_load_check(m, path, err, err_size)) || (st = read_hparams(&ld)))
        return st;
    elm_load_progress(m, 0.05f);
    if (!elm_model_alloc_layers(m))
        return nomem(&ld);
    if ((st = bind_all(&ld)) || (st = elm_load_check(m, path, err, err_size)))
        return st;
    elm_load_progress(m, 0.9f);
    /* The GGUF's own vocabulary, else tokenizer.model or tokenizer.json beside it. */
    if (m->loading->tokenizer)
        m->tokenizer = elm_tokenizer_share(m->loading->tokenizer);
    else if ((st = tokenizer_gguf_vocab_or_beside(ld.g, path, &m->tokenizer, err, err_size)))
        return st;
    if ((st = elm_load_check(m, path, err, err_size)))
        return st;
    if (m->tokenizer && elm_tokenizer_n_vocab(m->tokenizer) != m->info.n_vocab)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: tokenizer.ggml.tokens: %d tokens, but token_embd.weight has "
                             "%d rows",
                             path, elm_tokenizer_n_vocab(m->tokenizer), m->info.n_vocab);
    struct elm_model_info *in = &m->info;
    in->fingerprint = ld.hash;
    in->dtype = elm_dominant_dtype(ld.bytes_by_dtype, 8);
    name_model(in, path);
    return ELM_OK;
}
