/* sampling_defaults.h: the sampling defaults a model brings with it
 * (struct elm_model_sampling, elm.h), read from and written to its files
 * (engine-internal). */
#ifndef ELMCHAT_ENGINE_SAMPLING_DEFAULTS_H
#define ELMCHAT_ENGINE_SAMPLING_DEFAULTS_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_gguf;
struct elm_gguf_writer;

/* DIR/generation_config.json; a folder without one sets nothing.  A file
 * that is not JSON, or a known key with a value of the wrong type or out of
 * range, is ELM_E_FORMAT naming the file and the key. */
elm_status elm_sampling_from_generation_config(const char *dir, struct elm_model_sampling *out,
                                               char *err, size_t err_size);
/* The GGUF's general.sampling.* keys (temp, top_k, top_p, min_p,
 * penalty_repeat, penalty_last_n); checked as above. */
elm_status elm_sampling_from_gguf(const struct elm_gguf *g, struct elm_model_sampling *out,
                                  char *err, size_t err_size);
/* The set fields as general.sampling.* keys, so a conversion keeps them. */
void elm_sampling_to_gguf(struct elm_gguf_writer *w, const struct elm_model_sampling *s);

#endif
