/* engine-fixtures.c: helpers shared by the engine tests. */
#include "config.h"

#include "tests/lib/engine-fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/tap.h"

bool te_gen(const char *args, const char *dir)
{
    const char *top = getenv("top_builddir");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s/tests/lib/gen-checkpoint' %s -o '%s' >/dev/null", top ? top : ".",
             args, dir);
    int rc = system(cmd);
    if (rc != 0)
        diag("failed (%d): %s", rc, cmd);
    return rc == 0;
}

const char *te_dir(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", tap_tmpdir(), name);
    mkdir(buf, 0700);
    return buf;
}

elm_model *te_load(const char *dir, int n_threads)
{
    char err[ELM_ERR_MAX];
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = n_threads;
    elm_model *m = NULL;
    elm_status st = elm_model_load(dir, &mp, &m, err, sizeof err);
    if (st != ELM_OK) {
        diag("load %s: %s", dir, err);
        return NULL;
    }
    return m;
}

elm_ctx *te_ctx(const elm_model *m, int n_ctx, int n_threads)
{
    char err[ELM_ERR_MAX];
    struct elm_ctx_params cp = elm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    cp.exact = true; /* the invariants hold for f32 arithmetic (test-gemm-bf16: the rounded path) */
    elm_ctx *c = NULL;
    if (elm_ctx_new(m, &cp, &c, err, sizeof err) != ELM_OK) {
        diag("ctx: %s", err);
        return NULL;
    }
    return c;
}

json_object *te_json(const char *path)
{
    json_object *o = json_object_from_file(path);
    if (!o)
        diag("cannot parse %s: %s", path, json_util_get_last_err());
    return o;
}

void *te_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

bool te_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool okay = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && okay;
}

double *te_doubles(json_object *arr, int *n)
{
    *n = (int)json_object_array_length(arr);
    double *v = malloc((size_t)*n * sizeof *v + 1);
    for (int i = 0; i < *n; i++)
        v[i] = json_object_get_double(json_object_array_get_idx(arr, (size_t)i));
    return v;
}

int32_t *te_ids(json_object *arr, int *n)
{
    *n = (int)json_object_array_length(arr);
    int32_t *v = malloc((size_t)*n * sizeof *v + 1);
    for (int i = 0; i < *n; i++)
        v[i] = json_object_get_int(json_object_array_get_idx(arr, (size_t)i));
    return v;
}

double te_max_diff_f(const float *a, const float *b, size_t n)
{
    double mx = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > mx || isnan(d))
            mx = isnan(d) ? INFINITY : d;
    }
    return mx;
}

int te_argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

bool te_greedy(elm_ctx *ctx, const int32_t *prompt, int n_prompt, int n, int32_t *out)
{
    int V = elm_model_get_info(elm_ctx_model(ctx))->n_vocab;
    float *logits = malloc((size_t)V * sizeof *logits);
    elm_status st = elm_decode(ctx, prompt, n_prompt, logits, 0);
    for (int i = 0; st == ELM_OK && i < n; i++) {
        out[i] = te_argmax(logits, V);
        if (i + 1 < n)
            st = elm_decode(ctx, &out[i], 1, logits, 0);
    }
    free(logits);
    return st == ELM_OK;
}
