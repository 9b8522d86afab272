/* bpe.c: the SentencePiece BPE tokenizer core: the vocabulary and its
 * hash index, encoding (a heap of candidate merges over a linked list of
 * symbols, as sentencepiece's bpe_model.cc does), decoding and the streaming
 * decoder.  Which file a tokenizer comes from is load.c's business; the
 * readers of each format (sp_model.c, hf_json.c, gguf_vocab.c) hand their
 * vocabulary to tok_build or elm_tokenizer_from_vocab. */
#include "config.h"

#include "engine/elm_tokenizer.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/base/error.h"
#include "engine/tokenizer/bpe.h"

/* U+2581 LOWER ONE EIGHTH BLOCK stands for a space inside pieces. */
#define SPACE_SYM "\xE2\x96\x81"
#define SPACE_SYM_LEN 3
/* What an invalid input byte becomes (U+FFFD), and what <unk> decodes to. */
#define REPLACEMENT "\xEF\xBF\xBD"
#define UNK_SURFACE " \xE2\x81\x87 "
/* Inputs and vocabularies beyond this are refused rather than risk 32-bit
 * offsets (the arena holds every piece). */
#define MAX_TEXT_BYTES ((size_t)1 << 28)
#define MAX_ARENA_BYTES ((size_t)1 << 28)

/* The full hash beside the id spares most misses a trip to the arena. */
struct slot {
    uint32_t hash;
    int32_t id; /* -1: empty */
};

struct elm_tokenizer {
    atomic_int refs; /* elm_tokenizer_share; the last free frees */
    int n;
    char *arena;       /* every piece, NUL terminated, back to back */
    uint32_t *off;     /* [n] offset of a piece in arena */
    uint32_t *len;     /* [n] piece length in bytes */
    float *score;      /* [n] */
    uint8_t *type;     /* [n] enum elm_piece_type */
    int16_t *byte_of;  /* [n] the byte of a BYTE piece, else -1 */
    int32_t byte_id[256]; /* id of <0xNN>, -1 when absent */
    struct slot *slot; /* [mask+1] open-addressing index of ids */
    uint32_t mask;
    uint32_t max_merge_len; /* longest piece a merge can produce */
    /* No mergeable piece has U+2581 after a non-U+2581 character, so no
     * merge crosses the start of a word: words are encoded one by one. */
    bool split_words;
    int32_t unk_id, bos_id, eos_id;
    bool byte_fallback;
    bool add_dummy_prefix;
    bool remove_extra_ws;
    /* The grammar's token trie, built on first use (elm_tokenizer_companion). */
    _Atomic(void *) companion;
    void (*companion_free)(void *);
};

