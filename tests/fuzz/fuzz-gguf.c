/* fuzz-gguf.c: engine/formats/gguf_read.c (header, metadata of every type, tensor table,
 * alignment, offsets), its typed getters, the tokenizer.ggml.* vocabulary
 * (engine/tokenizer/gguf_vocab.c) and the model binder (engine/model/gguf_model.c). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/gguf.h"
#include "engine/model/gguf_model.h"
#include "engine/model/model.h"
#include "engine/tokenizer/gguf_vocab.h"

static void walk(const struct elm_gguf *g)
{
    volatile double sink = 0;
    for (size_t i = 0; i < g->n_kv; i++) {
        const struct elm_gguf_kv *kv = &g->kv[i];
        if (elm_gguf_find(g, kv->key) == NULL)
            abort();
        (void)elm_gguf_vtype_name(kv->type);
        if (kv->type != ELM_GGUF_ARRAY)
            continue;
        uint64_t n = kv->n < 4096 ? kv->n : 4096;
        for (uint64_t j = 0; j < n; j++) {
            if (kv->elem_type == ELM_GGUF_STRING) {
                const char *s;
                size_t len;
                elm_gguf_array_string(kv, j, &s, &len);
                if (len)
                    sink += (unsigned char)s[0] + (unsigned char)s[len - 1];
            } else if (kv->elem_type != ELM_GGUF_ARRAY) {
                sink += elm_gguf_array_number(kv, j);
            }
        }
    }
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct elm_gguf_tensor *t = &g->tensors[i];
        if (elm_gguf_find_tensor(g, t->name) == NULL)
            abort();
        (void)elm_ggml_type_name(t->ggml_type);
        if (t->size) {
            const unsigned char *p = t->data;
            if (p < (const unsigned char *)g->addr ||
                p + t->size > (const unsigned char *)g->addr + g->size) {
                fprintf(stderr, "fuzz: tensor %s outside the file\n", t->name);
                abort();
            }
            sink += p[0] + p[t->size - 1];
        }
    }
    (void)sink;

    char err[ELM_ERR_MAX];
    int64_t iv;
    double dv;
    bool bv;
    const char *s;
    size_t len;
    int ints[8];
    static const char *const keys[] = {"general.architecture", "general.alignment",
                                       "openelm.block_count", "openelm.embedding_length",
                                       "openelm.attention.head_count", "tokenizer.ggml.model",
                                       "tokenizer.ggml.tokens", "general.name"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        (void)elm_gguf_get_int(g, keys[i], i & 1, -5, 1 << 20, &iv, err, sizeof err);
        (void)elm_gguf_get_float(g, keys[i], i & 1, &dv, err, sizeof err);
        (void)elm_gguf_get_bool(g, keys[i], &bv, err, sizeof err);
        (void)elm_gguf_get_string(g, keys[i], i & 1, &s, &len, err, sizeof err);
        (void)elm_gguf_get_ints(g, keys[i], 8, 0, 1 << 20, ints, err, sizeof err);
    }
    for (size_t i = 0; i < g->n_kv; i++) {
        (void)elm_gguf_get_int(g, g->kv[i].key, true, INT64_MIN, INT64_MAX, &iv, err, sizeof err);
        (void)elm_gguf_get_float(g, g->kv[i].key, true, &dv, err, sizeof err);
        (void)elm_gguf_get_string(g, g->kv[i].key, true, &s, &len, err, sizeof err);
        (void)elm_gguf_get_ints(g, g->kv[i].key, 3, -100, 100, ints, err, sizeof err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("model.gguf", data, size);
    struct elm_gguf *g = NULL;
    char err[ELM_ERR_MAX];
    if (elm_gguf_open(path, &g, err, sizeof err) != ELM_OK)
        return 0;
    walk(g);
    elm_tokenizer *tok = NULL;
    if (elm_gguf_vocab_tokenizer(g, &tok, err, sizeof err) == ELM_OK && tok) {
        fuzz_exercise_tokenizer(tok, data, size);
        elm_tokenizer_free(tok);
    }
    elm_gguf_close(g);

    /* the binder reads the file again and checks names, shapes and types */
    struct elm_model *m = calloc(1, sizeof *m);
    if (m) {
        (void)elm_gguf_model_load(m, path, err, sizeof err);
        elm_model_free(m);
    }
    return 0;
}
