/* test-grammar.c: GBNF grammars (elm_grammar.h) and sampling under them.
 *
 * - refused grammars: the message and its line and column, left recursion,
 *   a root that matches nothing, the limits;
 * - a non-regular grammar (nested brackets) against a checker written here;
 *   partial UTF-8 (the regular constructs are checked against Python's re
 *   by test-grammar-re.sh);
 * - the token level: the trie walk's mask against checking every id's text
 *   on its own, byte pieces, the first piece's dropped space;
 * - exactness: on fixed logits, the empirical distribution of many
 *   constrained draws against the masked, renormalized chain computed here
 *   (chi-square), with temperature, top-k and top-p on, and with plain
 *   temperature (the one-check path); greedy with a grammar allowing
 *   everything picks what greedy picks without one. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "engine/elm_grammar.h"
#include "engine/inference/constrain.h"
#include "engine/grammar/tokens.h"
#include "tests/lib/tap.h"

static elm_grammar *parse(const char *text, char *err, size_t n)
{
    elm_grammar *g = NULL;
    if (elm_grammar_parse(text, strlen(text), &g, err, n) != ELM_OK)
        return NULL;
    return g;
}

static void refused(const char *text, const char *want, const char *what)
{
    char err[512] = "";
    elm_grammar *g = parse(text, err, sizeof err);
    ok(!g && strstr(err, want), "%s: refused with \"%s\" (got \"%s\")", what, want, err);
    elm_grammar_free(g);
}

static enum elm_grammar_fit fit(const elm_grammar *g, const char *s)
{
    return elm_grammar_fit(g, s, strlen(s));
}

/* The reference for nested brackets: ( ) and [ ] properly nested, letters
 * between. */
static int nested_ref(const char *s)
{
    char st[256];
    int n = 0;
    for (; *s; s++) {
        if (*s == '(' || *s == '[') {
            if (n == 255)
                return 0;
            st[n++] = *s;
        } else if (*s == ')' || *s == ']') {
            if (n == 0 || st[n - 1] != (*s == ')' ? '(' : '['))
                return 0;
            n--;
        } else if (!(*s >= 'a' && *s <= 'z')) {
            return 0;
        }
    }
    return n == 0 ? 2 : 1;
}

static void errors(void)
{
    refused("root ::= \"a\n", "line 1, column 10: literal not closed", "open literal");
    refused("root ::= x\n\nx ::= \"a\" |\n  ( \"b\" \n", "line 4, column 3:", "open group");
    refused("root ::= y\n", "line 1, column 10: rule 'y' is not defined", "undefined rule");
    refused("a ::= \"x\"\n", "no rule 'root'", "no root");
    refused("root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice",
            "a rule twice");
    refused("root ::= [z-a]\n", "range end below its start", "backwards range");
    refused("root ::= []\n", "empty character class", "empty class");
    refused("root ::= \"\\q\"\n", "unknown escape \\q", "unknown escape");
    refused("root ::= \"\\x4\"\n", "\\x needs 2 hexadecimal digits", "short \\x");
    refused("root ::= \"a\"{3,2}\n", "the maximum is below the minimum", "{3,2}");
    refused("root ::= \"a\"{1001}\n", "over the limit of 1000", "repeat over the limit");
    refused("root ::= * \"a\"\n", "nothing to repeat", "nothing to repeat");
    refused("root ::= \"a\" )\n", "')' without its '('", "stray )");
    refused("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n",
            "line 2, column 1: left recursion (expr -> expr)", "left recursion");
    refused("root ::= a\na ::= b? \"x\" | \"y\"\nb ::= a \"z\"\n",
            "b -> a): a rule that reaches itself", "left recursion through a nullable symbol");
    refused("root ::= (\"a\"?)*\n", "left recursion", "a repeated empty match");
    refused("root ::= \"a\" root\n", "matches nothing", "a root that never ends");
    refused("root ::= <[1000]>\n", "token references", "token references");
}

