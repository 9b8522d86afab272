/* tokens.c: the token trie of a tokenizer (built once, kept with it) and
 * a grammar over its ids: one id's check walks its bytes through the
 * matcher, a full mask walks the trie in preorder, skipping the subtree of
 * every prefix the grammar refuses.  Masks are cached per matcher state: a
 * reply revisits the same few states (inside a string, between fields). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/grammar/grammar.h"
#include "engine/grammar/tokens.h"
#include "engine/tokenizer/bpe.h"

/* ---- the trie (immutable, shared by every reply of the tokenizer) */

struct gtrie {
    int n_vocab;
    uint32_t n_nodes;
    uint8_t *byte;       /* [n_nodes] the byte into node i */
    uint16_t *depth;     /* [n_nodes] 0: a child of the root */
    uint32_t *end;       /* [n_nodes] first node after i's subtree */
    uint32_t *tok_first; /* [n_nodes + 1] ids ending at node i: toks[tok_first[i] ..] */
    int32_t *toks;
    uint32_t *tb_off;    /* [n_vocab + 1] the text bytes of each id */
    uint8_t *tb;
    bool strips;         /* the first piece loses its leading space */
    uint16_t max_depth;
};

static void trie_free(void *p)
{
    struct gtrie *t = p;
    if (!t)
        return;
    free(t->byte);
    free(t->depth);
    free(t->end);
    free(t->tok_first);
    free(t->toks);
    free(t->tb_off);
    free(t->tb);
    free(t);
}

static const struct gtrie *sort_trie; /* qsort has no user pointer */

static int by_bytes(const void *a, const void *b)
{
    const struct gtrie *t = sort_trie;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = t->tb_off[x + 1] - t->tb_off[x], ly = t->tb_off[y + 1] - t->tb_off[y];
    int c = memcmp(t->tb + t->tb_off[x], t->tb + t->tb_off[y], lx < ly ? lx : ly);
    if (c)
        return c;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return (x > y) - (x < y);
}

/* The bytes an id adds to the text: a piece with U+2581 as spaces, a byte
 * piece's byte; nothing for control, unknown and unused pieces (never
 * allowed by a grammar). */
static size_t piece_bytes(const elm_tokenizer *tok, int32_t id, uint8_t *out)
{
    int type = elm_tokenizer_type(tok, id);
    const char *p = elm_tokenizer_piece(tok, id);
    if (!p)
        return 0;
    if (type == ELM_PIECE_BYTE) {
        unsigned v;
        if (strlen(p) == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>') {
            v = 0;
            for (int i = 3; i < 5; i++) {
                int c = p[i];
                v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
            }
            out[0] = (uint8_t)v;
            return 1;
        }
        return 0;
    }
    if (type != ELM_PIECE_NORMAL && type != ELM_PIECE_USER_DEFINED)
        return 0;
    size_t n = 0;
    for (size_t i = 0; p[i];) {
        if ((unsigned char)p[i] == 0xE2 && (unsigned char)p[i + 1] == 0x96 &&
            (unsigned char)p[i + 2] == 0x81) {
            out[n++] = ' ';
            i += 3;
        } else {
            out[n++] = (uint8_t)p[i++];
        }
    }
    return n;
}

