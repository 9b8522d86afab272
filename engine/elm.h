/* elm.h: libelm, the OpenELM inference engine (public API).
 *
 * Synchronous, in the spirit of llama.h: opaque handles, params structs with
 * *_default_params(), negative status codes, out-parameters set only on
 * success, *_free(NULL) is a no-op.  The engine never prints, never exits and
 * never touches the terminal: errors come back as a status plus a message in a
 * caller-provided buffer.
 *
 * Threads: an elm_model is immutable after load and may be read from any
 * thread.  An elm_ctx and an elm_sampler belong to one thread at a time (in
 * the application, the worker thread of elm_worker.h).
 */
#ifndef ELMCHAT_ENGINE_ELM_H
#define ELMCHAT_ENGINE_ELM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_grammar.h"
#include "engine/elm_status.h"
#include "engine/elm_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ model */

typedef struct elm_model elm_model;

enum elm_dtype {
    ELM_DTYPE_F32 = 0,
    ELM_DTYPE_F16,
    ELM_DTYPE_BF16,
    ELM_DTYPE_Q8_0,
    ELM_DTYPE_Q4_0,
    ELM_DTYPE_Q4_K,
    ELM_DTYPE_Q5_K,
    ELM_DTYPE_Q6_K,
};
const char *elm_dtype_name(enum elm_dtype dtype); /* "f32", "bf16", ... */
/* The CPUs this process may run on (Linux: its affinity mask, so taskset
 * and container cpusets count; elsewhere the online CPUs); at least 1. */
int elm_cpu_count(void);

struct elm_model_params {
    int n_threads; /* compute threads; <= 0 means elm_cpu_count() */
    /* Optional progress callback, 0..1, called from the loading thread. */
    void (*progress_cb)(float fraction, void *user);
    void *progress_user;
    /* Optional, from the loading thread: polled before each tensor and
     * loading step (and every few MiB of a copy); true stops the load with
     * ELM_E_ABORTED, everything freed, *out untouched. */
    bool (*abort_cb)(void *user);
    void *abort_user;
    /* Optional: the model's tokenizer, already loaded by the caller (the
     * one elm_tokenizer_load_for_model finds for this path): the model takes
     * a reference (elm_tokenizer_share) instead of loading its own. */
    elm_tokenizer *tokenizer;
};
struct elm_model_params elm_model_default_params(void);

/* Load a Hugging Face folder (config.json + model.safetensors or
 * model.safetensors.index.json + shards) or a .gguf file.  The tokenizer is
 * looked up next to the weights (tokenizer.model, then tokenizer.json) or in
 * the GGUF; a model without one still loads (elm_model_tokenizer() is NULL).
 * On failure *out is untouched and err holds "FILE: TENSOR: what is wrong". */
elm_status elm_model_load(const char *path, const struct elm_model_params *params,
                          elm_model **out, char *err, size_t err_size);
void elm_model_free(elm_model *model);

#define ELM_MAX_LAYERS 128

/* Sampling defaults that come with a model: its generation_config.json
 * (temperature, top_k, top_p, min_p, repetition_penalty; "do_sample": false
 * is greedy) or a GGUF's general.sampling.* keys (llama.cpp's names).  `set`
 * holds an ELM_SAMPLING_* bit for each field the model gives. */
enum {
    ELM_SAMPLING_TEMPERATURE = 1u << 0,
    ELM_SAMPLING_TOP_K = 1u << 1,
    ELM_SAMPLING_TOP_P = 1u << 2,
    ELM_SAMPLING_MIN_P = 1u << 3,
    ELM_SAMPLING_REPEAT_PENALTY = 1u << 4,
    ELM_SAMPLING_REPEAT_LAST_N = 1u << 5,
};
struct elm_model_sampling {
    unsigned set;
    float temperature;
    int top_k;
    float top_p;
    float min_p;
    float repeat_penalty;
    int repeat_last_n;
};

struct elm_model_info {
    int n_layers;
    int model_dim;
    int head_dim;
    int n_vocab;
    int n_ctx_train;      /* max_context_length */
    int num_gqa_groups;
    int ffn_dim_divisor;
    float rope_theta;
    float rms_eps;
    int bos_id, eos_id;
    int n_query_heads[ELM_MAX_LAYERS];
    int n_kv_heads[ELM_MAX_LAYERS];
    int ffn_dim[ELM_MAX_LAYERS];
    float ffn_multipliers[ELM_MAX_LAYERS];
    enum elm_dtype dtype; /* dominant weight type */
    uint64_t n_params;
    uint64_t weight_bytes;
    uint64_t fingerprint; /* hash of config + tensor table (+ data sample) */
    char name[128];       /* folder or file base name */
    struct elm_model_sampling sampling; /* not part of the fingerprint */
    /* A llama-server (elm_worker's LOAD_MODEL of "server:URL"; the layer
     * figures are then 0 and name is the server's model file): */
    bool remote;
    int remote_slots;      /* its slots (-np) */
    bool remote_snapshots; /* slot save/restore work (--slot-save-path) */
};
/* Borrowed, valid until elm_model_free. */
const struct elm_model_info *elm_model_get_info(const elm_model *model);

