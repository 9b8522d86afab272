/* replay-sp-model.c: fuzz-sp-model.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_sp_model
#include "tests/fuzz/fuzz-sp-model.c"