static void *trie_build(const elm_tokenizer *tok)
{
    int nv = elm_tokenizer_n_vocab(tok);
    struct gtrie *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->n_vocab = nv;
    t->strips = elm_tokenizer_strips_first_space(tok);
    size_t total = 0;
    for (int i = 0; i < nv; i++) {
        const char *p = elm_tokenizer_piece(tok, i);
        total += p ? strlen(p) : 0;
    }
    t->tb_off = malloc(((size_t)nv + 1) * sizeof *t->tb_off);
    t->tb = malloc(total + 1);
    int32_t *order = malloc((size_t)nv * sizeof *order);
    if (!t->tb_off || !t->tb || !order)
        goto fail;
    size_t at = 0;
    int n_text = 0;
    for (int i = 0; i < nv; i++) {
        t->tb_off[i] = (uint32_t)at;
        size_t n = piece_bytes(tok, i, t->tb + at);
        at += n;
        if (n > 0 && n < 65535)
            order[n_text++] = i;
    }
    t->tb_off[nv] = (uint32_t)at;
    sort_trie = t;
    qsort(order, (size_t)n_text, sizeof *order, by_bytes);
    /* at most one node per byte of the sorted pieces */
    t->byte = malloc(at + 1);
    t->depth = malloc((at + 1) * sizeof *t->depth);
    t->end = malloc((at + 1) * sizeof *t->end);
    t->tok_first = malloc((at + 2) * sizeof *t->tok_first);
    t->toks = malloc(((size_t)n_text + 1) * sizeof *t->toks);
    uint32_t path[65536 / 64]; /* node of each depth on the current path */
    if (!t->byte || !t->depth || !t->end || !t->tok_first || !t->toks)
        goto fail;
    uint32_t n_nodes = 0, path_len = 0, n_kept = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    /* sorted bytes, shorter first, is the trie's preorder: the ids of a
     * node are consecutive, and in node order */
    for (int k = 0; k < n_text; k++) {
        int32_t id = order[k];
        const uint8_t *b = t->tb + t->tb_off[id];
        uint32_t len = t->tb_off[id + 1] - t->tb_off[id];
        if (len > sizeof path / sizeof *path)
            continue; /* a piece of over 1024 bytes: never allowed */
        uint32_t common = 0;
        while (common < len && common < prev_len && b[common] == prev[common])
            common++;
        while (path_len > common) /* close the nodes that end here */
            t->end[path[--path_len]] = n_nodes;
        for (uint32_t d = common; d < len; d++) {
            t->byte[n_nodes] = b[d];
            t->depth[n_nodes] = (uint16_t)d;
            t->tok_first[n_nodes] = n_kept;
            if (d + 1 > t->max_depth)
                t->max_depth = (uint16_t)(d + 1);
            path[path_len++] = n_nodes++;
        }
        t->toks[n_kept++] = id;
        prev = b;
        prev_len = len;
    }
    while (path_len > 0)
        t->end[path[--path_len]] = n_nodes;
    t->n_nodes = n_nodes;
    /* node i's ids: from its own first to the next node's first */
    t->tok_first[n_nodes] = n_kept;
    free(order);
    return t;
fail:
    free(order);
    trie_free(t);
    return NULL;
}

/* ---- a grammar over ids (one reply) */

#define MASK_CACHE 32

struct cached_mask {
    uint32_t state; /* GSTATE_DEAD: empty slot */
    bool strip;
    int n_allowed;
    uint64_t used;
    uint32_t *bits;
};

struct gtokens {
    const struct gtrie *trie;
    gmatcher *m;
    uint32_t state;
    bool started; /* something was output (the first piece strips its space) */
    const elm_tokenizer *tok;
    int32_t *end_ids;
    int n_end_ids;
    uint32_t words;
    uint32_t *walk_state; /* [max_depth + 1] */
    struct cached_mask cache[MASK_CACHE];
    uint64_t clock;
    struct gtokens_stats stats;
};

struct gtokens *gtokens_new(const elm_grammar *g, const elm_tokenizer *tok, const int32_t *end_ids,
                            int n_end_ids)
{
    const struct gtrie *trie = elm_tokenizer_companion(tok, trie_build, trie_free);
    if (!trie || !g)
        return NULL;
    struct gtokens *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->trie = trie;
    t->tok = tok;
    t->words = ((uint32_t)trie->n_vocab + 31) / 32;
    t->m = gmatcher_new(g);
    t->end_ids = malloc(((size_t)n_end_ids + 1) * sizeof *t->end_ids);
    t->walk_state = malloc(((size_t)trie->max_depth + 2) * sizeof *t->walk_state);
    if (!t->m || !t->end_ids || !t->walk_state) {
        gtokens_free(t);
        return NULL;
    }
    if (n_end_ids > 0)
        memcpy(t->end_ids, end_ids, (size_t)n_end_ids * sizeof *end_ids);
    t->n_end_ids = n_end_ids;
    for (int i = 0; i < MASK_CACHE; i++)
        t->cache[i].state = GSTATE_DEAD;
    t->state = gmatcher_start(t->m);
    return t;
}

