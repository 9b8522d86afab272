/* hf_json.c: reads a Hugging Face tokenizer.json (a BPE model with
 * byte fallback, as converted from LLaMA's SentencePiece model) into the
 * tokenizer core.
 *
 * SentencePiece merges by piece score; tokenizer.json has no scores, only
 * merges in priority order, so a piece's score is minus the rank of the
 * first merge that makes it.  Two forms carry real scores and are preferred:
 * "vocab" as an array of [piece, score] pairs (id = index), or a "scores"
 * array beside an object "vocab" (our own extension, which
 * elm_tokenizer-built files use). */
#include "config.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/base/error.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/hf_json.h"

#define SPACE_SYM "\xE2\x96\x81"

struct jvocab {
    int n;
    const char **piece;
    size_t *len;
    float *score;
    uint8_t *type;
    bool *has_score;
};

static int fail(char *err, size_t err_size, const char *path, int status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t err_size, const char *path, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    elm_vset_error_at(err, err_size, (elm_status)status, path, NULL, fmt, ap);
    va_end(ap);
    return status;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static bool is_byte_piece(const char *p, size_t n)
{
    return n == 6 && memcmp(p, "<0x", 3) == 0 && p[5] == '>' &&
           strchr("0123456789ABCDEF", p[3]) && p[3] && strchr("0123456789ABCDEF", p[4]) && p[4];
}

static bool jvocab_alloc(struct jvocab *v, int n)
{
    v->n = n;
    v->piece = calloc((size_t)n, sizeof *v->piece);
    v->len = calloc((size_t)n, sizeof *v->len);
    v->score = calloc((size_t)n, sizeof *v->score);
    v->type = calloc((size_t)n, 1);
    v->has_score = calloc((size_t)n, sizeof *v->has_score);
    return v->piece && v->len && v->score && v->type && v->has_score;
}

static void jvocab_free(struct jvocab *v)
{
    free(v->piece);
    free(v->len);
    free(v->score);
    free(v->type);
    free(v->has_score);
}

/* "vocab": {"piece": id, ...} */
static int read_vocab_object(json_object *vocab, struct jvocab *v, const char *path, char *err,
                             size_t err_size)
{
    int n = 0;
    struct json_object_iterator it = json_object_iter_begin(vocab);
    struct json_object_iterator end = json_object_iter_end(vocab);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        json_object *val = json_object_iter_peek_value(&it);
        if (!json_object_is_type(val, json_type_int))
            return fail(err, err_size, path, ELM_E_FORMAT, "vocab entry '%.40s' has no integer id",
                        json_object_iter_peek_name(&it));
        int64_t id = json_object_get_int64(val);
        if (id < 0 || id >= (1 << 24))
            return fail(err, err_size, path, ELM_E_FORMAT, "vocab id %lld is out of range",
                        (long long)id);
        if (id + 1 > n)
            n = (int)id + 1;
    }
    if (n == 0)
        return fail(err, err_size, path, ELM_E_FORMAT, "the vocabulary has no pieces");
    if (!jvocab_alloc(v, n))
        return fail(err, err_size, path, ELM_E_NOMEM, "out of memory for %d pieces", n);
    it = json_object_iter_begin(vocab);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        int id = (int)json_object_get_int64(json_object_iter_peek_value(&it));
        if (v->piece[id])
            return fail(err, err_size, path, ELM_E_FORMAT, "vocab id %d is used twice", id);
        v->piece[id] = json_object_iter_peek_name(&it);
        v->len[id] = strlen(v->piece[id]);
    }
    return ELM_OK;
}

/* "vocab": [["piece", score], ...] */
static int read_vocab_array(json_object *vocab, struct jvocab *v, const char *path, char *err,
                            size_t err_size)
{
    size_t n = json_object_array_length(vocab);
    if (n == 0)
        return fail(err, err_size, path, ELM_E_FORMAT, "the vocabulary has no pieces");
    if (n >= (1u << 24))
        return fail(err, err_size, path, ELM_E_UNSUPPORTED, "too many pieces (%zu)", n);
    if (!jvocab_alloc(v, (int)n))
        return fail(err, err_size, path, ELM_E_NOMEM, "out of memory for %zu pieces", n);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(vocab, i);
        json_object *p = json_object_is_type(e, json_type_array) &&
                                 json_object_array_length(e) == 2
                             ? json_object_array_get_idx(e, 0)
                             : NULL;
        json_object *s = p ? json_object_array_get_idx(e, 1) : NULL;
        if (!p || !json_object_is_type(p, json_type_string) ||
            !(json_object_is_type(s, json_type_double) || json_object_is_type(s, json_type_int)))
            return fail(err, err_size, path, ELM_E_FORMAT,
                        "vocab entry %zu is not a [piece, score] pair", i);
        v->piece[i] = json_object_get_string(p);
        v->len[i] = (size_t)json_object_get_string_len(p);
        v->score[i] = (float)json_object_get_double(s);
        v->has_score[i] = true;
    }
    return ELM_OK;
}

