# tests/gen.mk: the deterministic OpenELM checkpoint generator, the golden
# data it is checked with, and the bundled demo model (models/default, made
# at build time by the generator).  Included from the top-level Makefile.am.
# See tests/reference/README.md.

noinst_PROGRAMS += tests/gen-checkpoint
tests_gen_checkpoint_SOURCES = tests/gen-checkpoint.c
tests_gen_checkpoint_LDADD = -lm

# The independent float64 reference and the scripts that made the goldens.
EXTRA_DIST += \
	tests/reference/README.md \
	tests/reference/openelm_ref.py \
	tests/reference/check_shared_fixtures.py \
	tests/reference/make_goldens.py

# Goldens: computed by tests/reference/make_goldens.py on checkpoints that
# the C tests regenerate with tests/gen-checkpoint at check time.
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

# Copies of the shared reference fixtures (checkpoint + expected.json).
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

# ---------------------------------------------------------------------------
# The bundled demo model: random weights, synthetic tokenizer, ~24 MB bf16.
# Generated once in the build tree (the stamp), installed into
# $(pkgdatadir)/models/default.
# ---------------------------------------------------------------------------
ELM_DEFAULT_MODEL_DIR = models/default
ELM_DEFAULT_MODEL_FILES = config.json generation_config.json model.safetensors tokenizer.model
ELM_DEFAULT_MODEL_STAMP = $(ELM_DEFAULT_MODEL_DIR)/.generated

$(ELM_DEFAULT_MODEL_STAMP): tests/gen-checkpoint$(EXEEXT)
	$(AM_V_GEN)rm -rf $(ELM_DEFAULT_MODEL_DIR) && \
	$(MKDIR_P) $(ELM_DEFAULT_MODEL_DIR) && \
	tests/gen-checkpoint$(EXEEXT) --preset default --dtype bf16 -o $(ELM_DEFAULT_MODEL_DIR) && \
	echo 'tests/gen-checkpoint --preset default --dtype bf16' > $@

# Every file of the model comes from the stamp rule; remake it if one of
# them disappeared behind the stamp's back.
models/default/config.json: $(ELM_DEFAULT_MODEL_STAMP)
	@test -f $@ || { rm -f $(ELM_DEFAULT_MODEL_STAMP) && \
	  $(MAKE) $(AM_MAKEFLAGS) $(ELM_DEFAULT_MODEL_STAMP); }

all-local: $(ELM_DEFAULT_MODEL_STAMP)
install-data-local: elm-install-default-model
uninstall-local: elm-uninstall-default-model
clean-local: elm-clean-default-model

elm-install-default-model: $(ELM_DEFAULT_MODEL_STAMP)
	$(MKDIR_P) '$(DESTDIR)$(pkgdatadir)/models/default'
	@for f in $(ELM_DEFAULT_MODEL_FILES); do \
	  echo " $(INSTALL_DATA) $(ELM_DEFAULT_MODEL_DIR)/$$f '$(DESTDIR)$(pkgdatadir)/models/default/$$f'"; \
	  $(INSTALL_DATA) "$(ELM_DEFAULT_MODEL_DIR)/$$f" "$(DESTDIR)$(pkgdatadir)/models/default/$$f" || exit 1; \
	done

elm-uninstall-default-model:
	@for f in $(ELM_DEFAULT_MODEL_FILES); do \
	  echo " rm -f '$(DESTDIR)$(pkgdatadir)/models/default/$$f'"; \
	  rm -f "$(DESTDIR)$(pkgdatadir)/models/default/$$f"; \
	done
	@rmdir '$(DESTDIR)$(pkgdatadir)/models/default' 2>/dev/null || :
	@rmdir '$(DESTDIR)$(pkgdatadir)/models' 2>/dev/null || :

elm-clean-default-model:
	rm -rf models

.PHONY: elm-install-default-model elm-uninstall-default-model elm-clean-default-model