void gtokens_free(struct gtokens *t)
{
    if (!t)
        return;
    gmatcher_free(t->m);
    free(t->end_ids);
    free(t->walk_state);
    for (int i = 0; i < MASK_CACHE; i++)
        free(t->cache[i].bits);
    free(t);
}

static bool is_end_id(const struct gtokens *t, int32_t id)
{
    for (int i = 0; i < t->n_end_ids; i++)
        if (t->end_ids[i] == id)
            return true;
    return false;
}

static bool strip_now(const struct gtokens *t)
{
    return t->trie->strips && !t->started;
}

/* The state after id from state s (GSTATE_DEAD: refused).  The detokenizer
 * (elm_detok_stream) completes a character only from byte pieces: a piece
 * may neither follow nor leave a character unfinished. */
static uint32_t after(struct gtokens *t, uint32_t s, int32_t id, bool strip)
{
    const struct gtrie *tr = t->trie;
    if (id < 0 || id >= tr->n_vocab)
        return GSTATE_DEAD;
    bool byte_piece = elm_tokenizer_type(t->tok, id) == ELM_PIECE_BYTE;
    if (!byte_piece && gmatcher_partial(t->m, s))
        return GSTATE_DEAD;
    const uint8_t *b = tr->tb + tr->tb_off[id];
    size_t n = tr->tb_off[id + 1] - tr->tb_off[id];
    if (strip && n > 0 && b[0] == ' ' && elm_tokenizer_type(t->tok, id) != ELM_PIECE_BYTE) {
        b++;
        n--;
    }
    if (n == 0)
        return GSTATE_DEAD; /* no text: control pieces, a lone stripped space */
    uint32_t next = gmatcher_advance_bytes(t->m, s, b, n);
    if (!byte_piece && gmatcher_partial(t->m, next))
        return GSTATE_DEAD;
    return next;
}

bool gtokens_allows(struct gtokens *t, int32_t id)
{
    t->stats.checks++;
    if (t->state == GSTATE_DEAD)
        return false;
    if (is_end_id(t, id))
        return gmatcher_accepting(t->m, t->state);
    return after(t, t->state, id, strip_now(t)) != GSTATE_DEAD;
}

static void set_bit(uint32_t *bits, int32_t id)
{
    bits[id >> 5] |= 1u << (id & 31);
}

/* Walk the trie from the current state: every id whose bytes the grammar
 * takes. */
static int walk(struct gtokens *t, uint32_t *bits, bool strip)
{
    const struct gtrie *tr = t->trie;
    uint32_t *st = t->walk_state;
    st[0] = t->state;
    int n = 0;
    bool inside_char = gmatcher_partial(t->m, t->state);
    for (uint32_t i = 0; i < tr->n_nodes;) {
        uint32_t d = tr->depth[i];
        bool skip_space = strip && d == 0 && tr->byte[i] == ' ';
        uint32_t s = skip_space ? st[0] : gmatcher_advance(t->m, st[d], tr->byte[i]);
        if (s == GSTATE_DEAD) {
            if (gmatcher_error(t->m))
                return -1;
            i = tr->end[i];
            continue;
        }
        st[d + 1] = s;
        bool ends_inside = gmatcher_partial(t->m, s);
        for (uint32_t k = tr->tok_first[i]; k < tr->tok_first[i + 1]; k++) {
            int32_t id = tr->toks[k];
            if (skip_space)
                continue; /* a lone space stripped is no text; <0x20> below */
            /* inside a character, or leaving one unfinished: byte pieces only */
            if ((inside_char || ends_inside) && elm_tokenizer_type(t->tok, id) != ELM_PIECE_BYTE)
                continue;
            set_bit(bits, id);
            n++;
        }
        /* inside a character only byte pieces (one byte, depth 0) may come */
        i = inside_char ? tr->end[i] : i + 1;
    }
    if (strip) { /* the byte piece <0x20> keeps its space */
        for (int32_t id = 0; id < tr->n_vocab; id++) {
            if (elm_tokenizer_type(t->tok, id) == ELM_PIECE_BYTE &&
                tr->tb_off[id + 1] - tr->tb_off[id] == 1 && tr->tb[tr->tb_off[id]] == ' ' &&
                gmatcher_advance(t->m, st[0], ' ') != GSTATE_DEAD) {
                set_bit(bits, id);
                n++;
            }
        }
    }
    return n;
}

