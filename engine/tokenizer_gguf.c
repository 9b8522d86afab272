/* tokenizer_gguf.c: elm_tokenizer_load on a GGUF model file.  The tokenizer
 * is the one the model itself would use (gguf_model.c): the file's own
 * tokenizer.ggml.* vocabulary, else tokenizer.model or tokenizer.json
 * beside it.  Only the header and metadata are read: the mapping of the
 * weights costs no I/O. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/gguf.h"
#include "engine/error.h"
#include "engine/tokenizer_impl.h"

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

/* The vocabulary files a GGUF without tokenizer.ggml.tokens relies on. */
static int load_beside(const char *path, elm_tokenizer **out, char *err, size_t err_size)
{
    static const char *const names[] = {"tokenizer.model", "tokenizer.json"};
    char dir[PATH_MAX], file[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct stat sb;
        snprintf(file, sizeof file, "%s%s", dir, names[i]);
        if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode))
            return elm_tokenizer_load(file, out, err, err_size);
    }
    return elm_set_error(err, err_size, ELM_E_FORMAT,
                         "%s: the GGUF file has no tokenizer.ggml vocabulary and there is no "
                         "tokenizer.model or tokenizer.json beside it",
                         path);
}

int tokenizer_gguf_load(const char *path, elm_tokenizer **out, char *err, size_t err_size)
{
    struct elm_gguf *g = NULL;
    elm_status st = elm_gguf_open(path, &g, err, err_size);
    if (st != ELM_OK)
        return st;
    st = elm_gguf_vocab_tokenizer(g, out, err, err_size);
    elm_gguf_close(g);
    if (st != ELM_OK || *out)
        return st;
    return load_beside(path, out, err, err_size);
}
