# tests/src/: the application's tests (src/, no curses): templates,
# sessions, the store and config.yaml, conversations and KV reuse, slash
# commands, option parsing, the chat controller.
SRC_TESTS = tests/src/test-template tests/src/test-session tests/src/test-session-tree \
	tests/src/test-prompts \
	tests/src/test-attachment \
	tests/src/test-conversation \
	tests/src/test-slash-commands tests/src/test-options tests/src/test-platform tests/src/test-controller \
	tests/src/test-kill
check_PROGRAMS += $(SRC_TESTS)
TESTS += $(SRC_TESTS)

tests_src_test_template_SOURCES = tests/src/test-template.c
tests_src_test_template_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_src_test_template_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)
# Independent goldens (tests/reference/README.md: regenerate with node).
EXTRA_DIST += tests/data/templates/goldens.json tests/reference/template_goldens.mjs

# Every file under prompts/ (templates and roles) loads, and is shipped.
tests_src_test_prompts_SOURCES = tests/src/test-prompts.c
tests_src_test_prompts_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

tests_src_test_session_SOURCES = tests/src/test-session.c
tests_src_test_session_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

tests_src_test_session_tree_SOURCES = tests/src/test-session-tree.c
tests_src_test_session_tree_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_src_test_session_tree_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

tests_src_test_attachment_SOURCES = tests/src/test-attachment.c
tests_src_test_attachment_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

# The real engine on the bundled demo checkpoint (or one made by
# tests/lib/gen-checkpoint at check time).
tests_src_test_conversation_SOURCES = tests/src/test-conversation.c
tests_src_test_conversation_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

tests_src_test_slash_commands_SOURCES = tests/src/test-slash-commands.c
tests_src_test_slash_commands_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

tests_src_test_options_SOURCES = tests/src/test-options.c
tests_src_test_options_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)
tests_src_test_platform_SOURCES = tests/src/test-platform.c
tests_src_test_platform_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

# The chat controller on the real worker and two generated checkpoints.
tests_src_test_controller_SOURCES = tests/src/test-controller.c $(TEST_HOOKS)
tests_src_test_controller_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)

# 100 kill -9 while chatting: every session loads, no temporary file stays.
tests_src_test_kill_SOURCES = tests/src/test-kill.c $(TEST_HOOKS)
tests_src_test_kill_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)
