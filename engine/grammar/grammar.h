/* grammar.h: a compiled GBNF grammar (gbnf.c) and its byte matcher
 * (matcher.c).  Engine-internal; the public face is elm_grammar.h.
 *
 * A grammar is rules of alternatives of sequences of elements; repetition
 * and groups are compiled into rules of their own.  All rules live in one
 * element array: an alternative is a run of REF/CHARS elements ended by ALT
 * (another alternative follows) or END (the rule's last). */
#ifndef ELMCHAT_ENGINE_GRAMMAR_GRAMMAR_H
#define ELMCHAT_ENGINE_GRAMMAR_GRAMMAR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_grammar.h"

enum gel_kind { GEL_END, GEL_ALT, GEL_REF, GEL_CHARS };

struct gel {
    uint32_t kind; /* enum gel_kind */
    uint32_t arg;  /* REF: rule; CHARS: charset */
};

/* Code point ranges [lo, hi] (sorted, merged), or everything outside them. */
struct gcharset {
    uint32_t first, n; /* ranges[first .. first + n) as lo, hi pairs */
    bool neg;
    uint64_t ascii[2]; /* membership of 0..127, negation applied */
};

/* Limits (refused with a message beyond them). */
#define GRAMMAR_MAX_REPEAT 1000        /* m and n of x{m,n} */
#define GRAMMAR_MAX_ELEMENTS (1u << 20) /* after repetition is expanded */
#define GRAMMAR_MAX_STACKS 4096        /* parse stacks alive at one point */
#define GRAMMAR_MAX_NODES (1u << 22)   /* stack nodes one reply may create */

struct elm_grammar {
    atomic_int refs;
    struct gel *el;
    uint32_t n_el;
    uint32_t n_rules;
    uint32_t *alt_off; /* [n_rules + 1] into alt_pos */
    uint32_t *alt_pos; /* element index where each alternative starts */
    struct gcharset *cs;
    uint32_t n_cs;
    uint32_t *ranges;
    uint32_t root;
    char *text; /* the GBNF as parsed (a remote engine is sent it) */
};

/* Does charset c hold code point cp? */
bool gcharset_has(const struct elm_grammar *g, const struct gcharset *c, uint32_t cp);
/* Does c hold every code point in [lo, hi]? */
bool gcharset_covers(const struct elm_grammar *g, const struct gcharset *c, uint32_t lo,
                     uint32_t hi);
/* Does c hold any code point in [lo, hi]? */
bool gcharset_meets(const struct elm_grammar *g, const struct gcharset *c, uint32_t lo,
                    uint32_t hi);

/* ---- the matcher: parse stacks as hash-consed nodes, sets of them
 * interned as states, transitions memoized per (state, byte). */
typedef struct gmatcher gmatcher;
#define GSTATE_DEAD UINT32_MAX

gmatcher *gmatcher_new(const elm_grammar *g);
void gmatcher_free(gmatcher *m);
/* The state before any byte (GSTATE_DEAD with gmatcher_error set on failure). */
uint32_t gmatcher_start(gmatcher *m);
/* The state after byte b, GSTATE_DEAD when the grammar refuses it. */
uint32_t gmatcher_advance(gmatcher *m, uint32_t state, unsigned char b);
uint32_t gmatcher_advance_bytes(gmatcher *m, uint32_t state, const void *bytes, size_t n);
/* May the text end here (a complete match, no partial UTF-8)? */
bool gmatcher_accepting(const gmatcher *m, uint32_t state);
/* How many ASCII bytes may come next (*non_ascii: and some character past
 * ASCII)?  -1 when dead or in the middle of a character. */
int gmatcher_first_bytes(const gmatcher *m, uint32_t state, bool *non_ascii);
/* Is the text in the middle of a UTF-8 character? */
bool gmatcher_partial(const gmatcher *m, uint32_t state);
/* Non-NULL after a limit was hit (the states exploded, memory ran out). */
const char *gmatcher_error(const gmatcher *m);

/* A growable array (gbnf.c): *p holds at least need items of size bytes,
 * doubling from first; false when out of memory. */
bool grammar_grow(void **p, uint32_t *cap, uint32_t need, size_t size, uint32_t first);

#endif
