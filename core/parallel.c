/* The thread pool behind tg_parallel_for (see parallel.h).
 *
 * One job at a time. The caller publishes (fn, ctx, n), then one atomic
 * word `claim` = job id | number of parts | next unclaimed part, and bumps
 * `gen` to wake the workers. Every thread, the caller included, takes
 * parts by compare-and-swap on `claim` until none is left; the caller then
 * waits until `done` counts every part. How many parts there are depends
 * on n and grain only, and a part's range only on its index, never on the
 * thread count or on which thread runs it: with one thread (or inside a
 * part) the caller runs the same parts in order. So a loop that sums per
 * part gives the same bits on any thread count. Because nobody waits for a worker that has not started, a
 * worker the OS has not scheduled (a busy machine) costs nothing: the
 * caller runs its parts.
 *
 * A worker waits for a new generation by spinning (a parallel loop
 * usually follows the last one within microseconds), then yielding, then
 * on a condition variable. The caller only takes the mutex when some
 * worker sleeps: both sides use sequentially consistent atomics on `gen`
 * and `sleepers`, so either it sees the sleeper or the sleeper sees the
 * new generation.
 *
 * Each thread's scratch (parallel_internal.h) is found through a
 * thread-local pointer. The pool's workers get theirs, one block for all,
 * from tg_set_num_threads: allocated before they start, so no step made
 * after it allocates, whichever threads run its parts. Another thread
 * allocates its own on first use and a pthread key frees it at exit. */
#define _POSIX_C_SOURCE 200809L
#include "parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "alloc.h"
#include "parallel_internal.h"

#define SPIN_ROUNDS 4000 /* pause instructions (~0.1 ms) before yielding the core */
#define YIELD_ROUNDS 200 /* then sched_yield calls before a worker sleeps */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct worker_arg {
    void *scratch;
    int index;
} worker_arg;

static struct {
    int n_threads; /* including the caller */
    pthread_t *workers; /* n_threads - 1 */
    struct worker_arg *args; /* n_threads - 1: each worker's scratch and index */
    void *scratch; /* the workers' scratch blocks, from tg_malloc */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen; /* the current job's id */
    atomic_int sleepers; /* workers blocked on cv */
    _Atomic uint64_t claim; /* job id << 32 | parts << 16 | next part */
    atomic_int done; /* parts of the current job finished */
    atomic_bool stop;
    /* the current job, written before `claim` publishes it */
    tg_range_fn fn;
    void *ctx;
    int64_t n;
    unsigned gen0; /* gen when the workers were started */
} pool = {.n_threads = 1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Thread_local bool in_loop; /* this thread is running a part of a job */
static _Thread_local int cur_part;
static _Thread_local int thread_index; /* 0 for the caller, 1 .. n - 1 for the workers */
static _Thread_local void *thread_scratch; /* 64-byte aligned */

int tg_parallel_part(void) { return cur_part; }
int tg_parallel_thread(void) { return thread_index; }

/* ---- per-thread scratch ------------------------------------------------ */

#define SCRATCH_ALIGN 64

static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static pthread_key_t scratch_key; /* value: the block as allocated */
static bool scratch_key_made;

static void scratch_key_new(void) { scratch_key_made = pthread_key_create(&scratch_key, tg_free) == 0; }

/* The first SCRATCH_ALIGN boundary at or after p. */
static void *align_up(void *p) { return (char *)p + (SCRATCH_ALIGN - (uintptr_t)p % SCRATCH_ALIGN) % SCRATCH_ALIGN; }

void *tg_thread_scratch(void)
{
    if (thread_scratch) return thread_scratch;
    pthread_once(&scratch_once, scratch_key_new);
    if (!scratch_key_made) return NULL;
    void *block = tg_malloc(TG_THREAD_SCRATCH_BYTES + SCRATCH_ALIGN - 1);
    if (!block) return NULL;
    if (pthread_setspecific(scratch_key, block) != 0) {
        tg_free(block);
        return NULL;
    }
    return thread_scratch = align_up(block);
}

/* ---- the pool ------------------------------------------------------------ */

/* The first item of part k of [0, n) cut into `parts`: n k / parts,
 * computed without forming n k (which overflows for n near INT64_MAX). */
static int64_t part_start(int64_t n, unsigned k, unsigned parts)
{
    const int64_t q = n / parts, r = n % parts;
    return q * k + r * k / parts;
}

/* Claims and runs one part of job `job`; false when none is left. */
static bool run_one(unsigned job)
{
    uint64_t v = atomic_load(&pool.claim);
    for (;;) {
        const unsigned parts = (unsigned)(v >> 16) & 0xFFFF, next = (unsigned)v & 0xFFFF;
        if ((unsigned)(v >> 32) != job || next >= parts) return false;
        if (atomic_compare_exchange_weak(&pool.claim, &v, v + 1)) {
            const int64_t lo = part_start(pool.n, next, parts), hi = part_start(pool.n, next + 1, parts);
            cur_part = (int)next;
            if (hi > lo) pool.fn(pool.ctx, lo, hi);
            cur_part = 0;
            atomic_fetch_add(&pool.done, 1);
            return true;
        }
    }
}

static void *worker_main(void *arg)
{
    thread_scratch = ((worker_arg *)arg)->scratch;
    thread_index = ((worker_arg *)arg)->index;
    unsigned seen = pool.gen0; /* not gen: a job may already be out */
    in_loop = true; /* nested loops inside a part run serially */
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load(&pool.gen)) == seen && !atomic_load(&pool.stop)) {
            if (++spins < SPIN_ROUNDS) {
                cpu_relax();
                continue;
            }
            if (spins < SPIN_ROUNDS + YIELD_ROUNDS) { /* on a busy machine, let others run */
                sched_yield();
                continue;
            }
            pthread_mutex_lock(&pool.mu);
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.gen) == seen && !atomic_load(&pool.stop)) pthread_cond_wait(&pool.cv, &pool.mu);
            atomic_fetch_sub(&pool.sleepers, 1);
            pthread_mutex_unlock(&pool.mu);
            spins = 0;
        }
        if (atomic_load(&pool.stop)) return NULL;
        seen = gen;
        while (run_one(gen)) {}
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
    tg_free(pool.args);
    tg_free(pool.scratch);
    pool.workers = NULL;
    pool.args = NULL;
    pool.scratch = NULL;
    pool.n_threads = 1;
    atomic_store(&pool.stop, false);
}