static void matching(void)
{
    char err[512];
    elm_grammar *g = parse("# nested brackets\n"
                           "root ::= item*   # any number\n"
                           "item ::= [a-z] | \"(\" item* \")\" | \"[\" item* \"]\"\n",
                           err, sizeof err);
    ok(g != NULL, "nested brackets parse (%s)", g ? "" : err);
    if (!g)
        return;
    const char *cases[] = {"", "a", "(a)", "([b]c)", "((((((((x))))))))", "(]", "(", "a)",
                           "[(])", "([)]", "abc[de(f)g]", "(((", "A"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int want = nested_ref(cases[i]);
        enum elm_grammar_fit got = fit(g, cases[i]);
        /* the reference's 1 (open brackets) is a prefix; 0 is no */
        ok((int)got == want, "nested \"%s\": %d, the reference %d", cases[i], (int)got, want);
    }
    /* 2000 random strings over the alphabet against the reference */
    uint32_t x = 12345;
    int agree = 0;
    for (int t = 0; t < 2000; t++) {
        char s[16];
        int n = (int)((x = x * 1103515245u + 12345u) >> 16) % 12;
        for (int i = 0; i < n; i++)
            s[i] = "()[]ab"[((x = x * 1103515245u + 12345u) >> 16) % 6];
        s[n] = '\0';
        agree += (int)fit(g, s) == nested_ref(s);
    }
    is_int(agree, 2000, "nested brackets: 2000 random strings agree with the reference");
    elm_grammar_free(g);

    /* UTF-8: a class of non-ASCII ranges; a cut character is a prefix */
    g = parse("root ::= [\\u00e0-\\u00ff\\U0001F600-\\U0001F64F]+ \"!\"\n", err, sizeof err);
    ok(g != NULL, "a class of non-ASCII ranges parses (%s)", g ? "" : err);
    if (g) {
        is_int(fit(g, "\xc3\xa9\xf0\x9f\x98\x80!"), ELM_GRAMMAR_MATCH, "é😀! matches");
        is_int(fit(g, "\xc3"), ELM_GRAMMAR_PREFIX, "the first byte of é is a prefix");
        is_int(fit(g, "\xf0\x9f\x98"), ELM_GRAMMAR_PREFIX, "three bytes of 😀 are a prefix");
        is_int(fit(g, "\xf0\x9f\x99\x90"), ELM_GRAMMAR_NO, "🙐 (U+1F650) is outside the range");
        is_int(fit(g, "\xf0\x9f\x9a"), ELM_GRAMMAR_NO,
               "a partial character that can only end outside the ranges is refused");
        is_int(fit(g, "\xc3\x28"), ELM_GRAMMAR_NO, "an invalid continuation byte is refused");
        is_int(fit(g, "\xc0\xa9"), ELM_GRAMMAR_NO, "an overlong encoding is refused");
        is_int(fit(g, "\xc3\xa9!"), ELM_GRAMMAR_MATCH, "é! matches");
        elm_grammar_free(g);
    }
    g = parse("root ::= [^a]*\n", err, sizeof err);
    if (g) {
        is_int(fit(g, "\xed\x9f\xbf"), ELM_GRAMMAR_MATCH, "U+D7FF, the last before surrogates");
        is_int(fit(g, "\xed\xa0"), ELM_GRAMMAR_NO,
               "the start of a surrogate (ED A0) is refused at once, not a byte later");
        is_int(fit(g, "\xed"), ELM_GRAMMAR_PREFIX, "ED alone may still become U+D000-D7FF");
        elm_grammar_free(g);
    }
    g = parse("root ::= [^a-c\"]{2,3}\n", err, sizeof err);
    if (ok(g != NULL, "a negated class with a repeat count parses")) {
        is_int(fit(g, "\xe4\xb8\xadz"), ELM_GRAMMAR_MATCH, "negated: 中z matches");
        is_int(fit(g, "zb"), ELM_GRAMMAR_NO, "negated: b is refused");
        is_int(fit(g, "zzzz"), ELM_GRAMMAR_NO, "{2,3}: four is too many");
        elm_grammar_free(g);
    }
    /* characters whose every completion a class takes whole keep no bits
     * (matcher.c's PARTIAL_ANY): UTF-8 is still checked byte by byte, and a
     * class that takes part of a block keeps them */
    g = parse("root ::= \"A\" [^\"]* | \"=\" [^\\u4e00]* | \"~\" [\\u4e00-\\u9fff]*\n", err,
              sizeof err);
    if (ok(g != NULL, "classes over whole and part blocks parse (%s)", g ? "" : err)) {
        static const struct {
            const char *text;
            enum elm_grammar_fit want;
            const char *what;
        } utf8[] = {
            {"A\xe4\xb8\xad\xf0\x9f\x98\x80", ELM_GRAMMAR_MATCH, "[^\"]: 中 and an emoji"},
            {"A\xe4\xb8", ELM_GRAMMAR_PREFIX, "[^\"]: two bytes of three"},
            {"A\xe4\xb8z", ELM_GRAMMAR_NO, "[^\"]: an ASCII byte inside a character"},
            {"A\xe4\xb8\xad\xad", ELM_GRAMMAR_NO, "[^\"]: a continuation byte too many"},
            {"A\xe0\x80\x80", ELM_GRAMMAR_NO, "[^\"]: an overlong encoding"},
            {"A\xed\xa0\x80", ELM_GRAMMAR_NO, "[^\"]: a surrogate"},
            {"A\xf4\x90\x80\x80", ELM_GRAMMAR_NO, "[^\"]: past U+10FFFF"},
            {"A\xc0\x80", ELM_GRAMMAR_NO, "[^\"]: C0"},
            {"=\xe4\xb8\x80", ELM_GRAMMAR_NO, "[^一]: 一 refused after a shared prefix"},
            {"=\xe4\xb8\x81\xe4\xb8\xad", ELM_GRAMMAR_MATCH, "[^一]: 丁中"},
            {"~\xe4\xb8\x80\xe9\xbe\xa5", ELM_GRAMMAR_MATCH, "[一-鿿]: 一 and U+9FA5"},
            {"~\xe3\x80\x80", ELM_GRAMMAR_NO, "[一-鿿]: U+3000 (E3: no completion inside)"},
            {"~\xea\xb0\x80", ELM_GRAMMAR_NO, "[一-鿿]: U+AC00"},
        };
        for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
            is_int(fit(g, utf8[i].text), utf8[i].want, "%s", utf8[i].what);
        elm_grammar_free(g);
    }
    /* state explosion ends with LIMIT, never a hang: 2^n ways to parse */
    g = parse("root ::= x*\nx ::= \"a\" | \"a\" \"a\" | \"a\" y\ny ::= \"a\"? \"a\"?  \"a\"? "
              "\"a\"? \"a\"? \"a\"? \"a\"? \"a\"? \"a\"? \"a\"? \"a\"? \"a\"?\n",
              err, sizeof err);
    if (ok(g != NULL, "an ambiguous grammar parses (%s)", g ? "" : err)) {
        char many[4001];
        memset(many, 'a', 4000);
        many[4000] = '\0';
        enum elm_grammar_fit f = fit(g, many);
        ok(f == ELM_GRAMMAR_LIMIT || f == ELM_GRAMMAR_MATCH,
           "4000 a's: a match or the stated limit, in bounded time (%d)", (int)f);
        elm_grammar_free(g);
    }
}

