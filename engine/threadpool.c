/* threadpool.c: a small persistent pool of compute threads.
 *
 * Workers spin briefly on a generation counter (a decode step hands out
 * dozens of small jobs, and a sleep/wake per job would cost more than the
 * job), then sleep on a condition variable. */
#include "config.h"

#include "engine/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#define SPINS 20000

struct worker {
    struct elm_threadpool *pool;
    pthread_t thread;
    int ith;
};

struct elm_threadpool {
    int n_threads;
    struct worker *workers; /* [n_threads - 1] */
    int n_started;
    pthread_mutex_t lock;
    pthread_cond_t work_cv, done_cv;
    atomic_uint generation; /* bumped for every job */
    atomic_int pending;     /* workers still running the current job */
    atomic_bool stop;
    atomic_bool spin; /* workers may spin between jobs */
    elm_task_fn fn;
    void *arg;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    struct elm_threadpool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen = atomic_load(&pool->generation);
        for (int i = 0; gen == seen && i < SPINS && atomic_load(&pool->spin); i++) {
            cpu_relax();
            gen = atomic_load(&pool->generation);
        }
        if (gen == seen) {
            pthread_mutex_lock(&pool->lock);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->work_cv, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->stop))
            return NULL;
        seen = gen;
        pool->fn(pool->arg, w->ith, pool->n_threads);
        if (atomic_fetch_sub(&pool->pending, 1) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done_cv);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

void elm_threadpool_free(struct elm_threadpool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stop, true);
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->n_started; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->work_cv);
    pthread_cond_destroy(&pool->done_cv);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
}

elm_status elm_threadpool_new(int n_threads, struct elm_threadpool **out)
{
    if (n_threads < 1)
        n_threads = 1;
    struct elm_threadpool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return ELM_E_NOMEM;
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work_cv, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->spin, true);
    if (n_threads > 1) {
        pool->workers = calloc((size_t)n_threads - 1, sizeof *pool->workers);
        if (!pool->workers) {
            elm_threadpool_free(pool);
            return ELM_E_NOMEM;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            struct worker *w = &pool->workers[i];
            w->pool = pool;
            w->ith = i + 1;
            if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
                elm_threadpool_free(pool);
                return ELM_E_NOMEM;
            }
            pool->n_started++;
        }
    }
    *out = pool;
    return ELM_OK;
}

int elm_threadpool_size(const struct elm_threadpool *pool)
{
    return pool->n_threads;
}

void elm_threadpool_run(struct elm_threadpool *pool, elm_task_fn fn, void *arg)
{
    if (pool->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store(&pool->pending, pool->n_threads - 1);
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add(&pool->generation, 1);
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->lock);

    fn(arg, 0, pool->n_threads);

    for (int i = 0; i < SPINS && atomic_load(&pool->pending) > 0; i++)
        cpu_relax();
    if (atomic_load(&pool->pending) > 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load(&pool->pending) > 0)
            pthread_cond_wait(&pool->done_cv, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
}

void elm_threadpool_set_spin(struct elm_threadpool *pool, bool spin)
{
    atomic_store(&pool->spin, spin);
}

void elm_split(long n, int ith, int nth, long align, long *begin, long *end)
{
    if (align < 1)
        align = 1;
    long blocks = (n + align - 1) / align;
    long b0 = blocks * ith / nth, b1 = blocks * (ith + 1) / nth;
    *begin = b0 * align < n ? b0 * align : n;
    *end = b1 * align < n ? b1 * align : n;
}
