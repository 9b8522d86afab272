/* replay-json.c: fuzz-json.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_json
#include "tests/fuzz/fuzz-json.c"
