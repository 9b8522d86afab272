# tests/cli/: the subcommands through the binary ($ELMCHAT).
check_PROGRAMS += tests/cli/test-harness
tests_cli_test_harness_SOURCES = tests/cli/test-harness.c
tests_cli_test_harness_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)
TESTS += tests/cli/test-harness

# tokenize / detokenize end to end; most checks need the LLaMA-2
# tokenizer.model (tests/lib/fetch-tokenizer.sh).
dist_check_SCRIPTS += tests/cli/test-tokenize.sh
TESTS += tests/cli/test-tokenize.sh
