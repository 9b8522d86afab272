# UI tests: pure units (layout, wrapping, sanitizing, commands) and the
# tmux integration tests that drive the real binary in a pty.
check_PROGRAMS += tests/test-ui-layout tests/test-ui-text tests/test-ui-commands
tests_test_ui_layout_SOURCES = tests/test-ui-layout.c
tests_test_ui_layout_LDADD = tests/libtap.a $(ELM_UI_LIBS)
tests_test_ui_text_SOURCES = tests/test-ui-text.c
tests_test_ui_text_LDADD = tests/libtap.a $(ELM_UI_LIBS)
tests_test_ui_commands_SOURCES = tests/test-ui-commands.c
tests_test_ui_commands_LDADD = tests/libtap.a $(ELM_UI_LIBS)
TESTS += tests/test-ui-layout tests/test-ui-text tests/test-ui-commands

# tmux drives the real binary (bundled demo model) in a pty; skipped when
# tmux is missing.  ui-tmux.sh holds the shared helpers; replies are paced
# with ELM_WORKER_TEST_TOKEN_INTERVAL_MS so the tests do not depend on the speed
# of the machine.  test-ui-conv.sh needs tests/gen-checkpoint (built by all).
UI_TMUX_TESTS = tests/test-ui-chat.sh tests/test-ui-edit.sh tests/test-ui-session.sh \
	tests/test-ui-conv.sh tests/test-ui-context.sh tests/test-ui-gguf.sh \
	tests/test-ui-multi.sh tests/test-ui-load.sh
dist_check_SCRIPTS += $(UI_TMUX_TESTS)
EXTRA_DIST += tests/ui-tmux.sh
TESTS += $(UI_TMUX_TESTS)

# tests/keylatency: keystroke-to-screen latency of the real binary in a pty
# (its own small terminal emulator), idle and while a reply decodes flat
# out; prints percentiles.  test-ui-latency.sh runs it briefly on the demo
# model and checks only what does not depend on the machine's speed.
check_PROGRAMS += tests/keylatency
tests_keylatency_SOURCES = tests/keylatency.c
tests_keylatency_LDADD = -lm
dist_check_SCRIPTS += tests/test-ui-latency.sh
TESTS += tests/test-ui-latency.sh
