/* gguf_convert.c: elm_quantize, the GGUF converter: a loaded model (Hugging
 * Face folder or GGUF) written as the GGUF file llama.cpp's converter would make
 * (docs/OPENELM.md §7): the same keys, tensor names and shapes, proj_1 split into
 * ffn_gate and ffn_up, norms in f32, the vocabulary as tokenizer.ggml.*. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/gguf.h"
#include "engine/kernels/blocks.h"
#include "engine/model/model.h"
#include "engine/model/sampling_defaults.h"

/* One tensor to write: a row range of a loaded matrix, or a norm vector. */
struct source {
    const struct elm_matrix *mat; /* NULL: vec */
    int64_t row0;
    const float *vec;
    int64_t n;
    enum elm_dtype dst;
    float *tmp; /* shared scratch of the widest row */
};

static elm_status fill_row(void *user, int64_t r, void *dst, char *err, size_t err_size)
{
    (void)err;
    (void)err_size;
    const struct source *s = user;
    if (!s->mat) {
        memcpy(dst, s->vec, (size_t)s->n * sizeof(float));
        return ELM_OK;
    }
    const struct elm_matrix *m = s->mat;
    size_t src_rs = elm_row_size(m->dtype, m->cols);
    const uint8_t *src = (const uint8_t *)m->data + (size_t)(s->row0 + r) * src_rs;
    if (m->dtype == s->dst) { /* same type: the bytes as they are, no re-rounding */
        memcpy(dst, src, src_rs);
        return ELM_OK;
    }
    elm_dequantize(src, m->dtype, s->tmp, m->cols);
    elm_quantize_row(s->tmp, s->dst, dst, m->cols);
    return ELM_OK;
}

static uint32_t file_type(enum elm_dtype t)
{
    switch (t) {
    case ELM_DTYPE_F32: return 0;  /* LLAMA_FTYPE_ALL_F32 */
    case ELM_DTYPE_F16: return 1;  /* MOSTLY_F16 */
    case ELM_DTYPE_Q4_0: return 2; /* MOSTLY_Q4_0 */
    case ELM_DTYPE_Q8_0: return 7; /* MOSTLY_Q8_0 */
    case ELM_DTYPE_BF16: return 32; /* MOSTLY_BF16 */
    case ELM_DTYPE_Q4_K: return 14; /* MOSTLY_Q4_K_S: q4_k, q6_k embedding */
    case ELM_DTYPE_Q5_K: return 16; /* MOSTLY_Q5_K_S */
    case ELM_DTYPE_Q6_K: return 18; /* MOSTLY_Q6_K */
    default: return 0;
    }
}

/* The type a matrix gets: the requested one, except that a row length the
 * block does not divide falls back to f16 (as llama.cpp's converter does;
 * for the K-quants, whose blocks are 256 long, to q8_0 as llama.cpp's
 * quantizer does when 32 divides it), and the tied embedding/LM head keeps
 * more bits: q8_0 in a q4_0 file, q6_k in a q4_k or q5_k file (llama.cpp's
 * quantizer gives the output tensor q6_k). */
static enum elm_dtype pick(enum elm_dtype want, const struct elm_matrix *m, bool is_embed)
{
    bool k = want == ELM_DTYPE_Q4_K || want == ELM_DTYPE_Q5_K || want == ELM_DTYPE_Q6_K;
    if (is_embed && want == ELM_DTYPE_Q4_0)
        want = ELM_DTYPE_Q8_0;
    if (is_embed && k)
        want = ELM_DTYPE_Q6_K;
    if (k && !elm_row_size(want, m->cols))
        want = ELM_DTYPE_Q8_0;
    if (!elm_row_size(want, m->cols))
        want = ELM_DTYPE_F16;
    return want;
}

struct elm_quantize_params elm_quantize_default_params(void)
{
    struct elm_quantize_params p = {.type = ELM_DTYPE_Q8_0, .progress_cb = NULL,
                                    .progress_user = NULL, .tokenizer = NULL};
    return p;
}

