/* replay-render.c: fuzz-render.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_render
#include "tests/fuzz/fuzz-render.c"
