/* replay-gguf.c: fuzz-gguf.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_gguf
#include "tests/fuzz/fuzz-gguf.c"
