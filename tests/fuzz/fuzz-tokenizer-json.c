/* fuzz-tokenizer-json.c: Hugging Face tokenizer.json (engine/tokenizer/hf_json.c)
 * and the tokenizer it builds. */
#include "config.h"

#include "tests/fuzz/fuzz.h"

#include "engine/tokenizer/hf_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    elm_tokenizer *tok = NULL;
    char err[512];
    if (tokenizer_json_parse((const char *)data, size, "tokenizer.json", &tok, err, sizeof err) ==
            0 &&
        tok) {
        fuzz_exercise_tokenizer(tok, data, size);
        elm_tokenizer_free(tok);
    }
    return 0;
}
