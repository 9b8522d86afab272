/* tokenizer_impl.h: private glue between the tokenizer core (tokenizer.c)
 * and its file loaders (sp_model.c, tokenizer_json.c).  Not installed, not
 * included outside engine/tokenizer*.c and engine/sp_*.c. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_IMPL_H
#define ELMCHAT_ENGINE_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_tokenizer.h"

/* A vocabulary as a loader found it; tok_build copies what it needs. */
struct tok_spec {
    int n;                    /* pieces */
    const char *const *piece; /* [n] piece bytes (borrowed) */
    const size_t *piece_len;  /* [n] */
    const float *score;       /* [n] */
    const uint8_t *type;      /* [n] enum elm_piece_type */
    int32_t unk_id, bos_id, eos_id; /* -1: none */
    bool byte_fallback;
    bool add_dummy_prefix;
    bool remove_extra_whitespaces;
};

/* Build a tokenizer from spec; name (the file) prefixes error messages. */
int tok_build(const struct tok_spec *spec, const char *name, elm_tokenizer **out, char *err,
              size_t err_size);

/* Loaders: buf/size is the whole file, path is used in messages only. */
int sp_model_parse(const unsigned char *buf, size_t size, const char *path, elm_tokenizer **out,
                   char *err, size_t err_size);
int tokenizer_json_parse(const char *buf, size_t size, const char *path, elm_tokenizer **out,
                         char *err, size_t err_size);
/* GGUF model files (tokenizer_gguf.c): the magic, and the vocabulary the
 * model uses (its tokenizer.ggml.* keys, else the files beside it). */
bool tokenizer_file_is_gguf(const char *path);
int tokenizer_gguf_load(const char *path, elm_tokenizer **out, char *err, size_t err_size);
struct elm_gguf;
/* The vocabulary of an open GGUF (path names it): its tokenizer.ggml.* keys,
 * else the files beside it.  *out stays NULL when there is none. */
int tokenizer_gguf_vocab_or_beside(struct elm_gguf *g, const char *path, elm_tokenizer **out,
                                   char *err, size_t err_size);
/* tokenizer.model, else tokenizer.json, in the folder MODEL names (MODEL
 * itself when it is a folder, else the folder holding it).  Returns 0 with
 * *out NULL when neither file exists. */
int tokenizer_load_beside(const char *model, elm_tokenizer **out, char *err, size_t err_size);

#endif
