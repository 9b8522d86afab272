/* test-sampling-defaults.c: the sampling defaults a model brings with it
 * (struct elm_model_sampling): generation_config.json's keys and
 * do_sample, what is rejected (naming the file and the key), the GGUF's
 * general.sampling.* keys, and that elm_quantize carries them over. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/elm.h"
#include "tests/lib/tap.h"

static char model_dir[4096];

static void write_gen_config(const char *json)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/generation_config.json", model_dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(json, f) < 0 || fclose(f) != 0)
        bail_out("cannot write %s", path);
}

/* Load model_dir (or path) and copy its sampling defaults; false and err on failure. */
static bool load(const char *path, struct elm_model_sampling *out, char *err, size_t err_size)
{
    elm_model *m = NULL;
    if (elm_model_load(path, NULL, &m, err, err_size) != ELM_OK)
        return false;
    *out = elm_model_get_info(m)->sampling;
    elm_model_free(m);
    return true;
}

static void test_generation_config(void)
{
    struct elm_model_sampling s;
    char err[512];

    write_gen_config("{\"bos_token_id\": 1, \"eos_token_id\": 2}\n");
    ok(load(model_dir, &s, err, sizeof err) && s.set == 0,
       "a Hub generation_config.json (bos/eos only) sets nothing");

    write_gen_config("{\"temperature\": 0.7, \"top_k\": 40, \"top_p\": 0.9, \"min_p\": 0.05,"
                     " \"repetition_penalty\": 1.0, \"max_new_tokens\": 99, \"do_sample\": true}");
    ok(load(model_dir, &s, err, sizeof err), "all keys load: %s", err);
    is_int(s.set, ELM_SAMPLING_TEMPERATURE | ELM_SAMPLING_TOP_K | ELM_SAMPLING_TOP_P |
                      ELM_SAMPLING_MIN_P | ELM_SAMPLING_REPEAT_PENALTY,
           "each key sets its bit, repeat-last-n (no HF key) stays unset");
    near(s.temperature, 0.7, 1e-6, "temperature");
    is_int(s.top_k, 40, "top_k");
    near(s.top_p, 0.9, 1e-6, "top_p");
    near(s.min_p, 0.05, 1e-6, "min_p");
    near(s.repeat_penalty, 1.0, 0, "repetition_penalty");

    write_gen_config("{\"temperature\": 0.8, \"do_sample\": false, \"repetition_penalty\": 1}");
    ok(load(model_dir, &s, err, sizeof err) && (s.set & ELM_SAMPLING_TEMPERATURE) &&
           s.temperature == 0.0f && s.repeat_penalty == 1.0f,
       "do_sample false is greedy, whatever temperature says; an integer 1 is a number");

    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"temperature\": \"hot\"}", "generation_config.json: temperature: expected a number"},
        {"{\"top_p\": 1.5}", "generation_config.json: top_p: 1.5 is out of range"},
        {"{\"top_k\": 2.5}", "generation_config.json: top_k: 2.5 is not an integer"},
        {"{\"repetition_penalty\": 0}", "generation_config.json: repetition_penalty: 0 is out"},
        {"{\"do_sample\": 1}", "generation_config.json: do_sample: expected true or false"},
        {"[1, 2]", "generation_config.json: not a JSON object"},
        {"{\"temperature\": 0.5,", "generation_config.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_gen_config(bad[i].json);
        err[0] = '\0';
        bool loaded = load(model_dir, &s, err, sizeof err);
        ok(!loaded && strstr(err, bad[i].want), "%s is refused: %s", bad[i].json, err);
    }
}

static void test_gguf(void)
{
    struct elm_model_sampling s;
    char err[512], gguf[4200];
    write_gen_config("{\"do_sample\": false, \"repetition_penalty\": 1.0, \"top_k\": 7}");
    snprintf(gguf, sizeof gguf, "%s/sampling.gguf", tap_tmpdir());
    struct elm_quantize_params qp = elm_quantize_default_params();
    ok(elm_quantize(model_dir, gguf, &qp, err, sizeof err) == ELM_OK, "quantize: %s", err);
    ok(load(gguf, &s, err, sizeof err), "the GGUF loads: %s", err);
    is_int(s.set, ELM_SAMPLING_TEMPERATURE | ELM_SAMPLING_TOP_K | ELM_SAMPLING_REPEAT_PENALTY,
           "the GGUF keeps exactly the defaults that were set");
    ok(s.temperature == 0.0f && s.top_k == 7 && s.repeat_penalty == 1.0f,
       "with their values (general.sampling.temp, top_k, penalty_repeat)");

    write_gen_config("{}");
    ok(elm_quantize(model_dir, gguf, &qp, err, sizeof err) == ELM_OK && load(gguf, &s, err, sizeof err) &&
           s.set == 0,
       "a model without defaults gives a GGUF without general.sampling keys");
}

int main(void)
{
    if (!tap_gen_checkpoint("--preset micro", model_dir, sizeof model_dir, "m"))
        skip_all("tests/lib/gen-checkpoint is not built");
    plan_lazy();
    test_generation_config();
    test_gguf();
    return done_testing();
}
