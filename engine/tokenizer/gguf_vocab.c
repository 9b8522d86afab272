/* tokenizer_gguf.c: elm_tokenizer_load on a GGUF model file.  The tokenizer
 * is the one the model itself would use (gguf_model.c): the file's own
 * tokenizer.ggml.* vocabulary, else tokenizer.model or tokenizer.json
 * beside it.  Only the header and metadata are read: the mapping of the
 * weights costs no I/O. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "engine/formats/gguf.h"
#include "engine/base/error.h"
#include "engine/tokenizer/tokenizer_impl.h"

bool tokenizer_file_is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char magic[4];
    bool gguf = fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, "GGUF", 4) == 0;
    fclose(f);
    return gguf;
}

int tokenizer_gguf_vocab_or_beside(struct elm_gguf *g, const char *path, elm_tokenizer **out,
                                   char *err, size_t err_size)
{
    elm_status st = elm_gguf_vocab_tokenizer(g, out, err, err_size);
    if (st != ELM_OK || *out)
        return st;
    return tokenizer_load_beside(path, out, err, err_size);
}

int tokenizer_gguf_load(const char *path, elm_tokenizer **out, char *err, size_t err_size)
{
    struct elm_gguf *g = NULL;
    elm_status st = elm_gguf_open(path, &g, err, err_size);
    if (st != ELM_OK)
        return st;
    int rc = tokenizer_gguf_vocab_or_beside(g, path, out, err, err_size);
    elm_gguf_close(g);
    if (rc != ELM_OK || *out)
        return rc;
    return elm_set_error(err, err_size, ELM_E_FORMAT,
                         "%s: the GGUF file has no tokenizer.ggml vocabulary and there is no "
                         "tokenizer.model or tokenizer.json beside it",
                         path);
}
