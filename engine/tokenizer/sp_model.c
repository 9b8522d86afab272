/* sp_model.c: reads a SentencePiece tokenizer.model, the protobuf message
 * ModelProto, by hand: the pieces (piece, score, type), the trainer spec
 * (model type, byte fallback, special ids) and the normalizer spec.  Every
 * length is checked against the end of the buffer; nothing else of protobuf
 * is needed. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/base/error.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/sp_model.h"

/* ModelProto field numbers (sentencepiece_model.proto). */
enum {
    MP_PIECES = 1,
    MP_TRAINER_SPEC = 2,
    MP_NORMALIZER_SPEC = 3,
    SP_PIECE = 1,
    SP_SCORE = 2,
    SP_TYPE = 3,
    TS_MODEL_TYPE = 3,
    TS_TREAT_WS_AS_SUFFIX = 24,
    TS_BYTE_FALLBACK = 35,
    TS_UNK_ID = 40,
    TS_BOS_ID = 41,
    TS_EOS_ID = 42,
    NS_CHARSMAP = 2,
    NS_ADD_DUMMY_PREFIX = 3,
    NS_REMOVE_EXTRA_WS = 4,
    NS_ESCAPE_WS = 5,
};
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };
enum { MODEL_UNIGRAM = 1, MODEL_BPE = 2, MODEL_WORD = 3, MODEL_CHAR = 4 };

struct pb {
    const unsigned char *base; /* start of the file, for offsets in messages */
    const unsigned char *p, *end;
    const char *path;
    char *err;
    size_t err_size;
};

/* One field: its number, wire type and value (varint, fixed or bytes). */
struct pb_field {
    uint32_t num;
    int wire;
    uint64_t u;
    const unsigned char *data;
    size_t len;
};

static int pb_fail(struct pb *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int pb_fail(struct pb *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int st = elm_vset_error_at(r->err, r->err_size, ELM_E_FORMAT, r->path,
                               "not a valid tokenizer.model", fmt, ap);
    va_end(ap);
    return st;
}

static int pb_varint(struct pb *r, uint64_t *v)
{
    uint64_t x = 0;
    size_t at = (size_t)(r->p - r->base);
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end)
            return pb_fail(r, "varint at offset %zu runs past the end", at);
        unsigned char b = *r->p++;
        if (shift == 63 && b > 1)
            return pb_fail(r, "varint at offset %zu overflows 64 bits", at);
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return ELM_OK;
        }
    }
    return pb_fail(r, "varint at offset %zu is longer than 10 bytes", at);
}

/* Reads the next field; 1 when one was read, 0 at the end, <0 on error. */
static int pb_next(struct pb *r, struct pb_field *f)
{
    if (r->p >= r->end)
        return 0;
    size_t at = (size_t)(r->p - r->base);
    uint64_t key;
    int st = pb_varint(r, &key);
    if (st != ELM_OK)
        return st;
    f->num = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->num == 0 || key >> 3 > 0x1fffffff)
        return pb_fail(r, "bad field number %llu at offset %zu", (unsigned long long)(key >> 3),
                       at);
    size_t left;
    switch (f->wire) {
    case WIRE_VARINT:
        return pb_varint(r, &f->u) == ELM_OK ? 1 : ELM_E_FORMAT;
    case WIRE_I64:
    case WIRE_I32: {
        size_t n = f->wire == WIRE_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return pb_fail(r, "field %u at offset %zu: %zu-byte value runs past the end",
                           (unsigned)f->num, at, n);
        f->u = 0;
        for (size_t i = 0; i < n; i++)
            f->u |= (uint64_t)r->p[i] << (8 * i);
        f->data = r->p;
        f->len = n;
        r->p += n;
        return 1;
    }
    case WIRE_LEN:
        if (pb_varint(r, &f->u) != ELM_OK)
            return ELM_E_FORMAT;
        left = (size_t)(r->end - r->p);
        if (f->u > left)
            return pb_fail(r, "field %u at offset %zu: length %llu runs past the end "
                           "(%zu bytes left)",
                           (unsigned)f->num, at, (unsigned long long)f->u, left);
        f->data = r->p;
        f->len = (size_t)f->u;
        r->p += f->len;
        return 1;
    default:
        return pb_fail(r, "field %u at offset %zu has unsupported wire type %d",
                       (unsigned)f->num, at, f->wire);
    }
}

