/* forward.c: the OpenELM forward pass (docs/OPENELM.md §2) over a chunk of tokens,
 * and elm_decode on top of it.  Activations are f32; a batch goes through
 * elm_gemm (kernels/gemm.c: row kernels, our GEMMs or BLIS), a single token
 * through the row kernels, on the ctx's pool.
 * With elm_ctx_set_profiling on, each phase is timed (`elmchat bench`). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/base/platform.h"
#include "engine/inference/ctx.h"
#include "engine/inference/decode_few.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"
#include "engine/kernels/blocks.h"
#include "engine/kernels/threadpool.h"

static void rmsnorm(const float *x, const float *w, float *out, int n, float eps)
{
    elm_rmsnorm(x, w, out, (size_t)n, eps);
}

/* Rotate-half RoPE: pairs (j, j + hd/2). */
static void rope(float *v, const float *cosv, const float *sinv, int half)
{
    for (int j = 0; j < half; j++) {
        float x0 = v[j], x1 = v[j + half];
        v[j] = x0 * cosv[j] - x1 * sinv[j];
        v[j + half] = x1 * cosv[j] + x0 * sinv[j];
    }
}

/* ------------------------------------------------------------ pool jobs */

struct rows_job {
    const float *src; /* [n, d] */
    float *dst;
    const float *w;
    int n, d;
    float eps;
};

static void rmsnorm_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct rows_job *j = arg;
    for (long t = b; t < e; t++)
        rmsnorm(j->src + t * j->d, j->w, j->dst + t * j->d, j->d, j->eps);
}

struct swiglu_job {
    float *y; /* [n, 2 ff]: gate | up; silu(gate) * up goes over gate */
    int ff;
};

static void swiglu_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct swiglu_job *j = arg;
    for (long t = b; t < e; t++) {
        float *row = j->y + t * 2 * j->ff;
        elm_swiglu(row, row + j->ff, (size_t)j->ff);
    }
}

struct attn_job {
    struct elm_ctx *c;
    const struct elm_layer *l;
    float *k, *v; /* cache of this layer (elm_kv_row) */
    int n, pos0, n_blocks;
    int n_splits; /* key ranges per task (one query block only); 1: none */
};

/* Per-thread state of one task: the transposed key tile, and per query row
 * (ATTN_BQ tokens x grp heads) the unnormalized output, max and sum. */
struct attn_acc {
    float *kt, *o, *mx, *sum;
};

/* Online softmax of query tokens [t0, t1) of kv head kvh over the keys
 * [kb0, kb1) (multiples of ELM_ATTN_BK, causal limit per token applied):
 * fills a->o, a->mx, a->sum from scratch.  The key blocks are the same
 * whether or not the keys are split, so a split changes only the merge. */
static void attn_range(const struct attn_job *j, int kvh, int t0, int t1, int kb0, int kb1,
                       const struct attn_acc *a)
{
    const struct elm_layer *l = j->l;
    struct elm_ctx *c = j->c;
    int hd = c->model->info.head_dim, grp = l->nq / l->nkv;
    size_t row_qkv = (size_t)(l->nq + 2 * l->nkv) * hd, row_kv = (size_t)l->nkv * hd;
    float scale = 1.0f / sqrtf((float)hd);
    int rows = (t1 - t0) * grp, max_keys = j->pos0 + t1;
    kb1 = kb1 < max_keys ? kb1 : max_keys;
    for (int i = 0; i < rows; i++) {
        a->mx[i] = -INFINITY;
        a->sum[i] = 0.0f;
    }
    memset(a->o, 0, (size_t)rows * hd * sizeof *a->o);
    for (int kb = kb0; kb < kb1; kb += ELM_ATTN_BK) {
        int nkb = kb1 - kb < ELM_ATTN_BK ? kb1 - kb : ELM_ATTN_BK;
        const float *kp = elm_kv_row(c, j->k, row_kv, kb) + (size_t)kvh * hd;
        elm_transpose(kp, (long)row_kv, nkb, hd, a->kt, ELM_ATTN_BK);
        for (int d = 0; nkb < ELM_ATTN_BK && d < hd; d++)
            memset(a->kt + (size_t)d * ELM_ATTN_BK + nkb, 0,
                   (size_t)(ELM_ATTN_BK - nkb) * sizeof *a->kt);
        const float *vp = elm_kv_row(c, j->v, row_kv, kb) + (size_t)kvh * hd;
        /* a cold cache (decode at a long context) costs latency more than
         * bandwidth: the next block's keys come while this one computes
         * (the kernel fetches this block's values itself) */
        int next = kb1 - kb - ELM_ATTN_BK;
        if (next > 0)
            elm_prefetch_rows(elm_kv_row(c, j->k, row_kv, kb + ELM_ATTN_BK) + (size_t)kvh * hd,
                              (long)row_kv,
                              next < ELM_ATTN_BK ? next : ELM_ATTN_BK, hd);
        /* rows (token-major, then query head) go to the kernel ELM_ATTN_BR
         * at a time so that they share its loads of this block; tokens
         * before kb - pos0 see none of its keys */
        int ta = kb - j->pos0 > t0 ? kb - j->pos0 : t0;
        for (int i0 = (ta - t0) * grp; i0 < rows; i0 += ELM_ATTN_BR) {
            int nr = rows - i0 < ELM_ATTN_BR ? rows - i0 : ELM_ATTN_BR, nk[ELM_ATTN_BR];
            const float *q[ELM_ATTN_BR];
            for (int r = 0; r < nr; r++) {
                int t = t0 + (i0 + r) / grp, h = kvh * grp + (i0 + r) % grp;
                int lim = j->pos0 + t + 1 - kb; /* causal: keys up to position pos0 + t */
                nk[r] = lim < nkb ? lim : nkb;
                q[r] = c->qkv + (size_t)t * row_qkv + (size_t)h * hd;
            }
            elm_attn_rows(nr, q, nk, scale, a->kt, vp, (long)row_kv, hd, a->mx + i0, a->sum + i0,
                          a->o + (size_t)i0 * hd);
        }
    }
}

