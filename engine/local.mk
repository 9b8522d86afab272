# libelm: the inference engine.  Includes nothing from src/ or ui/.
noinst_LIBRARIES += engine/libelm.a
engine_libelm_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(CURL_CFLAGS)
engine_libelm_a_SOURCES = \
	engine/elm_status.h \
	engine/elm.h \
	engine/elm_bench.h \
	engine/elm_tokenizer.h \
	engine/elm_worker.h \
	engine/worker/shared_state.h \
	engine/worker/worker_testing.h \
	engine/worker/worker.c \
	engine/worker/events.c \
	engine/worker/queue.c \
	engine/worker/residency.c \
	engine/worker/loader.c \
	engine/worker/request_generate.c \
	engine/worker/request_cache.c \
	engine/worker/request_draft.c \
	engine/worker/model_kind.c engine/worker/model_kind.h engine/worker/model_local.c \
	engine/worker/model_remote.c engine/worker/remote_server.c engine/worker/remote_server.h \
	engine/remote/http_client.c engine/remote/http_client.h \
	engine/remote/llama_server.c engine/remote/llama_server.h \
	engine/inference/stop_strings.c engine/inference/stop_strings.h \
	engine/base/status.c \
	engine/base/test_hooks.c engine/base/test_hooks.h \
	engine/base/wait_word.c engine/base/wait_word.h \
	engine/base/platform.c engine/base/platform.h \
	engine/inference/sampler.c
# The tokenizer (SentencePiece BPE; tokenizer.model, tokenizer.json, a
# GGUF's tokenizer.ggml.* vocabulary).
engine_libelm_a_SOURCES += \
	engine/tokenizer/bpe.c engine/tokenizer/bpe.h \
	engine/tokenizer/load.c engine/tokenizer/load.h \
	engine/tokenizer/sp_model.c engine/tokenizer/sp_model.h \
	engine/tokenizer/hf_json.c engine/tokenizer/hf_json.h \
	engine/tokenizer/gguf_vocab.c engine/tokenizer/gguf_vocab.h
# Model loading, the forward pass, the KV cache (the engine proper).
engine_libelm_a_SOURCES += \
	engine/model/model.h \
	engine/model/load.c \
	engine/model/vocab_match.c \
	engine/model/check.c \
	engine/model/load_steps.c engine/model/load_steps.h \
	engine/model/hf_model.c engine/model/hf_model.h \
	engine/model/setup.c \
	engine/model/config.c \
	engine/model/about.c \
	engine/model/sampling_defaults.c engine/model/sampling_defaults.h \
	engine/base/error.c engine/base/error.h \
	engine/base/pages.c engine/base/pages.h \
	engine/formats/mapfile.c engine/formats/mapfile.h \
	engine/formats/jsonfile.c engine/formats/jsonfile.h \
	engine/formats/safetensors.c engine/formats/safetensors.h \
	engine/kernels/cpu.c engine/kernels/cpu.h engine/kernels/arch/x86/simd_x86.h \
	engine/kernels/kernels.c engine/kernels/kernels.h engine/kernels/matrix.h \
	engine/kernels/f32.h \
	engine/kernels/f32_generic.c \
	engine/kernels/arch/x86/f32_avx2.c \
	engine/kernels/arch/x86/f32_avx512.c \
	engine/kernels/arch/arm/f32_neon.c \
	engine/bench/bandwidth.c engine/bench/blis_reference.c \
	engine/kernels/system_info.c \
	engine/kernels/q8q4.c engine/kernels/q8q4.h \
	engine/kernels/arch/x86/q8q4_avx2.c \
	engine/kernels/arch/x86/q8q4_avx512.c \
	engine/kernels/kquant.c engine/kernels/kquant.h \
	engine/kernels/arch/x86/kquant_x86.h \
	engine/kernels/arch/x86/kquant_avx2.c \
	engine/kernels/arch/x86/kquant_avx512.c engine/kernels/arch/x86/kquant_avx512.inc \
	engine/kernels/arch/arm/int8_neon.h \
	engine/kernels/arch/arm/q8q4_neon.c engine/kernels/arch/arm/q8q4_neon.inc \
	engine/kernels/arch/arm/kquant_neon.c engine/kernels/arch/arm/kquant_neon.inc \
	engine/kernels/act_int8.c engine/kernels/act_int8.h \
	engine/kernels/threadpool.c engine/kernels/threadpool.h \
	engine/kernels/gemm.c engine/kernels/gemm.h \
	engine/kernels/arch/x86/gemm_f32_avx512.c engine/kernels/arch/x86/gemm_f32_avx512.h \
	engine/kernels/arch/x86/gemm_bf16_avx512.c engine/kernels/arch/x86/gemm_bf16_avx512.h \
	engine/kernels/gemm_int8.c engine/kernels/gemm_int8.h engine/kernels/gemm_int8_tiles.h \
	engine/kernels/arch/arm/gemm_int8_neon.c \
	engine/kernels/arch/arm/gemm_bf16_neon.c engine/kernels/arch/arm/gemm_bf16_neon.h \
	engine/inference/ctx.c engine/inference/ctx.h engine/inference/ctx_accessors.inc \
	engine/inference/forward.c \
	engine/inference/generate.c \
	engine/inference/lookup.c engine/inference/lookup.h \
	engine/inference/draft.c engine/inference/draft.h \
	engine/inference/state.c engine/inference/state.h
# GGUF files and the quantized weight types (read, bind, write, convert).
engine_libelm_a_SOURCES += \
	engine/formats/gguf_read.c engine/formats/gguf.h \
	engine/model/gguf_model.c engine/model/gguf_model.h \
	engine/formats/gguf_write.c \
	engine/model/gguf_convert.c \
	engine/kernels/blocks.c engine/kernels/blocks.h
# What the AArch64 kernel folder holds (the files themselves join the list above).
EXTRA_DIST += engine/kernels/arch/arm/README.md
# Grammars that constrain generation: GBNF, its byte matcher, the token trie.
engine_libelm_a_SOURCES += \
	engine/elm_grammar.h \
	engine/grammar/grammar.h \
	engine/grammar/gbnf.c \
	engine/grammar/matcher.c \
	engine/grammar/tokens.c engine/grammar/tokens.h \
	engine/inference/constrain.c engine/inference/constrain.h \
	engine/inference/decode_few.h \
	engine/grammar/json_schema.c \
	engine/inference/sampler.h
