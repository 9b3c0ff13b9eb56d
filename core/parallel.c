/* The thread pool behind tg_parallel_for (see parallel.h).
 *
 * One job at a time: the caller publishes (fn, ctx, ranges), bumps the
 * generation counter, runs range 0 itself and waits for the workers'
 * pending count to reach zero. A worker waits for a new generation by
 * spinning (a parallel loop usually follows the last one within
 * microseconds), then on a condition variable. The dispatcher only takes
 * the mutex when some worker has gone to sleep: both sides use
 * sequentially consistent atomics on `gen` and `sleepers`, so either the
 * dispatcher sees the sleeper or the sleeper sees the new generation. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "alloc.h"
#include "parallel.h"

#define TG_MAX_THREADS 256
#define SPIN_ROUNDS 20000   /* pause instructions before a worker sleeps: ~0.2-1 ms */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static struct {
    int n_threads;              /* including the caller */
    pthread_t *workers;         /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;            /* bumped once per job */
    atomic_int sleepers;        /* workers blocked on cv */
    atomic_int pending;         /* workers still running the current job */
    atomic_bool stop;
    /* the current job */
    tg_range_fn fn;
    void *ctx;
    int64_t n;
    int parts;
    unsigned gen0;              /* gen when the workers were started */
} pool = {.n_threads = 1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local bool in_loop;   /* this thread is running a part of a job */
static _Thread_local int cur_part;

static void run_part(int part)
{
    const int64_t lo = pool.n * part / pool.parts, hi = pool.n * (part + 1) / pool.parts;
    cur_part = part;
    if (hi > lo) pool.fn(pool.ctx, lo, hi);
    cur_part = 0;
}

int tg_parallel_part(void) { return cur_part; }

static void *worker_main(void *arg)
{
    const int id = (int)(intptr_t)arg;   /* 1 .. n_threads - 1 */
    unsigned seen = pool.gen0;   /* not gen: a job may already be out */
    in_loop = true;                      /* nested loops inside a part run serially */
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load(&pool.gen)) == seen && !atomic_load(&pool.stop)) {
            if (++spins < SPIN_ROUNDS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.mu);
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.gen) == seen && !atomic_load(&pool.stop))
                pthread_cond_wait(&pool.cv, &pool.mu);
            atomic_fetch_sub(&pool.sleepers, 1);
            pthread_mutex_unlock(&pool.mu);
            spins = 0;
        }
        if (atomic_load(&pool.stop)) return NULL;
        seen = gen;
        if (id < pool.parts) run_part(id);
        atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_release);
    }
}

static void wake_all(void)
{
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.cv);
        pthread_mutex_unlock(&pool.mu);
    }
}

static void stop_workers(void)
{
    if (!pool.workers) return;
    atomic_store(&pool.stop, true);
    pthread_mutex_lock(&pool.mu);
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.n_threads - 1; i++) pthread_join(pool.workers[i], NULL);
    tg_free(pool.workers);
    pool.workers = NULL;
    pool.n_threads = 1;
    atomic_store(&pool.stop, false);
}

int tg_set_num_threads(int n)
{
    if (n <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (int)cpus : 1;
    }
    if (n > TG_MAX_THREADS) n = TG_MAX_THREADS;
    openblas_set_num_threads(1);   /* tapegrad splits the products itself */
    if (n == pool.n_threads) return n;
    stop_workers();
    if (n == 1) return 1;
    pool.workers = tg_malloc((size_t)(n - 1) * sizeof *pool.workers);
    if (!pool.workers) return 1;
    pool.gen0 = atomic_load(&pool.gen);
    int started = 0;
    for (; started < n - 1; started++)
        if (pthread_create(&pool.workers[started], NULL, worker_main, (void *)(intptr_t)(started + 1))) break;
    pool.n_threads = started + 1;   /* fewer workers if the system refused some */
    return pool.n_threads;
}

int tg_num_threads(void) { return pool.n_threads; }

void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t parts = n / grain;
    if (parts > pool.n_threads) parts = pool.n_threads;
    if (parts <= 1 || in_loop) {
        fn(ctx, 0, n);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.parts = (int)parts;
    atomic_store(&pool.pending, pool.n_threads - 1);
    atomic_fetch_add(&pool.gen, 1);   /* publishes the job */
    wake_all();
    in_loop = true;
    run_part(0);
    in_loop = false;
    while (atomic_load_explicit(&pool.pending, memory_order_acquire) > 0) cpu_relax();
}
