/* pages.h: large zero-filled buffers whose pages cost nothing until they
 * are touched (the KV caches: a 2048-token context of which a chat uses a
 * few hundred).  calloc promises zeros but not laziness: once glibc's
 * dynamic mmap threshold has risen (after a large block is freed: a model
 * switch, a finished chat), it serves such a block from the heap and
 * clears every byte, and the whole context is paid for at once.
 * Engine-internal. */
#ifndef ELMCHAT_ENGINE_PAGES_H
#define ELMCHAT_ENGINE_PAGES_H

#include <stdbool.h>
#include <stddef.h>

/* bytes of zeros, page-aligned, NULL when out of memory.  From 2 MiB on,
 * aligned to a huge page and advised to use them (MADV_HUGEPAGE, where
 * there is one): the caller keeps what it touches together (the KV
 * cache's stripes, ctx.h) so that huge pages stay lazy too. */
void *elm_pages_zalloc(size_t bytes);
/* Give back what elm_pages_zalloc returned (p may be NULL), with its size. */
void elm_pages_free(void *p, size_t bytes);
/* Make the pages of [p, p + bytes) present now, in one call, instead of a
 * fault per 4 KiB page as they are first touched (a fault costs several
 * microseconds, far more in a VM: a 27 MB snapshot's load was mostly
 * faults).  write: for a buffer about to be filled (p from
 * elm_pages_zalloc or the heap); else for a mapped file about to be read.
 * Only a hint: nothing happens where the system cannot do it. */
void elm_pages_prefault(const void *p, size_t bytes, bool write);
/* Read one byte of every page of [p, p + bytes) through this mapping.  In
 * a VM that shadows the guest's page tables (this machine's), the first
 * read of each page through a mapping costs ~2-4 us of user time even
 * when the kernel has already made it present (elm_pages_prefault does
 * not help: measured), and it
 * is charged to whatever instruction reads first: a model's first forward
 * pass paid ~0.5 s for the 270M shape's 543 MB.  The model load reads them
 * instead (elm_model_load). */
void elm_pages_touch(const void *p, size_t bytes);

#endif
