/* test-tokenizer-files.c: the tokenizer on small vocabularies built here (no
 * download): merge order, ties, byte fallback, the three ways to load a
 * vocabulary (tokenizer.model, tokenizer.json, elm_tokenizer_from_vocab),
 * the lookup of a model's tokenizer, and bad or truncated files, which must fail with a message naming the
 * file, never crash. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/elm.h"
#include "engine/elm_tokenizer.h"
#include "tests/lib/tap.h"

#define SP "\xE2\x96\x81"

/* ---- a tiny protobuf writer -------------------------------------------- */

struct buf {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
    do {
        unsigned char c = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static void field_bytes(struct buf *b, unsigned num, const void *p, size_t n)
{
    varint(b, (uint64_t)num << 3 | 2);
    varint(b, n);
    put(b, p, n);
}

static void field_int(struct buf *b, unsigned num, int64_t v)
{
    varint(b, (uint64_t)num << 3);
    varint(b, (uint64_t)v);
}

static void field_float(struct buf *b, unsigned num, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                           (unsigned char)(u >> 24)};
    varint(b, (uint64_t)num << 3 | 5);
    put(b, le, 4);
}

/* The small test vocabulary: specials, 256 bytes, then scored pieces. */
static const struct {
    const char *piece;
    float score;
} extra[] = {
    {SP, -100}, {"a", -101}, {"b", -102}, {"c", -103}, {"ab", -1},  {SP "a", -2},
    {"abc", -3}, {"bc", -0.5f}, {"aa", -4}, {"x", -105}, {SP SP, -1e9f},
};
#define N_EXTRA (int)(sizeof extra / sizeof extra[0])
#define N_VOCAB (259 + N_EXTRA)

static const char *vocab_piece(int i, char *tmp)
{
    if (i == 0)
        return "<unk>";
    if (i == 1)
        return "<s>";
    if (i == 2)
        return "</s>";
    if (i < 259) {
        sprintf(tmp, "<0x%02X>", i - 3);
        return tmp;
    }
    return extra[i - 259].piece;
}

static int vocab_type(int i)
{
    return i == 0 ? ELM_PIECE_UNKNOWN : i < 3 ? ELM_PIECE_CONTROL : i < 259 ? ELM_PIECE_BYTE
                                                                            : ELM_PIECE_NORMAL;
}

static float vocab_score(int i)
{
    return i < 259 ? 0.0f : extra[i - 259].score;
}

struct model_opts {
    int n_pieces;       /* how many of the vocabulary */
    int model_type;     /* 0: omit */
    bool byte_fallback;
    const char *bad_byte_piece; /* replaces <0x41> */
    bool duplicate;     /* piece 260 repeats piece 259 */
    bool no_trainer;
};

static struct buf make_model(const struct model_opts *o)
{
    struct buf m = {0}, msg = {0};
    char tmp[16];
    for (int i = 0; i < o->n_pieces; i++) {
        msg.n = 0;
        const char *p = vocab_piece(i, tmp);
        if (o->bad_byte_piece && i == 3 + 0x41)
            p = o->bad_byte_piece;
        if (o->duplicate && i == 260)
            p = vocab_piece(259, tmp);
        field_bytes(&msg, 1, p, strlen(p));
        field_float(&msg, 2, vocab_score(i));
        if (vocab_type(i) != ELM_PIECE_NORMAL)
            field_int(&msg, 3, vocab_type(i));
        field_bytes(&m, 1, msg.p, msg.n);
    }
    if (!o->no_trainer) {
        msg.n = 0;
        if (o->model_type)
            field_int(&msg, 3, o->model_type);
        field_int(&msg, 4, o->n_pieces);
        field_int(&msg, 35, o->byte_fallback);
        field_int(&msg, 40, 0);
        field_int(&msg, 41, 1);
        field_int(&msg, 42, 2);
        field_int(&msg, 43, -1);
        field_bytes(&m, 2, msg.p, msg.n);
    }
    msg.n = 0;
    field_bytes(&msg, 1, "identity", 8);
    field_int(&msg, 3, 1);
    field_int(&msg, 4, 0);
    field_bytes(&m, 3, msg.p, msg.n);
    free(msg.p);
    return m;
}

static const struct model_opts good_opts = {N_VOCAB, 2, true, NULL, false, false};

static const char *write_file(const char *name, const void *p, size_t n)
{
    static char path[2][4200];
    static int which;
    char *dst = path[which++ % 2];
    snprintf(dst, sizeof path[0], "%s/%s", tap_tmpdir(), name);
    FILE *f = fopen(dst, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        bail_out("cannot write %s", dst);
    return dst;
}

static char *encode_str(const elm_tokenizer *tok, const char *text)
{
    static char out[1024];
    int32_t *ids;
    size_t n;
    if (elm_tokenize(tok, text, strlen(text), false, &ids, &n) != ELM_OK)
        return strcpy(out, "(error)");
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < sizeof out - 64; i++)
        o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", i ? " " : "",
                              elm_tokenizer_piece(tok, ids[i]));
    free(ids);
    return out;
}

