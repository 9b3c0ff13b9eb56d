/* tapegrad core: threads. One setting governs every core tapegrad uses.
 *
 * tg_set_num_threads(n) starts a pool of n - 1 worker threads (the calling
 * thread is the n-th) and tells OpenBLAS to run each call on one thread:
 * from then on tapegrad splits large matrix products across its own pool,
 * as it does its other kernels (softmax, layernorm, GELU, AdamW, ...), so
 * BLAS threads and tapegrad threads never compete for the same cores.
 * Without a call the pool has one thread (everything runs on the caller)
 * and OpenBLAS keeps its own setting (OPENBLAS_NUM_THREADS).
 *
 * Work is split into equal contiguous parts whose number depends only on
 * the size of the work (never on the thread count), and the threads take
 * parts as they come free; so a loop that sums per part gives the same
 * bits on any number of threads, and tapegrad's results do. Idle workers
 * spin for a short while, then sleep.
 *
 * The pool runs one loop at a time: with more than one thread, tapegrad
 * must be driven from one application thread at a time (with the default
 * single thread, separate graphs may run on separate application threads). */
#ifndef TG_PARALLEL_H
#define TG_PARALLEL_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_THREADS 256
/* The most parts a loop is cut into (so more threads than this leave some
 * idle in any one loop). */
#define TG_PARALLEL_MAX_PARTS 64

/* Sets the thread count (n <= 0: the number of online CPUs; more than
 * TG_MAX_THREADS counts as TG_MAX_THREADS). Returns the count in effect,
 * which stays 1 if threads cannot be started. Called from inside a part
 * of a running loop it changes nothing and returns the current count;
 * not to be called from another thread while a loop runs. */
TG_API int tg_set_num_threads(int n);
TG_API int tg_num_threads(void); /* 1 until tg_set_num_threads */

/* A part of a loop: items [lo, hi). */
typedef void (*tg_range_fn)(void *ctx, int64_t lo, int64_t hi);

/* Runs fn(ctx, lo, hi) over [0, n) split into tg_parallel_parts(n, grain)
 * contiguous ranges of equal size (to one item), part k starting at
 * n k / parts, shared out among the threads, and returns when all are
 * done. With one thread, or called from inside a running loop, the caller
 * runs the same ranges in order. Nothing is run when n <= 0 or fn is
 * NULL. */
TG_API void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx);

/* How many ranges tg_parallel_for(n, grain, ...) makes: n / grain
 * (grain < 1 counts as 1) clamped to [1, TG_PARALLEL_MAX_PARTS]; 0 for
 * n <= 0. The thread count plays no part. */
TG_API int tg_parallel_parts(int64_t n, int64_t grain);

/* Inside fn: which range this is, 0 .. tg_parallel_parts(n, grain) - 1
 * (0 outside a loop), so a loop can give each range its own slot for a
 * partial result, summed in range order after. */
TG_API int tg_parallel_part(void);

#ifdef __cplusplus
}
#endif

#endif
