/* replay-tokenizer-json.c: fuzz-tokenizer-json.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_tokenizer_json
#include "tests/fuzz/fuzz-tokenizer-json.c"
