/* safetensors.h: memory-mapped, validated safetensors files (engine-internal).
 *
 * Layout: u64 little-endian header length N, N bytes of JSON header
 * {"NAME": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"},
 * then the data; offsets are relative to the end of the header.
 */
#ifndef ELMCHAT_ENGINE_SAFETENSORS_H
#define ELMCHAT_ENGINE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/elm.h"

#define ELM_ST_MAX_DIMS 8

struct elm_st_tensor {
    char *name; /* owned */
    char dtype_name[12];
    bool supported;        /* dtype is F32, F16 or BF16 */
    enum elm_dtype dtype;  /* valid when supported */
    int n_dims;
    int64_t shape[ELM_ST_MAX_DIMS];
    const void *data; /* borrowed from the mapping */
    uint64_t size;    /* bytes */
    uint64_t offset;  /* from the start of the file */
};

struct elm_mapping {
    char *path; /* owned */
    void *addr;
    size_t size;
    struct elm_st_tensor *tensors; /* owned, sorted by name */
    int n_tensors;
};

/* Map and validate path: header length and JSON, dtypes, shapes, offsets in
 * range, sizes = shape x dtype size, no overlaps.  *out owned. */
elm_status elm_safetensors_open(const char *path, struct elm_mapping **out, char *err,
                                size_t err_size);
void elm_safetensors_close(struct elm_mapping *map);
/* Borrowed; NULL when absent. */
const struct elm_st_tensor *elm_safetensors_find(const struct elm_mapping *map, const char *name);

#endif
