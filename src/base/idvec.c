/* idvec.c: a growable vector of token ids. */
#include "config.h"

#include "src/base/idvec.h"

#include <stdlib.h>
#include <string.h>

#include "src/base/xalloc.h"

void idvec_push(struct idvec *a, int32_t id)
{
    idvec_append(a, &id, 1);
}

void idvec_append(struct idvec *a, const int32_t *ids, size_t n)
{
    if (a->n + n > a->cap) {
        size_t cap = a->cap ? a->cap : 64;
        while (cap < a->n + n)
            cap *= 2;
        a->v = x_reallocarray(a->v, cap, sizeof *a->v);
        a->cap = cap;
    }
    if (n)
        memcpy(a->v + a->n, ids, n * sizeof *ids);
    a->n += n;
}

void idvec_clear(struct idvec *a)
{
    a->n = 0;
}

void idvec_fini(struct idvec *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}