static uint32_t hash_bytes(const char *s, size_t n)
{
    /* FNV-1a: short keys, good enough spread, no setup. */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int32_t lookup(const elm_tokenizer *tok, const char *s, size_t n)
{
    uint32_t h = hash_bytes(s, n);
    for (uint32_t i = h & tok->mask;; i = (i + 1) & tok->mask) {
        int32_t id = tok->slot[i].id;
        if (id < 0)
            return -1;
        if (tok->slot[i].hash == h && tok->len[id] == n &&
            memcmp(tok->arena + tok->off[id], s, n) == 0)
            return id;
    }
}

static bool mergeable(uint8_t type)
{
    /* sentencepiece merges through NORMAL, USER_DEFINED and UNUSED pieces;
     * we do not resegment UNUSED ones, so they are left out (LLaMA has none). */
    return type == ELM_PIECE_NORMAL || type == ELM_PIECE_USER_DEFINED;
}

static int parse_byte_piece(const char *p, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    const char *hi = memchr(hex, p[3], 16);
    const char *lo = memchr(hex, p[4], 16);
    if (!hi || !lo || !p[3] || !p[4])
        return -1;
    return (int)((hi - hex) * 16 + (lo - hex));
}

elm_tokenizer *elm_tokenizer_share(elm_tokenizer *tok)
{
    if (tok)
        atomic_fetch_add(&tok->refs, 1);
    return tok;
}

void elm_tokenizer_free(elm_tokenizer *tok)
{
    if (!tok || atomic_fetch_sub(&tok->refs, 1) > 1)
        return;
    free(tok->arena);
    free(tok->off);
    free(tok->len);
    free(tok->score);
    free(tok->type);
    free(tok->byte_of);
    free(tok->slot);
    void *c = atomic_load(&tok->companion);
    if (c && tok->companion_free)
        tok->companion_free(c);
    free(tok);
}

void *elm_tokenizer_companion(const elm_tokenizer *tok, void *(*build)(const elm_tokenizer *),
                              void (*destroy)(void *))
{
    elm_tokenizer *t = (elm_tokenizer *)tok; /* the cache is not part of its value */
    void *c = atomic_load(&t->companion);
    if (c)
        return c;
    void *fresh = build(tok);
    if (!fresh)
        return NULL;
    void *none = NULL;
    if (atomic_compare_exchange_strong(&t->companion, &none, fresh)) {
        t->companion_free = destroy; /* read only by the last free */
        return fresh;
    }
    destroy(fresh); /* another thread built it first */
    return none;
}

bool elm_tokenizer_strips_first_space(const elm_tokenizer *tok)
{
    return tok->add_dummy_prefix || tok->remove_extra_ws;
}

/* Is every U+2581 in p within its leading run of U+2581? */
static bool space_only_at_start(const char *p, size_t len)
{
    size_t i = 0;
    while (len - i >= SPACE_SYM_LEN && memcmp(p + i, SPACE_SYM, SPACE_SYM_LEN) == 0)
        i += SPACE_SYM_LEN;
    for (; i + SPACE_SYM_LEN <= len; i++)
        if (memcmp(p + i, SPACE_SYM, SPACE_SYM_LEN) == 0)
            return false;
    return true;
}

elm_status tok_build(const struct tok_spec *spec, const char *name, elm_tokenizer **out,
                     char *err, size_t err_size)
{
    *out = NULL;
    int n = spec->n;
    if (n <= 0) {
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: the vocabulary has no pieces", name);
    }
    if (n > (1 << 24)) {
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: %d pieces is more than this tokenizer supports", name, n);
    }
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (spec->piece_len[i] == 0) {
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: piece %d is empty", name, i);
        }
        if (spec->type[i] < ELM_PIECE_NORMAL || spec->type[i] > ELM_PIECE_BYTE) {
            return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: piece %d has unknown type %d",
                                 name, i, spec->type[i]);
        }
        total += spec->piece_len[i] + 1;
        if (total > MAX_ARENA_BYTES) {
            return elm_set_error(err, err_size, ELM_E_UNSUPPORTED, "%s: the pieces are too large",
                                 name);
        }
    }
    elm_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok)
        atomic_init(&tok->refs, 1);
    uint32_t cap = 1;
    while (cap < (uint32_t)n * 2u)
        cap <<= 1;
    if (tok) {
        tok->arena = malloc(total);
        tok->off = malloc((size_t)n * sizeof *tok->off);
        tok->len = malloc((size_t)n * sizeof *tok->len);
        tok->score = malloc((size_t)n * sizeof *tok->score);
        tok->type = malloc((size_t)n);
        tok->byte_of = malloc((size_t)n * sizeof *tok->byte_of);
        tok->slot = malloc((size_t)cap * sizeof *tok->slot);
    }
    if (!tok || !tok->arena || !tok->off || !tok->len || !tok->score || !tok->type ||
        !tok->byte_of || !tok->slot) {
        elm_tokenizer_free(tok);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory for %d pieces", name,
                             n);
    }
    tok->n = n;
    tok->mask = cap - 1;
    tok->split_words = true;
    for (uint32_t k = 0; k < cap; k++)
        tok->slot[k] = (struct slot){0, -1};
    for (int b = 0; b < 256; b++)
        tok->byte_id[b] = -1;

    size_t pos = 0;
    elm_status status = ELM_OK;
    for (int i = 0; i < n && status == ELM_OK; i++) {
        size_t len = spec->piece_len[i];
        memcpy(tok->arena + pos, spec->piece[i], len);
        tok->arena[pos + len] = '\0';
        tok->off[i] = (uint32_t)pos;
        tok->len[i] = (uint32_t)len;
        tok->score[i] = spec->score[i];
        tok->type[i] = spec->type[i];
        tok->byte_of[i] = -1;
        pos += len + 1;
        const char *p = tok->arena + tok->off[i];
        if (tok->type[i] == ELM_PIECE_BYTE) {
            int b = parse_byte_piece(p, len);
            if (b < 0) {
                status = elm_set_error(err, err_size, ELM_E_FORMAT,
                                       "%s: byte piece %d is '%.40s', not <0xNN>", name, i, p);
                break;
            }
            tok->byte_of[i] = (int16_t)b;
            if (tok->byte_id[b] < 0)
                tok->byte_id[b] = i;
        }
        if (mergeable(tok->type[i]) && len > tok->max_merge_len)
            tok->max_merge_len = (uint32_t)len;
        if (mergeable(tok->type[i]) && !space_only_at_start(p, len))
            tok->split_words = false;
        uint32_t full = hash_bytes(p, len), h = full & tok->mask;
        while (tok->slot[h].id >= 0) {
            int32_t j = tok->slot[h].id;
            if (tok->len[j] == len && memcmp(tok->arena + tok->off[j], p, len) == 0) {
                status =
                    elm_set_error(err, err_size, ELM_E_FORMAT,
                                  "%s: piece %d ('%.40s') repeats piece %d", name, i, p, (int)j);
                break;
            }
            h = (h + 1) & tok->mask;
        }
        if (status == ELM_OK)
            tok->slot[h] = (struct slot){full, i};
    }
    if (status == ELM_OK) {
        tok->unk_id = spec->unk_id;
        tok->bos_id = spec->bos_id;
        tok->eos_id = spec->eos_id;
        tok->byte_fallback = spec->byte_fallback;
        tok->add_dummy_prefix = spec->add_dummy_prefix;
        tok->remove_extra_ws = spec->remove_extra_whitespaces;
        if (tok->unk_id < 0 || tok->unk_id >= n) {
            status = elm_set_error(err, err_size, ELM_E_FORMAT,
                                   "%s: no <unk> piece (unk id %d, %d pieces)", name,
                                   (int)tok->unk_id, n);
        } else if (tok->bos_id >= n || tok->eos_id >= n || tok->bos_id < -1 ||
                   tok->eos_id < -1) {
            status = elm_set_error(err, err_size, ELM_E_FORMAT,
                                   "%s: BOS id %d or EOS id %d is out of range (%d pieces)", name,
                                   (int)tok->bos_id, (int)tok->eos_id, n);
        } else if (tok->byte_fallback) {
            for (int b = 0; b < 256; b++) {
                if (tok->byte_id[b] < 0) {
                    status = elm_set_error(err, err_size, ELM_E_FORMAT,
                                           "%s: byte_fallback is set but piece <0x%02X> is missing",
                                           name, b);
                    break;
                }
            }
        }
    }
    if (status != ELM_OK) {
        elm_tokenizer_free(tok);
        return status;
    }
    *out = tok;
    return ELM_OK;
}

