/* gguf_model.h: the GGUF loader (gguf_model.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_MODEL_GGUF_MODEL_H
#define ELMCHAT_ENGINE_MODEL_GGUF_MODEL_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_model;

/* Open path and bind it into m: info, weights (pointing into the mapping,
 * which m->gguf then owns), norms, tokenizer.  On failure m holds whatever
 * was bound so far: the caller frees it. */
elm_status elm_gguf_model_load(struct elm_model *m, const char *path, char *err,
                               size_t err_size);

#endif