const uint32_t *gtokens_mask(struct gtokens *t, int *n_allowed)
{
    t->stats.masks++;
    bool strip = strip_now(t);
    t->clock++;
    struct cached_mask *slot = &t->cache[0];
    for (int i = 0; i < MASK_CACHE; i++) {
        struct cached_mask *c = &t->cache[i];
        if (c->state == t->state && c->strip == strip && c->bits) {
            c->used = t->clock;
            *n_allowed = c->n_allowed;
            return c->bits;
        }
        if (c->used < slot->used)
            slot = c;
    }
    if (!slot->bits && !(slot->bits = malloc(t->words * sizeof *slot->bits)))
        return NULL;
    memset(slot->bits, 0, t->words * sizeof *slot->bits);
    slot->state = GSTATE_DEAD;
    int n = 0;
    if (t->state != GSTATE_DEAD) {
        t->stats.walks++;
        n = walk(t, slot->bits, strip);
        if (n < 0)
            return NULL;
        if (gmatcher_accepting(t->m, t->state)) {
            for (int i = 0; i < t->n_end_ids; i++) {
                int32_t id = t->end_ids[i];
                if (id >= 0 && id < t->trie->n_vocab &&
                    !(slot->bits[id >> 5] >> (id & 31) & 1)) {
                    set_bit(slot->bits, id);
                    n++;
                }
            }
        }
    }
    slot->state = t->state;
    slot->strip = strip;
    slot->n_allowed = n;
    slot->used = t->clock;
    *n_allowed = n;
    return slot->bits;
}

const uint32_t *gtokens_few(struct gtokens *t, int max_first_bytes, int max_ids, int *n_allowed)
{
    bool non_ascii = false;
    int first = gmatcher_first_bytes(t->m, t->state, &non_ascii);
    if (first < 0 || non_ascii || first > max_first_bytes)
        return NULL;
    int n = 0;
    const uint32_t *mask = gtokens_mask(t, &n);
    if (!mask || n > max_ids)
        return NULL;
    *n_allowed = n;
    return mask;
}

bool gtokens_take(struct gtokens *t, int32_t id)
{
    if (is_end_id(t, id))
        return gmatcher_accepting(t->m, t->state);
    t->state = after(t, t->state, id, strip_now(t));
    int type = elm_tokenizer_type(t->tok, id);
    if (type != ELM_PIECE_CONTROL)
        t->started = true;
    return t->state != GSTATE_DEAD;
}

int gtokens_prefix_allowed(struct gtokens *t, const int32_t *ids, int n)
{
    uint32_t s = t->state;
    bool strip = strip_now(t);
    for (int i = 0; i < n; i++) {
        if (is_end_id(t, ids[i]))
            return i; /* a draft never ends the reply */
        s = after(t, s, ids[i], strip);
        if (s == GSTATE_DEAD)
            return i;
        strip = false;
    }
    return n;
}

bool gtokens_complete(const struct gtokens *t)
{
    return gmatcher_accepting(t->m, t->state);
}

const char *gtokens_error(const struct gtokens *t)
{
    return gmatcher_error(t->m);
}

struct gtokens_stats gtokens_stats(const struct gtokens *t)
{
    return t->stats;
}
