/* mapfile.h: read-only mmap of a whole regular file, for the engine's
 * loaders (safetensors, GGUF, state snapshots).  Engine-internal. */
#ifndef ELMCHAT_ENGINE_MAPFILE_H
#define ELMCHAT_ENGINE_MAPFILE_H

#include <stddef.h>

#include "engine/elm.h"

/* Map path (a regular file of at most max_size bytes) into *addr, *size.
 * An empty file is not mapped: *addr NULL, *size 0 (callers say what an
 * empty file means for them).  Errors name the file. */
elm_status elm_map_file(const char *path, size_t max_size, void **addr, size_t *size, char *err,
                        size_t err_size);
/* Undo elm_map_file (addr may be NULL). */
void elm_unmap_file(void *addr, size_t size);

#endif