/* Borrowed, valid until elm_model_free; NULL when the model has none. */
const elm_tokenizer *elm_model_tokenizer(const elm_model *model);
/* The path given to elm_model_load (borrowed, valid until elm_model_free). */
const char *elm_model_path(const elm_model *model);

/* What a model says it is, read without its weights (the application
 * chooses a chat template from it): a GGUF's general.name,
 * general.finetune and tokenizer.chat_template; a Hugging Face folder's
 * config.json _name_or_path (the repo id transformers saved it from) and
 * tokenizer_config.json chat_template.  Absent fields are "" or NULL.
 * A file that is not readable or not well-formed is an error (the load
 * says more).  elm_model_about_fini frees what it holds. */
struct elm_model_about {
    char name[128];                 /* "" when the model names itself nowhere */
    const char *name_from;          /* the key name came from (static), NULL */
    char finetune[64];              /* GGUF general.finetune, e.g. "Instruct" */
    char *chat_template;            /* Jinja text (owned), NULL */
    const char *chat_template_from; /* the key it came from (static), NULL */
};
elm_status elm_model_about(const char *path, struct elm_model_about *out, char *err,
                           size_t err_size);
void elm_model_about_fini(struct elm_model_about *about);

/* --------------------------------------------------------------- quantize */

struct elm_quantize_params {
    enum elm_dtype type; /* F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K */
    /* Optional progress callback, 0..1, called from the calling thread. */
    void (*progress_cb)(float fraction, void *user);
    void *progress_user;
    /* Optional: the vocabulary written when the model has none of its own
     * (a Hub folder of Apple's, which ships no tokenizer). */
    const elm_tokenizer *tokenizer;
};
struct elm_quantize_params elm_quantize_default_params(void); /* q8_0 */

/* Write the model at in_path (anything elm_model_load takes) to out_path as
 * the OpenELM GGUF that llama.cpp's converter makes: same keys, tensor names
 * and shapes, alignment 32, 2-D weights in params->type (q4_0 keeps the tied
 * embedding in q8_0, q4_k and q5_k in q6_k; a row length the block does not
 * divide falls back to q8_0 for the K-quants, else f16), norms in f32, the
 * model's vocabulary, else params->tokenizer's (tokenizer.ggml.model
 * "llama", or "no_vocab" when there is neither).  out_path is written through out_path.tmp and a
 * rename. */
elm_status elm_quantize(const char *in_path, const char *out_path,
                        const struct elm_quantize_params *params, char *err, size_t err_size);

/* ---------------------------------------------------------------- context */

typedef struct elm_ctx elm_ctx;

/* Return true to stop the current elm_decode (polled between layers). */
typedef bool (*elm_abort_cb)(void *user);

struct elm_ctx_params {
    int n_ctx;     /* <= 0: the model's n_ctx_train (2048) */
    int n_threads; /* <= 0: the model's setting */
    bool exact;    /* BF16 weights: keep f32 activations in the prefill GEMM (by default
                      they are rounded to bf16 where the CPU multiplies bf16 pairs,
                      AVX512_BF16, as llama.cpp does) */
    elm_abort_cb abort_cb;
    void *abort_user;
};
struct elm_ctx_params elm_ctx_default_params(void);

/* The ctx borrows the model: free the ctx first. */
elm_status elm_ctx_new(const elm_model *model, const struct elm_ctx_params *params,
                       elm_ctx **out, char *err, size_t err_size);
void elm_ctx_free(elm_ctx *ctx);

#define ELM_DECODE_ALL_LOGITS 1u

/* Append n tokens at position n_past and run the model.  n > 1 is a batched
 * prefill (BLIS GEMM), n == 1 a decode step.  logits (may be NULL) receives
 * n_vocab floats for the last token, or n * n_vocab (row per token) with
 * ELM_DECODE_ALL_LOGITS.  On ELM_E_ABORTED or any error n_past is unchanged.
 * ELM_E_CONTEXT_FULL when n_past + n > n_ctx. */