elm_status elm_tokenizer_from_vocab(const char *const *pieces, const float *scores,
                                    const int32_t *types, int n, int32_t unk_id, int32_t bos_id,
                                    int32_t eos_id, bool byte_fallback, bool add_dummy_prefix,
                                    const char *name, elm_tokenizer **out, char *err,
                                    size_t err_size)
{
    *out = NULL;
    if (!name)
        name = "vocabulary";
    if (!pieces || n <= 0) {
        return elm_set_error(err, err_size, ELM_E_FORMAT, "%s: the vocabulary has no pieces", name);
    }
    size_t *lens = malloc((size_t)n * sizeof *lens);
    uint8_t *t = malloc((size_t)n);
    float *s = scores ? NULL : calloc((size_t)n, sizeof *s);
    if (!lens || !t || (!scores && !s)) {
        free(lens);
        free(t);
        free(s);
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", name);
    }
    for (int i = 0; i < n; i++) {
        const char *p = pieces[i] ? pieces[i] : "";
        lens[i] = strlen(p);
        if (types) {
            t[i] = (types[i] >= 1 && types[i] <= 6) ? (uint8_t)types[i] : 0;
        } else if (parse_byte_piece(p, lens[i]) >= 0) {
            t[i] = ELM_PIECE_BYTE;
        } else if (strcmp(p, "<s>") == 0 || strcmp(p, "</s>") == 0) {
            t[i] = ELM_PIECE_CONTROL;
        } else if (strcmp(p, "<unk>") == 0) {
            t[i] = ELM_PIECE_UNKNOWN;
        } else {
            t[i] = ELM_PIECE_NORMAL;
        }
    }
    struct tok_spec spec = {
        .n = n,
        .piece = pieces,
        .piece_len = lens,
        .score = scores ? scores : s,
        .type = t,
        .unk_id = unk_id,
        .bos_id = bos_id,
        .eos_id = eos_id,
        .byte_fallback = byte_fallback,
        .add_dummy_prefix = add_dummy_prefix,
        .remove_extra_whitespaces = false,
    };
    elm_status st = tok_build(&spec, name, out, err, err_size);
    free(lens);
    free(t);
    free(s);
    return st;
}

