/* fuzz-json.c: engine/formats/jsonfile.c's strict whole-buffer JSON parsing. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include "engine/formats/jsonfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *obj = NULL;
    char err[256];
    if (elm_json_parse((const char *)data, size, "fuzz.json", &obj, err, sizeof err) == ELM_OK)
        json_object_put(obj);
    return 0;
}