/* A small vocabulary: control ids, byte pieces for a few bytes, pieces. */
static const char *const PIECES[] = {
    "<unk>", "<s>", "</s>", "<0x7B>", "<0x7D>", "<0x20>", "<0xC3>", "<0xA9>",
    "\xe2\x96\x81{", "{", "}", "\"", "a", "b", "ab", "\xe2\x96\x81\141" /* \141: a */, "\":", "1", "12", "\xc3\xa9",
    "\xe2\x96\x81", ",", "x",
};
#define NV ((int)(sizeof PIECES / sizeof *PIECES))

static elm_tokenizer *vocab(void)
{
    float scores[NV];
    for (int i = 0; i < NV; i++)
        scores[i] = -(float)i;
    elm_tokenizer *tok = NULL;
    char err[256];
    if (elm_tokenizer_from_vocab((const char *const *)PIECES, scores, NULL, NV, 0, 1, 2, false, true,
                                 "test", &tok, err, sizeof err) != ELM_OK)
        bail_out("vocabulary: %s", err);
    return tok;
}

/* Is id allowed after text (by the grammar's own fit of the whole text)? */
static bool ref_allows(const elm_grammar *g, const elm_tokenizer *tok, const char *text,
                       int32_t id, bool first)
{
    int32_t ids[1] = {id};
    char *piece;
    size_t len;
    if (elm_tokenizer_type(tok, id) == ELM_PIECE_CONTROL) /* </s>: complete only */
        return id == 2 && fit(g, text) == ELM_GRAMMAR_MATCH;
    if (elm_tokenizer_type(tok, id) == ELM_PIECE_BYTE) {
        const char *p = elm_tokenizer_piece(tok, id);
        char b[2] = {(char)strtol(p + 3, NULL, 16), 0};
        piece = malloc(2);
        memcpy(piece, b, 2);
        len = 1;
    } else {
        /* the piece as text: U+2581 is a space; the first loses it */
        const char *p = elm_tokenizer_piece(tok, id);
        piece = malloc(strlen(p) + 1);
        len = 0;
        for (size_t i = 0; p[i];) {
            if (!strncmp(p + i, "\xe2\x96\x81", 3)) {
                piece[len++] = ' ';
                i += 3;
            } else {
                piece[len++] = p[i++];
            }
        }
        if (first && len > 0 && piece[0] == ' ')
            memmove(piece, piece + 1, --len);
    }
    (void)ids;
    bool allowed = false;
    if (len > 0) {
        size_t tl = strlen(text);
        char *all = malloc(tl + len + 1);
        memcpy(all, text, tl);
        memcpy(all + tl, piece, len);
        enum elm_grammar_fit f = elm_grammar_fit(g, all, tl + len);
        allowed = f == ELM_GRAMMAR_MATCH || f == ELM_GRAMMAR_PREFIX;
        free(all);
    }
    free(piece);
    return allowed;
}