/* Loading must fail, with a message that names the file and says why. */
static void load_fails(const char *name, const void *p, size_t n, int want_status,
                       const char *want_msg)
{
    const char *path = write_file(name, p, n);
    elm_tokenizer *tok = (elm_tokenizer *)&tok; /* must be reset to NULL */
    char err[ELM_ERR_MAX] = "";
    elm_status st = elm_tokenizer_load(path, &tok, err, sizeof err);
    ok(st == want_status && tok == NULL && strncmp(err, path, strlen(path)) == 0 &&
           strstr(err, want_msg) != NULL,
       "%s: fails with %d, '...%s...'", name, want_status, want_msg);
    if (st != want_status || !strstr(err, want_msg))
        diag("  got %d: %s", st, err);
    if (st == ELM_OK)
        elm_tokenizer_free(tok);
}

/* A model built from o must fail to load like that. */
static void model_fails(const char *name, const struct model_opts *o, int want_status,
                        const char *want_msg)
{
    struct buf m = make_model(o);
    load_fails(name, m.p, m.n, want_status, want_msg);
    free(m.p);
}

static void check_behaviour(const elm_tokenizer *tok, const char *what)
{
    /* bc (-0.5) beats ab (-1) beats ▁a (-2): score order, not id order */
    is_str(encode_str(tok, "abc"), SP "a bc", "%s: merges go by score", what);
    /* ties: the leftmost pair first */
    is_str(encode_str(tok, "baaa"), SP " b aa a", "%s: equal scores merge leftmost first", what);
    /* é is not in the vocabulary: one byte piece per UTF-8 byte */
    is_str(encode_str(tok, "x\xC3\xA9"), SP " x <0xC3> <0xA9>", "%s: byte fallback", what);
    is_str(encode_str(tok, " a"), SP " " SP "a", "%s: dummy prefix, space as U+2581", what);
    is_str(encode_str(tok, "<s>"), SP " <0x3C> <0x73> <0x3E>", "%s: <s> in text is not BOS",
           what);
    is_str(encode_str(tok, ""), "", "%s: empty text", what);
    int32_t ids[] = {1, 259 + 5, 259 + 7, 3 + 0xC3, 3 + 0xA9, 2, 0};
    char *text;
    size_t len;
    ok(elm_detokenize(tok, ids, 7, &text, &len) == ELM_OK &&
           strcmp(text, "abc\xC3\xA9 \xE2\x81\x87 ") == 0,
       "%s: decode", what);
    free(text);
}

