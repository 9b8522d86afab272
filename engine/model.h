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

/* A row-major [rows, cols] weight matrix, PyTorch [out, in] layout. */
struct elm_matrix {
    const void *data; /* rows * cols elements of dtype, borrowed from a mapping */
    enum elm_dtype dtype;
    int64_t rows, cols;
};

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

struct elm_mapping; /* one mmap'd file (safetensors.h) */
struct elm_gguf;    /* one mmap'd GGUF file (gguf.h) */

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
    struct elm_gguf *gguf;    /* owned, GGUF models only (gguf_model.c) */
};

/* Parse and validate config.json into the config part of info (config.c). */
elm_status elm_config_load(const char *path, struct elm_model_info *info, char *err,
                           size_t err_size);

/* Size in bytes of one element of a dense dtype (0 for block types). */
size_t elm_dtype_size(enum elm_dtype dtype);

/* Fill err with printf-style text; returns status (helper for every loader). */
elm_status elm_set_error(char *err, size_t err_size, elm_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
