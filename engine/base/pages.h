/* pages.h: large zero-filled buffers whose pages cost nothing until they
 * are touched (the KV caches: a 2048-token context of which a chat uses a
 * few hundred).  calloc promises zeros but not laziness: once glibc's
 * dynamic mmap threshold has risen (after a large block is freed: a model
 * switch, a finished chat), it serves such a block from the heap and
 * clears every byte, and the whole context is paid for at once.
 * Engine-internal. */
#ifndef ELMCHAT_ENGINE_PAGES_H
#define ELMCHAT_ENGINE_PAGES_H

#include <stddef.h>

/* bytes of zeros, page-aligned, NULL when out of memory. */
void *elm_pages_zalloc(size_t bytes);
/* Give back what elm_pages_zalloc returned (p may be NULL), with its size. */
void elm_pages_free(void *p, size_t bytes);

#endif