int elm_tokenizer_n_vocab(const elm_tokenizer *tok)
{
    return tok ? tok->n : 0;
}

int32_t elm_tokenizer_bos(const elm_tokenizer *tok)
{
    return tok ? tok->bos_id : -1;
}

int32_t elm_tokenizer_eos(const elm_tokenizer *tok)
{
    return tok ? tok->eos_id : -1;
}

const char *elm_tokenizer_piece(const elm_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || id >= tok->n)
        return NULL;
    return tok->arena + tok->off[id];
}

float elm_tokenizer_score(const elm_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || id >= tok->n)
        return 0.0f;
    return tok->score[id];
}

int elm_tokenizer_type(const elm_tokenizer *tok, int32_t id)
{
    if (!tok || id < 0 || id >= tok->n)
        return -1;
    return tok->type[id];
}

/* ---- Encoding ---------------------------------------------------------- */

/* The UTF-8 character at the start of p (n > 0 bytes): its length 1..4
 * when complete and valid; 0 when p is a valid but incomplete prefix; -1
 * when p can never start one.  sentencepiece's DecodeUTF8 rules: the byte
 * after the lead excludes overlongs, surrogates and values above U+10FFFF.
 * The engine's one decoder (it includes nothing from src/). */
static int utf8_prefix(const unsigned char *p, size_t n)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    if (n >= 2 && (p[1] < lo || p[1] > hi))
        return -1;
    for (size_t i = 2; i < n && i < need; i++)
        if ((p[i] & 0xC0) != 0x80)
            return -1;
    return n >= need ? (int)need : 0;
}

struct sym {
    uint32_t start, len; /* bytes of the normalized text; len 0: merged away */
    int32_t prev, next;  /* neighbours in the list, -1 at the ends */
};

struct cand {
    float score;
    int32_t left, right;
    uint32_t len; /* left.len + right.len when pushed: detects stale entries */
};

struct heap {
    struct cand *v;
    size_t n, cap;
};

/* Higher score first; on ties the leftmost pair (sentencepiece's order). */
static bool cand_before(const struct cand *a, const struct cand *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static bool heap_push(struct heap *h, struct cand c)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        struct cand *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!cand_before(&c, &h->v[parent]))
            break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = c;
    return true;
}

