/* load.c: which file a tokenizer comes from.  elm_tokenizer_load tells the
 * format by content (a GGUF model file, tokenizer.json, tokenizer.model)
 * and hands it to its reader (gguf_vocab.c, hf_json.c, sp_model.c); the
 * lookups beside a model serve the model loaders (load.h) and, through
 * elm_tokenizer_load_for_model, the application. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/base/error.h"
#include "engine/elm_tokenizer.h"
#include "engine/formats/gguf.h"
#include "engine/tokenizer/gguf_vocab.h"
#include "engine/tokenizer/hf_json.h"
#include "engine/tokenizer/load.h"
#include "engine/tokenizer/sp_model.h"

/* Tokenizer files beyond this are refused (bpe.c's arena has the same bound). */
#define MAX_FILE_BYTES ((size_t)1 << 28)

static elm_status read_file(const char *path, char **buf, size_t *size, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return elm_set_error(err, err_size, ELM_E_IO, "%s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return elm_set_error(err, err_size, ELM_E_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: %lld bytes is too large for a tokenizer file", path,
                             (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n + 1);
    if (!b) {
        fclose(f);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    }
    size_t got = fread(b, 1, n, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || got != n) {
        free(b);
        return elm_set_error(err, err_size, ELM_E_IO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *size = n;
    return ELM_OK;
}

elm_status tokenizer_load_beside(const char *model, elm_tokenizer **out, char *err,
                                 size_t err_size)
{
    static const char *const names[] = {"tokenizer.model", "tokenizer.json"};
    struct stat sb;
    char dir[PATH_MAX], file[PATH_MAX];
    *out = NULL;
    if ((size_t)snprintf(dir, sizeof dir, "%s", model) >= sizeof dir)
        return elm_set_error(err, err_size, ELM_E_INVALID, "%s: path too long", model);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        char *slash = strrchr(dir, '/');
        if (slash)
            slash[1] = '\0';
        else
            dir[0] = '\0'; /* the current folder: plain file names */
    }
    size_t n = strlen(dir);
    const char *sep = (n == 0 || dir[n - 1] == '/') ? "" : "/";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if ((size_t)snprintf(file, sizeof file, "%s%s%s", dir, sep, names[i]) >= sizeof file)
            return elm_set_error(err, err_size, ELM_E_INVALID, "%s: path too long", dir);
        if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode))
            return elm_tokenizer_load(file, out, err, err_size);
    }
    return ELM_OK;
}

static bool file_is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char magic[4];
    bool gguf = fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, "GGUF", 4) == 0;
    fclose(f);
    return gguf;
}

elm_status tokenizer_gguf_vocab_or_beside(const struct elm_gguf *g, const char *path,
                                          elm_tokenizer **out, char *err, size_t err_size)
{
    elm_status st = elm_gguf_vocab_tokenizer(g, out, err, err_size);
    if (st != ELM_OK || *out)
        return st;
    return tokenizer_load_beside(path, out, err, err_size);
}

/* The tokenizer the model itself would use (gguf_model.c).  Only the header
 * and metadata are read: the mapping of the weights costs no I/O. */
static elm_status load_gguf(const char *path, elm_tokenizer **out, char *err, size_t err_size)
{
    struct elm_gguf *g = NULL;
    elm_status st = elm_gguf_open(path, &g, err, err_size);
    if (st != ELM_OK)
        return st;
    st = tokenizer_gguf_vocab_or_beside(g, path, out, err, err_size);
    elm_gguf_close(g);
    if (st != ELM_OK || *out)
        return st;
    return elm_set_error(err, err_size, ELM_E_FORMAT,
                         "%s: the GGUF file has no tokenizer.ggml vocabulary and there is no "
                         "tokenizer.model or tokenizer.json beside it",
                         path);
}

elm_status elm_tokenizer_load(const char *path, elm_tokenizer **out, char *err, size_t err_size)
{
    if (!out)
        return ELM_E_INVALID;
    *out = NULL;
    if (!path) {
        return elm_set_error(err, err_size, ELM_E_INVALID, "no tokenizer file given");
    }
    if (file_is_gguf(path)) /* a model file: never read whole */
        return load_gguf(path, out, err, err_size);
    char *buf = NULL; /* set on success only; -O2 cannot see that through elm_set_error */
    size_t size = 0;
    elm_status st = read_file(path, &buf, &size, err, err_size);
    if (st != ELM_OK)
        return st;
    if (size == 0) {
        free(buf);
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: empty file", path);
    }
    /* JSON starts with '{' (after optional whitespace or a UTF-8 BOM); a
     * ModelProto starts with a field tag, never one of those bytes. */
    size_t i = 0;
    if (size >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < size && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i < size && buf[i] == '{')
        st = tokenizer_json_parse(buf + i, size - i, path, out, err, err_size);
    else
        st = sp_model_parse((const unsigned char *)buf, size, path, out, err, err_size);
    free(buf);
    return st;
}

elm_status elm_tokenizer_load_for_model(const char *model_path, elm_tokenizer **out, char *err,
                                        size_t err_size)
{
    if (!out)
        return ELM_E_INVALID;
    *out = NULL;
    struct stat sb;
    if (!model_path || stat(model_path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return elm_tokenizer_load(model_path, out, err, err_size);
    elm_status st = tokenizer_load_beside(model_path, out, err, err_size);
    if (st != ELM_OK || *out)
        return st;
    return elm_set_error(err, err_size, ELM_E_IO,
                         "%s: no tokenizer.model or tokenizer.json in the model folder",
                         model_path);
}
