/* model_convert.c: a model to a GGUF with its vocabulary (model_convert.h). */
#include "config.h"

#include "src/models/model_convert.h"

#include <stdlib.h>

#include "src/models/model_find.h"

elm_status model_convert(const char *path, const char *out, struct elm_quantize_params *qp,
                         char **vocab_from, char *err, size_t err_size)
{
    elm_tokenizer *fallback = model_fallback_tokenizer(path, vocab_from);
    qp->tokenizer = fallback;
    elm_status st = elm_quantize(path, out, qp, err, err_size);
    qp->tokenizer = NULL;
    elm_tokenizer_free(fallback);
    return st;
}
