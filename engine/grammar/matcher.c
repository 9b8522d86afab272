/* matcher.c: matching bytes against a grammar (grammar.h).
 *
 * A parse stack is a chain of nodes (element position, parent node),
 * hash-consed so that equal stacks are one node and stacks share their
 * tails.  The top of every live stack is a character-class element; node 0
 * is the empty stack (the match is complete).  A matcher state is an
 * interned sorted set of stacks plus the bytes of an unfinished UTF-8
 * character, and each (state, byte) transition is computed once: a token
 * trie walk or a token check is then mostly table lookups.  Where every
 * stack takes all of the characters an unfinished one may still become, or
 * none (inside a JSON string: any character but a few ASCII ones), its
 * bytes do not matter and are not kept (PARTIAL_ANY): a walk over the
 * vocabulary's multibyte pieces then meets a few states, not thousands. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/grammar/grammar.h"

struct gnode {
    uint32_t pos, parent;
    uint32_t exp_off, exp_n; /* expansion: stacks with a character on top */
};
#define EXP_NONE UINT32_MAX
#define EXP_BUSY (UINT32_MAX - 1)

struct gst {
    uint32_t off, n;     /* its stacks, in m->sets */
    uint32_t partial;    /* bits of the unfinished character */
    uint8_t need, len;   /* continuation bytes still to come; its length */
    uint32_t hash;
    uint64_t ascii[2];   /* the ASCII bytes some stack takes (none inside a
                          * character): every other ASCII byte is refused
                          * without a step (most of a trie walk's bytes) */
    bool non_ascii;      /* some stack takes a character past ASCII */
    uint32_t *dense;     /* [256] its transitions once known (a trie walk's
                          * inner loop), DENSE_UNKNOWN until computed */
};
#define DENSE_UNKNOWN (UINT32_MAX - 1)
/* gst.partial of a character whose every completion every stack takes (the
 * stacks that take none dropped): its bits are not kept */
#define PARTIAL_ANY UINT32_MAX
#define DENSE_STATES 65536 /* states with a dense row at most (64 MiB) */

struct slot64 {
    uint64_t key; /* 0: empty */
    uint32_t val;
};

struct table { /* open addressing, uint64 keys (never 0) */
    struct slot64 *s;
    uint32_t mask, n;
};

struct gmatcher {
    const elm_grammar *g;
    struct gnode *nodes;
    uint32_t n_nodes, cap_nodes;
    struct table cons;   /* (pos, parent) -> node */
    uint32_t *exp;       /* expansion pool */
    uint32_t n_exp, cap_exp;
    struct gst *states;
    uint32_t n_states, cap_states;
    uint32_t *sets;      /* stack sets of the states */
    uint32_t n_sets, cap_sets;
    uint32_t *state_tab; /* state hash index: state id + 1, 0 empty */
    uint32_t state_mask;
    struct table step;   /* (state, byte) -> state */
    uint32_t *scratch;   /* building a set */
    uint32_t n_scratch, cap_scratch;
    uint32_t *stamp;     /* [cap_stamp] dedupe while building */
    uint32_t cap_stamp, cur_stamp;
    const char *error;
};

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    return grammar_grow(p, cap, need, size, 64);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static bool table_init(struct table *t, uint32_t cap)
{
    t->s = calloc(cap, sizeof *t->s);
    t->mask = cap - 1;
    t->n = 0;
    return t->s != NULL;
}

static struct slot64 *table_find(const struct table *t, uint64_t key)
{
    for (uint64_t i = mix64(key);; i++) {
        struct slot64 *s = &t->s[i & t->mask];
        if (s->key == key || s->key == 0)
            return s;
    }
}

static bool table_put(struct table *t, uint64_t key, uint32_t val)
{
    if ((t->n + 1) * 2 > t->mask + 1) {
        struct table bigger;
        if (!table_init(&bigger, (t->mask + 1) * 2))
            return false;
        for (uint32_t i = 0; i <= t->mask; i++)
            if (t->s[i].key)
                *table_find(&bigger, t->s[i].key) = t->s[i];
        bigger.n = t->n;
        free(t->s);
        *t = bigger;
    }
    struct slot64 *s = table_find(t, key);
    if (s->key == 0)
        t->n++;
    s->key = key;
    s->val = val;
    return true;
}

