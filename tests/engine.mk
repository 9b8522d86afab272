# The engine's tests (libelm): goldens from the NumPy reference, KV-cache
# invariants, bad files, the sampler, state files.  Checkpoints are made at
# check time with tests/gen-checkpoint (tests/gen.mk).
ENGINE_TESTS = \
	tests/test-engine-golden \
	tests/test-engine-invariants \
	tests/test-engine-kernels \
	tests/test-engine-load \
	tests/test-engine-sampler \
	tests/test-engine-state
check_PROGRAMS += $(ENGINE_TESTS)
TESTS += $(ENGINE_TESTS)

ENGINE_TEST_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
ENGINE_TEST_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
ENGINE_TEST_UTIL = tests/test-engine-util.c tests/test-engine-util.h

tests_test_engine_golden_SOURCES = tests/test-engine-golden.c $(ENGINE_TEST_UTIL)
tests_test_engine_golden_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_engine_golden_LDADD = $(ENGINE_TEST_LDADD)
tests_test_engine_invariants_SOURCES = tests/test-engine-invariants.c $(ENGINE_TEST_UTIL)
tests_test_engine_invariants_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_engine_invariants_LDADD = $(ENGINE_TEST_LDADD)
tests_test_engine_kernels_SOURCES = tests/test-engine-kernels.c
tests_test_engine_kernels_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
tests_test_engine_load_SOURCES = tests/test-engine-load.c $(ENGINE_TEST_UTIL)
tests_test_engine_load_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_engine_load_LDADD = $(ENGINE_TEST_LDADD)
tests_test_engine_sampler_SOURCES = tests/test-engine-sampler.c
tests_test_engine_sampler_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
tests_test_engine_state_SOURCES = tests/test-engine-state.c $(ENGINE_TEST_UTIL)
tests_test_engine_state_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_test_engine_state_LDADD = $(ENGINE_TEST_LDADD)

# The same forward-pass tests on the portable kernels (ELM_KERNELS=generic):
# the fallback of CPUs without AVX2 must stay exact too.
ENGINE_GENERIC_TESTS = tests/test-engine-generic.sh
TESTS += $(ENGINE_GENERIC_TESTS)
EXTRA_DIST += $(ENGINE_GENERIC_TESTS)
# Issue 9's speed table, by hand (not in make check; HACKING.md).
EXTRA_DIST += tests/bench-matrix.sh
