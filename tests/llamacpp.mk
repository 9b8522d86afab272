# tests/llamacpp.mk: optional check against real llama.cpp (prebuilt from npm,
# cached under tests/.cache/, removed by distclean with the tokenizer cache):
# our GGUF files load in it as OpenELM models and it computes what elmchat
# computes.  Skipped when node, npm or the registry is unavailable.
dist_check_SCRIPTS += tests/test-llamacpp.sh
TESTS += tests/test-llamacpp.sh
EXTRA_DIST += tests/llamacpp-check.mjs