static bool add_vocab(struct elm_gguf_writer *w, const elm_tokenizer *tok, const char ***pieces,
                      float **scores, int32_t **types)
{
    if (!tok) {
        /* llama.cpp's marker for a file without a vocabulary. */
        elm_gguf_add_string(w, "tokenizer.ggml.model", "no_vocab");
        return true;
    }
    int n = elm_tokenizer_n_vocab(tok);
    *pieces = malloc((size_t)n * sizeof **pieces);
    *scores = malloc((size_t)n * sizeof **scores);
    *types = malloc((size_t)n * sizeof **types);
    if (!*pieces || !*scores || !*types)
        return false;
    int32_t unk = -1;
    for (int i = 0; i < n; i++) {
        const char *p = elm_tokenizer_piece(tok, i);
        (*pieces)[i] = p ? p : "";
        (*scores)[i] = elm_tokenizer_score(tok, i);
        (*types)[i] = elm_tokenizer_type(tok, i);
        if ((*types)[i] == ELM_PIECE_UNKNOWN && unk < 0)
            unk = i;
    }
    elm_gguf_add_string(w, "tokenizer.ggml.model", "llama");
    elm_gguf_add_string(w, "tokenizer.ggml.pre", "default");
    elm_gguf_add_string_array(w, "tokenizer.ggml.tokens", *pieces, (uint64_t)n);
    elm_gguf_add_array(w, "tokenizer.ggml.scores", ELM_GGUF_F32, *scores, (uint64_t)n);
    elm_gguf_add_array(w, "tokenizer.ggml.token_type", ELM_GGUF_I32, *types, (uint64_t)n);
    if (elm_tokenizer_bos(tok) >= 0)
        elm_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)elm_tokenizer_bos(tok));
    if (elm_tokenizer_eos(tok) >= 0)
        elm_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)elm_tokenizer_eos(tok));
    if (unk >= 0)
        elm_gguf_add_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)unk);
    elm_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", true);
    elm_gguf_add_bool(w, "tokenizer.ggml.add_eos_token", false);
    return true;
}

static void build(struct elm_gguf_writer *w, const struct elm_model *m, enum elm_dtype type,
                        struct source *src, float *tmp)
{
    const struct elm_model_info *in = &m->info;
    int L = in->n_layers, d = in->model_dim, hd = in->head_dim;
    int32_t nq[ELM_MAX_LAYERS], nkv[ELM_MAX_LAYERS], ff[ELM_MAX_LAYERS];
    for (int i = 0; i < L; i++) {
        nq[i] = in->n_query_heads[i];
        nkv[i] = in->n_kv_heads[i];
        ff[i] = in->ffn_dim[i];
    }
    elm_gguf_add_string(w, "general.architecture", "openelm");
    elm_gguf_add_string(w, "general.type", "model");
    elm_gguf_add_string(w, "general.name", in->name);
    elm_gguf_add_u32(w, "openelm.block_count", (uint32_t)L);
    elm_gguf_add_u32(w, "openelm.context_length", (uint32_t)in->n_ctx_train);
    elm_gguf_add_u32(w, "openelm.embedding_length", (uint32_t)d);
    elm_gguf_add_array(w, "openelm.feed_forward_length", ELM_GGUF_I32, ff, (uint64_t)L);
    elm_gguf_add_array(w, "openelm.attention.head_count", ELM_GGUF_I32, nq, (uint64_t)L);
    elm_gguf_add_array(w, "openelm.attention.head_count_kv", ELM_GGUF_I32, nkv, (uint64_t)L);
    elm_gguf_add_f32(w, "openelm.rope.freq_base", in->rope_theta);
    elm_gguf_add_f32(w, "openelm.attention.layer_norm_rms_epsilon", in->rms_eps);
    elm_gguf_add_u32(w, "openelm.rope.dimension_count", (uint32_t)hd);
    elm_gguf_add_u32(w, "openelm.attention.key_length", (uint32_t)hd);
    elm_gguf_add_u32(w, "openelm.attention.value_length", (uint32_t)hd);
    elm_gguf_add_u32(w, "general.file_type", file_type(type));
    if (elm_dtype_is_quant(type))
        elm_gguf_add_u32(w, "general.quantization_version", 2);
    elm_sampling_to_gguf(w, &in->sampling);

