/* load.h: the tokenizer of a model, for the model loaders (load.c).
 * Engine-internal; elm_tokenizer.h has the public entry points. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_LOAD_H
#define ELMCHAT_ENGINE_TOKENIZER_LOAD_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_gguf;

/* tokenizer.model, else tokenizer.json, in the folder MODEL names (MODEL
 * itself when it is a folder, else the folder holding it).  ELM_OK with
 * *out NULL when neither file exists. */
elm_status tokenizer_load_beside(const char *model, elm_tokenizer **out, char *err,
                                 size_t err_size);
/* The vocabulary of an open GGUF (path names it): its tokenizer.ggml.* keys,
 * else the files beside it.  ELM_OK with *out NULL when there is none. */
elm_status tokenizer_gguf_vocab_or_beside(const struct elm_gguf *g, const char *path,
                                          elm_tokenizer **out, char *err, size_t err_size);

#endif
