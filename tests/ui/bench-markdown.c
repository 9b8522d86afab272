/* bench-markdown.c: what re-rendering a streaming reply costs.  A
 * 2,000-token markdown reply (about 8 KB: headings, lists, a table, code)
 * grows one token (4 bytes) at a time; after each token the whole reply is
 * laid out again, as the transcript does.  Prints the mean and the worst
 * time per token against a 60 fps frame (16.7 ms).  Not a test: run by
 * hand (tests/ui/bench-markdown [WIDTH]). */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/base/strbuf.h"
#include "ui/markdown.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "C.UTF-8");
    int width = argc > 1 ? atoi(argv[1]) : 100;
    struct sbuf doc = {0};
    static const char *const parts[] = {
        "## Section\n\nSome **bold** text, *italic*, `code` and a [link](https://example.org). ",
        "A longer sentence that goes on for a while so that the paragraph wraps a few times.\n\n",
        "- item one with words\n- item two\n  - nested item\n\n",
        "| col a | col b |\n|---|---:|\n| x | 1 |\n| y | 22 |\n\n",
        "```c\nint main(void) { return 0; }\n/* a comment line */\n```\n\n",
    };
    while (doc.len < 8000)
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
            sbuf_add(&doc, parts[i], strlen(parts[i]));
    size_t n_tokens = doc.len / 4;
    struct md_out o;
    md_out_init(&o);
    double total = 0;
    double *dt = malloc(n_tokens * sizeof *dt);
    for (size_t t = 1; t <= n_tokens; t++) {
        double t0 = now();
        md_render(doc.data, t * 4, width, &o);
        dt[t - 1] = now() - t0;
        total += dt[t - 1];
    }
    qsort(dt, n_tokens, sizeof *dt, cmp_double);
    double p50 = dt[n_tokens / 2], p99 = dt[n_tokens * 99 / 100], last = 0;
    double t0 = now();
    md_render(doc.data, doc.len, width, &o); /* the whole reply once more */
    last = now() - t0;
    printf("markdown re-render per token, %zu tokens (%zu bytes), width %d:\n", n_tokens, doc.len,
           width);
    printf("  mean %.1f us, median %.1f us, p99 %.1f us, max %.1f us; the full reply %.1f us "
           "(%.2f%% of a 60 fps frame)\n",
           total / (double)n_tokens * 1e6, p50 * 1e6, p99 * 1e6, dt[n_tokens - 1] * 1e6,
           last * 1e6, last / (1.0 / 60) * 100);
    free(dt);
    md_out_fini(&o);
    sbuf_fini(&doc);
    return 0;
}