    /* Tensors in the converter's order: embedding, then each layer, then the
     * final norm.  ne is ggml order: {in, out}. */
    size_t k = 0;
    char name[64];
#define MAT(nm, mx, r0, nrows, emb)                                                 \
    do {                                                                                \
        src[k] = (struct source){.mat = (mx), .row0 = (r0), .tmp = tmp,                \
                                 .dst = pick(type, (mx), (emb))};                       \
        int64_t ne_[2] = {(mx)->cols, (nrows)};                                         \
        elm_gguf_add_tensor(w, (nm), src[k].dst, 2, ne_, fill_row, &src[k]);            \
        k++;                                                                            \
    } while (0)
#define VEC(nm, v, len)                                                                 \
    do {                                                                                \
        src[k] = (struct source){.vec = (v), .n = (len), .dst = ELM_DTYPE_F32};         \
        int64_t ne_[1] = {(len)};                                                       \
        elm_gguf_add_tensor(w, (nm), ELM_DTYPE_F32, 1, ne_, fill_row, &src[k]);          \
        k++;                                                                            \
    } while (0)
    MAT("token_embd.weight", &m->embed, 0, m->embed.rows, true);
    for (int i = 0; i < L; i++) {
        const struct elm_layer *l = &m->layers[i];
#define NM(s) (snprintf(name, sizeof name, "blk.%d." s ".weight", i), name)
        VEC(NM("attn_norm"), l->attn_norm, d);
        MAT(NM("attn_qkv"), &l->qkv, 0, l->qkv.rows, false);
        VEC(NM("attn_q_norm"), l->q_norm, hd);
        VEC(NM("attn_k_norm"), l->k_norm, hd);
        MAT(NM("attn_output"), &l->out, 0, l->out.rows, false);
        VEC(NM("ffn_norm"), l->ffn_norm, d);
        MAT(NM("ffn_gate"), &l->proj1, 0, l->ff, false);
        MAT(NM("ffn_up"), &l->proj1, l->ff, l->ff, false);
        MAT(NM("ffn_down"), &l->proj2, 0, l->proj2.rows, false);
#undef NM
    }
    VEC("output_norm.weight", m->final_norm, d);
#undef MAT
#undef VEC
}

elm_status elm_quantize(const char *in_path, const char *out_path,
                        const struct elm_quantize_params *params, char *err, size_t err_size)
{
    struct elm_quantize_params defaults = elm_quantize_default_params();
    if (!params)
        params = &defaults;
    if (!in_path || !out_path)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_quantize: no path");
    enum elm_dtype type = params->type;
    if (type != ELM_DTYPE_F32 && type != ELM_DTYPE_F16 && type != ELM_DTYPE_BF16 &&
        type != ELM_DTYPE_Q8_0 && type != ELM_DTYPE_Q4_0 && type != ELM_DTYPE_Q4_K &&
        type != ELM_DTYPE_Q5_K && type != ELM_DTYPE_Q6_K)
        return elm_set_error(err, err_size, ELM_E_UNSUPPORTED,
                             "%s: writing %s is not supported (f32, f16, bf16, q8_0, q4_0, "
                             "q4_k, q5_k, q6_k are)",
                             out_path, elm_dtype_name(type));
    struct elm_model_params mp = elm_model_default_params();
    mp.n_threads = 1;
    elm_model *m;
    elm_status st = elm_model_load(in_path, &mp, &m, err, err_size);
    if (st)
        return st;
    const struct elm_model_info *in = &m->info;
    int64_t widest = in->model_dim;
    for (int i = 0; i < in->n_layers; i++) {
        int64_t c[2] = {(int64_t)in->n_query_heads[i] * in->head_dim, in->ffn_dim[i]};
        for (int j = 0; j < 2; j++)
            widest = c[j] > widest ? c[j] : widest;
    }
    size_t n_src = 2 + 9 * (size_t)in->n_layers;
    struct source *src = calloc(n_src, sizeof *src);
    float *tmp = malloc((size_t)widest * sizeof *tmp);
    struct elm_gguf_writer *w = elm_gguf_writer_new();
    const char **pieces = NULL;
    float *scores = NULL;
    int32_t *types = NULL;
    if (!src || !tmp || !w) {
        st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", out_path);
    } else {
        build(w, m, type, src, tmp);
        const elm_tokenizer *tok = elm_model_tokenizer(m);
        if (!add_vocab(w, tok ? tok : params->tokenizer, &pieces, &scores, &types))
            st = elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", out_path);
        else
            st = elm_gguf_writer_write(w, out_path, params->progress_cb, params->progress_user,
                                       err, err_size);
    }
    elm_gguf_writer_free(w);
    free(pieces);
    free(scores);
    free(types);
    free(src);
    free(tmp);
    elm_model_free(m);
    return st;
}
