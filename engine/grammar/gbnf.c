/* gbnf.c: the GBNF parser (llama.cpp's syntax, elm_grammar.h) and the
 * checks that refuse grammars the matcher could not run: undefined rules,
 * left recursion, a root that matches nothing, size limits. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/elm_grammar.h"
#include "engine/grammar/grammar.h"

/* A rule while parsing: its elements (alternatives split by ALT, no END). */
struct prule {
    char *name;
    size_t name_len;
    size_t def_at;  /* offset of its definition, SIZE_MAX: not defined yet */
    size_t used_at; /* offset of its first reference */
    struct gel *el;
    uint32_t n, cap;
};

struct parser {
    const char *s;
    size_t len, pos;
    struct prule *rules;
    uint32_t n_rules, cap_rules;
    uint32_t *ranges;
    uint32_t n_ranges, cap_ranges;
    struct gcharset *cs;
    uint32_t n_cs, cap_cs;
    uint32_t single_cs[128]; /* charset of one ASCII character, +1 (0: none) */
    size_t n_total;          /* elements over all rules */
    char *err;
    size_t err_size;
    elm_status status;
};

/* *p holds at least need items of size bytes (doubling from first). */
bool grammar_grow(void **p, uint32_t *cap, uint32_t need, size_t size, uint32_t first)
{
    if (need <= *cap)
        return true;
    uint32_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    return grammar_grow(p, cap, need, size, 16);
}

