# libelm: the inference engine.  Includes nothing from src/ or ui/.
noinst_LIBRARIES += engine/libelm.a
engine_libelm_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
engine_libelm_a_SOURCES = \
	engine/elm.h \
	engine/elm_tokenizer.h \
	engine/elm_worker.h \
	engine/elm_worker.c \
	engine/status.c \
	engine/sampler.c
# The tokenizer (SentencePiece BPE; tokenizer.model and tokenizer.json).
engine_libelm_a_SOURCES += \
	engine/tokenizer.c engine/tokenizer_impl.h \
	engine/sp_model.c \
	engine/tokenizer_json.c \
	engine/tokenizer_gguf.c
# Model loading, the forward pass, the KV cache (the engine proper).
engine_libelm_a_SOURCES += \
	engine/model.c engine/model.h \
	engine/model_setup.c \
	engine/config.c \
	engine/error.c engine/error.h \
	engine/mapfile.c engine/mapfile.h \
	engine/jsonfile.c engine/jsonfile.h \
	engine/safetensors.c engine/safetensors.h \
	engine/kernels.c engine/kernels.h \
	engine/kernels_info.c \
	engine/kernels_quant.c engine/kernels_quant.h \
	engine/kernels_quant_avx2.c \
	engine/kernels_quant_avx512.c \
	engine/kernels_kquant.c engine/kernels_kquant.h \
	engine/kernels_kquant_x86.c engine/kernels_kquant_avx512.h \
	engine/quant_act.c engine/quant_act.h \
	engine/threadpool.c engine/threadpool.h \
	engine/gemm.c engine/gemm.h \
	engine/gemm_avx512.c engine/gemm_avx512.h \
	engine/gemm_int8.c engine/gemm_int8.h \
	engine/ctx.c engine/ctx.h \
	engine/forward.c \
	engine/state.c engine/state.h
# GGUF files and the quantized weight types (read, bind, write, quantize).
engine_libelm_a_SOURCES += \
	engine/gguf.c engine/gguf.h \
	engine/gguf_model.c \
	engine/gguf_write.c \
	engine/gguf_quantize.c \
	engine/quant.c engine/quant.h
