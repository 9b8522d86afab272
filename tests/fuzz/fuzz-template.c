/* fuzz-template.c: chat templates (src/template/template.c on src/store/yamldoc.c), then
 * rendering a short conversation with the loaded template: incrementally and
 * all at once (template.h promises both give the same ids), and as text. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/template/template.h"

static const struct template_msg msgs[] = {
    {ROLE_USER, "Hi abc"},
    {ROLE_ASSISTANT, "Hello {eos} <s> a"},
    {ROLE_USER, ""},
    {ROLE_ASSISTANT, "b\n"},
};
#define N_MSGS (sizeof msgs / sizeof msgs[0])

static void render(const struct template *tpl, const char *system)
{
    const elm_tokenizer *tok = fuzz_tiny_tokenizer();
    struct idvec inc = {0}, whole = {0};
    struct template_render r;
    template_render_init(&r, tpl, tok);
    int rc = template_render_system(&r, system, &inc);
    for (size_t i = 0; rc == 0 && i < N_MSGS; i++) {
        if (msgs[i].role == ROLE_USER) {
            rc = template_render_user(&r, msgs[i].content, &inc);
        } else {
            rc = template_render_generation_prompt(&r, &inc);
            if (rc == 0)
                rc = template_render_reply(&r, msgs[i].content, &inc);
        }
    }
    if (rc == 0)
        rc = template_render_generation_prompt(&r, &inc);
    int rc2 = template_render_conversation(tpl, tok, system, msgs, N_MSGS, true, &whole);
    if (rc == 0 && rc2 == 0 &&
        (inc.n != whole.n || (inc.n && memcmp(inc.v, whole.v, inc.n * sizeof *inc.v) != 0))) {
        fprintf(stderr, "fuzz: incremental rendering (%zu ids) != whole (%zu ids)\n", inc.n,
                whole.n);
        abort();
    }
    /* a sampled reply ending each way */
    for (int how = TEMPLATE_END_EOS; how <= TEMPLATE_END_CUT; how++) {
        struct template_render r2;
        template_render_init(&r2, tpl, tok);
        idvec_clear(&inc);
        if (template_render_user(&r2, "q", &inc) == 0 &&
            template_render_generation_prompt(&r2, &inc) == 0) {
            idvec_push(&inc, 260);
            idvec_push(&inc, elm_tokenizer_eos(tok));
            (void)template_render_reply_end(&r2, (enum template_end)how, &inc);
            (void)template_render_user(&r2, "again", &inc);
        }
        template_render_set_after_reply(&r2);
        (void)template_render_user(&r2, "after", &inc);
        template_render_reset(&r2);
        template_render_fini(&r2);
    }
    template_render_fini(&r);
    idvec_fini(&inc);
    idvec_fini(&whole);
    free(template_render_text(tpl, system, msgs, N_MSGS, true));
    free(template_render_text(tpl, system, msgs, 1, false));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("fuzz.yaml", data, size);
    char err[512];
    struct template *tpl = template_load_file(path, err, sizeof err);
    if (!tpl)
        return 0;
    render(tpl, NULL);
    render(tpl, "Be brief.");
    render(tpl, "");
    struct elm_sampler_params p = elm_sampler_default_params();
    int max_tokens = 0;
    sampling_apply(&tpl->sampling, &p, &max_tokens);
    template_free(tpl);
    return 0;
}
