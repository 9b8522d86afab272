/* model_convert.c: a model to a GGUF with its vocabulary (model_convert.h). */
#include "config.h"

#include "src/models/model_convert.h"

#include <stdlib.h>

#include "src/models/model_find.h"

elm_status model_convert(const char *path, const char *out, struct elm_quantize_params *qp,
                         char **vocab_from, char *err, size_t err_size)
{
    /* a folder without a tokenizer: the one elmchat ships */
    char why[ELM_ERR_MAX];
    elm_tokenizer *fallback = model_tokenizer(path, NULL, vocab_from, why, sizeof why);
    qp->tokenizer = fallback;
    elm_status st = elm_quantize(path, out, qp, err, err_size);
    qp->tokenizer = NULL;
    elm_tokenizer_free(fallback);
    return st;
}
