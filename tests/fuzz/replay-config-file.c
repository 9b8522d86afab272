/* replay-config-file.c: fuzz-config-file.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_config_file
#include "tests/fuzz/fuzz-config-file.c"
