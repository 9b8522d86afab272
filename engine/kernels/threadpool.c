/* threadpool.c: a small persistent pool of compute threads.
 *
 * One 64-bit state word says which job is current and who works on it:
 * generation (high 32 bits), a closed bit, and the number of workers inside
 * the job.  A worker joins with a compare-and-swap while the job is open;
 * the caller, once every range is taken, closes the job and waits only for
 * the workers that joined.  Waiting is a short spin with a pause, bounded
 * by the clock, then a sleep (engine/base/wait_word.h). */
#include "config.h"

#include "engine/kernels/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/base/platform.h"
#include "engine/base/wait_word.h"

#define GEN_SHIFT 32
#define CLOSED ((uint64_t)1 << 31)
#define ACTIVE_MASK (CLOSED - 1)
/* Longer than the gaps inside a decode step, far shorter than the gap
 * between two tokens.  Measured by the clock, not by iterations: a pause
 * lasts 10 to 140 cycles on x86, and an emulator runs the loop at any pace. */
#define SPIN_SEC 40e-6
/* Pauses between two looks at the clock. */
#define SPIN_PAUSES 16

struct worker {
    struct elm_threadpool *pool;
    pthread_t thread;
    int ith;
};

struct elm_threadpool {
    int n_threads;
    struct worker *workers; /* [n_threads - 1] */
    int n_started;
    /* Written by the caller before a job is published. */
    elm_range_fn fn;
    void *arg;
    long n, chunk;
    bool streams;              /* elm_threadpool_for_streams' job */
    _Atomic uint64_t *stretch; /* [n_threads], a cache line each: front | end << 32 */
    _Alignas(64) _Atomic uint64_t state; /* generation | closed | active */
    _Alignas(64) atomic_long next;       /* next range to hand out */
    _Alignas(64) atomic_uint gen_word;   /* futex: low bits of the generation */
    atomic_uint done_word;               /* futex: bumped when the last worker leaves */
    atomic_int sleepers;                 /* workers asleep on gen_word */
    atomic_bool caller_sleeps;
    atomic_bool stop;
};

/* A bounded spin: pauses, with a look at the clock every SPIN_PAUSES. */
struct spin {
    double deadline; /* 0: not yet looked */
    unsigned n;
};

static void spin_start(struct spin *sp)
{
    sp->deadline = 0;
    sp->n = 0;
}

/* One more pause; false once the spin's time is up (then sleep). */
static bool spin_more(struct spin *sp)
{
    elm_spin_pause();
    if (++sp->n % SPIN_PAUSES)
        return true;
    double t = elm_now_seconds();
    if (!sp->deadline)
        sp->deadline = t + SPIN_SEC;
    return t < sp->deadline;
}

static void take_ranges(struct elm_threadpool *pool, int ith)
{
    long n = pool->n, chunk = pool->chunk;
    for (;;) {
        long c = atomic_fetch_add(&pool->next, 1);
        long b = c * chunk;
        if (b >= n)
            return;
        pool->fn(pool->arg, b, b + chunk < n ? b + chunk : n, ith);
    }
}

/* The next chunk of a stretch, from its front (its owner) or its back (a
 * thread that finished its own): false when it is empty. */
static bool take_chunk(_Atomic uint64_t *st, bool front, long *c)
{
    uint64_t v = atomic_load(st);
    for (;;) {
        uint32_t f = (uint32_t)v, e = (uint32_t)(v >> 32);
        if (f >= e)
            return false;
        uint64_t nv = front ? v + 1 : v - ((uint64_t)1 << 32);
        if (atomic_compare_exchange_weak(st, &v, nv)) {
            *c = front ? (long)f : (long)e - 1;
            return true;
        }
    }
}

#define STRETCH(pool, i) (&(pool)->stretch[(size_t)(i) * (64 / sizeof(uint64_t))])

static void take_stretches(struct elm_threadpool *pool, int ith)
{
    long n = pool->n, chunk = pool->chunk, c;
    for (int k = 0; k < pool->n_threads; k++) {
        int s = (ith + k) % pool->n_threads;
        while (take_chunk(STRETCH(pool, s), k == 0, &c))
            pool->fn(pool->arg, c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n, ith);
    }
}

static void take_job(struct elm_threadpool *pool, int ith)
{
    if (pool->streams)
        take_stretches(pool, ith);
    else
        take_ranges(pool, ith);
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    struct elm_threadpool *pool = w->pool;
    uint32_t seen = 0;
    for (;;) {
        uint64_t s = atomic_load(&pool->state);
        struct spin sp;
        spin_start(&sp);
        while ((uint32_t)(s >> GEN_SHIFT) == seen && !atomic_load(&pool->stop)) {
            if (!spin_more(&sp)) {
                unsigned g = atomic_load(&pool->gen_word);
                atomic_fetch_add(&pool->sleepers, 1);
                if ((uint32_t)(atomic_load(&pool->state) >> GEN_SHIFT) == seen &&
                    !atomic_load(&pool->stop))
                    elm_word_wait(&pool->gen_word, g);
                atomic_fetch_sub(&pool->sleepers, 1);
                spin_start(&sp);
            }
            s = atomic_load(&pool->state);
        }
        if (atomic_load(&pool->stop))
            return NULL;
        seen = (uint32_t)(s >> GEN_SHIFT);
        /* Join unless the caller has closed the job (then it is done). */
        bool joined = false;
        while (!(s & CLOSED) && (uint32_t)(s >> GEN_SHIFT) == seen) {
            if (atomic_compare_exchange_weak(&pool->state, &s, s + 1)) {
                joined = true;
                break;
            }
        }
        if (!joined)
            continue;
        take_job(pool, w->ith);
        uint64_t after = atomic_fetch_sub(&pool->state, 1) - 1;
        if ((after & ACTIVE_MASK) == 0 && (after & CLOSED) && atomic_load(&pool->caller_sleeps)) {
            atomic_fetch_add(&pool->done_word, 1);
            elm_word_wake(&pool->done_word);
        }
    }
}

