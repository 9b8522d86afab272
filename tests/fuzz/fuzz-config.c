/* fuzz-config.c: config.json (engine/model/config.c through engine/formats/jsonfile.c's
 * file reader). */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine/model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("config.json", data, size);
    struct elm_model_info *info = calloc(1, sizeof *info);
    char err[ELM_ERR_MAX];
    if (info && elm_config_load(path, info, err, sizeof err) == ELM_OK) {
        /* what a loaded config promises the binder */
        for (int i = 0; i < info->n_layers; i++)
            if (info->n_query_heads[i] % info->n_kv_heads[i] || info->ffn_dim[i] < 1) {
                fprintf(stderr, "fuzz: config accepted with bad layer %d\n", i);
                abort();
            }
    }
    free(info);
    return 0;
}
