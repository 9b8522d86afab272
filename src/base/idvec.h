/* idvec.h: a growable vector of token ids (the conversation's sequence,
 * rendered turns). */
#ifndef ELMCHAT_SRC_IDVEC_H
#define ELMCHAT_SRC_IDVEC_H

#include <stddef.h>
#include <stdint.h>

/* Caller-embedded; zero-initialised is empty. */
struct idvec {
    int32_t *v;
    size_t n, cap;
};
void idvec_push(struct idvec *a, int32_t id);
void idvec_append(struct idvec *a, const int32_t *ids, size_t n);
void idvec_clear(struct idvec *a);  /* n = 0, keeps the memory */
void idvec_fini(struct idvec *a);   /* frees; the vector is empty again */

#endif
