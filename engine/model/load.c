/* load.c: a model's life: elm_model_load chooses the loader by what the
 * path is (a .gguf file: gguf_model.c; a folder or safetensors file:
 * hf_model.c) and does what is common to both around it; elm_model_free and
 * the accessors. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/error.h"
#include "engine/formats/gguf.h"
#include "engine/formats/safetensors.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/kernels.h"
#include "engine/model/gguf_model.h"
#include "engine/model/hf_model.h"
#include "engine/model/load_steps.h"
#include "engine/model/model.h"

/* 0 threads asked for: one a CPU. */
static int n_threads_for(const struct elm_model_params *p)
{
    return p->n_threads > 0 ? p->n_threads : elm_cpu_count();
}

static bool is_gguf_path(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".gguf") == 0;
}

struct elm_model_params elm_model_default_params(void)
{
    struct elm_model_params p = {.n_threads = 0, .progress_cb = NULL, .progress_user = NULL};
    return p;
}

elm_status elm_model_load(const char *path, const struct elm_model_params *params,
                          elm_model **out, char *err, size_t err_size)
{
    struct elm_model_params defaults = elm_model_default_params();
    if (!params)
        params = &defaults;
    if (!path || !out)
        return elm_set_error(err, err_size, ELM_E_INVALID, "elm_model_load: no path");
    struct elm_model *m = calloc(1, sizeof *m);
    if (!m)
        return elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    m->loading = params;
    m->path = strdup(path);
    elm_status st = m->path ? elm_load_check(m, path, err, err_size)
                            : elm_set_error(err, err_size, ELM_E_NOMEM, "%s: out of memory", path);
    if (!st) {
        elm_kernels_init();
        (void)elm_gemm_blis_ok(); /* BLIS's one-shot check, before any prefill (gemm.h) */
        st = is_gguf_path(path) ? elm_gguf_model_load(m, path, err, err_size)
                                : elm_hf_model_load(m, path, err, err_size);
    }
    if (!st)
        st = elm_load_touch_weights(m, err, err_size);
    if (st) {
        elm_model_free(m);
        return st;
    }
    m->n_threads = n_threads_for(params);
    elm_load_progress(m, 1.0f);
    m->loading = NULL;
    *out = m;
    return ELM_OK;
}

void elm_model_free(elm_model *m)
{
    if (!m)
        return;
    elm_tokenizer_free(m->tokenizer);
    free(m->path);
    for (int i = 0; i < m->n_maps; i++)
        elm_safetensors_close(m->maps[i]);
    free(m->maps);
    for (int i = 0; i < m->n_aligned_copies; i++)
        free(m->aligned_copies[i]);
    free(m->aligned_copies);
    free(m->layers);
    free(m->norm_store);
    elm_gguf_close(m->gguf);
    free(m);
}

const struct elm_model_info *elm_model_get_info(const elm_model *model)
{
    return &model->info;
}

const elm_tokenizer *elm_model_tokenizer(const elm_model *model)
{
    return model->tokenizer;
}

const char *elm_model_path(const elm_model *model)
{
    return model->path;
}
