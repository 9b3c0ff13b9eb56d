/* Small helpers the benchmark programs share: a monotonic clock, the
 * comparison qsort needs to sort timings, and the wait for bench.py's
 * turn. */
#ifndef TG_BENCH_COMMON_H
#define TG_BENCH_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

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

#endif
