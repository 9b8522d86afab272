/* elm_tokenizer.h: the LLaMA-2 SentencePiece BPE tokenizer (part of libelm).
 *
 * Encoding follows the SentencePiece library exactly: dummy prefix, ' ' ->
 * U+2581, merges by highest piece score (leftmost on ties), byte fallback,
 * no normalization.  User text is never parsed for special tokens: BOS/EOS
 * enter only as ids.  A loaded tokenizer is immutable: any thread may use it.
 */
#ifndef ELMCHAT_ENGINE_ELM_TOKENIZER_H
#define ELMCHAT_ENGINE_ELM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_tokenizer elm_tokenizer;

/* Functions returning elm_status give ELM_OK, or a negative status with
 * err (when they take one) naming the file and the problem. */

/* tokenizer.model (SentencePiece protobuf), tokenizer.json (Hugging Face)
 * or a GGUF model file (its tokenizer.ggml.* vocabulary, else the
 * tokenizer.model or tokenizer.json beside it), chosen by content. */
elm_status elm_tokenizer_load(const char *path, elm_tokenizer **out, char *err, size_t err_size);
/* The tokenizer of a model, without loading its weights: in a model folder
 * its tokenizer.model, else its tokenizer.json (ELM_E_IO when it has
 * neither); a model file as elm_tokenizer_load reads it (a GGUF: its own
 * vocabulary, else the files beside it). */
elm_status elm_tokenizer_load_for_model(const char *model_path, elm_tokenizer **out, char *err,
                                        size_t err_size);
/* Another reference to tok (immutable: the holders may be on any threads):
 * elm_tokenizer_free drops one, the last frees it. */
elm_tokenizer *elm_tokenizer_share(elm_tokenizer *tok);
void elm_tokenizer_free(elm_tokenizer *tok);

int elm_tokenizer_n_vocab(const elm_tokenizer *tok);
int32_t elm_tokenizer_bos(const elm_tokenizer *tok);
int32_t elm_tokenizer_eos(const elm_tokenizer *tok);
/* The piece text of an id (borrowed), NULL when out of range. */
const char *elm_tokenizer_piece(const elm_tokenizer *tok, int32_t id);

/* Piece types, numbered as in SentencePiece's ModelProto. */
enum elm_piece_type {
    ELM_PIECE_NORMAL = 1,
    ELM_PIECE_UNKNOWN = 2,
    ELM_PIECE_CONTROL = 3,
    ELM_PIECE_USER_DEFINED = 4,
    ELM_PIECE_UNUSED = 5,
    ELM_PIECE_BYTE = 6,
};
/* Score and type of an id (0 and -1 when out of range). */
float elm_tokenizer_score(const elm_tokenizer *tok, int32_t id);
int elm_tokenizer_type(const elm_tokenizer *tok, int32_t id);

/* A tokenizer from a vocabulary held elsewhere (e.g. GGUF metadata): n
 * NUL-terminated pieces (borrowed, copied), their scores and types
 * (enum elm_piece_type; NULL types: BYTE for "<0xNN>", CONTROL for "<s>" and
 * "</s>", UNKNOWN for "<unk>", NORMAL otherwise).  unk/bos/eos are ids or -1.
 * name is used in error messages. */
elm_status elm_tokenizer_from_vocab(const char *const *pieces, const float *scores,
                                    const int32_t *types, int n, int32_t unk_id, int32_t bos_id,
                                    int32_t eos_id, bool byte_fallback, bool add_dummy_prefix,
                                    const char *name, elm_tokenizer **out, char *err,
                                    size_t err_size);

/* Encode len bytes of text (any bytes; invalid UTF-8 handled as SentencePiece
 * does).  *ids is owned by the caller (free()).  Empty text gives 0 ids
 * (plus BOS when add_bos). */
elm_status elm_tokenize(const elm_tokenizer *tok, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids);

/* Decode ids to UTF-8 text; *text is owned by the caller (free()), NUL
 * terminated, *len excludes the NUL. */
elm_status elm_detokenize(const elm_tokenizer *tok, const int32_t *ids, size_t n_ids, char **text,
                          size_t *len);

/* Streaming decode: releases text only on complete UTF-8 sequences; the
 * concatenation of everything released (plus elm_detok_stream_flush) equals
 * elm_detokenize of the same ids.  Caller-embedded state. */
struct elm_detok_stream {
    const elm_tokenizer *tok;
    bool started;          /* something was output (leading space dropped) */
    unsigned char pending[8];
    int n_pending;
};
void elm_detok_stream_init(struct elm_detok_stream *s, const elm_tokenizer *tok);
/* Writes at most out_size-1 bytes + NUL into out; returns the byte count
 * (out_size >= 64 always suffices for one id). */
size_t elm_detok_stream_push(struct elm_detok_stream *s, int32_t id, char *out, size_t out_size);
size_t elm_detok_stream_flush(struct elm_detok_stream *s, char *out, size_t out_size);

#ifdef __cplusplus
}
#endif
#endif