static struct pb pb_sub(const struct pb *r, const struct pb_field *f)
{
    struct pb s = *r;
    s.p = f->data;
    s.end = f->data + f->len;
    return s;
}

static int expect_wire(struct pb *r, const struct pb_field *f, int wire, const char *what)
{
    if (f->wire == wire)
        return ELM_OK;
    return pb_fail(r, "%s (field %u, offset %zu) has wire type %d, expected %d", what,
                   (unsigned)f->num, (size_t)(f->data ? f->data - r->base : 0), f->wire, wire);
}

struct sp_result {
    int n;
    const char **piece;
    size_t *piece_len;
    float *score;
    uint8_t *type;
    int model_type;
    bool byte_fallback;
    bool ws_suffix;
    int32_t unk_id, bos_id, eos_id;
    bool add_dummy_prefix, remove_extra_ws, escape_ws;
    bool charsmap;
};

static int parse_piece(struct pb *r, const struct pb_field *outer, struct sp_result *res)
{
    struct pb s = pb_sub(r, outer);
    struct pb_field f;
    int i = res->n;
    bool have_piece = false;
    res->piece[i] = "";
    res->piece_len[i] = 0;
    res->score[i] = 0.0f;
    res->type[i] = ELM_PIECE_NORMAL;
    int st;
    while ((st = pb_next(&s, &f)) > 0) {
        if (f.num == SP_PIECE) {
            if ((st = expect_wire(&s, &f, WIRE_LEN, "piece text")) != ELM_OK)
                return st;
            res->piece[i] = (const char *)f.data;
            res->piece_len[i] = f.len;
            have_piece = true;
        } else if (f.num == SP_SCORE) {
            if ((st = expect_wire(&s, &f, WIRE_I32, "piece score")) != ELM_OK)
                return st;
            uint32_t bits = (uint32_t)f.u;
            memcpy(&res->score[i], &bits, sizeof bits);
        } else if (f.num == SP_TYPE) {
            if ((st = expect_wire(&s, &f, WIRE_VARINT, "piece type")) != ELM_OK)
                return st;
            if (f.u < ELM_PIECE_NORMAL || f.u > ELM_PIECE_BYTE)
                return pb_fail(r, "piece %d has unknown type %llu", i, (unsigned long long)f.u);
            res->type[i] = (uint8_t)f.u;
        }
    }
    if (st < 0)
        return st;
    if (!have_piece || res->piece_len[i] == 0)
        return pb_fail(r, "piece %d has no text", i);
    res->n++;
    return ELM_OK;
}

static int parse_trainer(struct pb *r, const struct pb_field *outer, struct sp_result *res)
{
    struct pb s = pb_sub(r, outer);
    struct pb_field f;
    int st;
    while ((st = pb_next(&s, &f)) > 0) {
        if (f.wire != WIRE_VARINT)
            continue;
        switch (f.num) {
        case TS_MODEL_TYPE: res->model_type = (int)f.u; break;
        case TS_TREAT_WS_AS_SUFFIX: res->ws_suffix = f.u != 0; break;
        case TS_BYTE_FALLBACK: res->byte_fallback = f.u != 0; break;
        /* int32 fields: negative values arrive sign-extended to 64 bits. */
        case TS_UNK_ID: res->unk_id = (int32_t)(uint32_t)f.u; break;
        case TS_BOS_ID: res->bos_id = (int32_t)(uint32_t)f.u; break;
        case TS_EOS_ID: res->eos_id = (int32_t)(uint32_t)f.u; break;
        default: break;
        }
    }
    return st < 0 ? st : ELM_OK;
}

static int parse_normalizer(struct pb *r, const struct pb_field *outer, struct sp_result *res)
{
    struct pb s = pb_sub(r, outer);
    struct pb_field f;
    int st;
    while ((st = pb_next(&s, &f)) > 0) {
        if (f.num == NS_CHARSMAP && f.wire == WIRE_LEN)
            res->charsmap = f.len > 0;
        if (f.wire != WIRE_VARINT)
            continue;
        if (f.num == NS_ADD_DUMMY_PREFIX)
            res->add_dummy_prefix = f.u != 0;
        else if (f.num == NS_REMOVE_EXTRA_WS)
            res->remove_extra_ws = f.u != 0;
        else if (f.num == NS_ESCAPE_WS)
            res->escape_ws = f.u != 0;
    }
    return st < 0 ? st : ELM_OK;
}

