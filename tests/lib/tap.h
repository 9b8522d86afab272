/* tap.h: a small TAP producer for the C tests (run by automake's TAP driver).
 *
 *   plan(n) / plan_lazy() ... done_testing()
 *   ok(cond, fmt, ...), is_int(got, want, name), is_str(...), near(...)
 *   skip_all(reason): prints "1..0 # SKIP reason" and exits 0.
 *   tap_data_path("file"): $srcdir/tests/data/file (works in VPATH builds).
 */
#ifndef ELMCHAT_TESTS_LIB_TAP_H
#define ELMCHAT_TESTS_LIB_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void plan(int n);
void plan_lazy(void);
int done_testing(void); /* returns the exit status: 0 when all passed */
bool ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool is_int(long long got, long long want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool near(double got, double want, double tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void skip(int n, const char *reason);
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void skip_all(const char *reason) __attribute__((noreturn));
void bail_out(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Static buffer: the path of a file under tests/data in the source tree. */
const char *tap_data_path(const char *name);
/* Static buffer: a fresh private directory for this test (removed at exit
 * unless the test failed). */
const char *tap_tmpdir(void);
/* XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME and XDG_CACHE_HOME set
 * to folders of tap_tmpdir(): the test's files stay its own. */
void tap_private_xdg(void);
/* 64-byte aligned memory (bail_out when there is none); free() it. */
void *tap_alloc64(size_t bytes);
/* A uniform number in [-1, 1) from the xorshift state *s (never 0). */
double tap_uniform(uint64_t *s);
/* Write data to tap_tmpdir()/name; its path (static: valid until the next call). */
const char *tap_write_tmp(const char *name, const void *data, size_t len);
/* How many times slower than usual this machine runs the tests:
 * $ELMCHAT_TEST_TIME_SCALE (a number >= 1; 1 when unset or bad).  A
 * wall-clock deadline is a guard against a hang, so the tests multiply theirs
 * by it; .ci/stage-aarch64 sets it under qemu-user, where compute is 10-30
 * times slower. */
double tap_time_scale(void);
/* Generate a checkpoint with $top_builddir/tests/lib/gen-checkpoint ARGS into
 * tap_tmpdir()/NAME, whose path goes to dir.  false when the generator is
 * not built; bails out when it fails. */
bool tap_gen_checkpoint(const char *args, char *dir, size_t dir_size, const char *name);

#endif
