/* replay-safetensors.c: fuzz-safetensors.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_safetensors
#include "tests/fuzz/fuzz-safetensors.c"