static struct cand heap_pop(struct heap *h)
{
    struct cand top = h->v[0];
    struct cand last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && cand_before(&h->v[child + 1], &h->v[child]))
            child++;
        if (!cand_before(&h->v[child], &last))
            break;
        h->v[i] = h->v[child];
        i = child;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

struct encoder {
    const elm_tokenizer *tok;
    const char *text; /* normalized */
    struct sym *sym;
    struct heap heap;
    bool nomem;
};

static void try_pair(struct encoder *e, int32_t left, int32_t right)
{
    if (left < 0 || right < 0)
        return;
    const struct sym *l = &e->sym[left];
    uint32_t len = l->len + e->sym[right].len;
    if (len > e->tok->max_merge_len)
        return;
    int32_t id = lookup(e->tok, e->text + l->start, len);
    if (id < 0 || !mergeable(e->tok->type[id]))
        return;
    struct cand c = {e->tok->score[id], left, right, len};
    if (!heap_push(&e->heap, c))
        e->nomem = true;
}

/* The normalizer: dummy prefix, ' ' -> U+2581, invalid bytes -> U+FFFD, one
 * symbol per character.  Identity otherwise (LLaMA's normalizer). */
static size_t normalize(const elm_tokenizer *tok, const unsigned char *in, size_t len, char *out,
                        struct sym *sym, size_t *n_sym)
{
    size_t o = 0, ns = 0, i = 0;
    if (tok->remove_extra_ws)
        while (i < len && in[i] == ' ')
            i++;
    if (i == len) {
        *n_sym = 0;
        return 0;
    }
    if (tok->add_dummy_prefix) {
        memcpy(out, SPACE_SYM, SPACE_SYM_LEN);
        sym[ns++] = (struct sym){0, SPACE_SYM_LEN, -1, -1};
        o = SPACE_SYM_LEN;
    }
    bool prev_space = tok->remove_extra_ws;
    while (i < len) {
        uint32_t start = (uint32_t)o;
        if (in[i] == ' ') {
            i++;
            if (tok->remove_extra_ws && prev_space)
                continue;
            memcpy(out + o, SPACE_SYM, SPACE_SYM_LEN);
            o += SPACE_SYM_LEN;
            prev_space = true;
        } else {
            int st = utf8_prefix(in + i, len - i);
            size_t cl = st > 0 ? (size_t)st : 0; /* incomplete at the end: invalid */
            if (cl == 0) {
                memcpy(out + o, REPLACEMENT, 3);
                o += 3;
                i++;
            } else {
                memcpy(out + o, in + i, cl);
                o += cl;
                i += cl;
            }
            prev_space = false;
        }
        sym[ns++] = (struct sym){start, (uint32_t)(o - start), -1, -1};
    }
    if (tok->remove_extra_ws) {
        while (ns > 0 && sym[ns - 1].len == SPACE_SYM_LEN &&
               memcmp(out + sym[ns - 1].start, SPACE_SYM, SPACE_SYM_LEN) == 0) {
            ns--;
            o = sym[ns].start;
        }
    }
    for (size_t k = 0; k < ns; k++) {
        sym[k].prev = (int32_t)k - 1;
        sym[k].next = k + 1 < ns ? (int32_t)k + 1 : -1;
    }
    *n_sym = ns;
    return o;
}

static bool is_space(const char *text, const struct sym *s)
{
    return s->len == SPACE_SYM_LEN && memcmp(text + s->start, SPACE_SYM, SPACE_SYM_LEN) == 0;
}

/* Merge symbols [begin, end) (a linked list) to the end, then append their
 * ids to v at n; returns the new n. */
