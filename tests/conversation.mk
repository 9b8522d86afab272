# Conversations and KV reuse (src/conversation.c, src/kvcache_store.c):
# the real engine on the bundled demo checkpoint (or one made by
# tests/gen-checkpoint at check time).
check_PROGRAMS += tests/test-conversation
tests_test_conversation_SOURCES = tests/test-conversation.c
tests_test_conversation_LDADD = tests/libtap.a $(ELM_CORE_LIBS)
TESTS += tests/test-conversation