elm_status elm_decode(elm_ctx *ctx, const int32_t *tokens, int n, float *logits,
                      unsigned flags);

int elm_ctx_n_past(const elm_ctx *ctx);
int elm_ctx_n_ctx(const elm_ctx *ctx);
const elm_model *elm_ctx_model(const elm_ctx *ctx);
/* The n_past token ids in the cache; borrowed until the next call on ctx. */
const int32_t *elm_ctx_tokens(const elm_ctx *ctx);

/* Rewind the cache to its first n_keep tokens (0 <= n_keep <= n_past). */
elm_status elm_ctx_truncate(elm_ctx *ctx, int n_keep);

/* Snapshot of the KV cache: magic, version, model fingerprint, token ids,
 * K/V rows [0, n_past) per layer.  Load fails with ELM_E_MISMATCH when the
 * file belongs to another model; the ctx is then unchanged. */
elm_status elm_state_save(const elm_ctx *ctx, const char *path, char *err, size_t err_size);
elm_status elm_state_load(elm_ctx *ctx, const char *path, char *err, size_t err_size);

/* ------------------------------------------------------------- machine */

/* One line naming the compute kernels this process uses (SIMD set of the
 * decode kernels, BLIS configuration of the prefill GEMM); static storage. */
const char *elm_system_info(void);

/* Benchmarking (profiling, the bandwidth probe, the BLIS reference):
 * elm_bench.h. */

/* ---------------------------------------------------------------- sampler */

/* Fixed chain: repetition penalty (HF semantics) -> top-k -> top-p -> min-p
 * -> temperature -> draw.  temperature <= 0 is greedy (ties: lowest id). */
struct elm_sampler_params {
    float temperature;    /* 0 = greedy */
    int top_k;            /* <= 0: off */
    float top_p;          /* >= 1: off */
    float min_p;          /* <= 0: off */
    float repeat_penalty; /* 1: off; HF: logit/p if > 0 else logit*p */
    int repeat_last_n;    /* < 0: the whole history (HF), 0: off */
    uint64_t seed;
};
struct elm_sampler_params elm_sampler_default_params(void);

typedef struct elm_sampler elm_sampler;
elm_sampler *elm_sampler_new(const struct elm_sampler_params *params); /* NULL on OOM */
void elm_sampler_free(elm_sampler *sampler);
/* logits is modified in place.  history: the tokens the penalty applies to. */
int32_t elm_sampler_sample(elm_sampler *sampler, float *logits, int n_vocab,
                           const int32_t *history, int n_history);
/* The id greedy decoding would pick (the penalty applied in place, then the
 * largest logit), whatever the temperature and without drawing a random
 * number: a draft model's best guess of what this sampler samples. */
int32_t elm_sampler_greedy(elm_sampler *sampler, float *logits, int n_vocab,
                           const int32_t *history, int n_history);

/* ------------------------------------------------------------- generation */

/* The one sampling loop (the worker, `run`, `generate` and `bench` use it):
 * sample, report, stop or feed the id, repeat.  The id that ends the reply
 * (EOS, a stop id, the one that completes a stop string, the max_tokens-th,
 * one sampled when the context is full) is reported but not fed, so the
 * cache holds everything before it. */
enum elm_stop_reason {
    ELM_STOP_EOS = 1,      /* the model's EOS was sampled */
    ELM_STOP_LENGTH,       /* max_tokens ids sampled */
    ELM_STOP_ID,           /* one of stop_ids was sampled */
    ELM_STOP_STRING,       /* the text reached one of stop_strings */
    ELM_STOP_CANCELLED,    /* should_stop said so, or elm_decode was aborted */
    ELM_STOP_CONTEXT_FULL, /* the cache is full: the last id could not be fed */
    ELM_STOP_ERROR,        /* elm_generate's status says why */
};

