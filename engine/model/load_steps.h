/* load_steps.h: what happens between the steps of a model load, in both
 * loaders (hf_model.c, gguf_model.c): a cancel point that polls the
 * caller's abort callback, a copy cut into cancellable slices, and the
 * progress report.  All three read m->loading, the params of the load in
 * progress (elm_model_load sets it), and do nothing outside a load.
 * Engine-internal. */
#ifndef ELMCHAT_ENGINE_MODEL_LOAD_STEPS_H
#define ELMCHAT_ENGINE_MODEL_LOAD_STEPS_H

#include <stddef.h>

#include "engine/elm.h"

struct elm_model;

/* The load's abort callback asked to stop: ELM_E_ABORTED with "what: load
 * cancelled" in err.  ELM_OK otherwise (and outside a load). */
elm_status elm_load_check(const struct elm_model *m, const char *what, char *err,
                          size_t err_size);
/* memcpy for the loaders, in slices with elm_load_check between them (a
 * copy from a slow disk can be long).  ELM_E_ABORTED, err filled, when
 * cancelled. */
elm_status elm_load_copy(const struct elm_model *m, void *dst, const void *src, size_t n,
                         const char *what, char *err, size_t err_size);
/* Every weight matrix's pages read once (which makes them present), in
 * cancellable slices, so that the model's first forward pass does not pay for them
 * (elm_pages_touch: ~0.5 s of the 270M shape's first prefill in a VM
 * with shadow page tables; a resumed chat's first reply paid it).
 * ELM_E_ABORTED, err filled, when cancelled. */
elm_status elm_load_touch_weights(const struct elm_model *m, char *err, size_t err_size);
/* Progress of the load in progress, 0..1 (nothing outside a load). */
void elm_load_progress(const struct elm_model *m, float fraction);

#endif