static struct attn_acc thread_acc(const struct attn_job *j, int ith)
{
    struct elm_ctx *c = j->c;
    int hd = c->model->info.head_dim, grp = j->l->nq / j->l->nkv;
    struct attn_acc a;
    a.kt = c->attn_scratch + (size_t)ith * c->attn_stride;
    a.o = a.kt + (size_t)hd * ELM_ATTN_BK;
    a.mx = a.o + (size_t)ATTN_BQ * grp * hd;
    a.sum = a.mx + ATTN_BQ * grp;
    return a;
}

/* Causal attention, tiled: a task is one kv head and a block of ATTN_BQ
 * query tokens (all grp query heads that share the kv head); keys stream
 * through in blocks of ELM_ATTN_BK, transposed once per block for every
 * query row, with an online softmax, so memory is O(block), not O(n^2).
 * Query head h uses kv head h / grp. */
static void attn_task(void *arg, long b, long e, int ith)
{
    const struct attn_job *j = arg;
    const struct elm_layer *l = j->l;
    struct elm_ctx *c = j->c;
    int hd = c->model->info.head_dim, grp = l->nq / l->nkv;
    size_t row_att = (size_t)l->nq * hd;
    struct attn_acc a = thread_acc(j, ith);
    for (long item = b; item < e; item++) {
        /* the longest rows (last tokens) first: better balance */
        int kvh = (int)(item % l->nkv), blk = j->n_blocks - 1 - (int)(item / l->nkv);
        int t0 = blk * ATTN_BQ, t1 = t0 + ATTN_BQ < j->n ? t0 + ATTN_BQ : j->n;
        attn_range(j, kvh, t0, t1, 0, j->pos0 + t1, &a);
        for (int t = t0; t < t1; t++)
            for (int g = 0; g < grp; g++) {
                int i = (t - t0) * grp + g, h = kvh * grp + g;
                float *out = c->att + (size_t)t * row_att + (size_t)h * hd;
                float inv = 1.0f / a.sum[i];
                for (int d = 0; d < hd; d++)
                    out[d] = a.o[(size_t)i * hd + d] * inv;
            }
    }
}

/* Decode at a long context (one query block, few kv heads): a task is one
 * kv head and one range of ATTN_KS keys; its partial output, max and sum go
 * to c->attn_part, and attn_merge combines them in key order.  The split
 * depends only on the key count, never on the threads, so results are the
 * same for any thread count. */
_Static_assert(ATTN_KS % ELM_ATTN_BK == 0, "a key split is whole key blocks");
_Static_assert(ELM_KV_STRIPE % ELM_ATTN_BK == 0, "a key block is in one cache stripe");

static size_t part_floats(const struct attn_job *j)
{
    int hd = j->c->model->info.head_dim, rows = j->n * (j->l->nq / j->l->nkv);
    return (size_t)rows * ((size_t)hd + 2);
}