static void tiny_model(void)
{
    struct buf m = make_model(&good_opts);
    const char *path = write_file("tokenizer.model", m.p, m.n);
    elm_tokenizer *tok = NULL;
    char err[ELM_ERR_MAX];
    if (!ok(elm_tokenizer_load(path, &tok, err, sizeof err) == ELM_OK, "tiny tokenizer.model"))
        bail_out("%s", err);
    is_int(elm_tokenizer_n_vocab(tok), N_VOCAB, "tiny model: %d pieces", N_VOCAB);
    check_behaviour(tok, "tokenizer.model");
    near(elm_tokenizer_score(tok, 259 + 7), -0.5, 0, "scores are read");
    is_int(elm_tokenizer_type(tok, 5), ELM_PIECE_BYTE, "types are read");

    /* Streaming into tiny buffers never overflows. */
    struct elm_detok_stream s;
    elm_detok_stream_init(&s, tok);
    char small[2] = "zz";
    size_t k = elm_detok_stream_push(&s, 259 + 6, small, 1);
    ok(k == 0 && small[0] == '\0', "stream push into a 1-byte buffer writes only the NUL");
    k = elm_detok_stream_push(&s, 259 + 6, small, 0);
    ok(k == 0 && small[0] == '\0', "stream push into a 0-byte buffer writes nothing");
    elm_tokenizer_free(tok);

    /* Every truncation fails cleanly (or, cut right after a complete field,
     * loads a consistent smaller model), under ASan in the sanitizer build. */
    int failed = 0, named = 0, loaded = 0;
    for (size_t cut = 0; cut < m.n; cut += (cut < 4000 ? 1 : 7)) {
        const char *p = write_file("truncated.model", m.p, cut);
        tok = NULL;
        err[0] = '\0';
        elm_status st = elm_tokenizer_load(p, &tok, err, sizeof err);
        if (st == ELM_OK) {
            loaded++;
            elm_tokenizer_free(tok);
        } else {
            failed++;
            named += strncmp(err, p, strlen(p)) == 0 && tok == NULL;
        }
    }
    ok(failed > 0 && named == failed, "truncated tokenizer.model: %d cuts fail with the file "
       "named, %d load", failed, loaded);
    ok(loaded <= 1, "only the cut before the normalizer spec loads (%d)", loaded);

    /* Flipped bytes: never a crash. */
    unsigned char *copy = malloc(m.n);
    uint32_t seed = 12345;
    for (int i = 0; i < 400; i++) {
        memcpy(copy, m.p, m.n);
        for (int f = 0; f < 3; f++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % m.n] ^= (unsigned char)(1u << ((seed >> 3) & 7));
        }
        const char *p = write_file("flipped.model", copy, m.n);
        tok = NULL;
        if (elm_tokenizer_load(p, &tok, err, sizeof err) == ELM_OK) {
            (void)encode_str(tok, "abc aa x\xC3\xA9");
            elm_tokenizer_free(tok);
        }
    }
    ok(1, "400 bit-flipped tokenizer.model files load or fail without crashing");
    free(copy);
    free(m.p);
}

