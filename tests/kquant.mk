# tests/kquant.mk: the Q4_K/Q5_K/Q6_K int8 row kernels (every set the CPU
# runs) against a float64 emulation, and the K-quant quantizers' round trips.
# Data: the block goldens of tests/data/gguf/ (listed in tests/gguf.mk).
check_PROGRAMS += tests/test-kquant
TESTS += tests/test-kquant

tests_test_kquant_SOURCES = tests/test-kquant.c
tests_test_kquant_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