static void attn_split_task(void *arg, long b, long e, int ith)
{
    const struct attn_job *j = arg;
    int hd = j->c->model->info.head_dim, rows = j->n * (j->l->nq / j->l->nkv);
    struct attn_acc a = thread_acc(j, ith);
    for (long item = b; item < e; item++) {
        int kvh = (int)(item / j->n_splits), s = (int)(item % j->n_splits);
        float *part = j->c->attn_part + (size_t)item * part_floats(j);
        float *mx = part + (size_t)rows * hd;
        struct attn_acc out = {a.kt, part, mx, mx + rows};
        attn_range(j, kvh, 0, j->n, s * ATTN_KS, (s + 1) * ATTN_KS, &out);
    }
}

static void attn_merge(const struct attn_job *j)
{
    const struct elm_layer *l = j->l;
    struct elm_ctx *c = j->c;
    int hd = c->model->info.head_dim, grp = l->nq / l->nkv, rows = j->n * grp;
    size_t row_att = (size_t)l->nq * hd, pf = part_floats(j);
    for (int kvh = 0; kvh < l->nkv; kvh++) {
        const float *p0 = c->attn_part + (size_t)kvh * j->n_splits * pf;
        for (int i = 0; i < rows; i++) {
            int t = i / grp, h = kvh * grp + i % grp;
            float m = -INFINITY;
            for (int s = 0; s < j->n_splits; s++) {
                float ms = p0[s * pf + (size_t)rows * hd + i];
                m = ms > m ? ms : m;
            }
            float *out = c->att + (size_t)t * row_att + (size_t)h * hd, sum = 0.0f;
            memset(out, 0, (size_t)hd * sizeof *out);
            for (int s = 0; s < j->n_splits; s++) {
                const float *ps = p0 + s * pf;
                float ms = ps[(size_t)rows * hd + i];
                if (ms == -INFINITY) /* no key of this row in the range */
                    continue;
                float w = expf(ms - m);
                sum += ps[(size_t)rows * hd + rows + i] * w;
                elm_axpy_f32(w, ps + (size_t)i * hd, out, (size_t)hd);
            }
            elm_scale_f32(1.0f / sum, out, (size_t)hd);
        }
    }
}

static void attention(struct elm_ctx *c, const struct elm_layer *l, int li, int n, int pos0)
{
    struct attn_job aj = {.c = c, .l = l, .k = c->k_cache[li], .v = c->v_cache[li], .n = n,
                          .pos0 = pos0, .n_splits = 1};
    aj.n_blocks = (n + ATTN_BQ - 1) / ATTN_BQ;
    int keys = pos0 + n;
    if (aj.n_blocks == 1 && keys > ATTN_KS) {
        aj.n_splits = (keys + ATTN_KS - 1) / ATTN_KS;
        elm_threadpool_for(c->pool, (long)l->nkv * aj.n_splits, 1, attn_split_task, &aj);
        attn_merge(&aj);
        return;
    }
    elm_threadpool_for(c->pool, (long)aj.n_blocks * l->nkv, 1, attn_task, &aj);
}

/* ------------------------------------------------------------ profiling */

/* The hooks of elm_ctx_set_profiling: wall time of each phase on the
 * calling thread.  Off, they read no clock. */
static double prof_start(const struct elm_ctx *c)
{
    return c->profiling ? elm_now_seconds() : 0.0;
}

/* Adds the time since t0 to *acc. */
static void prof_lap(struct elm_ctx *c, double t0, double *acc)
{
    if (c->profiling)
        *acc += elm_now_seconds() - t0;
}

/* ---------------------------------------------------------------- layers */

/* Profiling: a product of m tokens with `rows` rows of w, started at t0. */
static void count_matrix(struct elm_ctx *c, int li, double t0, int m, const struct elm_matrix *w,
                         int64_t rows)
{
    if (!c->profiling)
        return;
    struct elm_ctx_stats *st = &c->stats;
    double s = elm_now_seconds() - t0, flops = 2.0 * m * (double)rows * (double)w->cols;
    st->matrix_s += s;
    st->matrix_flops += flops;
    st->matrix_weight_bytes += (double)elm_row_size(w->dtype, w->cols) * (double)rows;
    if (li < 0) {
        st->head_s += s;
        st->head_flops += flops;
    } else if (li < ELM_MAX_LAYERS) {
        st->layer_matrix_s[li] += s;
        st->layer_matrix_flops[li] += flops;
    }
}

/* C[m, W.rows] (+)= A[m, W.cols] x W^T, for layer li (-1: the LM head). */
static void matmul(struct elm_ctx *c, int li, const float *a, long lda, int m,
                   const struct elm_matrix *w, float *out, long ldc, bool accumulate)
{
    double t0 = prof_start(c);
    elm_gemm(a, lda, m, w, out, ldc, accumulate, c->pool, &c->tile);
    count_matrix(c, li, t0, m, w, w->rows);
}