static void bad_models(void)
{
    load_fails("empty.model", "", 0, ELM_E_FORMAT, "empty file");
    const unsigned char overrun[] = {0x0A, 0xFF};
    load_fails("varint.model", overrun, sizeof overrun, ELM_E_FORMAT, "runs past the end");
    const unsigned char toolong[] = {0x0A, 0x05, 'a'};
    load_fails("length.model", toolong, sizeof toolong, ELM_E_FORMAT,
               "length 5 runs past the end");
    const unsigned char group[] = {0x0B, 0x0C};
    load_fails("group.model", group, sizeof group, ELM_E_FORMAT, "wire type 3");
    const unsigned char tenbytes[] = {0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                      0xFF, 0x01};
    load_fails("varint11.model", tenbytes, sizeof tenbytes, ELM_E_FORMAT, "varint");

    struct model_opts o = good_opts;
    o.n_pieces = 0;
    model_fails("nopieces.model", &o, ELM_E_FORMAT, "no pieces");

    o = good_opts;
    o.model_type = 1;
    model_fails("unigram.model", &o, ELM_E_UNSUPPORTED, "model type is unigram");

    o = good_opts;
    o.no_trainer = true;
    model_fails("notrainer.model", &o, ELM_E_UNSUPPORTED, "only BPE");

    o = good_opts;
    o.bad_byte_piece = "<0xZZ>";
    model_fails("badbyte.model", &o, ELM_E_FORMAT, "not <0xNN>");

    o = good_opts;
    o.duplicate = true;
    model_fails("dup.model", &o, ELM_E_FORMAT, "repeats piece 259");

    o = good_opts;
    o.n_pieces = 100; /* bytes 0x61.. missing, byte_fallback set */
    model_fails("nobytes.model", &o, ELM_E_FORMAT, "byte_fallback is set but piece <0x61>");

    const char junk[] = "\x89PNG\r\n\x1a\n not a tokenizer at all";
    const char *p = write_file("junk.model", junk, sizeof junk - 1);
    elm_tokenizer *tok = NULL;
    char err[ELM_ERR_MAX];
    ok(elm_tokenizer_load(p, &tok, err, sizeof err) < 0 && !tok && strstr(err, p),
       "a PNG header is not a tokenizer (%s)", err);

    char missing[4300];
    snprintf(missing, sizeof missing, "%s/no-such-file.model", tap_tmpdir());
    is_int(elm_tokenizer_load(missing, &tok, err, sizeof err), ELM_E_IO, "missing file: I/O error");
    ok(strstr(err, "No such file") != NULL, "missing file: says so (%s)", err);
    is_int(elm_tokenizer_load(tap_tmpdir(), &tok, err, sizeof err), ELM_E_IO,
           "a directory is not a tokenizer file");
    ok(elm_tokenizer_load(NULL, &tok, err, sizeof err) == ELM_E_INVALID, "NULL path");
}

/* ---- tokenizer.json ---------------------------------------------------- */

static char *tiny_json(bool with_scores)
{
    size_t cap = 65536, o = 0;
    char *j = malloc(cap), tmp[16];
    o += (size_t)snprintf(j + o, cap - o,
                          "{\"version\":\"1.0\",\"added_tokens\":["
                          "{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
                          "{\"id\":1,\"content\":\"<s>\",\"special\":true},"
                          "{\"id\":2,\"content\":\"</s>\",\"special\":true}],"
                          "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
                          "{\"type\":\"Prepend\",\"prepend\":\"" SP "\"},"
                          "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                          "\"content\":\"" SP "\"}]},"
                          "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\","
                          "\"byte_fallback\":true,\"vocab\":{");
    for (int i = 0; i < N_VOCAB; i++)
        o += (size_t)snprintf(j + o, cap - o, "%s\"%s\":%d", i ? "," : "", vocab_piece(i, tmp), i);
    o += (size_t)snprintf(j + o, cap - o, "},");
    if (with_scores) {
        o += (size_t)snprintf(j + o, cap - o, "\"scores\":[");
        for (int i = 0; i < N_VOCAB; i++)
            o += (size_t)snprintf(j + o, cap - o, "%s%g", i ? "," : "", (double)vocab_score(i));
        o += (size_t)snprintf(j + o, cap - o, "],\"merges\":[]}}");
    } else {
        /* by score: bc, ab, ▁a, abc, aa, ▁▁ */
        o += (size_t)snprintf(j + o, cap - o,
                              "\"merges\":[\"b c\",\"a b\",\"" SP " a\",[\"a\",\"bc\"],\"a a\","
                              "\"" SP " " SP "\"]}}");
    }
    return j;
}

