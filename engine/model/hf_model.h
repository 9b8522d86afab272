/* hf_model.h: the Hugging Face loader (hf_model.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_MODEL_HF_MODEL_H
#define ELMCHAT_ENGINE_MODEL_HF_MODEL_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_model;

/* Bind path into m: a model folder (config.json and model.safetensors or
 * model.safetensors.index.json with its shards), or one of those weight
 * files itself (config.json beside it).  Sets info, weights (pointing into
 * the mappings m then owns), norms and the tokenizer beside the weights.
 * On failure m holds whatever was bound so far: the caller frees it. */
elm_status elm_hf_model_load(struct elm_model *m, const char *path, char *err, size_t err_size);

#endif