static uint32_t fail(gmatcher *m, const char *why)
{
    if (!m->error)
        m->error = why;
    return GSTATE_DEAD;
}

#define NO_MEMORY "out of memory while matching the grammar"
#define TOO_MANY_NODES \
    "the grammar's parse states exploded (over 4194304 stack nodes in one reply)"
#define TOO_MANY_STACKS \
    "the grammar is too ambiguous (over 4096 parse stacks alive at one point)"

/* The node for stack (pos, parent), where an alternative ending at pos
 * (END/ALT) is its parent: a finished rule leaves nothing on the stack. */
static uint32_t cons(gmatcher *m, uint32_t pos, uint32_t parent)
{
    uint32_t k = m->g->el[pos].kind;
    if (k == GEL_END || k == GEL_ALT)
        return parent;
    uint64_t key = ((uint64_t)pos + 1) << 32 | parent;
    struct slot64 *s = table_find(&m->cons, key);
    if (s->key)
        return s->val;
    if (m->n_nodes >= GRAMMAR_MAX_NODES)
        return fail(m, TOO_MANY_NODES);
    if (!grow((void **)&m->nodes, &m->cap_nodes, m->n_nodes + 1, sizeof *m->nodes))
        return fail(m, NO_MEMORY);
    if (m->cap_stamp < m->cap_nodes) {
        uint32_t *st = realloc(m->stamp, (size_t)m->cap_nodes * sizeof *st);
        if (!st)
            return fail(m, NO_MEMORY);
        memset(st + m->cap_stamp, 0, (size_t)(m->cap_nodes - m->cap_stamp) * sizeof *st);
        m->stamp = st;
        m->cap_stamp = m->cap_nodes;
    }
    uint32_t id = m->n_nodes++;
    m->nodes[id] = (struct gnode){pos, parent, 0, EXP_NONE};
    if (!table_put(&m->cons, key, id))
        return fail(m, NO_MEMORY);
    return id;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The stacks node n stands for once every rule on its top is opened:
 * those with a character class on top, and node 0 when it can be empty. */
static bool expand(gmatcher *m, uint32_t n)
{
    if (n == GSTATE_DEAD)
        return false;
    struct gnode *nd = &m->nodes[n];
    if (nd->exp_n == EXP_BUSY)
        return fail(m, "left recursion while matching"), false;
    if (nd->exp_n != EXP_NONE)
        return true;
    if (n == 0 || m->g->el[nd->pos].kind == GEL_CHARS) {
        if (!grow((void **)&m->exp, &m->cap_exp, m->n_exp + 1, sizeof *m->exp))
            return fail(m, NO_MEMORY), false;
        m->exp[m->n_exp] = n;
        m->nodes[n].exp_off = m->n_exp++;
        m->nodes[n].exp_n = 1;
        return true;
    }
    nd->exp_n = EXP_BUSY;
    uint32_t pos = nd->pos, parent = nd->parent;
    const elm_grammar *g = m->g;
    uint32_t r = g->el[pos].arg;
    uint32_t cont = cons(m, pos + 1, parent);
    if (cont == GSTATE_DEAD)
        return false;
    /* the children's lists, gathered, then sorted and deduplicated */
    uint32_t *acc = NULL, n_acc = 0, cap_acc = 0;
    for (uint32_t k = g->alt_off[r]; k < g->alt_off[r + 1]; k++) {
        uint32_t child = cons(m, g->alt_pos[k], cont);
        if (child == GSTATE_DEAD || !expand(m, child)) {
            free(acc);
            return false;
        }
        struct gnode *c = &m->nodes[child];
        if (!grow((void **)&acc, &cap_acc, n_acc + c->exp_n, sizeof *acc)) {
            free(acc);
            return fail(m, NO_MEMORY), false;
        }
        memcpy(acc + n_acc, m->exp + c->exp_off, c->exp_n * sizeof *acc);
        n_acc += c->exp_n;
    }
    qsort(acc, n_acc, sizeof *acc, cmp_u32);
    uint32_t u = 0;
    for (uint32_t i = 0; i < n_acc; i++)
        if (u == 0 || acc[u - 1] != acc[i])
            acc[u++] = acc[i];
    if (u > GRAMMAR_MAX_STACKS) {
        free(acc);
        return fail(m, TOO_MANY_STACKS), false;
    }
    if (!grow((void **)&m->exp, &m->cap_exp, m->n_exp + u, sizeof *m->exp)) {
        free(acc);
        return fail(m, NO_MEMORY), false;
    }
    memcpy(m->exp + m->n_exp, acc, u * sizeof *acc);
    free(acc);
    m->nodes[n].exp_off = m->n_exp;
    m->nodes[n].exp_n = u;
    m->n_exp += u;
    return true;
}

static uint32_t hash_set(const uint32_t *v, uint32_t n, uint32_t partial, uint32_t need)
{
    uint64_t h = mix64(((uint64_t)partial << 8 | need) + 0x9e3779b97f4a7c15ull);
    for (uint32_t i = 0; i < n; i++)
        h = mix64(h ^ v[i]);
    return (uint32_t)h;
}

static bool rehash_states(gmatcher *m, uint32_t cap)
{
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (uint32_t i = 0; i < m->n_states; i++) {
        uint32_t j = m->states[i].hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = i + 1;
    }
    free(m->state_tab);
    m->state_tab = t;
    m->state_mask = cap - 1;
    return true;
}

/* The state of stacks v[0..n) (sorted, distinct) and a partial character. */
static uint32_t intern(gmatcher *m, const uint32_t *v, uint32_t n, uint32_t partial,
                       uint8_t need, uint8_t len)
{
    uint32_t h = hash_set(v, n, partial, need);
    uint32_t j = h & m->state_mask;
    for (; m->state_tab[j]; j = (j + 1) & m->state_mask) {
        const struct gst *s = &m->states[m->state_tab[j] - 1];
        if (s->hash == h && s->n == n && s->partial == partial && s->need == need &&
            s->len == len && memcmp(m->sets + s->off, v, n * sizeof *v) == 0)
            return m->state_tab[j] - 1;
    }
    if ((m->n_states + 1) * 2 > m->state_mask + 1) {
        if (!rehash_states(m, (m->state_mask + 1) * 2))
            return fail(m, NO_MEMORY);
        return intern(m, v, n, partial, need, len);
    }
    if (!grow((void **)&m->states, &m->cap_states, m->n_states + 1, sizeof *m->states) ||
        !grow((void **)&m->sets, &m->cap_sets, m->n_sets + n, sizeof *m->sets))
        return fail(m, NO_MEMORY);
    /* v may be m->scratch: copy before anything moves */
    memcpy(m->sets + m->n_sets, v, n * sizeof *v);
    uint32_t id = m->n_states++;
    m->states[id] = (struct gst){m->n_sets, n, partial, need, len, h, {0, 0}, false, NULL};
    for (uint32_t i = 0; need == 0 && i < n; i++) {
        uint32_t node = m->sets[m->n_sets + i];
        if (node == 0)
            continue;
        const struct gcharset *cs = &m->g->cs[m->g->el[m->nodes[node].pos].arg];
        m->states[id].ascii[0] |= cs->ascii[0];
        m->states[id].ascii[1] |= cs->ascii[1];
        if (!m->states[id].non_ascii && gcharset_meets(m->g, cs, 0x80, 0x10FFFF))
            m->states[id].non_ascii = true;
    }
    m->n_sets += n;
    m->state_tab[j] = id + 1;
    return id;
}

gmatcher *gmatcher_new(const elm_grammar *g)
{
    gmatcher *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->g = g;
    m->state_tab = calloc(256, sizeof *m->state_tab);
    m->state_mask = 255;
    if (!m->state_tab || !table_init(&m->cons, 1024) || !table_init(&m->step, 4096) ||
        !grow((void **)&m->nodes, &m->cap_nodes, 1024, sizeof *m->nodes) ||
        !(m->stamp = calloc(m->cap_nodes, sizeof *m->stamp))) {
        gmatcher_free(m);
        return NULL;
    }
    m->cap_stamp = m->cap_nodes;
    m->nodes[0] = (struct gnode){0, 0, 0, EXP_NONE};
    m->n_nodes = 1;
    return m;
}

void gmatcher_free(gmatcher *m)
{
    if (!m)
        return;
    free(m->nodes);
    free(m->cons.s);
    free(m->exp);
    for (uint32_t i = 0; i < m->n_states; i++)
        free(m->states[i].dense);
    free(m->states);
    free(m->sets);
    free(m->state_tab);
    free(m->step.s);
    free(m->scratch);
    free(m->stamp);
    free(m);
}

const char *gmatcher_error(const gmatcher *m)
{
    return m->error;
}

/* Gather the expansion of node n into scratch (deduplicated by stamp). */
static bool gather(gmatcher *m, uint32_t n)
{
    if (!expand(m, n))
        return false;
    const struct gnode *nd = &m->nodes[n];
    for (uint32_t i = 0; i < nd->exp_n; i++) {
        uint32_t s = m->exp[nd->exp_off + i];
        if (m->stamp[s] == m->cur_stamp)
            continue;
        m->stamp[s] = m->cur_stamp;
        if (m->n_scratch >= GRAMMAR_MAX_STACKS)
            return fail(m, TOO_MANY_STACKS), false;
        if (!grow((void **)&m->scratch, &m->cap_scratch, m->n_scratch + 1, sizeof *m->scratch))
            return fail(m, NO_MEMORY), false;
        m->scratch[m->n_scratch++] = s;
    }
    return true;
}

static void new_stamp(gmatcher *m)
{
    if (++m->cur_stamp == 0) {
        memset(m->stamp, 0, m->cap_stamp * sizeof *m->stamp);
        m->cur_stamp = 1;
    }
    m->n_scratch = 0;
}

uint32_t gmatcher_start(gmatcher *m)
{
    const elm_grammar *g = m->g;
    new_stamp(m);
    for (uint32_t k = g->alt_off[g->root]; k < g->alt_off[g->root + 1]; k++) {
        uint32_t child = cons(m, g->alt_pos[k], 0);
        if (child == GSTATE_DEAD || !gather(m, child))
            return GSTATE_DEAD;
    }
    qsort(m->scratch, m->n_scratch, sizeof *m->scratch, cmp_u32);
    return intern(m, m->scratch, m->n_scratch, 0, 0, 0);
}

/* The stacks of set s after code point cp, or after any character when
 * every stack is known to take it (a PARTIAL_ANY state completed). */
static uint32_t step_stacks(gmatcher *m, const struct gst *st, bool any, uint32_t cp)
{
    const elm_grammar *g = m->g;
    uint32_t off = st->off, n = st->n;
    new_stamp(m);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = m->sets[off + i];
        if (id == 0)
            continue;
        uint32_t pos = m->nodes[id].pos;
        if (!any && !gcharset_has(g, &g->cs[g->el[pos].arg], cp))
            continue;
        uint32_t next = cons(m, pos + 1, m->nodes[id].parent);
        if (next == GSTATE_DEAD || !gather(m, next))
            return GSTATE_DEAD;
    }
    if (m->n_scratch == 0)
        return GSTATE_DEAD;
    qsort(m->scratch, m->n_scratch, sizeof *m->scratch, cmp_u32);
    return intern(m, m->scratch, m->n_scratch, 0, 0, 0);
}

