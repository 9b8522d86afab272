# The engine thread's tests.  test-worker-fake runs the worker on a stand-in
# engine (tests/fake-engine.c: deterministic, no BLIS); test-worker runs it
# on the real libelm with checkpoints from tests/gen-checkpoint.
WORKER_TESTS = tests/test-worker-fake tests/test-worker
check_PROGRAMS += $(WORKER_TESTS)
TESTS += $(WORKER_TESTS)

tests_test_worker_fake_SOURCES = tests/test-worker.c tests/fake-engine.c tests/fake-engine.h \
	engine/worker/worker.c engine/worker/events.c engine/worker/queue.c engine/worker/residency.c engine/worker/loader.c engine/worker/request_generate.c engine/worker/request_cache.c engine/worker/worker_impl.h engine/worker/worker_testing.h engine/inference/generate.c engine/base/status.c engine/base/error.c
tests_test_worker_fake_CPPFLAGS = $(AM_CPPFLAGS) -DFAKE_ENGINE
tests_test_worker_fake_LDADD = tests/libtap.a $(PTHREAD_LIBS)

tests_test_worker_SOURCES = tests/test-worker.c
tests_test_worker_LDADD = tests/libtap.a $(ELM_ENGINE_LIBS)

# ThreadSanitizer run of the worker tests (CI: a build configured with
# --enable-tsan).  libgomp is not TSan-instrumented: tests/tsan.supp.
EXTRA_DIST += tests/tsan.supp
check-tsan:
	@case ' $(ELM_CFLAGS) ' in *' -fsanitize=thread '*) ;; \
	  *) echo "check-tsan: configure with --enable-tsan first" >&2; exit 1;; esac
	$(MAKE) $(AM_MAKEFLAGS) tests/gen-checkpoint$(EXEEXT) tests/libtap.a $(WORKER_TESTS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(abs_top_srcdir)/tests/tsan.supp $$TSAN_OPTIONS" \
	  $(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS='$(WORKER_TESTS)'
.PHONY: check-tsan
