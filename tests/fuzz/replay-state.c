/* replay-state.c: fuzz-state.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_state
#include "tests/fuzz/fuzz-state.c"