static void norm_rows(struct elm_ctx *c, const float *src, float *dst, const float *w, int n)
{
    const struct elm_model_info *in = &c->model->info;
    struct rows_job job = {.src = src, .dst = dst, .w = w, .n = n, .d = in->model_dim,
                           .eps = in->rms_eps};
    elm_threadpool_for(c->pool, n, elm_threadpool_chunk(c->pool, n, 2, 1, 8), rmsnorm_task, &job);
}

/* QK-norm and RoPE on the fresh rows, then K and V into the cache, a range
 * of tokens per task. */
struct rope_job {
    struct elm_ctx *c;
    int li, pos0;
};

static void qk_rope_task(void *arg, long b, long e, int ith)
{
    (void)ith;
    const struct rope_job *j = arg;
    struct elm_ctx *c = j->c;
    const struct elm_model_info *in = &c->model->info;
    const struct elm_layer *l = &c->model->layers[j->li];
    int hd = in->head_dim, half = hd / 2;
    size_t row_qkv = (size_t)(l->nq + 2 * l->nkv) * hd, row_kv = (size_t)l->nkv * hd;
    for (long t = b; t < e; t++) {
        int p = j->pos0 + (int)t;
        const float *cs = c->rope_cos + (size_t)p * half, *sn = c->rope_sin + (size_t)p * half;
        float *q = c->qkv + (size_t)t * row_qkv;
        float *k = q + (size_t)l->nq * hd, *v = k + row_kv;
        for (int h = 0; h < l->nq; h++) {
            rmsnorm(q + h * hd, l->q_norm, q + h * hd, hd, in->rms_eps);
            rope(q + h * hd, cs, sn, half);
        }
        float *kc = elm_kv_row(c, c->k_cache[j->li], row_kv, p);
        float *vc = elm_kv_row(c, c->v_cache[j->li], row_kv, p);
        for (int h = 0; h < l->nkv; h++) {
            rmsnorm(k + h * hd, l->k_norm, kc + h * hd, hd, in->rms_eps);
            rope(kc + h * hd, cs, sn, half);
        }
        memcpy(vc, v, row_kv * sizeof *vc);
    }
}

static void qk_rope_store(struct elm_ctx *c, int li, int n, int pos0)
{
    struct rope_job j = {.c = c, .li = li, .pos0 = pos0};
    elm_threadpool_for(c->pool, n, elm_threadpool_chunk(c->pool, n, 2, 1, 8), qk_rope_task, &j);
}

static void layer(struct elm_ctx *c, int li, int n, int pos0)
{
    const struct elm_model_info *in = &c->model->info;
    const struct elm_layer *l = &c->model->layers[li];
    int d = in->model_dim, hd = in->head_dim;
    long row_qkv = (long)(l->nq + 2 * l->nkv) * hd, row_att = (long)l->nq * hd;

    struct elm_ctx_stats *st = &c->stats;
    double t = prof_start(c);
    norm_rows(c, c->x, c->h, l->attn_norm, n);
    prof_lap(c, t, &st->norm_s);
    matmul(c, li, c->h, d, n, &l->qkv, c->qkv, row_qkv, false);
    t = prof_start(c);
    qk_rope_store(c, li, n, pos0);
    prof_lap(c, t, &st->rope_s);
    t = prof_start(c);
    attention(c, l, li, n, pos0);
    prof_lap(c, t, &st->attention_s);
    matmul(c, li, c->att, row_att, n, &l->out, c->x, d, true);

    t = prof_start(c);
    norm_rows(c, c->x, c->h, l->ffn_norm, n);
    prof_lap(c, t, &st->norm_s);
    matmul(c, li, c->h, d, n, &l->proj1, c->ffn, 2L * l->ff, false);
    t = prof_start(c);
    struct swiglu_job sj = {.y = c->ffn, .ff = l->ff};
    elm_threadpool_for(c->pool, n, elm_threadpool_chunk(c->pool, n, 2, 1, 4), swiglu_task, &sj);
    prof_lap(c, t, &st->swiglu_s);
    matmul(c, li, c->ffn, 2L * l->ff, n, &l->proj2, c->x, d, true);
}

/* The rows of the LM head a head asks for: every one, or a list. */
struct head {
    const int32_t *ids; /* NULL: every row */
    int n_ids;
};