static void tokens(elm_tokenizer *tok)
{
    char err[512];
    elm_grammar *g = parse("root ::= \"{\" ( \"\\\"\" [a-b\\u00e9]+ \"\\\":\" [0-9]+ )? \"}\"\n",
                           err, sizeof err);
    if (!ok(g != NULL, "object grammar parses (%s)", g ? "" : err))
        return;
    int32_t end[1] = {2};
    struct gtokens *t = gtokens_new(g, tok, end, 1);
    ok(t != NULL, "a grammar over the vocabulary");
    /* walk a reply: at each step the mask equals checking every id */
    const int32_t reply[] = {8, 11, 12, 6, 7, 19, 16, 18, 17, 10, 2};
    char text[128] = "";
    size_t tl = 0;
    int steps_ok = 0, n_steps = (int)(sizeof reply / sizeof *reply);
    for (int s = 0; s < n_steps && t; s++) {
        int n_allowed = -1;
        const uint32_t *mask = gtokens_mask(t, &n_allowed);
        int same = 0, count = 0, single = 0;
        for (int32_t id = 0; id < NV; id++) {
            bool in_mask = mask && (mask[id >> 5] >> (id & 31) & 1);
            bool want = ref_allows(g, tok, text, id, s == 0);
            same += in_mask == want;
            count += in_mask;
            single += gtokens_allows(t, id) == want;
        }
        if (same == NV && single == NV && count == n_allowed)
            steps_ok++;
        else
            diag("step %d after \"%s\": mask agrees on %d, single checks on %d of %d", s, text,
                 same, single, NV);
        int32_t id = reply[s];
        if (!gtokens_take(t, id))
            diag("step %d: id %d refused", s, id);
        if (id == 2)
            break;
        char *piece;
        size_t len;
        int32_t one[1] = {id};
        if (elm_tokenizer_type(tok, id) == ELM_PIECE_BYTE) {
            text[tl++] = (char)strtol(elm_tokenizer_piece(tok, id) + 3, NULL, 16);
        } else if (elm_detokenize(tok, one, 1, &piece, &len) == ELM_OK) {
            const char *p = piece;
            if (s > 0 && !strncmp(elm_tokenizer_piece(tok, id), "\xe2\x96\x81", 3)) {
                text[tl++] = ' ';
            }
            memcpy(text + tl, p, len);
            tl += len;
            free(piece);
        }
        text[tl] = '\0';
    }
    is_int(steps_ok, n_steps, "every step: the trie mask and each id's check equal the reference");
    ok(t && gtokens_complete(t), "the reply {\"aéé\":121} is complete");
    is_str(text, "{\"a\xc3\xa9\xc3\xa9\":121}", "the text the ids made (byte pieces, then a piece)");
    struct gtokens_stats st = t ? gtokens_stats(t) : (struct gtokens_stats){0};
    ok(st.walks > 0 && st.walks <= st.masks, "masks %ld, walks %ld", st.masks, st.walks);
    gtokens_free(t);

    /* drafts: cut at the first id the grammar refuses */
    t = gtokens_new(g, tok, end, 1);
    int32_t drafts[] = {9, 11, 12, 10, 12};
    is_int(gtokens_prefix_allowed(t, drafts, 5), 3, "drafts {\"a then } are cut at the }");
    gtokens_free(t);
    elm_grammar_free(g);
}