struct elm_generate_params {
    struct elm_sampler_params sampler;
    int max_tokens;                   /* >= 1 */
    bool ignore_eos;                  /* EOS is an id like any other */
    const int32_t *stop_ids;          /* besides EOS */
    int n_stop_ids;
    const char *const *stop_strings;  /* matched on the text (needs tokenizer) */
    int n_stop_strings;
    const elm_tokenizer *tokenizer;   /* NULL: ids only, no text */
    /* Every sampled id, with the text that became final with it: text that
     * may be the start of a stop string is held back, and a stop string and
     * what follows it never come.  At the end, id -1 brings what was still
     * held back (only when there is some). */
    void (*on_token)(void *user, int32_t id, const char *text, size_t len);
    /* Asked before each id is sampled: true ends with ELM_STOP_CANCELLED. */
    bool (*should_stop)(void *user);
    void *user;
    /* Prompt lookup decoding (default on): drafts of what follows an
     * earlier occurrence of the last tokens, in lookup_extra (e.g. the reply
     * a retry replaces) or the sequence, verified in one batched pass; the
     * ids are the model's own either way (sampled as without it).  It
     * turns itself off for the reply when it does not pay. */
    bool lookup;
    const int32_t *lookup_extra;
    int n_lookup_extra;
    /* Draft-model speculative decoding: a ctx of a smaller model with the
     * same vocabulary (elm_model_can_draft), NULL: none.  Where lookup finds
     * nothing, the draft's argmax proposes the next ids; they are verified
     * and kept as lookup's are (the ids are the target's own).  Its cache
     * follows the sequence by itself.  Adaptive like lookup, and off for the
     * reply when it does not pay. */
    elm_ctx *draft;
    /* 0: draft lengths adapt, and drafts stop when they do not pay.  1 to
     * ELM_DRAFT_MAX: every draft is that long (where its source has that
     * many ids) and nothing stops them: what bench --spec -k measures the
     * acceptance profile and a fixed k's speed with. */
    int draft_k;
    /* Structured output (elm_grammar.h; needs tokenizer): only ids whose
     * text the grammar allows, EOS and stop_ids only where the text is a
     * whole match.  Exact: a sample of the chain's distribution with the
     * other ids removed first.  Drafts are cut where the grammar refuses
     * them, so the reply is the one without drafts. */
    const elm_grammar *grammar;
    /* Optional ([max_tokens]): the grammar's time for each sampled id in
     * microseconds (bench's percentiles). */
    float *grammar_us;
};
struct elm_generate_params elm_generate_default_params(void);

/* What the grammar did for a reply. */
struct elm_grammar_stats {
    bool used;
    bool complete; /* the reply is a whole match (false: cut, e.g. by max_tokens) */
    long checks;   /* single-id checks */
    long masks;    /* full masks (walks of the token trie, or cached) */
    long walks;    /* of them, trie walks */
    long few;      /* steps where few ids were allowed: the draw over them
                    * alone, and a plain step's LM head of their rows only */
    double seconds; /* in the grammar */
    int n_times;   /* grammar_us entries filled */
};

/* What drafts did for a reply (prompt lookup's, or the draft model's). */
struct elm_draft_stats {
    int passes;      /* verifying passes */
    int drafted;     /* ids proposed */
    int accepted;    /* of them, kept */
    bool turned_off; /* stopped for the rest of the reply (it did not pay) */
};

/* The longest draft one pass verifies (passes of at most 11 ids). */
#define ELM_DRAFT_MAX 10

/* Where drafts fail: reached[i], the passes that checked a draft's id
 * i + 1 (every id before it kept); kept[i], those that kept it too.
 * kept[i] / reached[i] is the acceptance at that depth. */
struct elm_draft_profile {
    int reached[ELM_DRAFT_MAX];
    int kept[ELM_DRAFT_MAX];
};

struct elm_generate_result {
    enum elm_stop_reason reason;
    int n_generated; /* ids sampled (and reported) */
    const char *stop_string; /* ELM_STOP_STRING: which (one of stop_strings) */
    struct elm_draft_stats lookup, draft;
    struct elm_draft_profile lookup_profile, draft_profile;
    struct elm_grammar_stats grammar;
};

/* Generate after the cache's last token.  logits: its next-token logits
 * (n_vocab floats); on return, those of the cache's last token again (the
 * last id fed), so a later call can go on without recomputing.  The
 * repetition penalty sees the cache's tokens.  ELM_OK unless reason is
 * ELM_STOP_ERROR (err filled). */
elm_status elm_generate(elm_ctx *ctx, float *logits, const struct elm_generate_params *p,
                        struct elm_generate_result *res, char *err, size_t err_size);

/* Scan every weight for NaN and infinity (elmchat info --check; never at
 * load: a 3B BF16 model is 6 GB): bad(user, tensor, count) for each tensor
 * that has some, *total_bad their sum.  ELM_OK, or ELM_E_NOMEM. */
elm_status elm_model_check(const elm_model *model,
                           void (*bad)(void *user, const char *tensor, long n_bad), void *user,
                           long *total_bad);

/* Can draft propose tokens for target (elm_generate_params.draft)?  The same
 * vocabulary: its size and every piece.  false with err naming both models
 * and the first difference. */
bool elm_model_can_draft(const elm_model *target, const elm_model *draft, char *err,
                         size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