static size_t encode_segment(struct encoder *e, int32_t begin, int32_t end, int32_t *v, size_t n)
{
    const elm_tokenizer *tok = e->tok;
    struct sym *sym = e->sym;
    sym[begin].prev = -1;
    sym[end - 1].next = -1;
    e->heap.n = 0;
    for (int32_t i = begin; i + 1 < end; i++)
        try_pair(e, i, i + 1);
    while (e->heap.n > 0 && !e->nomem) {
        struct cand c = heap_pop(&e->heap);
        struct sym *l = &sym[c.left], *r = &sym[c.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != c.len)
            continue;
        l->len = c.len;
        l->next = r->next;
        if (r->next >= 0)
            sym[r->next].prev = c.left;
        r->len = 0;
        try_pair(e, l->prev, c.left);
        try_pair(e, c.left, l->next);
    }
    for (int32_t k = begin; k >= 0; k = sym[k].next) {
        const char *p = e->text + sym[k].start;
        int32_t id = lookup(tok, p, sym[k].len);
        if (id >= 0) {
            v[n++] = id;
        } else if (tok->byte_fallback) {
            for (uint32_t b = 0; b < sym[k].len; b++)
                v[n++] = tok->byte_id[(unsigned char)p[b]];
        } else {
            v[n++] = tok->unk_id;
        }
    }
    return n;
}

elm_status elm_tokenize(const elm_tokenizer *tok, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids)
{
    if (!tok || !ids || !n_ids || (!text && len > 0))
        return ELM_E_INVALID;
    *ids = NULL;
    *n_ids = 0;
    if (len > MAX_TEXT_BYTES)
        return ELM_E_INVALID;

    char *norm = malloc(3 * len + SPACE_SYM_LEN + 1);
    struct sym *sym = malloc((len + 1) * sizeof *sym);
    if (!norm || !sym) {
        free(norm);
        free(sym);
        return ELM_E_NOMEM;
    }
    size_t n_sym;
    size_t norm_len = normalize(tok, (const unsigned char *)text, len, norm, sym, &n_sym);

    /* Every id covers at least one byte of the normalized text. */
    int32_t *v = malloc((norm_len + 1) * sizeof *v);
    if (!v) {
        free(norm);
        free(sym);
        return ELM_E_NOMEM;
    }
    size_t n = 0;
    if (add_bos && tok->bos_id >= 0)
        v[n++] = tok->bos_id;
    struct encoder e = {.tok = tok, .text = norm, .sym = sym};
    size_t seg = 0;
    for (size_t k = 1; k <= n_sym && !e.nomem; k++) {
        if (k < n_sym && !(tok->split_words && is_space(norm, &sym[k]) &&
                           !is_space(norm, &sym[k - 1])))
            continue;
        n = encode_segment(&e, (int32_t)seg, (int32_t)k, v, n);
        seg = k;
    }
    free(e.heap.v);
    if (e.nomem) {
        free(v);
        free(norm);
        free(sym);
        return ELM_E_NOMEM;
    }
    free(norm);
    free(sym);
    *ids = v;
    *n_ids = n;
    return ELM_OK;
}

/* ---- Decoding ---------------------------------------------------------- */

struct sink {
    char *buf;
    size_t len, cap; /* cap excludes the NUL */
    bool grow;
    bool nomem;
};

static void sink_put(struct sink *k, const char *p, size_t n)
{
    if (k->len + n > k->cap) {
        if (!k->grow) {
            n = k->cap - k->len; /* a fixed buffer truncates */
        } else {
            size_t cap = k->cap ? k->cap : 64;
            while (cap < k->len + n)
                cap *= 2;
            char *b = realloc(k->buf, cap + 1);
            if (!b) {
                k->nomem = true;
                return;
            }
            k->buf = b;
            k->cap = cap;
        }
    }
    memcpy(k->buf + k->len, p, n);
    k->len += n;
}

/* Release what the pending bytes already determine; at the end of a byte run
 * (final) an incomplete sequence is invalid: one U+FFFD per byte, as
 * sentencepiece's ProcessBytePieces does. */
