/* setup.c: what both model loaders (hf_model.c: safetensors folders,
 * gguf_model.c: GGUF files) do alike, so that a model's fingerprint, its
 * owned copies and its layer storage mean the same whatever the file. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/load_steps.h"
#include "engine/model/model.h"

static void elm_hash_bytes(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        *h ^= p[i];
        *h *= 0x100000001b3ull;
    }
}

static void elm_hash_u64(uint64_t *h, uint64_t v)
{
    elm_hash_bytes(h, &v, sizeof v);
}

void elm_hash_config(uint64_t *h, const struct elm_model_info *in)
{
    elm_hash_u64(h, (uint64_t)in->n_layers);
    elm_hash_u64(h, (uint64_t)in->model_dim);
    elm_hash_u64(h, (uint64_t)in->head_dim);
    elm_hash_u64(h, (uint64_t)in->n_vocab);
    elm_hash_bytes(h, &in->rope_theta, sizeof in->rope_theta);
    elm_hash_bytes(h, &in->rms_eps, sizeof in->rms_eps);
    for (int i = 0; i < in->n_layers; i++) {
        elm_hash_u64(h, (uint64_t)in->n_query_heads[i]);
        elm_hash_u64(h, (uint64_t)in->n_kv_heads[i]);
        elm_hash_u64(h, (uint64_t)in->ffn_dim[i]);
    }
}

void elm_hash_tensor(uint64_t *h, const char *name, uint64_t type, int64_t dim0, int64_t dim1,
                     const void *data, uint64_t size)
{
    elm_hash_bytes(h, name, strlen(name));
    elm_hash_u64(h, type);
    elm_hash_u64(h, (uint64_t)dim0);
    elm_hash_u64(h, (uint64_t)dim1);
    /* A sample of the data, so that two random checkpoints of one shape differ. */
    size_t sample = size < 64 ? (size_t)size : 64;
    const char *d = data;
    elm_hash_bytes(h, d, sample);
    elm_hash_bytes(h, d + size / 2 - sample / 2, sample);
    elm_hash_bytes(h, d + size - sample, sample);
}

void *elm_model_own_copy(struct elm_model *m, size_t size)
{
    void **list = realloc(m->aligned_copies, (size_t)(m->n_aligned_copies + 1) * sizeof *list);
    if (!list)
        return NULL;
    m->aligned_copies = list;
    void *p = malloc(size ? size : 1);
    if (p)
        list[m->n_aligned_copies++] = p;
    return p;
}

size_t elm_model_alloc_layers(struct elm_model *m)
{
    const struct elm_model_info *in = &m->info;
    /* attn, ffn norms [d] and q, k norms [hd] per layer, the final norm [d]. */
    size_t n = (size_t)in->model_dim;
    for (int i = 0; i < in->n_layers; i++)
        n += 2 * (size_t)in->model_dim + 2 * (size_t)in->head_dim;
    m->norm_store = malloc(n * sizeof(float));
    m->layers = calloc((size_t)in->n_layers, sizeof *m->layers);
    return m->norm_store && m->layers ? n : 0;
}

elm_status elm_model_bind_layers(struct elm_model *m, const struct elm_layer_binding *b,
                                 void *user)
{
    const struct elm_model_info *in = &m->info;
    int64_t d = in->model_dim, hd = in->head_dim;
    char name[128];
    for (int i = 0; i < in->n_layers; i++) {
        struct elm_layer *l = &m->layers[i];
        l->nq = in->n_query_heads[i];
        l->nkv = in->n_kv_heads[i];
        l->ff = in->ffn_dim[i];
        elm_status st;
#define NAME(what) (snprintf(name, sizeof name, "%s%d.%s.weight", b->prefix, i, b->what), name)
        if ((st = b->vector(user, NAME(attn_norm), d, &l->attn_norm)) ||
            (st = b->matrix(user, NAME(qkv), (int64_t)(l->nq + 2 * l->nkv) * hd, d, &l->qkv)) ||
            (st = b->vector(user, NAME(q_norm), hd, &l->q_norm)) ||
            (st = b->vector(user, NAME(k_norm), hd, &l->k_norm)) ||
            (st = b->matrix(user, NAME(out), d, (int64_t)l->nq * hd, &l->out)) ||
            (st = b->vector(user, NAME(ffn_norm), d, &l->ffn_norm)) ||
            (st = b->gate_up ? b->gate_up(user, i, l->ff, d, &l->proj1)
                             : b->matrix(user, NAME(proj1), 2 * (int64_t)l->ff, d, &l->proj1)) ||
            (st = b->matrix(user, NAME(proj2), d, l->ff, &l->proj2)))
            return st;
#undef NAME
        elm_load_progress(m, 0.05f + 0.8f * (float)(i + 1) / (float)in->n_layers);
    }
    return ELM_OK;
}

enum elm_dtype elm_dominant_dtype(const uint64_t *bytes_by_dtype, int n)
{
    enum elm_dtype best = ELM_DTYPE_F32;
    for (int t = 1; t < n; t++)
        if (bytes_by_dtype[t] > bytes_by_dtype[best])
            best = (enum elm_dtype)t;
    return best;
}
