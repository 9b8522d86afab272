/* hf_json.h: the tokenizer.json reader (hf_json.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_HF_JSON_H
#define ELMCHAT_ENGINE_TOKENIZER_HF_JSON_H

#include <stddef.h>

#include "engine/elm.h"

/* buf/size is the whole file (from its '{'); path is used in messages only. */
elm_status tokenizer_json_parse(const char *buf, size_t size, const char *path,
                                elm_tokenizer **out, char *err, size_t err_size);

#endif
