/* sp_model.h: the tokenizer.model reader (sp_model.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_SP_MODEL_H
#define ELMCHAT_ENGINE_TOKENIZER_SP_MODEL_H

#include <stddef.h>

#include "engine/elm.h"

/* buf/size is the whole file; path is used in messages only. */
elm_status sp_model_parse(const unsigned char *buf, size_t size, const char *path,
                          elm_tokenizer **out, char *err, size_t err_size);

#endif
