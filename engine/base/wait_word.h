/* wait_word.h: sleep until a 32-bit word changes, and wake its sleepers:
 * the thread pool's wait and wake (engine-internal).
 *
 * elm_word_wait(w, val) returns once *w != val, or spuriously (callers
 * re-check their own condition and loop).  elm_word_wake(w) wakes the
 * threads asleep on w; call it after changing *w.
 *
 * Linux: a futex.  Elsewhere (macOS, the BSDs, and Linux configured with
 * --enable-portable-fallbacks, so CI runs this branch): a mutex and a
 * condition variable from a small table hashed by address. */
#ifndef ELMCHAT_ENGINE_WAIT_WORD_H
#define ELMCHAT_ENGINE_WAIT_WORD_H

#include <stdatomic.h>

void elm_word_wait(atomic_uint *w, unsigned val);
void elm_word_wake(atomic_uint *w);

/* One pause of a spin loop: x86 PAUSE, ARM ISB (YIELD is a no-op on most
 * cores), a compiler barrier elsewhere.  Tells the core, and an emulator,
 * that this thread is waiting. */
static inline void elm_spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("isb" ::: "memory");
#elif defined(__arm__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

#endif
