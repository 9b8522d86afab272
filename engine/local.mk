# libelm: the inference engine.  Includes nothing from src/ or ui/.
noinst_LIBRARIES += engine/libelm.a
engine_libelm_a_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
engine_libelm_a_SOURCES = \
	engine/elm.h \
	engine/elm_tokenizer.h \
	engine/elm_worker.h \
	engine/status.c \
	engine/sampler.c
