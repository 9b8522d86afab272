/* fuzz-session.c: session files (src/conversation/session.c on src/store/yamldoc.c).  What
 * loads must save and load again to the same thing (session.h: unknown
 * keys are kept, invalid UTF-8 is written as U+FFFD). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    struct session *s = session_from_yaml((const char *)data, size, "fuzz.yaml", err, sizeof err);
    if (!s)
        return 0;
    size_t len = 0;
    char *text = session_to_yaml(s, &len);
    struct session *t = session_from_yaml(text, len, "saved.yaml", err, sizeof err);
    if (!t) {
        fprintf(stderr, "fuzz: a loaded session does not load after saving: %s\n%s\n", err, text);
        abort();
    }
    if (t->n_msgs != s->n_msgs) {
        fprintf(stderr, "fuzz: %zu messages saved, %zu loaded\n", s->n_msgs, t->n_msgs);
        abort();
    }
    size_t len2 = 0;
    char *text2 = session_to_yaml(t, &len2);
    if (len2 != len || memcmp(text, text2, len) != 0) {
        fprintf(stderr, "fuzz: save(load(save(s))) != save(s)\n--- first\n%s\n--- second\n%s\n",
                text, text2);
        abort();
    }
    free(session_to_markdown(s));
    size_t n = 0;
    free(session_template_msgs(s, true, &n));
    free(session_template_msgs(s, false, &n));
    free(text2);
    free(text);
    session_free(t);
    session_free(s);
    return 0;
}
