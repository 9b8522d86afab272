/* model_convert.h: a model to a GGUF of another weight type (elm_quantize)
 * with the vocabulary it needs: its own, else (a Hub folder of Apple's)
 * elmchat's LLaMA-2 tokenizer, so that llama.cpp runs the file too.  Used by
 * `elmchat quantize` and `pull --quantize`.  Main thread only. */
#ifndef ELMCHAT_SRC_MODEL_CONVERT_H
#define ELMCHAT_SRC_MODEL_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/elm.h"

/* qp->tokenizer is filled here.  *vocab_from (owned, may be NULL): the
 * tokenizer file used when the model had none. */
elm_status model_convert(const char *path, const char *out, struct elm_quantize_params *qp,
                         char **vocab_from, char *err, size_t err_size);

#endif
