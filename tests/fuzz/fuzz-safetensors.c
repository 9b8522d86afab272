/* fuzz-safetensors.c: engine/formats/safetensors.c (header length, JSON header,
 * dtypes, shapes, offsets, overlaps) on a mapped file. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/formats/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("model.safetensors", data, size);
    struct elm_mapping *map = NULL;
    char err[ELM_ERR_MAX];
    if (elm_safetensors_open(path, &map, err, sizeof err) != ELM_OK)
        return 0;
    /* every accepted tensor lies inside the file; touch its first and last byte */
    volatile unsigned char sink = 0;
    for (int i = 0; i < map->n_tensors; i++) {
        const struct elm_st_tensor *t = &map->tensors[i];
        if (t->offset > map->size || t->size > map->size - t->offset) {
            fprintf(stderr, "fuzz: %s outside the file\n", t->name);
            abort();
        }
        if (t->size)
            sink ^= ((const unsigned char *)t->data)[0] ^
                    ((const unsigned char *)t->data)[t->size - 1];
        if (elm_safetensors_find(map, t->name) != t)
            abort();
    }
    (void)sink;
    (void)elm_safetensors_find(map, "model.norm.weight");
    elm_safetensors_close(map);
    return 0;
}