/* Scores from merge ranks: the first merge making a piece gives -rank. */
static int read_merges(json_object *merges, json_object *vocab_obj, struct jvocab *v,
                       const char *path, char *err, size_t err_size)
{
    size_t n = json_object_is_type(merges, json_type_array) ? json_object_array_length(merges) : 0;
    for (size_t r = 0; r < n; r++) {
        json_object *m = json_object_array_get_idx(merges, r);
        const char *a, *b;
        size_t la, lb;
        char pair[1024];
        if (json_object_is_type(m, json_type_string)) {
            const char *s = json_object_get_string(m);
            const char *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' '))
                return fail(err, err_size, path, ELM_E_FORMAT,
                            "merge %zu ('%.40s') is not two pieces", r, s);
            a = s;
            la = (size_t)(sp - s);
            b = sp + 1;
            lb = strlen(b);
        } else if (json_object_is_type(m, json_type_array) && json_object_array_length(m) == 2 &&
                   json_object_is_type(json_object_array_get_idx(m, 0), json_type_string) &&
                   json_object_is_type(json_object_array_get_idx(m, 1), json_type_string)) {
            a = json_object_get_string(json_object_array_get_idx(m, 0));
            b = json_object_get_string(json_object_array_get_idx(m, 1));
            la = strlen(a);
            lb = strlen(b);
        } else {
            return fail(err, err_size, path, ELM_E_FORMAT, "merge %zu is malformed", r);
        }
        if (la + lb + 1 > sizeof pair)
            continue; /* longer than any piece we could look up */
        memcpy(pair, a, la);
        memcpy(pair + la, b, lb);
        pair[la + lb] = '\0';
        json_object *idv = get(vocab_obj, pair);
        if (!idv)
            return fail(err, err_size, path, ELM_E_FORMAT,
                        "merge %zu makes '%.40s', which is not in the vocabulary", r, pair);
        int id = (int)json_object_get_int64(idv);
        if (!v->has_score[id]) {
            v->score[id] = -(float)r;
            v->has_score[id] = true;
        }
    }
    /* Pieces no merge makes (single characters, specials) never merge in
     * Hugging Face's BPE; below every merge they cannot win over one. */
    for (int i = 0; i < v->n; i++)
        if (!v->has_score[i])
            v->score[i] = -(float)n - 1.0f;
    return ELM_OK;
}

/* Does the normalizer or the pre-tokenizer prepend U+2581?  Old LLaMA files
 * use a Prepend normalizer, newer ones a Metaspace pre-tokenizer. */
static bool find_prefix(json_object *o)
{
    if (!o)
        return false;
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            if (find_prefix(json_object_array_get_idx(o, i)))
                return true;
        return false;
    }
    if (!json_object_is_type(o, json_type_object))
        return false;
    const char *type = json_object_get_string(get(o, "type"));
    if (type && strcmp(type, "Prepend") == 0) {
        const char *p = json_object_get_string(get(o, "prepend"));
        return p && strcmp(p, SPACE_SYM) == 0;
    }
    if (type && strcmp(type, "Metaspace") == 0) {
        const char *scheme = json_object_get_string(get(o, "prepend_scheme"));
        if (scheme)
            return strcmp(scheme, "never") != 0;
        return json_object_get_boolean(get(o, "add_prefix_space"));
    }
    return find_prefix(get(o, "normalizers")) || find_prefix(get(o, "pretokenizers"));
}