void elm_threadpool_free(struct elm_threadpool *pool)
{
    if (!pool)
        return;
    atomic_store(&pool->stop, true);
    atomic_fetch_add(&pool->gen_word, 1);
    elm_word_wake(&pool->gen_word);
    for (int i = 0; i < pool->n_started; i++)
        pthread_join(pool->workers[i].thread, NULL);
    free(pool->workers);
    free(pool->stretch);
    free(pool);
}

elm_status elm_threadpool_new(int n_threads, struct elm_threadpool **out)
{
    if (n_threads < 1)
        n_threads = 1;
    struct elm_threadpool *pool = aligned_alloc(64, (sizeof *pool + 63) / 64 * 64);
    if (!pool)
        return ELM_E_NOMEM;
    *pool = (struct elm_threadpool){.n_threads = n_threads};
    atomic_init(&pool->state, 0);
    atomic_init(&pool->next, 0);
    atomic_init(&pool->gen_word, 0);
    atomic_init(&pool->done_word, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->caller_sleeps, false);
    atomic_init(&pool->stop, false);
    if (n_threads > 1) {
        pool->stretch = aligned_alloc(64, (size_t)n_threads * 64);
        if (!pool->stretch) {
            elm_threadpool_free(pool);
            return ELM_E_NOMEM;
        }
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

static void run_job(struct elm_threadpool *pool, long n, long chunk, elm_range_fn fn, void *arg,
                    bool streams)
{
    if (n <= 0)
        return;
    if (chunk < 1)
        chunk = 1;
    if (pool->n_threads == 1 || chunk >= n) {
        fn(arg, 0, n, 0);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->chunk = chunk;
    pool->streams = streams;
    atomic_store(&pool->next, 0);
    if (streams) {
        long chunks = (n + chunk - 1) / chunk;
        for (int i = 0; i < pool->n_threads; i++) {
            uint64_t f = (uint64_t)(chunks * i / pool->n_threads);
            uint64_t e = (uint64_t)(chunks * (i + 1) / pool->n_threads);
            atomic_store(STRETCH(pool, i), f | e << 32);
        }
    }
    /* Publish: new generation, open, nobody inside yet. */
    uint64_t gen = (atomic_load(&pool->state) >> GEN_SHIFT) + 1;
    atomic_store(&pool->state, (gen & 0xffffffffu) << GEN_SHIFT);
    /* A store then a load of another word (here and before the caller
     * sleeps): seq_cst orders them, but qemu-user 7.2 on x86 emits no
     * barrier between an aarch64 STLR and a later LDAR, so the load could
     * pass the store and both sides sleep (seen: the caller asleep on
     * done_word with no worker inside, the worker asleep on gen_word).
     * A full fence costs one barrier per job.  The workers' side of each
     * pair is a read-modify-write, a full barrier under qemu as on x86. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&pool->sleepers) > 0) {
        atomic_fetch_add(&pool->gen_word, 1);
        elm_word_wake(&pool->gen_word);
    }

    take_job(pool, 0);

    uint64_t s = atomic_fetch_or(&pool->state, CLOSED) | CLOSED;
    struct spin sp;
    spin_start(&sp);
    while (s & ACTIVE_MASK) {
        if (!spin_more(&sp)) {
            unsigned d = atomic_load(&pool->done_word);
            atomic_store(&pool->caller_sleeps, true);
            atomic_thread_fence(memory_order_seq_cst); /* see the publish above */
            if (atomic_load(&pool->state) & ACTIVE_MASK)
                elm_word_wait(&pool->done_word, d);
            atomic_store(&pool->caller_sleeps, false);
        }
        s = atomic_load(&pool->state);
    }
}

long elm_threadpool_chunk(const struct elm_threadpool *pool, long n, int per_thread, long align,
                          long min_chunk)
{
    if (align < 1)
        align = 1;
    long parts = (long)pool->n_threads * (per_thread > 0 ? per_thread : 1);
    long c = (n + parts - 1) / parts;
    c = (c + align - 1) / align * align;
    if (c < min_chunk)
        c = (min_chunk + align - 1) / align * align;
    return c > 0 ? c : align;
}


void elm_threadpool_for(struct elm_threadpool *pool, long n, long chunk, elm_range_fn fn,
                        void *arg)
{
    run_job(pool, n, chunk, fn, arg, false);
}

void elm_threadpool_for_streams(struct elm_threadpool *pool, long n, long chunk,
                                elm_range_fn fn, void *arg)
{
    run_job(pool, n, chunk, fn, arg, true);
}
