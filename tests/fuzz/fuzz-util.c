/* fuzz-util.c: temp files and a tiny tokenizer for the fuzz targets. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[PATH_MAX];
static char written[4][PATH_MAX + 64];
static int n_written;

static void cleanup(void)
{
    for (int i = 0; i < 4; i++)
        if (written[i][0])
            unlink(written[i]);
    if (tmpdir[0])
        rmdir(tmpdir);
}

const char *fuzz_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        if (!base || !*base)
            base = "/tmp";
        snprintf(tmpdir, sizeof tmpdir, "%s/elmchat-fuzz.XXXXXX", base);
        if (!mkdtemp(tmpdir)) {
            perror(tmpdir);
            abort();
        }
        atexit(cleanup);
    }
    return tmpdir;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    char path[PATH_MAX + 64];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", fuzz_tmpdir(), name) >= sizeof path)
        abort();
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    for (int i = 0; i < 4; i++)
        if (strcmp(written[i], path) == 0)
            return written[i];
    char *slot = written[n_written++ % 4];
    if (slot[0])
        unlink(slot);
    memcpy(slot, path, sizeof path);
    return slot;
}

const elm_tokenizer *fuzz_tiny_tokenizer(void)
{
    static elm_tokenizer *tok;
    if (tok)
        return tok;
    static const char *const extra[] = {
        "\xE2\x96\x81", "a", "b", "c", "ab", "\xE2\x96\x81" "a", "abc", "<", "|", ">", "<|",
        "|>", "user", "\n", "\xE2\x96\x81" "\xE2\x96\x81", "s", "y", "t", "e", "m",
    };
    enum { N_EXTRA = sizeof extra / sizeof extra[0], N = 259 + N_EXTRA };
    static char bytes[256][8];
    const char *pieces[N];
    float scores[N];
    pieces[0] = "<unk>";
    pieces[1] = "<s>";
    pieces[2] = "</s>";
    for (int i = 0; i < 256; i++) {
        snprintf(bytes[i], sizeof bytes[i], "<0x%02X>", i);
        pieces[3 + i] = bytes[i];
    }
    for (int i = 0; i < N_EXTRA; i++)
        pieces[259 + i] = extra[i];
    for (int i = 0; i < N; i++)
        scores[i] = i < 259 ? 0.0f : -(float)(i - 258);
    char err[256];
    if (elm_tokenizer_from_vocab(pieces, scores, NULL, N, 0, 1, 2, true, true, "tiny", &tok, err,
                                 sizeof err) != ELM_OK) {
        fprintf(stderr, "fuzz: tiny tokenizer: %s\n", err);
        abort();
    }
    return tok;
}

static void check_text(const elm_tokenizer *tok, const char *text, size_t len)
{
    int32_t *ids = NULL;
    size_t n = 0;
    int n_vocab = elm_tokenizer_n_vocab(tok);
    if (elm_tokenize(tok, text, len, true, &ids, &n) != ELM_OK) {
        free(ids);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab) {
            fprintf(stderr, "fuzz: id %d out of [0, %d)\n", (int)ids[i], n_vocab);
            abort();
        }
    char *whole = NULL;
    size_t whole_len = 0;
    if (elm_detokenize(tok, ids, n, &whole, &whole_len) == ELM_OK) {
        /* streaming decode must give the same bytes */
        struct elm_detok_stream s;
        elm_detok_stream_init(&s, tok);
        char *acc = malloc(whole_len + 1 + 64 * (n + 1));
        size_t o = 0;
        char out[4096];
        bool fits = true; /* 64 bytes beyond the piece always suffice for one id */
        for (size_t i = 0; i < n && fits; i++) {
            const char *piece = elm_tokenizer_piece(tok, ids[i]);
            fits = piece && strlen(piece) + 64 <= sizeof out;
            size_t k = fits ? elm_detok_stream_push(&s, ids[i], out, sizeof out) : 0;
            memcpy(acc + o, out, k);
            o += k;
        }
        size_t k = elm_detok_stream_flush(&s, out, sizeof out);
        memcpy(acc + o, out, k);
        o += k;
        if (fits && (o != whole_len || memcmp(acc, whole, o) != 0)) {
            fprintf(stderr, "fuzz: streaming decode differs from decode\n");
            abort();
        }
        free(acc);
    }
    for (int32_t id = -1; id <= n_vocab; id += n_vocab > 64 ? n_vocab / 16 : 1) {
        (void)elm_tokenizer_piece(tok, id);
        (void)elm_tokenizer_score(tok, id);
        (void)elm_tokenizer_type(tok, id);
    }
    free(whole);
    free(ids);
}

void fuzz_exercise_tokenizer(const elm_tokenizer *tok, const uint8_t *data, size_t size)
{
    static const char *const texts[] = {
        "", " ", "Hello world", "  two  spaces ", "abcabc ab\tc\n\n", "\xE2\x96\x81x",
        "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80", "\xFF\xC3 bad \x80 utf-8",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        check_text(tok, texts[i], strlen(texts[i]));
    /* the input's own tail doubles as text */
    size_t n = size < 64 ? size : 64;
    check_text(tok, (const char *)data + size - n, n);
}