static void where(const struct parser *ps, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at && i < ps->len; i++) {
        if (ps->s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)ps->s[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

__attribute__((format(printf, 3, 4))) static bool fail_at(struct parser *ps, size_t at,
                                                          const char *fmt, ...)
{
    if (ps->status != ELM_OK)
        return false;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    where(ps, at, &line, &col);
    ps->status = elm_set_error(ps->err, ps->err_size, ELM_E_FORMAT, "line %d, column %d: %s",
                               line, col, msg);
    return false;
}

static bool nomem(struct parser *ps)
{
    if (ps->status == ELM_OK)
        ps->status = elm_set_error(ps->err, ps->err_size, ELM_E_NOMEM, "out of memory");
    return false;
}

static int peek(const struct parser *ps, size_t off)
{
    return ps->pos + off < ps->len ? (unsigned char)ps->s[ps->pos + off] : -1;
}

static bool is_word(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Blanks and comments; newlines too when newline_ok. */
static void space(struct parser *ps, bool newline_ok)
{
    for (;;) {
        int c = peek(ps, 0);
        if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
            ps->pos++;
        } else if (c == '#') {
            while (peek(ps, 0) >= 0 && peek(ps, 0) != '\n')
                ps->pos++;
        } else {
            return;
        }
    }
}

/* ---- rules and elements */

static int32_t rule_named(struct parser *ps, const char *name, size_t n, size_t at)
{
    for (uint32_t i = 0; i < ps->n_rules; i++)
        if (ps->rules[i].name_len == n && memcmp(ps->rules[i].name, name, n) == 0)
            return (int32_t)i;
    if (!grow((void **)&ps->rules, &ps->cap_rules, ps->n_rules + 1, sizeof *ps->rules))
        return nomem(ps), -1;
    struct prule *r = &ps->rules[ps->n_rules];
    *r = (struct prule){.name = malloc(n + 1), .name_len = n, .def_at = SIZE_MAX, .used_at = at};
    if (!r->name)
        return nomem(ps), -1;
    memcpy(r->name, name, n);
    r->name[n] = '\0';
    return (int32_t)ps->n_rules++;
}

/* A rule of the parser's own (a group, a repetition): parent_N. */
static int32_t new_rule(struct parser *ps, uint32_t parent, size_t at)
{
    char name[96];
    int n = snprintf(name, sizeof name, "%.60s_%u", ps->rules[parent].name, ps->n_rules);
    int32_t r = rule_named(ps, name, (size_t)n, at);
    if (r >= 0)
        ps->rules[r].def_at = at;
    return r;
}

static bool push(struct parser *ps, uint32_t rule, uint32_t kind, uint32_t arg)
{
    if (++ps->n_total > GRAMMAR_MAX_ELEMENTS)
        return fail_at(ps, ps->pos, "the grammar is too large (over %u elements once "
                                    "repetition is expanded)",
                       GRAMMAR_MAX_ELEMENTS);
    struct prule *r = &ps->rules[rule];
    if (!grow((void **)&r->el, &r->cap, r->n + 1, sizeof *r->el))
        return nomem(ps);
    r->el[r->n++] = (struct gel){kind, arg};
    return true;
}

/* ---- character sets */

static int cmp_range(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Intern the ranges from ps->ranges[first..] (pairs) as a charset. */
static int32_t finish_charset(struct parser *ps, uint32_t first, bool neg)
{
    uint32_t n = (ps->n_ranges - first) / 2;
    uint32_t *r = ps->ranges + first;
    if (n > 1) /* "." has no ranges: qsort of a null base is undefined */
        qsort(r, n, 2 * sizeof *r, cmp_range);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (k > 0 && r[2 * i] <= r[2 * (k - 1) + 1] + 1) {
            if (r[2 * i + 1] > r[2 * (k - 1) + 1])
                r[2 * (k - 1) + 1] = r[2 * i + 1];
        } else {
            r[2 * k] = r[2 * i];
            r[2 * k + 1] = r[2 * i + 1];
            k++;
        }
    }
    ps->n_ranges = first + 2 * k;
    if (!grow((void **)&ps->cs, &ps->cap_cs, ps->n_cs + 1, sizeof *ps->cs))
        return nomem(ps), -1;
    struct gcharset *c = &ps->cs[ps->n_cs];
    *c = (struct gcharset){.first = first, .n = k, .neg = neg};
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t cp = r[2 * i]; cp <= r[2 * i + 1] && cp < 128; cp++)
            c->ascii[cp >> 6] |= 1ull << (cp & 63);
    if (neg) {
        c->ascii[0] = ~c->ascii[0];
        c->ascii[1] = ~c->ascii[1];
    }
    return (int32_t)ps->n_cs++;
}

static bool add_range(struct parser *ps, uint32_t lo, uint32_t hi)
{
    if (!grow((void **)&ps->ranges, &ps->cap_ranges, ps->n_ranges + 2, sizeof *ps->ranges))
        return nomem(ps);
    ps->ranges[ps->n_ranges++] = lo;
    ps->ranges[ps->n_ranges++] = hi;
    return true;
}

static int32_t single_charset(struct parser *ps, uint32_t cp)
{
    if (cp < 128 && ps->single_cs[cp])
        return (int32_t)ps->single_cs[cp] - 1;
    uint32_t first = ps->n_ranges;
    if (!add_range(ps, cp, cp))
        return -1;
    int32_t c = finish_charset(ps, first, false);
    if (c >= 0 && cp < 128)
        ps->single_cs[cp] = (uint32_t)c + 1;
    return c;
}

/* ---- characters of literals and classes */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One UTF-8 character of the grammar text (invalid bytes are refused). */
static bool utf8_char(struct parser *ps, uint32_t *cp)
{
    size_t at = ps->pos;
    unsigned c = (unsigned)peek(ps, 0);
    int need = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2
                                                    : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
    if (need < 0)
        return fail_at(ps, at, "invalid UTF-8 byte 0x%02X", c);
    uint32_t v = need == 0 ? c : c & (0x3Fu >> need);
    ps->pos++;
    for (int i = 0; i < need; i++) {
        int b = peek(ps, 0);
        if (b < 0 || (b & 0xC0) != 0x80)
            return fail_at(ps, at, "invalid UTF-8 sequence");
        v = (v << 6) | ((unsigned)b & 0x3F);
        ps->pos++;
    }
    if ((need == 2 && v < 0x800) || (need == 3 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return fail_at(ps, at, "invalid UTF-8 sequence");
    *cp = v;
    return true;
}

/* A character of a literal or class, escapes decoded. */
static bool one_char(struct parser *ps, uint32_t *cp)
{
    size_t at = ps->pos;
    int c = peek(ps, 0);
    if (c < 0)
        return fail_at(ps, at, "unexpected end of grammar");
    if (c != '\\')
        return utf8_char(ps, cp);
    int e = peek(ps, 1);
    ps->pos += 2;
    int digits = 0;
    switch (e) {
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 't': *cp = '\t'; return true;
    case '\\': case '"': case '[': case ']': case '-': case '/': case '\'': case '^':
        *cp = (uint32_t)e;
        return true;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default:
        return fail_at(ps, at, "unknown escape \\%c", e >= 32 && e < 127 ? e : '?');
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        int h = hexval(peek(ps, 0));
        if (h < 0)
            return fail_at(ps, at, "\\%c needs %d hexadecimal digits", e, digits);
        v = v * 16 + (uint32_t)h;
        ps->pos++;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return fail_at(ps, at, "\\%c%0*X is not a Unicode character", e, digits, v);
    *cp = v;
    return true;
}

/* ---- the grammar of GBNF */

static bool alternates(struct parser *ps, uint32_t rule, bool nested);

/* Replace elements [start, n) of rule (the last symbol) by min..max of it. */
static bool repeat(struct parser *ps, uint32_t rule, uint32_t start, uint32_t min, uint32_t max,
                   bool unbounded, size_t at)
{
    struct prule *r = &ps->rules[rule];
    if (start >= r->n)
        return fail_at(ps, at, "nothing to repeat");
    struct gel sym;
    if (r->n - start == 1) {
        sym = r->el[start];
    } else { /* a literal of several characters: one rule of its own */
        int32_t w = new_rule(ps, rule, at);
        if (w < 0)
            return false;
        r = &ps->rules[rule];
        for (uint32_t i = start; i < r->n; i++)
            if (!push(ps, (uint32_t)w, r->el[i].kind, r->el[i].arg))
                return false;
        r = &ps->rules[rule];
        sym = (struct gel){GEL_REF, (uint32_t)w};
    }
    ps->n_total -= r->n - start;
    r->n = start;
    for (uint32_t i = 0; i < min; i++)
        if (!push(ps, rule, sym.kind, sym.arg))
            return false;
    if (unbounded) { /* R ::= sym R | (empty) */
        int32_t t = new_rule(ps, rule, at);
        if (t < 0 || !push(ps, (uint32_t)t, sym.kind, sym.arg) ||
            !push(ps, (uint32_t)t, GEL_REF, (uint32_t)t) || !push(ps, (uint32_t)t, GEL_ALT, 0))
            return false;
        return push(ps, rule, GEL_REF, (uint32_t)t);
    }
    /* R1 ::= sym | ();  Rk ::= sym R(k-1) | () */
    int32_t prev = -1;
    for (uint32_t k = 0; k < max - min; k++) {
        int32_t t = new_rule(ps, rule, at);
        if (t < 0 || !push(ps, (uint32_t)t, sym.kind, sym.arg))
            return false;
        if (prev >= 0 && !push(ps, (uint32_t)t, GEL_REF, (uint32_t)prev))
            return false;
        if (!push(ps, (uint32_t)t, GEL_ALT, 0))
            return false;
        prev = t;
    }
    return prev < 0 || push(ps, rule, GEL_REF, (uint32_t)prev);
}

static bool number(struct parser *ps, uint32_t *v)
{
    size_t at = ps->pos;
    if (peek(ps, 0) < '0' || peek(ps, 0) > '9')
        return fail_at(ps, at, "expected a number");
    uint64_t x = 0;
    while (peek(ps, 0) >= '0' && peek(ps, 0) <= '9') {
        x = x * 10 + (uint64_t)(peek(ps, 0) - '0');
        if (x > GRAMMAR_MAX_REPEAT)
            return fail_at(ps, at, "repetition count over the limit of %d", GRAMMAR_MAX_REPEAT);
        ps->pos++;
    }
    *v = (uint32_t)x;
    return true;
}

/* {m} {m,} {m,n} after the symbol at start. */
static bool braces(struct parser *ps, uint32_t rule, uint32_t start)
{
    size_t at = ps->pos;
    ps->pos++;
    space(ps, true);
    uint32_t min, max = 0;
    bool unbounded = false;
    if (!number(ps, &min))
        return false;
    space(ps, true);
    if (peek(ps, 0) == ',') {
        ps->pos++;
        space(ps, true);
        if (peek(ps, 0) == '}') {
            unbounded = true;
        } else if (!number(ps, &max)) {
            return false;
        }
        space(ps, true);
    } else {
        max = min;
    }
    if (peek(ps, 0) != '}')
        return fail_at(ps, ps->pos, "expected '}' to close the repetition");
    ps->pos++;
    if (!unbounded && max < min)
        return fail_at(ps, at, "repetition {%u,%u}: the maximum is below the minimum", min, max);
    return repeat(ps, rule, start, min, max, unbounded, at);
}

static bool char_class(struct parser *ps, uint32_t rule)
{
    size_t at = ps->pos;
    ps->pos++;
    bool neg = false;
    if (peek(ps, 0) == '^') {
        neg = true;
        ps->pos++;
    }
    uint32_t first = ps->n_ranges;
    while (peek(ps, 0) != ']') {
        if (peek(ps, 0) < 0 || peek(ps, 0) == '\n')
            return fail_at(ps, at, "character class not closed");
        uint32_t lo, hi;
        if (!one_char(ps, &lo))
            return false;
        hi = lo;
        if (peek(ps, 0) == '-' && peek(ps, 1) != ']' && peek(ps, 1) >= 0 && peek(ps, 1) != '\n') {
            ps->pos++;
            size_t hat = ps->pos;
            if (!one_char(ps, &hi))
                return false;
            if (hi < lo)
                return fail_at(ps, hat, "range end below its start");
        }
        if (!add_range(ps, lo, hi))
            return false;
    }
    ps->pos++;
    if (ps->n_ranges == first && !neg)
        return fail_at(ps, at, "empty character class [] matches nothing");
    int32_t c = finish_charset(ps, first, neg);
    return c >= 0 && push(ps, rule, GEL_CHARS, (uint32_t)c);
}

static bool sequence(struct parser *ps, uint32_t rule, bool nested)
{
    uint32_t last = ps->rules[rule].n; /* where the last symbol starts */
    for (;;) {
        int c = peek(ps, 0);
        size_t at = ps->pos;
        if (c == '"') {
            ps->pos++;
            last = ps->rules[rule].n;
            while (peek(ps, 0) != '"') {
                if (peek(ps, 0) < 0 || peek(ps, 0) == '\n')
                    return fail_at(ps, at, "literal not closed");
                uint32_t cp;
                int32_t cs;
                if (!one_char(ps, &cp) || (cs = single_charset(ps, cp)) < 0 ||
                    !push(ps, rule, GEL_CHARS, (uint32_t)cs))
                    return false;
            }
            ps->pos++;
        } else if (c == '[') {
            last = ps->rules[rule].n;
            if (!char_class(ps, rule))
                return false;
        } else if (c == '.') {
            ps->pos++;
            last = ps->rules[rule].n;
            int32_t cs = finish_charset(ps, ps->n_ranges, true);
            if (cs < 0 || !push(ps, rule, GEL_CHARS, (uint32_t)cs))
                return false;
        } else if (is_word(c)) {
            size_t start = ps->pos;
            while (is_word(peek(ps, 0)))
                ps->pos++;
            /* the name of the next rule ends this one */
            size_t save = ps->pos;
            space(ps, false);
            if (peek(ps, 0) == ':' && peek(ps, 1) == ':' && peek(ps, 2) == '=') {
                ps->pos = start;
                return true;
            }
            ps->pos = save;
            int32_t ref = rule_named(ps, ps->s + start, save - start, start);
            last = ps->rules[rule].n;
            if (ref < 0 || !push(ps, rule, GEL_REF, (uint32_t)ref))
                return false;
        } else if (c == '(') {
            ps->pos++;
            space(ps, true);
            int32_t sub = new_rule(ps, rule, at);
            if (sub < 0 || !alternates(ps, (uint32_t)sub, true))
                return false;
            if (peek(ps, 0) != ')')
                return fail_at(ps, at, "group not closed: expected ')'");
            ps->pos++;
            last = ps->rules[rule].n;
            if (!push(ps, rule, GEL_REF, (uint32_t)sub))
                return false;
        } else if (c == '*' || c == '+' || c == '?') {
            ps->pos++;
            if (!repeat(ps, rule, last, c == '+' ? 1 : 0, c == '?' ? 1 : 0, c != '?', at))
                return false;
        } else if (c == '{') {
            if (!braces(ps, rule, last))
                return false;
        } else if (c == '<') {
            return fail_at(ps, at, "token references (<...>) are not supported");
        } else {
            return true;
        }
        space(ps, nested);
    }
}

static bool alternates(struct parser *ps, uint32_t rule, bool nested)
{
    if (!sequence(ps, rule, nested))
        return false;
    while (peek(ps, 0) == '|') {
        ps->pos++;
        if (!push(ps, rule, GEL_ALT, 0))
            return false;
        space(ps, true);
        if (!sequence(ps, rule, nested))
            return false;
    }
    return true;
}

static bool parse_rule(struct parser *ps)
{
    size_t at = ps->pos;
    if (!is_word(peek(ps, 0)))
        return fail_at(ps, at, "expected a rule name");
    while (is_word(peek(ps, 0)))
        ps->pos++;
    int32_t r = rule_named(ps, ps->s + at, ps->pos - at, at);
    if (r < 0)
        return false;
    if (ps->rules[r].def_at != SIZE_MAX)
        return fail_at(ps, at, "rule '%s' is defined twice", ps->rules[r].name);
    ps->rules[r].def_at = at;
    space(ps, false);
    if (!(peek(ps, 0) == ':' && peek(ps, 1) == ':' && peek(ps, 2) == '='))
        return fail_at(ps, ps->pos, "expected '::=' after the rule name");
    ps->pos += 3;
    space(ps, true);
    if (!alternates(ps, (uint32_t)r, false))
        return false;
    int c = peek(ps, 0);
    if (c == '\r' || c == '\n' || c < 0) {
        space(ps, true);
        return true;
    }
    if (c == ')')
        return fail_at(ps, ps->pos, "')' without its '('");
    return fail_at(ps, ps->pos, "unexpected '%c'", c >= 32 && c < 127 ? c : '?');
}

/* ---- checks over the parsed rules */

/* Can alternative [a, ...) or rule r derive the empty string / some string? */
static bool alt_has(const struct elm_grammar *g, uint32_t a, const bool *flag, bool chars_ok)
{
    for (uint32_t i = a; g->el[i].kind != GEL_END && g->el[i].kind != GEL_ALT; i++) {
        if (g->el[i].kind == GEL_CHARS ? !chars_ok : !flag[g->el[i].arg])
            return false;
    }
    return true;
}

static void fixpoint(const struct elm_grammar *g, bool *flag, bool chars_ok)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (flag[r])
                continue;
            for (uint32_t k = g->alt_off[r]; k < g->alt_off[r + 1]; k++) {
                if (alt_has(g, g->alt_pos[k], flag, chars_ok)) {
                    flag[r] = changed = true;
                    break;
                }
            }
        }
    }
}

/* A rule reaching itself at the start of an alternative (past nullable
 * elements only): the path, for the message. */
static bool left_cycle(const struct elm_grammar *g, const bool *nullable, uint32_t r,
                       uint8_t *mark, uint32_t *path, uint32_t depth, uint32_t *cycle_len)
{
    mark[r] = 1;
    path[depth] = r;
    for (uint32_t k = g->alt_off[r]; k < g->alt_off[r + 1]; k++) {
        for (uint32_t i = g->alt_pos[k]; g->el[i].kind == GEL_REF; i++) {
            uint32_t s = g->el[i].arg;
            if (mark[s] == 1) {
                uint32_t from = 0;
                while (path[from] != s)
                    from++;
                memmove(path, path + from, (depth + 1 - from) * sizeof *path);
                *cycle_len = depth + 1 - from;
                return true;
            }
            if (mark[s] == 0 && left_cycle(g, nullable, s, mark, path, depth + 1, cycle_len))
                return true;
            if (!nullable[s])
                break;
        }
    }
    mark[r] = 2;
    return false;
}

static bool check(struct parser *ps, struct elm_grammar *g)
{
    bool *nullable = calloc(g->n_rules, sizeof *nullable);
    bool *productive = calloc(g->n_rules, sizeof *productive);
    uint8_t *mark = calloc(g->n_rules, 1);
    uint32_t *path = malloc(g->n_rules * sizeof *path);
    bool good = nullable && productive && mark && path;
    if (!good) {
        nomem(ps);
    } else {
        fixpoint(g, nullable, false);
        fixpoint(g, productive, true);
        uint32_t len = 0;
        for (uint32_t r = 0; r < g->n_rules && good; r++) {
            if (mark[r] == 0 && left_cycle(g, nullable, r, mark, path, 0, &len)) {
                char chain[512];
                size_t n = 0;
                for (uint32_t i = 0; i <= len && n + 4 < sizeof chain; i++) {
                    const char *name = ps->rules[path[i % len]].name;
                    n += (size_t)snprintf(chain + n, sizeof chain - n, "%s%s", i ? " -> " : "",
                                          name);
                    if (n >= sizeof chain)
                        n = sizeof chain - 1;
                }
                good = fail_at(ps, ps->rules[path[0]].def_at,
                               "left recursion (%s): a rule that reaches itself before any "
                               "character can never be parsed",
                               chain);
            }
        }
        if (good && !productive[g->root])
            good = fail_at(ps, ps->rules[g->root].def_at,
                           "the grammar matches nothing: rule 'root' can never end");
    }
    free(nullable);
    free(productive);
    free(mark);
    free(path);
    return good;
}

/* Lay the parsed rules out in one element array. */
static bool flatten(struct parser *ps, struct elm_grammar *g)
{
    uint32_t n_el = 0, n_alts = 0;
    for (uint32_t r = 0; r < ps->n_rules; r++) {
        n_el += ps->rules[r].n + 1;
        n_alts++;
        for (uint32_t i = 0; i < ps->rules[r].n; i++)
            n_alts += ps->rules[r].el[i].kind == GEL_ALT;
    }
    g->el = malloc((size_t)n_el * sizeof *g->el);
    g->alt_off = malloc(((size_t)ps->n_rules + 1) * sizeof *g->alt_off);
    g->alt_pos = malloc((size_t)n_alts * sizeof *g->alt_pos);
    if (!g->el || !g->alt_off || !g->alt_pos)
        return nomem(ps);
    g->n_rules = ps->n_rules;
    uint32_t e = 0, a = 0;
    for (uint32_t r = 0; r < ps->n_rules; r++) {
        g->alt_off[r] = a;
        g->alt_pos[a++] = e;
        for (uint32_t i = 0; i < ps->rules[r].n; i++) {
            g->el[e++] = ps->rules[r].el[i];
            if (ps->rules[r].el[i].kind == GEL_ALT)
                g->alt_pos[a++] = e;
        }
        g->el[e++] = (struct gel){GEL_END, 0};
    }
    g->alt_off[ps->n_rules] = a;
    g->n_el = e;
    g->cs = ps->cs;
    g->n_cs = ps->n_cs;
    g->ranges = ps->ranges;
    ps->cs = NULL;
    ps->ranges = NULL;
    return true;
}

elm_status elm_grammar_parse(const char *text, size_t len, elm_grammar **out, char *err,
                             size_t err_size)
{
    if (!out || (!text && len))
        return elm_set_error(err, err_size, ELM_E_INVALID, "no grammar");
    *out = NULL;
    struct parser ps = {.s = text, .len = len, .err = err, .err_size = err_size};
    space(&ps, true);
    while (ps.status == ELM_OK && ps.pos < ps.len)
        parse_rule(&ps);
    struct elm_grammar *g = NULL;
    if (ps.status == ELM_OK) {
        int32_t root = -1;
        for (uint32_t i = 0; i < ps.n_rules; i++) {
            if (ps.rules[i].def_at == SIZE_MAX) {
                fail_at(&ps, ps.rules[i].used_at, "rule '%s' is not defined", ps.rules[i].name);
                break;
            }
            if (strcmp(ps.rules[i].name, "root") == 0)
                root = (int32_t)i;
        }
        if (ps.status == ELM_OK && root < 0)
            fail_at(&ps, ps.len, "no rule 'root' (where a match starts)");
        if (ps.status == ELM_OK) {
            g = calloc(1, sizeof *g);
            if (!g) {
                nomem(&ps);
            } else {
                atomic_init(&g->refs, 1);
                g->root = (uint32_t)root;
                if (flatten(&ps, g))
                    check(&ps, g);
            }
        }
    }
    for (uint32_t i = 0; i < ps.n_rules; i++) {
        free(ps.rules[i].name);
        free(ps.rules[i].el);
    }
    free(ps.rules);
    free(ps.ranges);
    free(ps.cs);
    if (ps.status == ELM_OK) {
        g->text = malloc(len + 1);
        if (!g->text) {
            nomem(&ps);
        } else {
            memcpy(g->text, text, len);
            g->text[len] = '\0';
        }
    }
    if (ps.status != ELM_OK) {
        elm_grammar_free(g);
        return ps.status;
    }
    *out = g;
    return ELM_OK;
}

const char *elm_grammar_text(const elm_grammar *g)
{
    return g ? g->text : NULL;
}

elm_grammar *elm_grammar_share(elm_grammar *g)
{
    if (g)
        atomic_fetch_add(&g->refs, 1);
    return g;
}

void elm_grammar_free(elm_grammar *g)
{
    if (!g || atomic_fetch_sub(&g->refs, 1) > 1)
        return;
    free(g->el);
    free(g->alt_off);
    free(g->alt_pos);
    free(g->cs);
    free(g->ranges);
    free(g->text);
    free(g);
}

bool gcharset_meets(const struct elm_grammar *g, const struct gcharset *c, uint32_t lo,
                    uint32_t hi)
{
    /* the part of [lo, hi] the ranges cover */
    uint64_t covered = 0;
    const uint32_t *r = g->ranges + c->first;
    for (uint32_t i = 0; i < c->n; i++) {
        uint32_t a = r[2 * i] > lo ? r[2 * i] : lo, b = r[2 * i + 1] < hi ? r[2 * i + 1] : hi;
        if (a <= b) {
            if (!c->neg)
                return true;
            covered += (uint64_t)(b - a) + 1;
        }
    }
    return c->neg && covered < (uint64_t)(hi - lo) + 1;
}

bool gcharset_covers(const struct elm_grammar *g, const struct gcharset *c, uint32_t lo,
                     uint32_t hi)
{
    if (c->neg) /* everything outside the ranges: none of them meets [lo, hi] */
        return !gcharset_meets(g, &(struct gcharset){c->first, c->n, false, {0, 0}}, lo, hi);
    const uint32_t *r = g->ranges + c->first; /* merged: one range holds it all */
    for (uint32_t i = 0; i < c->n; i++)
        if (r[2 * i] <= lo && hi <= r[2 * i + 1])
            return true;
    return false;
}

bool gcharset_has(const struct elm_grammar *g, const struct gcharset *c, uint32_t cp)
{
    if (cp < 128)
        return (c->ascii[cp >> 6] >> (cp & 63)) & 1;
    const uint32_t *r = g->ranges + c->first;
    uint32_t lo = 0, hi = c->n;
    while (lo < hi) { /* first range whose end is >= cp */
        uint32_t mid = (lo + hi) / 2;
        if (r[2 * mid + 1] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool in = lo < c->n && r[2 * lo] <= cp;
    return in != c->neg;
}
