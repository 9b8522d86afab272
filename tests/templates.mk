# Templates, sessions, store, config (tests for src/{template,session,store,config_file}.c).
check_PROGRAMS += tests/test-template
tests_test_template_SOURCES = tests/test-template.c
tests_test_template_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_template_LDADD = tests/libtap.a $(ELM_CORE_LIBS)
TESTS += tests/test-template
# Independent goldens (tests/reference/README.md: regenerate with node).
EXTRA_DIST += tests/data/templates/goldens.json tests/reference/template_goldens.mjs

check_PROGRAMS += tests/test-session
tests_test_session_SOURCES = tests/test-session.c
tests_test_session_LDADD = tests/libtap.a $(ELM_CORE_LIBS)
TESTS += tests/test-session
