/* replay-hub-list.c: fuzz-hub-list.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_hub_list
#include "tests/fuzz/fuzz-hub-list.c"
