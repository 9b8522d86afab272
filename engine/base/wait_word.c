/* wait_word.c: the futex (Linux) and its portable fallback, a condition
 * variable per bucket of addresses.  Why the fallback rather than macOS's
 * os_sync_wait_on_address (14.4+) or the private __ulock_wait: the pool
 * sleeps only after a spin (tens of microseconds), so a wake's cost does not
 * show, and a Mac then runs the very code CI runs on Linux. */
#include "config.h"

#include "engine/base/wait_word.h"

#include <stdint.h>

#if defined(__linux__) && !ELM_PORTABLE_FALLBACKS
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void elm_word_wait(atomic_uint *w, unsigned val)
{
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

void elm_word_wake(atomic_uint *w)
{
    syscall(SYS_futex, (unsigned *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#else
#include <pthread.h>

/* Words sharing a bucket wake each other's sleepers: they re-check and sleep
 * again.  A pool has two words, so collisions are rare and harmless. */
#define N_BUCKETS 16

static struct bucket {
    pthread_mutex_t mu;
    pthread_cond_t cv;
} buckets[N_BUCKETS];
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

static void buckets_init(void)
{
    for (int i = 0; i < N_BUCKETS; i++) {
        pthread_mutex_init(&buckets[i].mu, NULL);
        pthread_cond_init(&buckets[i].cv, NULL);
    }
}

static struct bucket *bucket_of(const atomic_uint *w)
{
    pthread_once(&buckets_once, buckets_init);
    uintptr_t a = (uintptr_t)w;
    return &buckets[(a >> 6 ^ a >> 12) % N_BUCKETS];
}

/* The value is read under the bucket's lock and the waker takes that lock
 * after its change, so a wake between the check and the sleep is not lost. */
void elm_word_wait(atomic_uint *w, unsigned val)
{
    struct bucket *b = bucket_of(w);
    pthread_mutex_lock(&b->mu);
    if (atomic_load(w) == val)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

void elm_word_wake(atomic_uint *w)
{
    struct bucket *b = bucket_of(w);
    pthread_mutex_lock(&b->mu);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}
#endif
