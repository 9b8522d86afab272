/* bpe.h: how the file readers (sp_model.c, hf_json.c) hand a vocabulary to
 * the BPE core (bpe.c).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_TOKENIZER_BPE_H
#define ELMCHAT_ENGINE_TOKENIZER_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

/* A vocabulary as a reader found it; tok_build copies what it needs. */
struct tok_spec {
    int n;                    /* pieces */
    const char *const *piece; /* [n] piece bytes (borrowed) */
    const size_t *piece_len;  /* [n] */
    const float *score;       /* [n] */
    const uint8_t *type;      /* [n] enum elm_piece_type */
    int32_t unk_id, bos_id, eos_id; /* -1: none */
    bool byte_fallback;
    bool add_dummy_prefix;
    bool remove_extra_whitespaces;
};

/* Build a tokenizer from spec; name (the file) prefixes error messages. */
elm_status tok_build(const struct tok_spec *spec, const char *name, elm_tokenizer **out,
                     char *err, size_t err_size);

/* A companion object of tok built by build(tok) on the first call (any
 * thread; one build wins), freed by destroy with the tokenizer: the
 * grammar's token trie (engine/grammar/tokens.c).  NULL when build fails. */
void *elm_tokenizer_companion(const elm_tokenizer *tok, void *(*build)(const elm_tokenizer *),
                              void (*destroy)(void *));
/* Does the first piece of a decoded text lose its leading space (the
 * SentencePiece dummy prefix)? */
bool elm_tokenizer_strips_first_space(const elm_tokenizer *tok);

#endif
