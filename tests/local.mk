# The test suite: TAP programs and scripts.  Areas append to TESTS and
# check_PROGRAMS in their own fragments below.
check_LIBRARIES += tests/libtap.a
tests_libtap_a_SOURCES = tests/tap.c tests/tap.h

check_PROGRAMS += tests/test-harness
tests_test_harness_SOURCES = tests/test-harness.c
tests_test_harness_LDADD = tests/libtap.a $(ELM_CORE_LIBS)

dist_check_SCRIPTS += tests/check-layering.sh
TESTS += tests/test-harness tests/check-layering.sh
EXTRA_DIST += tests/data/README.md tests/tap.sh
