/* fuzz.h: what the fuzz targets (tests/fuzz/fuzz-NAME.c) share.
 *
 * Each target defines LLVMFuzzerTestOneInput.  `make fuzz` links each one
 * with libFuzzer; `make check` links them all into tests/fuzz/replay, which
 * includes each target through a wrapper (replay-NAME.c) that renames the
 * entry point to fuzz_NAME first. */
#ifndef ELMCHAT_TESTS_FUZZ_H
#define ELMCHAT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "engine/elm_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write data to NAME in this process's private temp folder (made on first
 * use, removed at exit) and return the path (static storage, one per NAME
 * slot: the last 4 names used stay valid).  Aborts on I/O errors. */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);
/* The folder itself. */
const char *fuzz_tmpdir(void);

/* A small SentencePiece vocabulary built once (never freed): <unk> <s> </s>,
 * the 256 byte pieces, some scored pieces.  For targets that need one. */
const elm_tokenizer *fuzz_tiny_tokenizer(void);

/* Run a tokenizer a loader produced through encode, decode and streaming
 * decode of a few fixed and input-derived texts; aborts when the API's own
 * guarantees (ids in range, stream == whole decode) do not hold. */
void fuzz_exercise_tokenizer(const elm_tokenizer *tok, const uint8_t *data, size_t size);

#endif
