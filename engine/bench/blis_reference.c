/* blis_reference.c: BLIS sgemm on a model's prefill products, the
 * reference `elmchat bench` sets the prefill's matrix part against
 * (elm_bench.h). */
#include "config.h"

#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/base/platform.h"
#include "engine/elm_bench.h"
#include "engine/inference/ctx.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}



/* ------------------------------------------------ BLIS sgemm reference */

/* The four products of a layer, as forward.c runs them (accumulate: the
 * residual adds into C). */
static const struct elm_matrix *layer_matrix(const struct elm_layer *l, int i, bool *accumulate)
{
    *accumulate = i == 1 || i == 3;
    return i == 0 ? &l->qkv : i == 1 ? &l->out : i == 2 ? &l->proj1 : &l->proj2;
}

static double layer_flops(const struct elm_layer *l, double tokens)
{
    double f = 0;
    for (int i = 0; i < 4; i++) {
        bool acc;
        const struct elm_matrix *w = layer_matrix(l, i, &acc);
        f += 2.0 * tokens * (double)w->rows * (double)w->cols;
    }
    return f;
}

/* Layers in an order that spreads any prefix of it over the depth: the
 * first, the last, then each time the layer farthest from those taken. */
static void spread_order(int n, int *order)
{
    bool taken[ELM_MAX_LAYERS] = {false};
    for (int k = 0; k < n; k++) {
        int best = 0, best_d = -1;
        for (int i = 0; i < n; i++) {
            if (taken[i])
                continue;
            int d = n; /* nothing taken yet: the first layer */
            for (int j = 0; j < k; j++) {
                int dj = order[j] > i ? order[j] - i : i - order[j];
                d = dj < d ? dj : d;
            }
            if (k == 1)
                d = i == n - 1 ? n : d; /* then the last */
            if (d > best_d) {
                best_d = d;
                best = i;
            }
        }
        taken[best] = true;
        order[k] = best;
    }
}

/* BLIS's threads wait for each other in spinning barriers: when another
 * process takes a core, one call can take 10-30 times longer.  A shot whose
 * threads got less than CONTENDED of their cores' time is taken again. */
#define CONTENDED 0.85
#define MAX_RESHOTS 2

static void sgemm_threads(int threads, long m, long n, long k, const float *a, long lda,
                          const float *b, long ldb, float *c, long ldc, bool accumulate)
{
    float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(threads, &rntm);
    /* BLIS never writes A or B; its typed API just lacks const. */
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, m, n, k, &one, (float *)a, lda, 1,
                 (float *)b, ldb, 1, &beta, c, ldc, 1, NULL, &rntm);
}

/* libgomp's idle threads spin a few milliseconds before they sleep
 * (OMP_WAIT_POLICY unset; it is read before main, so it cannot be set
 * here): wait until the process stops burning CPU, so that neither the
 * next measurement nor a UI thread competes with them.  At most ~0.2 s. */
static double settle_openmp(void)
{
    double t0 = elm_now_seconds();
    for (int i = 0; i < 100; i++) {
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = elm_now_seconds();
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        double busy = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / (elm_now_seconds() - w0);
        if (busy < 0.1) /* of one core: nobody spins */
            break;
    }
    return elm_now_seconds() - t0;
}

