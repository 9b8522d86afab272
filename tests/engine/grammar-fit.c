/* grammar-fit.c: how strings stand against a GBNF grammar, for the tests'
 * independent references (test-grammar-re.sh compares with Python's re).
 *
 *   grammar-fit GRAMMAR_FILE < lines of hex-encoded strings
 *
 * prints one of match / prefix / no / limit per line, or "error: MESSAGE"
 * (exit 1) when the grammar is refused. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm_grammar.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: grammar-fit GRAMMAR_FILE < hex lines\n");
        return 2;
    }
    size_t len;
    char *text = slurp(argv[1], &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 2;
    }
    elm_grammar *g;
    char err[512];
    if (elm_grammar_parse(text, len, &g, err, sizeof err) != ELM_OK) {
        printf("error: %s\n", err);
        free(text);
        return 1;
    }
    static char line[1 << 16];
    static char bytes[1 << 15];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = 0;
        for (char *p = line; p[0] && p[1] && p[0] != '\n'; p += 2) {
            unsigned v;
            if (sscanf(p, "%2x", &v) != 1)
                break;
            bytes[n++] = (char)v;
        }
        static const char *names[] = {"no", "prefix", "match"};
        enum elm_grammar_fit fit = elm_grammar_fit(g, bytes, n);
        puts(fit == ELM_GRAMMAR_LIMIT ? "limit" : names[fit]);
    }
    elm_grammar_free(g);
    free(text);
    return 0;
}
