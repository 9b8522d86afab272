/* test-golden.c: the engine against numbers it did not compute: the
 * shared reference fixtures (tests/data/fixtures) and the goldens of the
 * float64 NumPy reference (tests/data/golden) on checkpoints regenerated here
 * with tests/lib/gen-checkpoint.  Max |logit error| < 2e-3, identical argmax and
 * greedy tokens; the measured errors are printed as diagnostics. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/tap.h"
#include "tests/lib/engine-fixtures.h"

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    json_object_object_get_ex(o, key, &v);
    return v;
}

/* All-position logits of one batched prefill; NULL on failure. */
static float *prefill_all(elm_model *m, const int32_t *toks, int n, int n_threads)
{
    int V = elm_model_get_info(m)->n_vocab;
    elm_ctx *ctx = te_ctx(m, 0, n_threads);
    float *all = malloc((size_t)n * (size_t)V * sizeof *all);
    elm_status st = ctx ? elm_decode(ctx, toks, n, all, ELM_DECODE_ALL_LOGITS) : ELM_E_INVALID;
    elm_ctx_free(ctx);
    if (st != ELM_OK) {
        diag("prefill: %s", elm_status_str(st));
        free(all);
        return NULL;
    }
    return all;
}

static void check_greedy(elm_model *m, const char *name, const int32_t *toks, int n_toks,
                         json_object *want_arr)
{
    int n_want;
    int32_t *want = te_ids(want_arr, &n_want);
    int32_t got[64];
    elm_ctx *ctx = te_ctx(m, 0, 2);
    bool okay = ctx && n_want <= 64 && te_greedy(ctx, toks, n_toks, n_want, got);
    int first_bad = -1;
    for (int i = 0; okay && i < n_want; i++)
        if (got[i] != want[i] && first_bad < 0)
            first_bad = i;
    ok(okay && first_bad < 0, "%s: %d greedy tokens identical%s", name, n_want,
       first_bad >= 0 ? " (first difference below)" : "");
    if (first_bad >= 0)
        diag("step %d: got %d, want %d", first_bad, got[first_bad], want[first_bad]);
    elm_ctx_free(ctx);
    free(want);
}

/* The shared fixtures: expected.json with last_logits, probes, greedy. */
static void fixture(const char *name)
{
    char rel[256], dir[4096];
    snprintf(rel, sizeof rel, "fixtures/%s", name);
    snprintf(dir, sizeof dir, "%s", tap_data_path(rel));
    char path[4200];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    json_object *exp = te_json(path);
    elm_model *m = exp ? te_load(dir, 2) : NULL;
    if (!ok(m != NULL, "%s: loads", name)) {
        json_object_put(exp);
        return;
    }
    int V = elm_model_get_info(m)->n_vocab, n_toks, n_last;
    int32_t *toks = te_ids(get(exp, "tokens"), &n_toks);
    double tol = json_object_get_double(get(get(exp, "tolerance"), "abs_logit"));
    double *last = te_doubles(get(exp, "last_logits"), &n_last);
    float *all = prefill_all(m, toks, n_toks, 2);
    if (all && n_last == V) {
        double e_last = 0, e_probe = 0;
        const float *row = all + (size_t)(n_toks - 1) * V;
        for (int i = 0; i < V; i++)
            e_last = fmax(e_last, fabs(row[i] - last[i]));
        json_object *pos = get(exp, "positions");
        bool argmax_ok = true;
        for (size_t k = 0; k < json_object_array_length(pos); k++) {
            json_object *p = json_object_array_get_idx(pos, k);
            int at = json_object_get_int(get(p, "pos")), n_ids, n_vals;
            int32_t *ids = te_ids(get(p, "probe_ids"), &n_ids);
            double *vals = te_doubles(get(p, "probe_logits"), &n_vals);
            const float *r = all + (size_t)at * V;
            for (int i = 0; i < n_ids && i < n_vals; i++)
                e_probe = fmax(e_probe, fabs(r[ids[i]] - vals[i]));
            argmax_ok &= te_argmax(r, V) == json_object_get_int(get(p, "argmax"));
            free(ids);
            free(vals);
        }
        ok(e_last < tol, "%s: last_logits max |err| %.3g < %g", name, e_last, tol);
        ok(e_probe < tol, "%s: probe_logits max |err| %.3g < %g", name, e_probe, tol);
        ok(argmax_ok, "%s: argmax at the probed positions", name);
    } else {
        ok(false, "%s: prefill", name);
    }
    check_greedy(m, name, toks, n_toks, get(get(exp, "greedy"), "new_tokens"));
    free(all);
    free(last);
    free(toks);
    elm_model_free(m);
    json_object_put(exp);
}

