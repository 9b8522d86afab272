# tests/gguf.mk: GGUF files and the quantized types.  test-gguf needs only
# the golden data in tests/data/gguf/ (made by tests/reference/gguf_goldens.py
# from the NumPy reference); test-gguf-model also makes checkpoints at check
# time with tests/gen-checkpoint (tests/gen.mk).
GGUF_TESTS = tests/test-gguf tests/test-gguf-model
check_PROGRAMS += $(GGUF_TESTS)
TESTS += $(GGUF_TESTS)

tests_test_gguf_SOURCES = tests/test-gguf.c
tests_test_gguf_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
tests_test_gguf_model_SOURCES = tests/test-gguf-model.c tests/test-engine-util.c \
	tests/test-engine-util.h
tests_test_gguf_model_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_gguf_model_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)

EXTRA_DIST += \
	tests/reference/gguf_ref.py \
	tests/reference/gguf_goldens.py \
	tests/data/gguf/blocks-q8_0.bin tests/data/gguf/blocks-q8_0.f32 \
	tests/data/gguf/blocks-q4_0.bin tests/data/gguf/blocks-q4_0.f32 \
	tests/data/gguf/blocks-q4_k.bin tests/data/gguf/blocks-q4_k.f32 \
	tests/data/gguf/blocks-q5_k.bin tests/data/gguf/blocks-q5_k.f32 \
	tests/data/gguf/blocks-q6_k.bin tests/data/gguf/blocks-q6_k.f32 \
	tests/data/gguf/half.bin tests/data/gguf/half.f32 \
	tests/data/gguf/bhalf.bin tests/data/gguf/bhalf.f32 \
	tests/data/gguf/round.f32 tests/data/gguf/round-f16.bin tests/data/gguf/round-bf16.bin \
	tests/data/gguf/quant.f32 tests/data/gguf/quant-q8_0.bin tests/data/gguf/quant-q4_0.bin \
	tests/data/gguf/meta-v2.gguf \
	tests/data/gguf/kquant.gguf tests/data/gguf/kquant.logits.f32
