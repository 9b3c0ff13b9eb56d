/* tapegrad core (internal): per-thread scratch memory, so that a kernel
 * keeps its large buffers off the stack (the threads a program runs
 * tapegrad on may have small stacks; docs/decisions.md). */
#ifndef TG_PARALLEL_INTERNAL_H
#define TG_PARALLEL_INTERNAL_H

#include <stddef.h>

/* Bytes of every thread's scratch: what ops/sgemm.c packs (B's slice and
 * A's panels, 224 KiB) or ops/sgemm_avx512.c (B's block and A's panel,
 * 789 KiB); each checks that they fit. A multiple of 64. */
#define TG_THREAD_SCRATCH_BYTES ((size_t)800 * 1024)

/* The calling thread's scratch: TG_THREAD_SCRATCH_BYTES bytes, 64-byte
 * aligned, kept for the thread's life, so a steady-state step allocates
 * nothing. A pool worker's is allocated by tg_set_num_threads before the
 * worker starts and freed when the pool stops; any other thread's on its
 * first call, freed when that thread exits. NULL when out of memory. One
 * user at a time: a kernel holding it must not call another that uses it. */
void *tg_thread_scratch(void);

/* Inside a part of a tg_parallel_for loop: which thread runs it, 0 (the
 * caller) .. tg_num_threads() - 1, so a kernel can use a buffer per thread
 * for work whose result does not depend on where it ran. 0 outside. */
int tg_parallel_thread(void);

#endif