static const char *model_type_name(int t)
{
    switch (t) {
    case MODEL_UNIGRAM: return "unigram";
    case MODEL_BPE: return "BPE";
    case MODEL_WORD: return "word";
    case MODEL_CHAR: return "char";
    }
    return "unknown";
}

elm_status sp_model_parse(const unsigned char *buf, size_t size, const char *path,
                          elm_tokenizer **out, char *err, size_t err_size)
{
    struct pb r = {buf, buf, buf + size, path, err, err_size};
    struct pb_field f;
    int st, n = 0;

    /* Pass 1: validate the top level and count the pieces. */
    while ((st = pb_next(&r, &f)) > 0) {
        if (f.num == MP_PIECES || f.num == MP_TRAINER_SPEC || f.num == MP_NORMALIZER_SPEC) {
            const char *what = f.num == MP_PIECES ? "a piece"
                               : f.num == MP_TRAINER_SPEC ? "the trainer spec"
                                                          : "the normalizer spec";
            if ((st = expect_wire(&r, &f, WIRE_LEN, what)) != ELM_OK)
                return st;
        }
        if (f.num == MP_PIECES) {
            if (n == (1 << 24))
                return pb_fail(&r, "too many pieces");
            n++;
        }
    }
    if (st < 0)
        return st;
    if (n == 0)
        return pb_fail(&r, "no pieces");

    struct sp_result res = {
        .piece = malloc((size_t)n * sizeof *res.piece),
        .piece_len = malloc((size_t)n * sizeof *res.piece_len),
        .score = malloc((size_t)n * sizeof *res.score),
        .type = malloc((size_t)n),
        .model_type = MODEL_UNIGRAM, /* the proto defaults */
        .unk_id = 0,
        .bos_id = 1,
        .eos_id = 2,
        .add_dummy_prefix = true,
        .remove_extra_ws = true,
        .escape_ws = true,
    };
    if (!res.piece || !res.piece_len || !res.score || !res.type) {
        st = ELM_E_NOMEM;
        snprintf(err, err_size, "%s: out of memory for %d pieces", path, n);
        goto done;
    }

    /* Pass 2: the content. */
    r.p = buf;
    while ((st = pb_next(&r, &f)) > 0) {
        int sub = ELM_OK;
        if (f.num == MP_PIECES)
            sub = parse_piece(&r, &f, &res);
        else if (f.num == MP_TRAINER_SPEC)
            sub = parse_trainer(&r, &f, &res);
        else if (f.num == MP_NORMALIZER_SPEC)
            sub = parse_normalizer(&r, &f, &res);
        if (sub != ELM_OK) {
            st = sub;
            break;
        }
    }
    if (st < 0)
        goto done;
    if (res.model_type != MODEL_BPE) {
        st = ELM_E_UNSUPPORTED;
        snprintf(err, err_size, "%s: the model type is %s (%d); only BPE is supported", path,
                 model_type_name(res.model_type), res.model_type);
        goto done;
    }
    if (res.charsmap) {
        st = ELM_E_UNSUPPORTED;
        snprintf(err, err_size, "%s: the normalizer has a character map; only the identity "
                 "normalizer (LLaMA's) is supported", path);
        goto done;
    }
    if (res.ws_suffix || !res.escape_ws) {
        st = ELM_E_UNSUPPORTED;
        snprintf(err, err_size, "%s: %s is not supported", path,
                 res.ws_suffix ? "treat_whitespace_as_suffix" : "escape_whitespaces = false");
        goto done;
    }
    struct tok_spec spec = {
        .n = res.n,
        .piece = res.piece,
        .piece_len = res.piece_len,
        .score = res.score,
        .type = res.type,
        .unk_id = res.unk_id,
        .bos_id = res.bos_id,
        .eos_id = res.eos_id,
        .byte_fallback = res.byte_fallback,
        .add_dummy_prefix = res.add_dummy_prefix,
        .remove_extra_whitespaces = res.remove_extra_ws,
    };
    st = tok_build(&spec, path, out, err, err_size);
done:
    free(res.piece);
    free(res.piece_len);
    free(res.score);
    free(res.type);
    return st;
}