static void json_files(void)
{
    char err[ELM_ERR_MAX];
    for (int scores = 0; scores < 2; scores++) {
        char *j = tiny_json(scores);
        const char *path = write_file("tokenizer.json", j, strlen(j));
        elm_tokenizer *tok = NULL;
        if (ok(elm_tokenizer_load(path, &tok, err, sizeof err) == ELM_OK,
               "tiny tokenizer.json (%s) loads", scores ? "scores" : "merges")) {
            check_behaviour(tok, scores ? "tokenizer.json+scores" : "tokenizer.json+merges");
            is_int(elm_tokenizer_bos(tok), 1, "tokenizer.json: BOS from added_tokens");
            elm_tokenizer_free(tok);
        } else {
            diag("%s", err);
        }
        /* truncations of JSON */
        size_t len = strlen(j);
        int failed = 0, named = 0;
        for (size_t cut = 1; cut < len; cut += 13) {
            const char *p = write_file("truncated.json", j, cut);
            tok = NULL;
            elm_status st = elm_tokenizer_load(p, &tok, err, sizeof err);
            if (st != ELM_OK) {
                failed++;
                named += strncmp(err, p, strlen(p)) == 0;
            } else {
                elm_tokenizer_free(tok);
            }
        }
        ok(failed > 0 && failed == named, "truncated tokenizer.json fails, naming the file (%d)",
           failed);
        free(j);
    }
    const char nomodel[] = "{\"added_tokens\":[]}";
    load_fails("nomodel.json", nomodel, strlen(nomodel), ELM_E_FORMAT, "no \"model\" object");
    const char unigram[] = "{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",0]]}}";
    load_fails("unigram.json", unigram, strlen(unigram), ELM_E_UNSUPPORTED, "only BPE");
    const char sparse[] = "{\"model\":{\"type\":\"BPE\",\"unk_token\":\"a\",\"vocab\":{\"a\":0,"
                          "\"b\":2}}}";
    load_fails("sparse.json", sparse, strlen(sparse), ELM_E_FORMAT, "no piece has id 1");
    const char badmerge[] = "{\"model\":{\"type\":\"BPE\",\"unk_token\":\"a\",\"vocab\":{\"a\":0,"
                            "\"b\":1},\"merges\":[\"a b\"]}}";
    load_fails("badmerge.json", badmerge, strlen(badmerge), ELM_E_FORMAT,
               "not in the vocabulary");
    const char nounk[] = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}}}";
    load_fails("nounk.json", nounk, strlen(nounk), ELM_E_FORMAT, "no <unk>");
    const char syntax[] = "{\"model\": [1, 2,, 3]}";
    load_fails("syntax.json", syntax, strlen(syntax), ELM_E_FORMAT, "bad JSON at byte");
}

static void from_vocab(void)
{
    const char *pieces[N_VOCAB];
    float scores[N_VOCAB];
    static char tmp[N_VOCAB][16];
    for (int i = 0; i < N_VOCAB; i++) {
        pieces[i] = vocab_piece(i, tmp[i]);
        scores[i] = vocab_score(i);
    }
    elm_tokenizer *tok = NULL;
    char err[ELM_ERR_MAX];
    if (ok(elm_tokenizer_from_vocab(pieces, scores, NULL, N_VOCAB, 0, 1, 2, true, true, "gguf",
                                    &tok, err, sizeof err) == ELM_OK,
           "elm_tokenizer_from_vocab")) {
        check_behaviour(tok, "from_vocab");
        elm_tokenizer_free(tok);
    } else {
        diag("%s", err);
    }
    pieces[265] = "";
    ok(elm_tokenizer_from_vocab(pieces, scores, NULL, N_VOCAB, 0, 1, 2, true, true, "gguf", &tok,
                                err, sizeof err) == ELM_E_FORMAT &&
           strstr(err, "gguf: piece 265 is empty"),
       "from_vocab rejects an empty piece (%s)", err);
}

