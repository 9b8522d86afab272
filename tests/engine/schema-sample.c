/* schema-sample.c: replies of a model under a JSON schema, one per line as
 * a JSON string, for test-json-schema.sh to validate with Python's
 * jsonschema (the model loaded once for all of them).
 *
 *   schema-sample MODEL SCHEMA_FILE N TEMPERATURE MAX_TOKENS [--draft]
 *
 * A reply cut before its value was complete is printed as the line CUT. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"

static void put_json_string(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    puts("\"");
}

struct text {
    char *s;
    size_t n, cap;
};

static void on_token(void *user, int32_t id, const char *piece, size_t len)
{
    (void)id;
    struct text *t = user;
    if (t->n + len + 1 > t->cap) {
        t->cap = (t->n + len + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->n, piece, len);
    t->n += len;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: schema-sample MODEL SCHEMA N TEMP MAX_TOKENS [--draft]\n");
        return 2;
    }
    char err[1024];
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read\n", argv[2]);
        return 2;
    }
    static char schema[1 << 20];
    size_t slen = fread(schema, 1, sizeof schema - 1, f);
    fclose(f);
    char *gbnf;
    if (elm_grammar_json_schema(schema, slen, &gbnf, err, sizeof err) != ELM_OK) {
        printf("ERROR %s\n", err);
        return 1;
    }
    elm_grammar *g;
    if (elm_grammar_parse(gbnf, strlen(gbnf), &g, err, sizeof err) != ELM_OK) {
        printf("ERROR grammar: %s\n%s", err, gbnf);
        return 1;
    }
    free(gbnf);
    elm_model *model;
    struct elm_model_params mp = elm_model_default_params();
    if (elm_model_load(argv[1], &mp, &model, err, sizeof err) != ELM_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const elm_tokenizer *tok = elm_model_tokenizer(model);
    int n_vocab = elm_model_get_info(model)->n_vocab;
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    int32_t *prompt;
    size_t n_prompt;
    const char *text = "Answer in JSON:";
    elm_tokenize(tok, text, strlen(text), true, &prompt, &n_prompt);
    int n = atoi(argv[3]);
    for (int r = 0; r < n; r++) {
        elm_ctx *ctx;
        struct elm_ctx_params cp = elm_ctx_default_params();
        cp.n_ctx = 2048;
        if (elm_ctx_new(model, &cp, &ctx, err, sizeof err) != ELM_OK ||
            elm_decode(ctx, prompt, (int)n_prompt, logits, 0) != ELM_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        struct text t = {0};
        struct elm_generate_params gp = elm_generate_default_params();
        gp.sampler.temperature = (float)atof(argv[4]);
        gp.sampler.seed = (uint64_t)r + 1;
        gp.max_tokens = atoi(argv[5]);
        gp.tokenizer = tok;
        gp.grammar = g;
        gp.on_token = on_token;
        gp.user = &t;
        gp.lookup = argc > 6;
        struct elm_generate_result res;
        if (elm_generate(ctx, logits, &gp, &res, err, sizeof err) != ELM_OK) {
            printf("ERROR %s after ", err);
            put_json_string(t.s ? t.s : "", t.n);
            return 1;
        }
        if (getenv("SCHEMA_SAMPLE_STATS"))
            fprintf(stderr, "tokens %d grammar %.3f s checks %ld masks %ld walks %ld\n",
                    res.n_generated, res.grammar.seconds, res.grammar.checks, res.grammar.masks,
                    res.grammar.walks);
        if (!res.grammar.complete)
            printf("CUT %.*s\n", (int)(t.n < 300 ? t.n : 300), t.s ? t.s : "");
        else
            put_json_string(t.s ? t.s : "", t.n);
        fflush(stdout);
        free(t.s);
        elm_ctx_free(ctx);
    }
    free(prompt);
    free(logits);
    elm_grammar_free(g);
    elm_model_free(model);
    return 0;
}
