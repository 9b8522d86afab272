/* platform.h: the engine's calls that differ between systems (besides the
 * pool's wait, engine/base/wait_word.h), each with its Linux branch and the
 * portable one that --enable-portable-fallbacks forces.  Engine-internal;
 * elm_cpu_count() is public (engine/elm.h). */
#ifndef ELMCHAT_ENGINE_PLATFORM_H
#define ELMCHAT_ENGINE_PLATFORM_H

#include <stdbool.h>

/* Lower the calling thread's priority by inc nice steps (at most to 19);
 * threads it starts later inherit it.  Linux only, where nice is per thread:
 * elsewhere nice is per process and would slow the UI thread too, and
 * macOS's per-thread QoS classes move work onto the efficiency cores; so
 * there this does nothing and returns false. */
bool elm_thread_lower_priority(int inc);

/* Seconds on the monotonic clock (differences only): the engine's one
 * clock (src/ has its own, src/base/platform.h: it cannot include this). */
double elm_now_seconds(void);

#endif
