/* load_steps.c: the cancel points and the progress report that both model
 * loaders share (load_steps.h). */
#include "config.h"

#include <string.h>

#include "engine/base/error.h"
#include "engine/base/pages.h"
#include "engine/kernels/blocks.h"
#include "engine/model/load_steps.h"
#include "engine/model/model.h"

elm_status elm_load_check(const struct elm_model *m, const char *what, char *err,
                          size_t err_size)
{
    const struct elm_model_params *p = m->loading;
    if (p && p->abort_cb && p->abort_cb(p->abort_user))
        return elm_set_error(err, err_size, ELM_E_ABORTED, "%s: load cancelled", what);
    return ELM_OK;
}

/* Slices small enough that a cancel lands soon even at a few MB/s. */
#define LOAD_COPY_SLICE ((size_t)4 << 20)

elm_status elm_load_copy(const struct elm_model *m, void *dst, const void *src, size_t n,
                         const char *what, char *err, size_t err_size)
{
    char *d = dst;
    const char *s = src;
    for (size_t off = 0; off < n; off += LOAD_COPY_SLICE) {
        elm_status st = elm_load_check(m, what, err, err_size);
        if (st)
            return st;
        memcpy(d + off, s + off, n - off < LOAD_COPY_SLICE ? n - off : LOAD_COPY_SLICE);
    }
    return ELM_OK;
}

void elm_load_progress(const struct elm_model *m, float fraction)
{
    const struct elm_model_params *p = m->loading;
    if (p && p->progress_cb)
        p->progress_cb(fraction, p->progress_user);
}

/* One matrix's pages read, slice by slice, a cancel point before each. */
static elm_status touch_matrix(const struct elm_model *m, const struct elm_matrix *w,
                               char *err, size_t err_size)
{
    const char *p = w->data;
    size_t n = p ? elm_row_size(w->dtype, w->cols) * (size_t)w->rows : 0;
    for (size_t off = 0; off < n; off += LOAD_COPY_SLICE) {
        elm_status st = elm_load_check(m, m->path, err, err_size);
        if (st)
            return st;
        size_t len = n - off < LOAD_COPY_SLICE ? n - off : LOAD_COPY_SLICE;
        elm_pages_touch(p + off, len);
    }
    return ELM_OK;
}

elm_status elm_load_touch_weights(const struct elm_model *m, char *err, size_t err_size)
{
    elm_status st = touch_matrix(m, &m->embed, err, err_size);
    for (int i = 0; !st && i < m->info.n_layers; i++) {
        const struct elm_layer *l = &m->layers[i];
        if (!(st = touch_matrix(m, &l->qkv, err, err_size)) &&
            !(st = touch_matrix(m, &l->out, err, err_size)) &&
            !(st = touch_matrix(m, &l->proj1, err, err_size)))
            st = touch_matrix(m, &l->proj2, err, err_size);
    }
    return st;
}