/* The last token's logits from its normed state in c->h. */
static void head_rows(struct elm_ctx *c, float *logits, const struct head *hd)
{
    const struct elm_model *m = c->model;
    const struct elm_model_info *in = &m->info;
    if (!hd->ids) {
        matmul(c, -1, c->h, in->model_dim, 1, &m->embed, logits, in->n_vocab, false);
        return;
    }
    double t0 = prof_start(c);
    for (int i = 0; i < in->n_vocab; i++)
        logits[i] = -INFINITY;
    elm_gemm_rows_of(c->h, &m->embed, hd->ids, hd->n_ids, logits, c->pool, &c->tile);
    count_matrix(c, -1, t0, 1, &m->embed, hd->n_ids);
}

/* n <= n_batch tokens at positions pos0..; logits for the last token (the
 * rows hd asks for), or a row per token when all. */
static elm_status chunk(struct elm_ctx *c, const int32_t *tokens, int n, int pos0, float *logits,
                        bool all, const struct head *hd)
{
    const struct elm_model *m = c->model;
    const struct elm_model_info *in = &m->info;
    int d = in->model_dim;
    size_t row_bytes = elm_row_size(m->embed.dtype, d); /* block types too (quant.h) */
    for (int t = 0; t < n; t++)
        elm_to_f32((const char *)m->embed.data + (size_t)tokens[t] * row_bytes,
                   m->embed.dtype, c->x + (size_t)t * d, (size_t)d);
    for (int li = 0; li < in->n_layers; li++) {
        if (c->abort_cb && c->abort_cb(c->abort_user))
            return ELM_E_ABORTED;
        layer(c, li, n, pos0);
    }
    if (!logits)
        return ELM_OK;
    double t = prof_start(c);
    if (all) {
        norm_rows(c, c->x, c->h, m->final_norm, n);
        prof_lap(c, t, &c->stats.norm_s);
        matmul(c, -1, c->h, d, n, &m->embed, logits, in->n_vocab, false);
    } else {
        norm_rows(c, c->x + (size_t)(n - 1) * d, c->h, m->final_norm, 1);
        prof_lap(c, t, &c->stats.norm_s);
        head_rows(c, logits, hd);
    }
    return ELM_OK;
}

static elm_status decode(elm_ctx *ctx, const int32_t *tokens, int n, float *logits,
                         unsigned flags, const struct head *hd);

elm_status elm_decode(elm_ctx *ctx, const int32_t *tokens, int n, float *logits, unsigned flags)
{
    return decode(ctx, tokens, n, logits, flags, &(struct head){NULL, 0});
}

elm_status elm_decode_few(elm_ctx *ctx, int32_t token, float *logits, const int32_t *ids,
                          int n_ids)
{
    if (!ids || n_ids <= 0 || !logits)
        return ELM_E_INVALID;
    for (int i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= ctx->model->info.n_vocab || (i > 0 && ids[i] <= ids[i - 1]))
            return ELM_E_INVALID;
    elm_status st = decode(ctx, &token, 1, logits, 0, &(struct head){ids, n_ids});
    if (st == ELM_OK)
        ctx->few_at = ctx->n_past;
    return st;
}

elm_status elm_decode_head_rest(elm_ctx *ctx, float *logits)
{
    if (!ctx || !logits || ctx->few_at != ctx->n_past)
        return ELM_E_INVALID;
    head_rows(ctx, logits, &(struct head){NULL, 0});
    return ELM_OK;
}

static elm_status decode(elm_ctx *ctx, const int32_t *tokens, int n, float *logits,
                         unsigned flags, const struct head *hd)
{
    if (!ctx || !tokens || n <= 0)
        return ELM_E_INVALID;
    ctx->few_at = -1;
    const struct elm_model_info *in = &ctx->model->info;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= in->n_vocab)
            return ELM_E_INVALID;
    if (n > ctx->n_ctx - ctx->n_past)
        return ELM_E_CONTEXT_FULL;
    bool all = flags & ELM_DECODE_ALL_LOGITS;
    double t0 = prof_start(ctx);
    for (int done = 0; done < n;) {
        int k = n - done < ctx->n_batch ? n - done : ctx->n_batch;
        bool last = done + k == n;
        float *out = NULL;
        if (logits && all)
            out = logits + (size_t)done * (size_t)in->n_vocab;
        else if (logits && last)
            out = logits;
        elm_status st = chunk(ctx, tokens + done, k, ctx->n_past + done, out, all, hd);
        if (st)
            return st; /* n_past unchanged: rows past it are never read */
        done += k;
    }
    memcpy(ctx->tokens + ctx->n_past, tokens, (size_t)n * sizeof *tokens);
    ctx->n_past += n;
    if (ctx->profiling) {
        prof_lap(ctx, t0, &ctx->stats.total_s);
        ctx->stats.n_calls++;
        ctx->stats.n_tokens += (uint64_t)n;
    }
    return ELM_OK;
}
