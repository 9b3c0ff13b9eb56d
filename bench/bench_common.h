/* Small helpers the benchmark programs share: a monotonic clock, the
 * comparison qsort needs to sort timings, the wait for bench.py's turn,
 * and bench_step's batches. */
#ifndef TG_BENCH_COMMON_H
#define TG_BENCH_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* An integer flag: its name, where it goes, its range. */
typedef struct bench_int_flag {
    const char *name;
    int *ip;
    long lo, hi;
} bench_int_flag;

/* Sets the flag of ints[0..n) named a from v: 1 when a is one of them, 0
 * when it is none, -1 with a message in err for a value out of range. */
static inline int bench_set_int(const bench_int_flag *ints, size_t n, const char *a, const char *v, tg_error *err)
{
    for (size_t k = 0; k < n; k++) {
        if (strcmp(a, ints[k].name)) continue;
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || *end || x < ints[k].lo || x > ints[k].hi) {
            tg_error_set(err, "%s: '%s' is not an integer in [%ld, %ld]", a, v, ints[k].lo, ints[k].hi);
            return -1;
        }
        *ints[k].ip = (int)x;
        return 1;
    }
    return 0;
}

typedef struct bench_shape {
    int M, N, K;
    bool ta, tb;
} bench_shape;

/* "MxNxK" with an optional ":tn", ":nt" or ":tt" (op(A), op(B)); 0 or -1 */
static inline int bench_parse_shape(const char *s, size_t len, bench_shape *g)
{
    char buf[64], ops[3] = "nn";
    if (len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    int used = 0;
    if (sscanf(buf, "%dx%dx%d%n", &g->M, &g->N, &g->K, &used) != 3 || g->M < 1 || g->N < 1 || g->K < 1) return -1;
    if (buf[used] == ':') {
        if (strlen(buf + used + 1) != 2) return -1;
        memcpy(ops, buf + used + 1, 2);
    } else if (buf[used]) return -1;
    if ((ops[0] != 'n' && ops[0] != 't') || (ops[1] != 'n' && ops[1] != 't')) return -1;
    g->ta = ops[0] == 't', g->tb = ops[1] == 't';
    return 0;
}

#endif