/* st's stacks, unchanged, with another unfinished character. */
static uint32_t same_stacks(gmatcher *m, const struct gst *st, uint32_t partial, uint8_t need,
                            uint8_t len)
{
    /* copy: intern may move m->sets */
    uint32_t n = st->n;
    if (!grow((void **)&m->scratch, &m->cap_scratch, n ? n : 1, sizeof *m->scratch))
        return fail(m, NO_MEMORY);
    memcpy(m->scratch, m->sets + st->off, n * sizeof *m->scratch);
    return intern(m, m->scratch, n, partial, need, len);
}

/* Can some stack of st take a character in [lo, hi]? */
static bool can_take(const gmatcher *m, const struct gst *st, uint32_t lo, uint32_t hi)
{
    const elm_grammar *g = m->g;
    for (uint32_t i = 0; i < st->n; i++) {
        uint32_t id = m->sets[st->off + i];
        if (id && gcharset_meets(g, &g->cs[g->el[m->nodes[id].pos].arg], lo, hi))
            return true;
    }
    return false;
}

static const uint32_t min_of_len[5] = {0, 0, 0x80, 0x800, 0x10000};

/* partial_any's answer where some stack takes part of the range */
#define BITS_MATTER (UINT32_MAX - 1)

/* The state of st's stacks that take every character in [lo, hi] (a
 * range of valid characters), unfinished by need bytes: PARTIAL_ANY when
 * every other stack takes none of them, else BITS_MATTER. */
