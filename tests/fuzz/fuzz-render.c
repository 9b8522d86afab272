/* fuzz-render.c: a session file through to token ids (src/conversation/session.c, the
 * tree, src/conversation/conversation.c, the renderer, the tokenizer): the path where a
 * long session once took quadratic memory.  What loads is rendered with a
 * template built in (no special id between turns, like plain: the case
 * that grew), then the tree is walked: every version of every message is
 * switched to, a fork, an undo; each sequence must stay within the
 * context and equal what rendering the path from scratch gives (ready to
 * answer, as /retry makes it, when the path ends in a user message). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/conversation.h"
#include "src/conversation/session.h"
#include "src/conversation/session_tree.h"
#include "src/template/template.h"

static const char plain_yaml[] =
    "name: fuzzplain\nprefix: \"{bos}\"\nroles:\n"
    "  system: {turn: \"{content}\\n\\n\"}\n"
    "  user: {turn: \"{content}\\n\"}\n"
    "  assistant: {turn: \"{content}\"}\n"
    "generation_prompt: \"\"\nstop: [\"{eos}\"]\n";

static struct template *tpl;

static void check_same_as_fresh(struct conversation *cv)
{
    struct conversation fresh;
    char err[512];
    conversation_init(&fresh, cv->s, tpl, cv->tok, cv->n_ctx, NULL);
    int rc = conversation_render(&fresh, err, sizeof err);
    /* a switch to a path that ends in a user message stands ready to
     * answer it (its generation prompt rendered), as /retry would */
    if (rc == 0 && cv->in_reply && !fresh.in_reply)
        rc = conversation_retry(&fresh, 0, NULL, err, sizeof err);
    if (rc == 0 && cv->rendered &&
        (fresh.tokens.n != cv->tokens.n ||
         memcmp(fresh.tokens.v, cv->tokens.v, cv->tokens.n * sizeof *cv->tokens.v) != 0)) {
        fprintf(stderr, "fuzz: %zu ids incrementally, %zu rendered fresh\n", cv->tokens.n,
                fresh.tokens.n);
        abort();
    }
    conversation_fini(&fresh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    if (!tpl) {
        const char *path = fuzz_write_file("plain.yaml", (const uint8_t *)plain_yaml,
                                           sizeof plain_yaml - 1);
        tpl = template_load_file(path, err, sizeof err);
        if (!tpl) {
            fprintf(stderr, "fuzz: the built-in template: %s\n", err);
            abort();
        }
    }
    struct session *s = session_from_yaml((const char *)data, size, "fuzz.yaml", err, sizeof err);
    if (!s)
        return 0;
    struct conversation cv;
    conversation_init(&cv, s, tpl, fuzz_tiny_tokenizer(), 4096, NULL);
    conversation_render(&cv, err, sizeof err);
    /* every version of every path message, then back */
    for (size_t i = 0; i < s->n_msgs && i < 64; i++) {
        size_t k, n;
        session_siblings(s, i, &k, &n);
        for (size_t v = 1; v <= n && v <= 4; v++) {
            struct conv_plan plan;
            conversation_branch(&cv, i, v, &plan, err, sizeof err);
            if (plan.n_reuse > plan.n_tokens || plan.n_compute < 0)
                abort();
        }
    }
    check_same_as_fresh(&cv);
    if (s->n_msgs > 1)
        conversation_fork(&cv, s->n_msgs / 2, err, sizeof err);
    char *text = NULL;
    if (conversation_undo(&cv, &text, err, sizeof err) == 0)
        free(text);
    check_same_as_fresh(&cv);
    conversation_fini(&cv);
    session_free(s);
    return 0;
}