/* A golden case: regenerate the checkpoint, compare every position's row. */
static void golden(const char *name)
{
    char rel[256], path[8400], dir[4200];
    snprintf(rel, sizeof rel, "golden/%s.json", name);
    json_object *g = te_json(tap_data_path(rel));
    if (!ok(g != NULL, "%s: golden json", name))
        return;
    char args[512] = "";
    json_object *ga = get(g, "gen_args");
    for (size_t i = 0; i < json_object_array_length(ga); i++) {
        strcat(args, json_object_get_string(json_object_array_get_idx(ga, i)));
        strcat(args, " ");
    }
    te_dir(name, dir, sizeof dir);
    elm_model *m = te_gen(args, dir) ? te_load(dir, 2) : NULL;
    if (!ok(m != NULL, "%s: generate and load (%s)", name, args)) {
        json_object_put(g);
        return;
    }
    /* Generator drift would make the comparison meaningless: say so. */
    json_object_object_foreach(get(g, "checkpoint_files"), file, info)
    {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if (stat(path, &sb) != 0 || sb.st_size != json_object_get_int64(get(info, "size")))
            diag("%s: %s differs in size from the one the golden was made from", name, file);
    }
    const struct elm_model_info *in = elm_model_get_info(m);
    int V = in->n_vocab, n_toks, n_last;
    int32_t *toks = te_ids(get(g, "tokens"), &n_toks);
    double *last = te_doubles(get(g, "last_logits"), &n_last);
    snprintf(rel, sizeof rel, "golden/%s", json_object_get_string(get(get(g, "logits_f32"), "file")));
    size_t nbytes = 0;
    float *want = te_read(tap_data_path(rel), &nbytes);
    float *all = prefill_all(m, toks, n_toks, 2);
    if (all && want && nbytes == (size_t)n_toks * V * sizeof(float) && n_last == V) {
        double e_all = te_max_diff_f(all, want, (size_t)n_toks * V), e_last = 0;
        for (int i = 0; i < V; i++)
            e_last = fmax(e_last, fabs(all[(size_t)(n_toks - 1) * V + i] - last[i]));
        ok(e_all < 2e-3, "%s: all %d positions, max |err| %.3g < 2e-3", name, n_toks, e_all);
        ok(e_last < 2e-3, "%s: last row vs float64, max |err| %.3g < 2e-3", name, e_last);
        int n_am, bad = 0;
        int32_t *am = te_ids(get(g, "argmax"), &n_am);
        for (int t = 0; t < n_toks && t < n_am; t++)
            bad += te_argmax(all + (size_t)t * V, V) != am[t];
        ok(bad == 0, "%s: argmax identical at every position (%d differ)", name, bad);
        free(am);
    } else {
        ok(false, "%s: prefill and golden logits (%zu bytes)", name, nbytes);
    }
    check_greedy(m, name, toks, n_toks, get(get(g, "greedy"), "new_tokens"));
    free(all);
    free(want);
    free(last);
    free(toks);
    elm_model_free(m);
    json_object_put(g);
}

int main(void)
{
    plan_lazy();
    fixture("micro-f32");
    fixture("micro-bf16-sharded");
    static const char *const cases[] = {"micro-f32", "micro-bf16", "micro-f16",
                                        "micro-bf16-3shards", "varied-f32"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        golden(cases[i]);
    return done_testing();
}