static void stream_resolve(struct elm_detok_stream *s, struct sink *k, bool final)
{
    while (s->n_pending > 0) {
        int st = utf8_prefix(s->pending, (size_t)s->n_pending);
        int used;
        if (st > 0) {
            sink_put(k, (const char *)s->pending, (size_t)st);
            used = st;
        } else if (st == 0 && !final) {
            return;
        } else {
            sink_put(k, REPLACEMENT, 3);
            used = 1;
        }
        memmove(s->pending, s->pending + used, (size_t)(s->n_pending - used));
        s->n_pending -= used;
    }
}

static void stream_id(struct elm_detok_stream *s, int32_t id, struct sink *k)
{
    const elm_tokenizer *tok = s->tok;
    if (!tok || id < 0 || id >= tok->n)
        return;
    uint8_t type = tok->type[id];
    if (type == ELM_PIECE_BYTE) {
        s->pending[s->n_pending++] = (unsigned char)tok->byte_of[id];
        s->started = true;
        stream_resolve(s, k, false);
        return;
    }
    stream_resolve(s, k, true);
    if (type == ELM_PIECE_CONTROL)
        return;
    if (type == ELM_PIECE_UNKNOWN) {
        sink_put(k, UNK_SURFACE, sizeof UNK_SURFACE - 1);
        s->started = true;
        return;
    }
    const char *p = tok->arena + tok->off[id];
    const char *end = p + tok->len[id];
    /* Only the very first piece loses its dummy-prefix space. */
    if (!s->started && (tok->add_dummy_prefix || tok->remove_extra_ws) &&
        end - p >= SPACE_SYM_LEN && memcmp(p, SPACE_SYM, SPACE_SYM_LEN) == 0)
        p += SPACE_SYM_LEN;
    s->started = true;
    while (p < end) {
        const char *q = p;
        while (q < end && !(end - q >= SPACE_SYM_LEN && memcmp(q, SPACE_SYM, SPACE_SYM_LEN) == 0))
            q++;
        sink_put(k, p, (size_t)(q - p));
        if (q < end) {
            sink_put(k, " ", 1);
            q += SPACE_SYM_LEN;
        }
        p = q;
    }
}

void elm_detok_stream_init(struct elm_detok_stream *s, const elm_tokenizer *tok)
{
    memset(s, 0, sizeof *s);
    s->tok = tok;
}

size_t elm_detok_stream_push(struct elm_detok_stream *s, int32_t id, char *out, size_t out_size)
{
    if (!out || out_size == 0)
        return 0;
    struct sink k = {out, 0, out_size - 1, false, false};
    stream_id(s, id, &k);
    out[k.len] = '\0';
    return k.len;
}

size_t elm_detok_stream_flush(struct elm_detok_stream *s, char *out, size_t out_size)
{
    if (!out || out_size == 0)
        return 0;
    struct sink k = {out, 0, out_size - 1, false, false};
    stream_resolve(s, &k, true);
    out[k.len] = '\0';
    return k.len;
}

elm_status elm_detokenize(const elm_tokenizer *tok, const int32_t *ids, size_t n_ids, char **text,
                          size_t *len)
{
    if (!tok || !text || !len || (!ids && n_ids > 0))
        return ELM_E_INVALID;
    *text = NULL;
    *len = 0;
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= tok->n)
            return ELM_E_INVALID;
    struct sink k = {malloc(65), 0, 64, true, false};
    if (!k.buf)
        return ELM_E_NOMEM;
    struct elm_detok_stream s;
    elm_detok_stream_init(&s, tok);
    for (size_t i = 0; i < n_ids && !k.nomem; i++)
        stream_id(&s, ids[i], &k);
    stream_resolve(&s, &k, true);
    if (k.nomem) {
        free(k.buf);
        return ELM_E_NOMEM;
    }
    k.buf[k.len] = '\0';
    *text = k.buf;
    *len = k.len;
    return ELM_OK;
}
