/* model_kind.c: which kind a model is (model_kind.h): the kinds in the
 * order they are asked, the local one last since it claims every path. */
#include "config.h"

#include "engine/worker/model_kind.h"

static const struct model_kind *const kinds[] = {&wk_model_remote, &wk_model_local};

const struct model_kind *wk_model_kind_of(const char *path)
{
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (kinds[i]->claims(path))
            return kinds[i];
    return &wk_model_local;
}

const struct model_kind *wk_current_kind(const elm_worker *w)
{
    return w->cur ? w->cur->kind : &wk_model_local;
}
