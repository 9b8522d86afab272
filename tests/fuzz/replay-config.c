/* replay-config.c: fuzz-config.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_config
#include "tests/fuzz/fuzz-config.c"