int tg_set_num_threads(int n)
{
    if (in_loop) return pool.n_threads; /* joining the workers from a part would wait for itself */
    if (n <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (int)cpus : 1;
    }
    if (n > TG_MAX_THREADS) n = TG_MAX_THREADS;
    openblas_set_num_threads(1); /* tapegrad splits the products itself */
    if (n == pool.n_threads) return n;
    stop_workers();
    if (n == 1) return 1;
    pool.workers = tg_malloc((size_t)(n - 1) * sizeof *pool.workers);
    pool.args = tg_malloc((size_t)(n - 1) * sizeof *pool.args);
    pool.scratch = tg_malloc((size_t)(n - 1) * TG_THREAD_SCRATCH_BYTES + SCRATCH_ALIGN - 1);
    if (!pool.workers || !pool.args || !pool.scratch) {
        tg_free(pool.workers);
        tg_free(pool.args);
        tg_free(pool.scratch);
        pool.workers = NULL;
        pool.args = NULL;
        pool.scratch = NULL;
        return 1;
    }
    char *scratch = align_up(pool.scratch);
    pool.gen0 = atomic_load(&pool.gen);
    int started = 0;
    for (; started < n - 1; started++) {
        pool.args[started] = (worker_arg){scratch + (size_t)started * TG_THREAD_SCRATCH_BYTES, started + 1};
        if (pthread_create(&pool.workers[started], NULL, worker_main, &pool.args[started])) break;
    }
    pool.n_threads = started + 1; /* fewer workers if the system refused some */
    return pool.n_threads;
}

int tg_num_threads(void) { return pool.n_threads; }

int tg_parallel_parts(int64_t n, int64_t grain)
{
    if (n <= 0) return 0;
    if (grain < 1) grain = 1;
    const int64_t parts = n / grain;
    return parts < 1 ? 1 : parts > TG_PARALLEL_MAX_PARTS ? TG_PARALLEL_MAX_PARTS : (int)parts;
}

void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx)
{
    if (n <= 0 || !fn) return;
    const int parts = tg_parallel_parts(n, grain);
    if (parts == 1 || pool.n_threads == 1 || in_loop) { /* the same parts, one after another, here */
        const int outer_part = cur_part;
        const bool outer_loop = in_loop;
        in_loop = true;
        for (int k = 0; k < parts; k++) {
            cur_part = k;
            fn(ctx, part_start(n, (unsigned)k, (unsigned)parts), part_start(n, (unsigned)k + 1, (unsigned)parts));
        }
        cur_part = outer_part;
        in_loop = outer_loop;
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    atomic_store(&pool.done, 0);
    const unsigned job = atomic_load(&pool.gen) + 1;
    atomic_store(&pool.claim, (uint64_t)job << 32 | (uint64_t)parts << 16); /* publishes the job */
    atomic_store(&pool.gen, job); /* wakes the workers */
    wake_all();
    in_loop = true;
    while (run_one(job)) {}
    in_loop = false;
    for (int spins = 0; atomic_load(&pool.done) < parts; spins++)
        if (spins < SPIN_ROUNDS) cpu_relax();
        else sched_yield(); /* a worker holding a part may be waiting for a core */
}