/* The random-weight test model's synthetic tokenizer (tests/lib/gen-checkpoint). */
static void synthetic(void)
{
    const char *b = getenv("builddir");
    char gen[4200], cmd[9000], path[4300];
    snprintf(gen, sizeof gen, "%s/tests/lib/gen-checkpoint", b ? b : ".");
    struct stat st;
    if (stat(gen, &st) != 0) {
        skip(3, "tests/lib/gen-checkpoint is not built");
        return;
    }
    snprintf(cmd, sizeof cmd, "'%s' --preset micro --synthetic-tokenizer -o '%s/micro' >/dev/null",
             gen, tap_tmpdir());
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/micro/tokenizer.model", tap_tmpdir());
    if (rc != 0 || stat(path, &st) != 0) {
        skip(3, "gen-checkpoint did not write a synthetic tokenizer.model");
        return;
    }
    elm_tokenizer *tok = NULL;
    char err[ELM_ERR_MAX];
    elm_status s = elm_tokenizer_load(path, &tok, err, sizeof err);
    if (!ok(s == ELM_OK, "the generator's synthetic tokenizer.model loads")) {
        diag("%s", err);
        skip(2, "no tokenizer");
        return;
    }
    /* Its scores follow ids, not a corpus: pieces merge, but not into whole
     * words (this is what SentencePiece does with such a vocabulary). */
    int32_t *ids;
    size_t n;
    elm_status est = elm_tokenize(tok, "Hello world", 11, false, &ids, &n);
    ok(est == ELM_OK && n > 1 && n < 11,
       "synthetic tokenizer: 'Hello world' merges into %zu pieces (%s)", n,
       encode_str(tok, "Hello world"));
    if (est == ELM_OK)
        free(ids);
    char *text = NULL;
    size_t len;
    ids = NULL;
    const char *t = "the model said: \xF0\x9F\xA6\x99 and 42!";
    ok(elm_tokenize(tok, t, strlen(t), true, &ids, &n) == ELM_OK &&
           elm_detokenize(tok, ids, n, &text, &len) == ELM_OK && strcmp(text, t) == 0,
       "synthetic tokenizer: round trip");
    free(ids);
    free(text);
    elm_tokenizer_free(tok);
}

/* ---- the tokenizer of a model (elm_tokenizer_load_for_model) ----------- */

static void model_lookup(void)
{
    char dir[4300], err[ELM_ERR_MAX];
    elm_tokenizer *tok = NULL;
    struct buf m = make_model(&good_opts);
    char *j = tiny_json(false); /* merges only: scores differ from the .model's */

    snprintf(dir, sizeof dir, "%s/both", tap_tmpdir());
    if (mkdir(dir, 0700) != 0)
        bail_out("cannot make %s", dir);
    write_file("both/tokenizer.model", m.p, m.n);
    write_file("both/tokenizer.json", j, strlen(j));
    ok(elm_tokenizer_load_for_model(dir, &tok, err, sizeof err) == ELM_OK && tok &&
           elm_tokenizer_score(tok, 259 + 7) == -0.5f,
       "a model folder: tokenizer.model first");
    elm_tokenizer_free(tok);

    snprintf(dir, sizeof dir, "%s/json", tap_tmpdir());
    if (mkdir(dir, 0700) != 0)
        bail_out("cannot make %s", dir);
    write_file("json/tokenizer.json", j, strlen(j));
    tok = NULL;
    ok(elm_tokenizer_load_for_model(dir, &tok, err, sizeof err) == ELM_OK && tok,
       "a model folder: else tokenizer.json");
    if (tok)
        check_behaviour(tok, "tokenizer.json in a model folder");
    elm_tokenizer_free(tok);

    snprintf(dir, sizeof dir, "%s/none", tap_tmpdir());
    if (mkdir(dir, 0700) != 0)
        bail_out("cannot make %s", dir);
    tok = (elm_tokenizer *)&tok; /* must be reset to NULL */
    is_int(elm_tokenizer_load_for_model(dir, &tok, err, sizeof err), ELM_E_IO,
           "a model folder without either: I/O error");
    char want[4400];
    snprintf(want, sizeof want, "%s: no tokenizer.model or tokenizer.json in the model folder",
             dir);
    ok(tok == NULL && strcmp(err, want) == 0, "... that names the folder (%s)", err);

    const char *file = write_file("json/tokenizer.json", j, strlen(j));
    tok = NULL;
    ok(elm_tokenizer_load_for_model(file, &tok, err, sizeof err) == ELM_OK && tok,
       "a file: read as elm_tokenizer_load reads it");
    elm_tokenizer_free(tok);
    free(j);
    free(m.p);
}

int main(void)
{
    plan_lazy();
    tiny_model();
    bad_models();
    json_files();
    model_lookup();
    from_vocab();
    synthetic();
    return done_testing();
}
