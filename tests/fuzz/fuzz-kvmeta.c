/* fuzz-kvmeta.c: the KV snapshot sidecar NAME.kv.meta (src/conversation/kvcache_store.c's
 * kvcache_adopt) against a freshly loaded conversation.
 *
 * The file ends in an FNV-1a checksum of everything before it; random bytes
 * never match it, so the harness writes the right one (kvcache_store.c's
 * own kvcache_meta_checksum) and the reader behind it gets fuzzed. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conversation/conversation.h"
#include "src/conversation/kvcache_store.h"

#define FINGERPRINT 42

static const char template_yaml[] =
    "name: fuzz\n"
    "prefix: \"{bos}\"\n"
    "roles:\n"
    "  system:\n"
    "    turn: \"<|system|>\\n{content}{eos}\\n\"\n"
    "  user:\n"
    "    turn: \"<|user|>\\n{content}{eos}\\n\"\n"
    "  assistant:\n"
    "    turn: \"<|assistant|>\\n{content}{eos}\\n\"\n"
    "generation_prompt: \"<|assistant|>\\n\"\n";

static const struct template *get_template(void)
{
    static struct template *tpl;
    if (!tpl) {
        char err[512];
        const char *path = fuzz_write_file("fuzz-template.yaml", (const uint8_t *)template_yaml,
                                           sizeof template_yaml - 1);
        if (!(tpl = template_load_file(path, err, sizeof err))) {
            fprintf(stderr, "fuzz: %s\n", err);
            abort();
        }
    }
    return tpl;
}

/* The conversation as a loaded session gives it: messages, no sampled ids. */
static struct session *make_session(void)
{
    struct session *s = session_new("fuzz");
    s->system = strdup("Be brief.");
    session_append(s, ROLE_USER, "Hi abc");
    session_append(s, ROLE_ASSISTANT, "ab");
    session_append(s, ROLE_USER, "abc");
    session_append(s, ROLE_ASSISTANT, "c");
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const elm_tokenizer *tok = fuzz_tiny_tokenizer();
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    if (size >= 16) {
        uint64_t h = kvcache_meta_checksum(copy, size - 8);
        memcpy(copy + size - 8, &h, 8);
    }
    (void)fuzz_write_file("state.kv.meta", copy, size);
    free(copy);
    char kv_path[4200];
    snprintf(kv_path, sizeof kv_path, "%s/state.kv", fuzz_tmpdir());

    struct session *s = make_session();
    struct conversation cv;
    conversation_init(&cv, s, get_template(), tok, 64, NULL);
    char err[512];
    if (conversation_render(&cv, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz: %s\n", err);
        abort();
    }
    (void)kvcache_adopt(&cv, kv_path, size && data[0] & 1 ? 0 : FINGERPRINT);
    /* whatever it adopted, the sequence must be a valid one */
    int n_vocab = elm_tokenizer_n_vocab(tok);
    for (size_t i = 0; i < cv.tokens.n; i++)
        if (cv.tokens.v[i] < 0 || cv.tokens.v[i] >= n_vocab) {
            fprintf(stderr, "fuzz: token %zu = %d\n", i, (int)cv.tokens.v[i]);
            abort();
        }
    for (size_t i = 0; i < s->n_msgs; i++) {
        const struct conv_span *sp = &cv.spans[i];
        if (s->msgs[i].out_of_context)
            continue;
        if (!(sp->start <= sp->gen && sp->gen <= sp->sampled_end &&
              sp->sampled_end <= sp->end && sp->end <= cv.tokens.n)) {
            fprintf(stderr, "fuzz: span %zu [%zu %zu %zu %zu] of %zu tokens\n", i, sp->start,
                    sp->gen, sp->sampled_end, sp->end, cv.tokens.n);
            abort();
        }
    }
    /* and the conversation must go on from it */
    struct conv_plan plan;
    if (conversation_user_turn(&cv, "more", 8, &plan, err, sizeof err) == 0) {
        int32_t ids[] = {265, 2};
        conversation_reply_push(&cv, ids, 2);
        (void)conversation_reply_end(&cv, TEMPLATE_END_EOS, "b", false, err, sizeof err);
    }
    conversation_fini(&cv);
    session_free(s);
    return 0;
}
