/* check.c: elm_model_check (elm.h), every weight scanned for NaN and
 * infinity, one tensor at a time through a buffer of rows (a 3B BF16 model
 * is 6 GB: never done at load). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/error.h"
#include "engine/elm.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/kernels.h"
#include "engine/model/model.h"

static long bad_in(const float *v, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !isfinite(v[i]);
    return bad;
}

/* Non-finite values of a matrix, widened 64 rows at a time. */
static long bad_matrix(const struct elm_matrix *m, float *buf, size_t buf_rows)
{
    size_t row_bytes = elm_row_size(m->dtype, m->cols);
    long bad = 0;
    for (int64_t r = 0; r < m->rows; r += (int64_t)buf_rows) {
        int64_t n = m->rows - r < (int64_t)buf_rows ? m->rows - r : (int64_t)buf_rows;
        const char *src = (const char *)m->data + (size_t)r * row_bytes;
        if (elm_dtype_is_quant(m->dtype))
            elm_dequantize(src, m->dtype, buf, n * m->cols);
        else
            elm_to_f32(src, m->dtype, buf, (size_t)(n * m->cols));
        bad += bad_in(buf, (size_t)(n * m->cols));
    }
    return bad;
}

elm_status elm_model_check(const elm_model *model,
                           void (*bad)(void *user, const char *tensor, long n_bad), void *user,
                           long *total_bad)
{
    const struct elm_model_info *in = &model->info;
    size_t cols_max = (size_t)in->model_dim;
    for (int l = 0; l < in->n_layers; l++) {
        const struct elm_layer *ly = &model->layers[l];
        const struct elm_matrix *ms[4] = {&ly->qkv, &ly->out, &ly->proj1, &ly->proj2};
        for (int k = 0; k < 4; k++)
            if ((size_t)ms[k]->cols > cols_max)
                cols_max = (size_t)ms[k]->cols;
    }
    enum { ROWS = 64 };
    float *buf = malloc(cols_max * ROWS * sizeof *buf);
    if (!buf)
        return ELM_E_NOMEM;
    *total_bad = 0;
    char name[64];
    long n = bad_matrix(&model->embed, buf, ROWS);
    if (n && bad)
        bad(user, "token_embd (the embedding and LM head)", n);
    *total_bad += n;
    n = bad_in(model->final_norm, (size_t)in->model_dim);
    if (n && bad)
        bad(user, "final norm", n);
    *total_bad += n;
    for (int l = 0; l < in->n_layers; l++) {
        const struct elm_layer *ly = &model->layers[l];
        const struct { const char *what; const struct elm_matrix *m; } mats[] = {
            {"qkv", &ly->qkv}, {"out", &ly->out}, {"ffn gate/up", &ly->proj1},
            {"ffn down", &ly->proj2}};
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
            n = bad_matrix(mats[k].m, buf, ROWS);
            if (n && bad) {
                snprintf(name, sizeof name, "layer %d %s", l, mats[k].what);
                bad(user, name, n);
            }
            *total_bad += n;
        }
        const struct { const char *what; const float *v; size_t n; } norms[] = {
            {"attention norm", ly->attn_norm, (size_t)in->model_dim},
            {"ffn norm", ly->ffn_norm, (size_t)in->model_dim},
            {"q norm", ly->q_norm, (size_t)in->head_dim},
            {"k norm", ly->k_norm, (size_t)in->head_dim}};
        for (size_t k = 0; k < sizeof norms / sizeof norms[0]; k++) {
            n = norms[k].v ? bad_in(norms[k].v, norms[k].n) : 0;
            if (n && bad) {
                snprintf(name, sizeof name, "layer %d %s", l, norms[k].what);
                bad(user, name, n);
            }
            *total_bad += n;
        }
    }
    free(buf);
    return ELM_OK;
}