/* ---- exactness */

struct chain {
    float temp;
    int top_k;
    float top_p;
};

/* The chain of elm.h computed here, in double, over the allowed ids. */
static void reference(const float *logits, const bool *allowed, struct chain c, double *p)
{
    int ids[NV], n = 0;
    for (int i = 0; i < NV; i++)
        if (allowed[i])
            ids[n++] = i;
    for (int i = 0; i < n; i++) /* sort by logit, lower id first on ties */
        for (int j = i + 1; j < n; j++)
            if (logits[ids[j]] > logits[ids[i]] ||
                (logits[ids[j]] == logits[ids[i]] && ids[j] < ids[i])) {
                int x = ids[i];
                ids[i] = ids[j];
                ids[j] = x;
            }
    if (c.top_k > 0 && c.top_k < n)
        n = c.top_k;
    double z = 0;
    for (int i = 0; i < n; i++)
        z += exp(logits[ids[i]] - logits[ids[0]]);
    if (c.top_p < 1) {
        double cum = 0;
        for (int i = 0; i < n; i++) {
            cum += exp(logits[ids[i]] - logits[ids[0]]) / z;
            if (cum >= c.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    memset(p, 0, NV * sizeof *p);
    double zt = 0;
    for (int i = 0; i < n; i++)
        zt += exp((logits[ids[i]] - logits[ids[0]]) / c.temp);
    for (int i = 0; i < n; i++)
        p[ids[i]] = exp((logits[ids[i]] - logits[ids[0]]) / c.temp) / zt;
}

static void exactness(elm_tokenizer *tok, struct chain c, const char *what)
{
    char err[256];
    /* after "{": the pieces that may start a key or close */
    elm_grammar *g = parse("root ::= \"{\" [a-b\"}] [a-z]*\n", err, sizeof err);
    if (!g)
        bail_out("grammar: %s", err);
    float logits[NV];
    uint32_t x = 99;
    for (int i = 0; i < NV; i++)
        logits[i] = (float)(((x = x * 1103515245u + 12345u) >> 16) % 400) / 100.0f;
    logits[13] = 3.9f; /* "b": allowed and near the top */
    logits[22] = 4.5f; /* "x": refused, the most likely */
    struct elm_generate_params p = elm_generate_default_params();
    p.grammar = g;
    p.tokenizer = tok;
    p.sampler.temperature = c.temp;
    p.sampler.top_k = c.top_k;
    p.sampler.top_p = c.top_p;
    p.sampler.seed = 7;
    elm_sampler *smp = elm_sampler_new(&p.sampler);
    int counts[NV] = {0};
    const int draws = 20000;
    for (int i = 0; i < draws; i++) {
        struct constrain *cs = constrain_new(&p, 2, err, sizeof err);
        if (!cs)
            bail_out("constrain: %s", err);
        constrain_take(cs, 9); /* "{" */
        float l[NV];
        memcpy(l, logits, sizeof l);
        int32_t id = constrain_sample(cs, smp, l, NV, NULL, 0);
        if (id >= 0 && id < NV)
            counts[id]++;
        constrain_free(cs);
    }
    /* the allowed ids, by the grammar's own fit of "{" + the piece */
    bool allowed[NV];
    for (int i = 0; i < NV; i++)
        allowed[i] = ref_allows(g, tok, "{", i, false);
    double want[NV], chi = 0;
    reference(logits, allowed, c, want);
    int bins = 0, outside = 0;
    for (int i = 0; i < NV; i++) {
        if (want[i] > 0) {
            double e = draws * want[i];
            chi += (counts[i] - e) * (counts[i] - e) / e;
            bins++;
        } else {
            outside += counts[i];
        }
    }
    is_int(outside, 0, "%s: no draw outside the masked chain's support", what);
    /* chi-square critical values at p = 0.001 for 1..8 degrees of freedom */
    static const double crit[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12};
    int df = bins - 1;
    ok(df >= 1 && df <= 8 && chi < crit[df],
       "%s: %d draws match the masked, renormalized distribution (chi2 %.2f, %d df, < %.2f)",
       what, draws, chi, df, df >= 1 && df <= 8 ? crit[df] : 0.0);
    elm_sampler_free(smp);
    elm_grammar_free(g);
}

static void greedy_same(elm_tokenizer *tok)
{
    char err[256];
    elm_grammar *g = parse("root ::= [^\\x00]*\n", err, sizeof err);
    struct elm_generate_params p = elm_generate_default_params();
    p.grammar = g;
    p.tokenizer = tok;
    elm_sampler *a = elm_sampler_new(&p.sampler), *b = elm_sampler_new(&p.sampler);
    struct constrain *cs = constrain_new(&p, 2, err, sizeof err);
    int same = 0;
    uint32_t x = 5;
    for (int t = 0; t < 200 && cs; t++) {
        float l1[NV], l2[NV];
        for (int i = 0; i < NV; i++)
            l1[i] = l2[i] = (float)(((x = x * 1103515245u + 12345u) >> 16) % 1000) / 100.0f;
        /* control ids have no text; a lone lead byte (<0xC3>) or continuation
         * (<0xA9>) is not UTF-8 text, nor is a lone space the first piece
         * drops: the ids of a model's valid text stay */
        const int none[] = {0, 1, 2, 6, 7, 20};
        for (int i = 0; i < 6; i++)
            l1[none[i]] = l2[none[i]] = -10;
        int32_t plain = elm_sampler_sample(a, l1, NV, NULL, 0);
        int32_t constrained = constrain_sample(cs, b, l2, NV, NULL, 0);
        same += plain == constrained;
    }
    is_int(same, 200, "greedy under a grammar allowing every text: the same 200 ids");
    constrain_free(cs);
    elm_sampler_free(a);
    elm_sampler_free(b);
    elm_grammar_free(g);
}

/* The text a grammar was parsed from, as a remote engine is sent it: the
 * len bytes given (not past them), NUL-terminated. */
static void source_text(void)
{
    static const char text[] = "root ::= \"a\" [b-c]+ # tail\nXXX";
    size_t len = sizeof text - 1 - 3; /* without "XXX" */
    char err[256];
    elm_grammar *g = NULL;
    ok(elm_grammar_parse(text, len, &g, err, sizeof err) == ELM_OK, "parsed (%s)", err);
    const char *back = elm_grammar_text(g);
    ok(back && strlen(back) == len && memcmp(back, text, len) == 0,
       "elm_grammar_text: the len bytes parsed, NUL-terminated");
    elm_grammar_free(g);
    ok(elm_grammar_text(NULL) == NULL, "elm_grammar_text(NULL): NULL");
}

int main(void)
{
    plan_lazy();
    errors();
    matching();
    source_text();
    elm_tokenizer *tok = vocab();
    tokens(tok);
    exactness(tok, (struct chain){0.8f, 5, 0.9f}, "temperature 0.8, top-k 5, top-p 0.9");
    exactness(tok, (struct chain){1.3f, 0, 1.0f}, "plain temperature 1.3 (one check per id)");
    exactness(tok, (struct chain){1.0f, 3, 1.0f}, "top-k 3");
    greedy_same(tok);
    elm_tokenizer_free(tok);
    return done_testing();
}
