# tests/ui/: the UI's tests.  Pure units (layout, wrapping, sanitizing) and
# the tmux tests that drive the real binary in a pty.
UI_UNIT_TESTS = tests/ui/test-ui-layout tests/ui/test-ui-text tests/ui/test-markdown \
	tests/ui/test-key-bindings
check_PROGRAMS += $(UI_UNIT_TESTS)
TESTS += $(UI_UNIT_TESTS)
tests_ui_test_ui_layout_SOURCES = tests/ui/test-ui-layout.c
tests_ui_test_ui_layout_LDADD = tests/lib/libtap.a $(ELM_UI_LIBS)
tests_ui_test_key_bindings_SOURCES = tests/ui/test-key-bindings.c
tests_ui_test_key_bindings_LDADD = tests/lib/libtap.a $(ELM_UI_LIBS)
tests_ui_test_ui_text_SOURCES = tests/ui/test-ui-text.c
tests_ui_test_ui_text_LDADD = tests/lib/libtap.a $(ELM_UI_LIBS)
# Markdown re-render cost while a reply streams (by hand, not a test).
check_PROGRAMS += tests/ui/bench-markdown
tests_ui_bench_markdown_SOURCES = tests/ui/bench-markdown.c
tests_ui_bench_markdown_LDADD = $(ELM_UI_LIBS)
tests_ui_test_markdown_SOURCES = tests/ui/test-markdown.c
tests_ui_test_markdown_CFLAGS = $(AM_CFLAGS) $(MD4C_CFLAGS)
tests_ui_test_markdown_LDADD = tests/lib/libtap.a $(ELM_UI_LIBS)

# tmux drives the real binary (random-weight model) in a pty; skipped when
# tmux is missing.  tests/lib/ui-tmux.sh holds the shared helpers; replies
# are paced with ELM_WORKER_TEST_TOKEN_INTERVAL_MS so the tests do not depend on
# the speed of the machine.  test-ui-conv.sh and test-ui-gguf.sh need
# tests/lib/gen-checkpoint (built by all); test-ui-latency.sh runs
# tests/lib/keylatency; test-ui-remote.sh a llama-server (tests/lib/llama-server.sh).
UI_TMUX_TESTS = tests/ui/test-ui-chat.sh tests/ui/test-ui-edit.sh tests/ui/test-ui-session.sh \
	tests/ui/test-ui-conv.sh tests/ui/test-ui-context.sh tests/ui/test-ui-gguf.sh \
	tests/ui/test-ui-multi.sh tests/ui/test-ui-load.sh tests/ui/test-ui-latency.sh \
	tests/ui/test-ui-guide.sh tests/ui/test-ui-queue.sh tests/ui/test-ui-role.sh \
	tests/ui/test-ui-editor.sh tests/ui/test-ui-vi.sh tests/ui/test-ui-markdown.sh \
	tests/ui/test-ui-copy.sh tests/ui/test-ui-find.sh tests/ui/test-ui-select.sh \
	tests/ui/test-ui-session-list.sh tests/ui/test-ui-tree.sh \
	tests/ui/test-ui-draft.sh tests/ui/test-ui-crash.sh tests/ui/test-ui-pull.sh \
	tests/ui/test-ui-huge-session.sh tests/ui/test-ui-undo.sh tests/ui/test-ui-lock.sh \
	tests/ui/test-ui-sizes.sh tests/ui/test-ui-keys.sh \
	tests/ui/test-ui-inline.sh \
	tests/ui/test-ui-remote.sh
dist_check_SCRIPTS += $(UI_TMUX_TESTS)
TESTS += $(UI_TMUX_TESTS)
# Issue 47: /format (structured replies) in the chat, saved with the session.
dist_check_SCRIPTS += tests/ui/test-ui-format.sh
TESTS += tests/ui/test-ui-format.sh
# Issue 50: an Instruct model from a commit-named Hub snapshot chats under
# its template (status bar, /info's reason).
dist_check_SCRIPTS += tests/ui/test-ui-hub-template.sh
TESTS += tests/ui/test-ui-hub-template.sh

# The worker's test hooks are in elmchat-testing, not in the shipped elmchat.
dist_check_SCRIPTS += tests/ui/test-ui-test-hooks.sh
TESTS += tests/ui/test-ui-test-hooks.sh
