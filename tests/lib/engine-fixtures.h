/* engine-fixtures.h: helpers shared by the engine tests: checkpoints made
 * with tests/lib/gen-checkpoint, JSON and f32 files, model and ctx setup. */
#ifndef ELMCHAT_TESTS_LIB_ENGINE_FIXTURES_H
#define ELMCHAT_TESTS_LIB_ENGINE_FIXTURES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

/* Run tests/lib/gen-checkpoint ARGS -o DIR; false on failure. */
bool te_gen(const char *args, const char *dir);
/* A subfolder of the test's tmpdir (static buffer per call site: copy it). */
const char *te_dir(const char *name, char *buf, size_t size);
/* NULL on failure (diag printed). */
elm_model *te_load(const char *dir, int n_threads);
elm_ctx *te_ctx(const elm_model *m, int n_ctx, int n_threads);
json_object *te_json(const char *path);
/* Whole file, malloc'd; *n bytes. */
void *te_read(const char *path, size_t *n);
bool te_write(const char *path, const void *data, size_t n);
/* json array of numbers -> doubles (malloc'd) */
double *te_doubles(json_object *arr, int *n);
int32_t *te_ids(json_object *arr, int *n);
double te_max_diff_f(const float *a, const float *b, size_t n);
/* argmax, ties to the lowest id */
int te_argmax(const float *v, int n);
/* Greedy decoding after a prefill of the prompt: n new ids into out. */
bool te_greedy(elm_ctx *ctx, const int32_t *prompt, int n_prompt, int n, int32_t *out);

#endif
