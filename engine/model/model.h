/* model.h: the loaded model as the forward pass sees it (engine-internal).
 *
 * Matrices point into the memory-mapped safetensors files (weights are never
 * copied unless a file stores a tensor at a misaligned offset); the small 1-D
 * norm weights are widened to f32 copies owned by the model.
 */
#ifndef ELMCHAT_ENGINE_MODEL_H
#define ELMCHAT_ENGINE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"
#include "engine/base/error.h" /* elm_set_error, for every loader */
#include "engine/kernels/matrix.h"  /* struct elm_matrix */

/* Bounds on hyperparameters, one set for both loaders (config.json, GGUF):
 * far above any OpenELM, far below anything that could overflow the size
 * arithmetic of the loader. */
#define MAX_MODEL_DIM 65536
#define MAX_HEAD_DIM 1024
#define MAX_HEADS 4096
#define MAX_VOCAB (1 << 22)
#define MAX_CTX (1 << 20)
#define MAX_FFN (1 << 20)

struct elm_layer {
    int nq, nkv, ff;          /* query heads, kv heads, FFN width */
    struct elm_matrix qkv;    /* [(nq + 2 nkv) hd, d]: all Q heads, all K, all V */
    struct elm_matrix out;    /* [d, nq hd] */
    struct elm_matrix proj1;  /* [2 ff, d]: rows [0, ff) gate, [ff, 2 ff) up */
    struct elm_matrix proj2;  /* [d, ff] */
    const float *attn_norm;   /* [d] */
    const float *ffn_norm;    /* [d] */
    const float *q_norm;      /* [hd] */
    const float *k_norm;      /* [hd] */
};

struct elm_mapping; /* one mmap'd file (formats/safetensors.h) */
struct elm_gguf;    /* one mmap'd GGUF file (formats/gguf.h) */

struct elm_model {
    struct elm_model_info info;
    int n_threads;
    struct elm_matrix embed; /* [V, d], also the tied LM head */
    const float *final_norm; /* [d] */
    struct elm_layer *layers; /* [n_layers], owned */
    float *norm_store;        /* owned storage of every f32 norm weight */
    void **aligned_copies;    /* owned copies of misaligned tensors */
    int n_aligned_copies;
    struct elm_mapping **maps; /* owned, [n_maps] */
    int n_maps;
    elm_tokenizer *tokenizer; /* owned, may be NULL */
    char *path;               /* owned: as given to elm_model_load */
    struct elm_gguf *gguf;    /* owned, GGUF models only (gguf_model.c) */
    /* elm_model_load's params while it runs (NULL afterwards): both loaders
     * poll its abort callback and report progress through it (load_steps.h) */
    const struct elm_model_params *loading;
};

/* Parse and validate config.json into the config part of info (config.c). */
elm_status elm_config_load(const char *path, struct elm_model_info *info, char *err,
                           size_t err_size);

/* Shared by the two loaders (setup.c).  The fingerprint is FNV-1a over
 * the hyperparameters and every bound tensor (name, type, shape, samples). */
void elm_hash_config(uint64_t *h, const struct elm_model_info *in);
void elm_hash_tensor(uint64_t *h, const char *name, uint64_t type, int64_t dim0, int64_t dim1,
                     const void *data, uint64_t size);
/* An owned copy of size bytes (released with the model); NULL: out of memory. */
void *elm_model_own_copy(struct elm_model *m, size_t size);
/* m->layers and m->norm_store for m->info; returns the store's size in
 * floats, 0 when out of memory. */
size_t elm_model_alloc_layers(struct elm_model *m);
/* How a loader names and binds a layer's tensors.  Tensor k of layer i is
 * named prefix, i, '.', the name, ".weight" (blk.3.attn_qkv.weight). */
struct elm_layer_binding {
    const char *prefix;
    const char *attn_norm, *qkv, *q_norm, *k_norm, *out, *ffn_norm, *proj1, *proj2;
    /* A vector of n floats into the norm store, a matrix [rows, cols]. */
    elm_status (*vector)(void *user, const char *name, int64_t n, const float **out);
    elm_status (*matrix)(void *user, const char *name, int64_t rows, int64_t cols,
                         struct elm_matrix *out);
    /* proj1 [2 ff, d] from two tensors, gate and up (GGUF); NULL: the matrix
     * named proj1. */
    elm_status (*gate_up)(void *user, int layer, int64_t ff, int64_t d, struct elm_matrix *out);
};
/* The layer loop of both loaders (after elm_model_alloc_layers): each
 * layer's head counts and FFN width from m->info, its tensors bound as b
 * says (user is passed on), the load's progress reported after each layer
 * (0.05 to 0.85); stops at the first error and returns it. */
elm_status elm_model_bind_layers(struct elm_model *m, const struct elm_layer_binding *b,
                                 void *user);
/* The dtype (< n) holding the most weight bytes: the model's dtype. */
enum elm_dtype elm_dominant_dtype(const uint64_t *bytes_by_dtype, int n);

#endif