static uint32_t partial_any(gmatcher *m, const struct gst *st, uint32_t lo, uint32_t hi,
                            uint8_t need, uint8_t len)
{
    const elm_grammar *g = m->g;
    uint32_t n = 0;
    if (!grow((void **)&m->scratch, &m->cap_scratch, st->n ? st->n : 1, sizeof *m->scratch))
        return fail(m, NO_MEMORY);
    for (uint32_t i = 0; i < st->n; i++) {
        uint32_t id = m->sets[st->off + i];
        if (id == 0)
            continue;
        const struct gcharset *cs = &g->cs[g->el[m->nodes[id].pos].arg];
        if (gcharset_covers(g, cs, lo, hi))
            m->scratch[n++] = id; /* in order: the set stays sorted */
        else if (gcharset_meets(g, cs, lo, hi))
            return BITS_MATTER;
    }
    if (n == 0)
        return GSTATE_DEAD;
    return intern(m, m->scratch, n, PARTIAL_ANY, need, len);
}

/* After a partial character: the same stacks, if some can take one of the
 * characters it may still become. */
static uint32_t step_partial(gmatcher *m, uint32_t state, uint32_t v, uint8_t need, uint8_t len)
{
    struct gst st = m->states[state];
    uint32_t lo = v << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
    if (lo >= min_of_len[len] && hi <= 0x10FFFF && (hi < 0xD800 || lo > 0xDFFF)) {
        uint32_t any = partial_any(m, &st, lo, hi, need, len);
        if (any != BITS_MATTER)
            return any;
    }
    if (hi < min_of_len[len] || lo > 0x10FFFF)
        return GSTATE_DEAD;
    if (lo < min_of_len[len])
        lo = min_of_len[len];
    if (hi > 0x10FFFF)
        hi = 0x10FFFF;
    /* surrogates (U+D800-DFFF) are no characters */
    bool below = lo < 0xD800 && can_take(m, &st, lo, hi < 0xD7FF ? hi : 0xD7FF);
    bool above = hi > 0xDFFF && can_take(m, &st, lo > 0xE000 ? lo : 0xE000, hi);
    if (!below && !above)
        return GSTATE_DEAD;
    return same_stacks(m, &st, v, need, len);
}

