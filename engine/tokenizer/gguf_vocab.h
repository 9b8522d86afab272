/* gguf_vocab.h: the tokenizer.ggml.* vocabulary of a GGUF file
 * (gguf_vocab.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_GGUF_VOCAB_H
#define ELMCHAT_ENGINE_TOKENIZER_GGUF_VOCAB_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_gguf;

/* The tokenizer of tokenizer.ggml.* ("llama"); *out NULL when the file has
 * no vocabulary (no tokenizer.ggml.model, or "no_vocab"). */
elm_status elm_gguf_vocab_tokenizer(const struct elm_gguf *g, elm_tokenizer **out, char *err,
                                    size_t err_size);

#endif
