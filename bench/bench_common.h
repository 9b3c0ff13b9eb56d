/* Small helpers the benchmark programs share: a monotonic clock, the
 * comparison qsort needs to sort timings, the wait for bench.py's turn,
 * and bench_step's batches. */
#ifndef TG_BENCH_COMMON_H
#define TG_BENCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "core/rng.h"

/* milliseconds on the monotonic clock */
static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* ascending order of doubles, for qsort */
static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* bench.py's turns: prints "wait" on stdout and blocks until a line
 * arrives on stdin; false when stdin has closed instead */
static inline bool wait_for_turn(void)
{
    char line[64];
    printf("wait\n");
    fflush(stdout);
    return fgets(line, sizeof line, stdin) != NULL;
}

/* bench_step's batches (its top comment): `rows` rows of T + 1 tokens
 * into toks, from r: the first below(V), each next (previous + 1 +
 * below(4)) mod V. bench/torch_ref.py and torch_ddp.py draw the same. */
static inline void bench_chain_rows(tg_rng *r, int32_t *toks, size_t rows, int T, int V)
{
    for (size_t row = 0; row < rows; row++) {
        int32_t *tk = toks + row * (size_t)(T + 1);
        tk[0] = (int32_t)tg_rng_below(r, (uint32_t)V);
        for (int t = 1; t <= T; t++) tk[t] = (int32_t)((tk[t - 1] + 1 + (int32_t)tg_rng_below(r, 4)) % V);
    }
}

#endif
