/* fuzz-sp-model.c: tokenizer.model (engine/tokenizer/sp_model.c's protobuf reader)
 * and the tokenizer it builds. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include "engine/tokenizer/sp_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    elm_tokenizer *tok = NULL;
    char err[512];
    if (sp_model_parse(data, size, "tokenizer.model", &tok, err, sizeof err) == ELM_OK && tok) {
        fuzz_exercise_tokenizer(tok, data, size);
        elm_tokenizer_free(tok);
    }
    return 0;
}
