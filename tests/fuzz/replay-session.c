/* replay-session.c: fuzz-session.c inside tests/fuzz/replay (see fuzz.h). */
#define LLVMFuzzerTestOneInput fuzz_session
#include "tests/fuzz/fuzz-session.c"