elm_status elm_blis_reference(const elm_ctx *ctx, int n_tokens, double max_seconds,
                              struct elm_blis_reference *out, char *err, size_t err_size)
{
    if (!ctx || !out || n_tokens < 1)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_blis_reference: %s",
                             !ctx || !out ? "no ctx" : "no tokens");
    const struct elm_model *model = ctx->model;
    const struct elm_model_info *in = &model->info;
    int n_layers = in->n_layers < ELM_MAX_LAYERS ? in->n_layers : ELM_MAX_LAYERS;
    /* The prefill's batches: q of n_batch tokens, then r. */
    long nb = ctx->n_batch, q = n_tokens / nb, r = n_tokens % nb;
    long sizes[2] = {q > 0 ? nb : r, r}, counts[2] = {q > 0 ? q : 1, q > 0 && r > 0 ? 1 : 0};
    long m = sizes[0];

    size_t max_rows = 0, max_cols = 0, max_wide = 0;
    double all_flops = 0;
    for (int li = 0; li < n_layers; li++) {
        const struct elm_layer *l = &model->layers[li];
        all_flops += layer_flops(l, (double)n_tokens);
        for (int i = 0; i < 4; i++) {
            bool acc;
            const struct elm_matrix *w = layer_matrix(l, i, &acc);
            size_t rows = (size_t)w->rows, cols = (size_t)w->cols;
            max_rows = rows > max_rows ? rows : max_rows;
            max_cols = cols > max_cols ? cols : max_cols;
            if (w->dtype != ELM_DTYPE_F32 && rows * cols > max_wide)
                max_wide = rows * cols;
        }
    }
    if (n_layers < 1 || max_rows == 0 || max_cols == 0)
        return elm_set_error(err, err_size, ELM_E_INVALID, "%s: no layers", in->name);
    float *a = aligned_alloc(64, ((size_t)m * max_cols * sizeof(float) + 63) / 64 * 64);
    float *c = calloc((size_t)m * max_rows, sizeof(float));
    float *wide = max_wide ? aligned_alloc(64, (max_wide * sizeof(float) + 63) / 64 * 64) : NULL;
    if (!a || !c || (max_wide && !wide)) {
        free(a);
        free(c);
        free(wide);
        return elm_set_error(err, err_size, ELM_E_NOMEM,
                             "%s: out of memory for the BLIS reference", in->name);
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (size_t)m * max_cols; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (float)((double)(s >> 40) / (double)(1u << 23) - 1.0); /* [-1, 1) */
    }

    memset(out, 0, sizeof *out);
    out->m = (int)m;
    out->n_threads = ctx->n_threads;
    snprintf(out->arch, sizeof out->arch, "%s", elm_gemm_blis_arch(NULL));
    int order[ELM_MAX_LAYERS];
    spread_order(n_layers, order);

    double t_start = elm_now_seconds(), wall = 0, cpu = 0;
    /* Warm-up, untimed: BLIS's buffers and the OpenMP team. */
    {
        const struct elm_matrix *w = &model->layers[order[0]].qkv;
        long rows = w->rows < 256 ? (long)w->rows : 256, cols = (long)w->cols;
        if (w->dtype != ELM_DTYPE_F32)
            elm_to_f32(w->data, w->dtype, wide, (size_t)rows * (size_t)cols);
        const float *wf = w->dtype == ELM_DTYPE_F32 ? w->data : wide;
        sgemm_threads(ctx->n_threads, m < 64 ? m : 64, rows, cols, a, cols, wf, cols, c,
                      (long)max_rows, false);
    }
    for (int k = 0; k < n_layers; k++) {
        double elapsed = elm_now_seconds() - t_start;
        if (k > 0 && elapsed + elapsed / k > max_seconds)
            break;
        const struct elm_layer *l = &model->layers[order[k]];
        for (int i = 0; i < 4; i++) {
            bool acc;
            const struct elm_matrix *w = layer_matrix(l, i, &acc);
            long rows = (long)w->rows, cols = (long)w->cols;
            if (rows == 0 || cols == 0)
                continue;
            const float *wf = w->data;
            if (w->dtype != ELM_DTYPE_F32) {
                elm_to_f32(w->data, w->dtype, wide, (size_t)rows * (size_t)cols);
                wf = wide;
            }
            for (int v = 0; v < 2; v++) {
                if (counts[v] == 0 || sizes[v] == 0)
                    continue;
                /* One shot; again (at most twice) when the threads did
                 * not get their cores, keeping the fastest shot. */
                double best = 0, best_cpu = 0;
                for (int shot = 0; shot < 1 + MAX_RESHOTS; shot++) {
                    double t0 = elm_now_seconds(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
                    sgemm_threads(ctx->n_threads, sizes[v], rows, cols, a, cols, wf, cols, c,
                                  rows, acc);
                    double t = elm_now_seconds() - t0, cp = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
                    if (shot == 0 || t < best) {
                        best = t;
                        best_cpu = cp;
                    }
                    if (cp >= CONTENDED * t * ctx->n_threads)
                        break;
                    if (shot < MAX_RESHOTS)
                        out->n_reshots++;
                }
                wall += best;
                cpu += best_cpu;
                out->seconds += best * (double)counts[v];
                out->flops += 2.0 * (double)sizes[v] * (double)rows * (double)cols *
                              (double)counts[v];
            }
        }
        out->layers[out->n_layers++] = order[k];
    }
    out->flops_share = all_flops > 0 ? out->flops / all_flops : 0;
    out->cpu_share = wall > 0 ? cpu / (wall * ctx->n_threads) : 0;
    free(a);
    free(c);
    free(wide);
    out->settle_seconds = settle_openmp();
    return ELM_OK;
}
