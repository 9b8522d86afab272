/* replay-template.c: fuzz-template.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_template
#include "tests/fuzz/fuzz-template.c"