/* A PARTIAL_ANY state's next continuation byte: every stack takes the
 * character, whichever it is. */
static uint32_t step_any(gmatcher *m, const struct gst *st)
{
    if (st->need > 1)
        return same_stacks(m, st, PARTIAL_ANY, (uint8_t)(st->need - 1), st->len);
    return step_stacks(m, st, true, 0);
}

static uint32_t compute_step(gmatcher *m, uint32_t state, unsigned char b)
{
    struct gst st = m->states[state];
    if (st.need > 0) {
        if ((b & 0xC0) != 0x80)
            return GSTATE_DEAD;
        if (st.partial == PARTIAL_ANY)
            return step_any(m, &st);
        uint32_t v = st.partial << 6 | (b & 0x3Fu);
        if (st.need > 1)
            return step_partial(m, state, v, (uint8_t)(st.need - 1), st.len);
        if (v < min_of_len[st.len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return GSTATE_DEAD;
        return step_stacks(m, &st, false, v);
    }
    if (b < 0x80)
        return step_stacks(m, &st, false, b);
    if (b >= 0xC2 && b <= 0xDF)
        return step_partial(m, state, b & 0x1Fu, 1, 2);
    if (b >= 0xE0 && b <= 0xEF)
        return step_partial(m, state, b & 0x0Fu, 2, 3);
    if (b >= 0xF0 && b <= 0xF4)
        return step_partial(m, state, b & 0x07u, 3, 4);
    return GSTATE_DEAD;
}

uint32_t gmatcher_advance(gmatcher *m, uint32_t state, unsigned char b)
{
    if (state == GSTATE_DEAD)
        return GSTATE_DEAD;
    struct gst *st = &m->states[state];
    if (b < 0x80 && !(st->ascii[b >> 6] >> (b & 63) & 1))
        return GSTATE_DEAD;
    uint32_t *dense = st->dense;
    if (dense && dense[b] != DENSE_UNKNOWN)
        return dense[b];
    /* a row for each state under DENSE_STATES (1 KiB each, at its first
     * step), the hash table beyond: no table to grow (and rehash, a
     * millisecond's stall in one token) for the usual reply */
    if (!dense && state < DENSE_STATES && (dense = malloc(256 * sizeof *dense))) {
        for (int i = 0; i < 256; i++)
            dense[i] = DENSE_UNKNOWN;
        st->dense = dense; /* without memory for it: the table */
    }
    if (dense) {
        uint32_t next = compute_step(m, state, b); /* may move m->states, not the row */
        if (m->error)
            return GSTATE_DEAD;
        dense[b] = next;
        return next;
    }
    uint64_t key = ((uint64_t)state << 8 | b) + 1;
    struct slot64 *s = table_find(&m->step, key);
    if (s->key)
        return s->val;
    uint32_t next = compute_step(m, state, b);
    if (m->error || !table_put(&m->step, key, next))
        return fail(m, NO_MEMORY);
    return next;
}

uint32_t gmatcher_advance_bytes(gmatcher *m, uint32_t state, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n && state != GSTATE_DEAD; i++)
        state = gmatcher_advance(m, state, p[i]);
    return state;
}

bool gmatcher_accepting(const gmatcher *m, uint32_t state)
{
    if (state == GSTATE_DEAD)
        return false;
    const struct gst *st = &m->states[state];
    return st->need == 0 && st->n > 0 && m->sets[st->off] == 0;
}

int gmatcher_first_bytes(const gmatcher *m, uint32_t state, bool *non_ascii)
{
    if (state == GSTATE_DEAD || m->states[state].need > 0)
        return -1;
    const struct gst *st = &m->states[state];
    *non_ascii = st->non_ascii;
    return __builtin_popcountll(st->ascii[0]) + __builtin_popcountll(st->ascii[1]);
}

bool gmatcher_partial(const gmatcher *m, uint32_t state)
{
    return state != GSTATE_DEAD && m->states[state].need > 0;
}

enum elm_grammar_fit elm_grammar_fit(const elm_grammar *g, const char *text, size_t len)
{
    gmatcher *m = g ? gmatcher_new(g) : NULL;
    if (!m)
        return ELM_GRAMMAR_LIMIT;
    uint32_t s = gmatcher_start(m);
    s = gmatcher_advance_bytes(m, s, text, len);
    enum elm_grammar_fit fit = m->error                   ? ELM_GRAMMAR_LIMIT
                               : s == GSTATE_DEAD         ? ELM_GRAMMAR_NO
                               : gmatcher_accepting(m, s) ? ELM_GRAMMAR_MATCH
                                                          : ELM_GRAMMAR_PREFIX;
    gmatcher_free(m);
    return fit;
}
