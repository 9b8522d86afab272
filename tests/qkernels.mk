# tests/qkernels.mk: the int8 activations of Q8_0 / Q4_0 decode
# (engine/kernels/act_int8.h, engine/kernels_quant*.c) on every kernel set the CPU
# runs: the rounding byte for byte, the rows kernels against a float64
# emulation, row-range independence, the dispatch.
check_PROGRAMS += tests/test-quant-int8
TESTS += tests/test-quant-int8
tests_test_quant_int8_SOURCES = tests/test-quant-int8.c
tests_test_quant_int8_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)

# Batches of every block type through elm_gemm (the int8 GEMM with AVX-512
# VNNI, the row kernels elsewhere) against a float64 emulation of the rule.
check_PROGRAMS += tests/test-gemm-int8
TESTS += tests/test-gemm-int8
tests_test_gemm_int8_SOURCES = tests/test-gemm-int8.c
tests_test_gemm_int8_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
