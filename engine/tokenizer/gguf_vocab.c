/* gguf_vocab.c: a GGUF file's own vocabulary (llama.cpp's tokenizer.ggml.*
 * keys: model "llama", tokens, scores, token types, special ids) as a
 * tokenizer.  Only the metadata is read, through formats/gguf.h. */
#include "config.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/formats/gguf.h"
#include "engine/tokenizer/gguf_vocab.h"

/* As the model loaders' MAX_VOCAB: far above any LLaMA vocabulary. */
#define MAX_GGUF_TOKENS (1 << 22)

elm_status elm_gguf_vocab_tokenizer(const struct elm_gguf *g, elm_tokenizer **out, char *err,
                                    size_t err_size)
{
    const char *model;
    size_t model_len;
    *out = NULL;
    elm_status st = elm_gguf_get_string(g, "tokenizer.ggml.model", false, &model, &model_len, err,
                                        err_size);
    if (st || !elm_gguf_find(g, "tokenizer.ggml.model"))
        return st;
    if (model_len == 8 && memcmp(model, "no_vocab", 8) == 0)
        return ELM_OK;
    if (model_len != 5 || memcmp(model, "llama", 5) != 0)
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: tokenizer.ggml.model: \"%.*s\" is not supported (llama is)",
                             g->path, (int)(model_len > 64 ? 64 : model_len), model);
    const struct elm_gguf_kv *tk = elm_gguf_find(g, "tokenizer.ggml.tokens");
    const struct elm_gguf_kv *sk = elm_gguf_find(g, "tokenizer.ggml.scores");
    const struct elm_gguf_kv *yk = elm_gguf_find(g, "tokenizer.ggml.token_type");
    if (!tk)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: tokenizer.ggml.tokens: missing metadata key", g->path);
    if (tk->type != ELM_GGUF_ARRAY || tk->elem_type != ELM_GGUF_STRING || tk->n < 1 ||
        tk->n > MAX_GGUF_TOKENS)
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: tokenizer.ggml.tokens: expected 1 to %d strings", g->path,
                             MAX_GGUF_TOKENS);
    int n = (int)tk->n;
    if (sk && (sk->type != ELM_GGUF_ARRAY || sk->elem_type != ELM_GGUF_F32 || sk->n != tk->n))
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: tokenizer.ggml.scores: expected %d f32 values", g->path, n);
    if (yk && (yk->type != ELM_GGUF_ARRAY || !elm_gguf_vtype_is_int(yk->elem_type) ||
               yk->n != tk->n))
        return elm_set_error(err, err_size, ELM_E_FORMAT,
                             "%s: tokenizer.ggml.token_type: expected %d integers", g->path, n);
    int64_t unk = 0, bos = 1, eos = 2;
    bool space_prefix = true;
    if ((st = elm_gguf_get_int(g, "tokenizer.ggml.unknown_token_id", false, 0, n - 1, &unk, err,
                               err_size)) ||
        (st = elm_gguf_get_int(g, "tokenizer.ggml.bos_token_id", false, 0, n - 1, &bos, err,
                               err_size)) ||
        (st = elm_gguf_get_int(g, "tokenizer.ggml.eos_token_id", false, 0, n - 1, &eos, err,
                               err_size)) ||
        (st = elm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &space_prefix, err,
                                err_size)))
        return st;

    /* NUL-terminated copies of the pieces, in one block. */
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const char *s;
        size_t len;
        elm_gguf_array_string(tk, (uint64_t)i, &s, &len);
        total += len + 1;
    }
    char *text = malloc(total);
    const char **pieces = malloc((size_t)n * sizeof *pieces);
    float *scores = malloc((size_t)n * sizeof *scores);
    int32_t *types = malloc((size_t)n * sizeof *types);
    if (!text || !pieces || !scores || !types) {
        free(text);
        free(pieces);
        free(scores);
        free(types);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", g->path);
    }
    bool bytes = false;
    char *p = text;
    for (int i = 0; i < n; i++) {
        const char *s;
        size_t len;
        elm_gguf_array_string(tk, (uint64_t)i, &s, &len);
        memcpy(p, s, len);
        p[len] = '\0';
        pieces[i] = p;
        p += len + 1;
        /* a number out of the type's range would be undefined to convert */
        double score = sk ? elm_gguf_array_number(sk, (uint64_t)i) : 0.0;
        double type = yk ? elm_gguf_array_number(yk, (uint64_t)i) : ELM_PIECE_NORMAL;
        bool type_ok = type >= 0 && type <= 255;
        if (!(score >= -FLT_MAX && score <= FLT_MAX) || !type_ok) {
            st = elm_set_error(err, err_size, ELM_E_FORMAT,
                               "%s: tokenizer.ggml.%s[%d] = %g is out of range", g->path,
                               type_ok ? "scores" : "token_type", i, type_ok ? score : type);
            free(text);
            free(pieces);
            free(scores);
            free(types);
            return st;
        }
        scores[i] = (float)score;
        types[i] = (int32_t)type;
        bytes = bytes || types[i] == ELM_PIECE_BYTE;
    }
    char name[4200];
    snprintf(name, sizeof name, "%s: tokenizer.ggml.tokens", g->path);
    st = elm_tokenizer_from_vocab(pieces, scores, yk ? types : NULL, n, (int32_t)unk,
                                  (int32_t)bos, (int32_t)eos, bytes || !yk, space_prefix, name,
                                  out, err, err_size);
    free(text);
    free(pieces);
    free(scores);
    free(types);
    return st;
}
