/* replay-kvmeta.c: fuzz-kvmeta.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_kvmeta
#include "tests/fuzz/fuzz-kvmeta.c"