elm_status tokenizer_json_parse(const char *buf, size_t size, const char *path,
                                elm_tokenizer **out, char *err, size_t err_size)
{
    if (size > 0x7fffffff)
        return fail(err, err_size, path, ELM_E_FORMAT, "too large");
    json_tokener *tk = json_tokener_new_ex(64);
    if (!tk)
        return fail(err, err_size, path, ELM_E_NOMEM, "out of memory");
    json_object *root = json_tokener_parse_ex(tk, buf, (int)size);
    enum json_tokener_error jerr = json_tokener_get_error(tk);
    size_t at = json_tokener_get_parse_end(tk);
    json_tokener_free(tk);
    if (!root || jerr != json_tokener_success) {
        json_object_put(root);
        if (jerr == json_tokener_continue)
            return fail(err, err_size, path, ELM_E_FORMAT, "truncated JSON");
        return fail(err, err_size, path, ELM_E_FORMAT, "bad JSON at byte %zu: %s", at,
                    json_tokener_error_desc(jerr));
    }

    struct jvocab v = {0};
    int st = ELM_OK;
    json_object *model = get(root, "model");
    json_object *vocab = get(model, "vocab");
    const char *type = json_object_get_string(get(model, "type"));
    if (!model || !json_object_is_type(model, json_type_object)) {
        st = fail(err, err_size, path, ELM_E_FORMAT, "no \"model\" object");
        goto done;
    }
    if (type && strcmp(type, "BPE") != 0) {
        st = fail(err, err_size, path, ELM_E_UNSUPPORTED,
                  "the model type is %.40s; only BPE is supported", type);
        goto done;
    }
    if (json_object_is_type(vocab, json_type_object)) {
        st = read_vocab_object(vocab, &v, path, err, err_size);
        json_object *scores = get(model, "scores");
        if (st == ELM_OK && json_object_is_type(scores, json_type_array)) {
            if (json_object_array_length(scores) != (size_t)v.n) {
                st = fail(err, err_size, path, ELM_E_FORMAT, "%zu scores for %d pieces",
                          json_object_array_length(scores), v.n);
                goto done;
            }
            for (int i = 0; i < v.n; i++) {
                v.score[i] = (float)json_object_get_double(json_object_array_get_idx(scores, i));
                v.has_score[i] = true;
            }
        }
        if (st == ELM_OK)
            st = read_merges(get(model, "merges"), vocab, &v, path, err, err_size);
    } else if (json_object_is_type(vocab, json_type_array)) {
        st = read_vocab_array(vocab, &v, path, err, err_size);
    } else {
        st = fail(err, err_size, path, ELM_E_FORMAT, "no \"model.vocab\"");
    }
    if (st != ELM_OK)
        goto done;
    for (int i = 0; i < v.n; i++) {
        if (!v.piece[i]) {
            st = fail(err, err_size, path, ELM_E_FORMAT, "no piece has id %d", i);
            goto done;
        }
        v.type[i] = is_byte_piece(v.piece[i], v.len[i]) ? ELM_PIECE_BYTE : ELM_PIECE_NORMAL;
    }

    /* Special tokens: the unk token, and added tokens (control when special). */
    const char *unk = json_object_get_string(get(model, "unk_token"));
    int32_t unk_id = -1, bos_id = -1, eos_id = -1;
    json_object *added = get(root, "added_tokens");
    size_t n_added = json_object_is_type(added, json_type_array) ? json_object_array_length(added)
                                                                   : 0;
    for (size_t i = 0; i < n_added; i++) {
        json_object *t = json_object_array_get_idx(added, i);
        json_object *idv = get(t, "id");
        const char *content = json_object_get_string(get(t, "content"));
        if (!json_object_is_type(idv, json_type_int) || !content)
            continue;
        int64_t id = json_object_get_int64(idv);
        if (id < 0 || id >= v.n || strcmp(v.piece[id], content) != 0) {
            st = fail(err, err_size, path, ELM_E_FORMAT,
                      "added token '%.40s' (id %lld) does not match the vocabulary", content,
                      (long long)id);
            goto done;
        }
        v.type[id] = json_object_get_boolean(get(t, "special")) ? ELM_PIECE_CONTROL
                                                                 : ELM_PIECE_USER_DEFINED;
    }
    for (int i = 0; i < v.n; i++) {
        if (unk && strcmp(v.piece[i], unk) == 0) {
            v.type[i] = ELM_PIECE_UNKNOWN;
            unk_id = i;
        } else if (v.type[i] == ELM_PIECE_CONTROL && strcmp(v.piece[i], "<s>") == 0) {
            bos_id = i;
        } else if (v.type[i] == ELM_PIECE_CONTROL && strcmp(v.piece[i], "</s>") == 0) {
            eos_id = i;
        }
    }
    struct tok_spec spec = {
        .n = v.n,
        .piece = v.piece,
        .piece_len = v.len,
        .score = v.score,
        .type = v.type,
        .unk_id = unk_id,
        .bos_id = bos_id,
        .eos_id = eos_id,
        .byte_fallback = json_object_get_boolean(get(model, "byte_fallback")),
        .add_dummy_prefix = find_prefix(get(root, "normalizer")) ||
                            find_prefix(get(root, "pre_tokenizer")),
        .remove_extra_whitespaces = false,
    };
    st = tok_build(&spec, path, out, err, err_size);
done:
    jvocab_free(&v);
    json_object_put(root);
    return st;
}
