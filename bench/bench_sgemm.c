/* bench_sgemm: the machine's single-precision gemm throughput through
 * OpenBLAS, the ceiling bench/bench.py compares training steps with.
 *
 *   bench_sgemm [--threads 1] [--min-time 0.3] [--turn-time S] [MxNxK[:nt] ...]
 *
 * Each shape (default 1024x1024x1024) is C (M,N) = A (M,K) B (K,N), or
 * with ":nt" A (M,K) B^T where B is (N,K) (the layout of a linear layer,
 * x w^T). Operands are filled with a fixed pattern in [-1, 1). One call
 * warms up; then calls repeat until --min-time seconds have passed (at
 * least 3), and the best call counts:
 *   GFLOP/s = 2 M N K / best seconds / 1e9.
 * With --turn-time S (for bench.py, which runs it between the training
 * steps of both sides so that it samples the same seconds): one shape;
 * after the warm-up call the program prints "wait" and, for every line it
 * then reads on stdin, repeats calls for S seconds (at least one) and
 * prints "wait" again; when stdin closes, the statistics cover every
 * call of every turn.
 * Output: one JSON object on stdout,
 *   {"threads": T, "results": [{"m", "n", "k", "nt", "gflops",
 *                               "median_gflops", "calls"}, ...]} */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"

#include "bench_common.h"

static void fill(float *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* best and median seconds per call; -1 when out of memory */
static int time_shape(int m, int n, int k, int nt, double min_time, double turn_time, double *best, double *median,
                      int *calls)
{
    float *a = tg_malloc((size_t)m * k * sizeof *a); /* (M,K) */
    float *b = tg_malloc((size_t)k * n * sizeof *b); /* (K,N), or (N,K) when nt */
    float *c = tg_malloc((size_t)m * n * sizeof *c); /* (M,N) */
    enum { MAX_CALLS = 10000 };
    double *t = tg_malloc(MAX_CALLS * sizeof *t);
    if (!a || !b || !c || !t) {
        tg_free(a), tg_free(b), tg_free(c), tg_free(t);
        return -1;
    }
    fill(a, (size_t)m * k, 1u);
    fill(b, (size_t)k * n, 2u);
    CBLAS_TRANSPOSE tb = nt ? CblasTrans : CblasNoTrans;
    int ldb = nt ? k : n;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, 1.0f, a, k, b, ldb, 0.0f, c, n); /* warm-up */
    int nc = 0;
    /* one span of min_time, or a span of turn_time per turn until stdin closes */
    for (int turn = 0; turn == 0 || turn_time > 0; turn++) {
        if (turn_time > 0 && !wait_for_turn()) break;
        const double start = now_ms(), span = turn_time > 0 ? turn_time : min_time;
        for (int n_turn = 0; nc < MAX_CALLS && (n_turn < (turn_time > 0 ? 1 : 3) || now_ms() - start < 1e3 * span);
             n_turn++) {
            const double t0 = now_ms();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, 1.0f, a, k, b, ldb, 0.0f, c, n);
            t[nc++] = 1e-3 * (now_ms() - t0); /* seconds */
        }
    }
    if (!nc) { /* stdin closed before the first turn */
        tg_free(a), tg_free(b), tg_free(c), tg_free(t);
        return -2;
    }
    qsort(t, (size_t)nc, sizeof *t, cmp_double);
    *best = t[0];
    *median = t[nc / 2];
    *calls = nc;
    tg_free(a), tg_free(b), tg_free(c), tg_free(t);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 1;
    double min_time = 0.3, turn_time = 0;
    enum { MAX_SHAPES = 64 };
    int shapes[MAX_SHAPES][4], ns = 0;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fprintf(stderr, "usage: bench_sgemm [--threads 1] [--min-time 0.3] [--turn-time S] [MxNxK[:nt] ...]\n");
            return 0;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = (int)strtol(argv[++i], &end, 10);
            if (*end || threads < 1 || threads > 1024) {
                fprintf(stderr, "bench_sgemm: --threads: '%s' is not in [1, 1024]\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) {
            min_time = strtod(argv[++i], &end);
            if (*end || !(min_time >= 0 && min_time <= 600)) {
                fprintf(stderr, "bench_sgemm: --min-time: '%s' is not in [0, 600] seconds\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--turn-time") && i + 1 < argc) {
            turn_time = strtod(argv[++i], &end);
            if (*end || !(turn_time > 0 && turn_time <= 600)) {
                fprintf(stderr, "bench_sgemm: --turn-time: '%s' is not in (0, 600] seconds\n", argv[i]);
                return 2;
            }
        } else {
            int m, n, k, used = 0;
            if (ns == MAX_SHAPES || sscanf(argv[i], "%dx%dx%d%n", &m, &n, &k, &used) != 3 || m < 1 || n < 1 || k < 1 ||
                (argv[i][used] && strcmp(argv[i] + used, ":nt"))) {
                fprintf(stderr, "bench_sgemm: '%s' is not a shape MxNxK or MxNxK:nt (at most %d shapes)\n", argv[i],
                        MAX_SHAPES);
                return 2;
            }
            shapes[ns][0] = m, shapes[ns][1] = n, shapes[ns][2] = k, shapes[ns][3] = argv[i][used] != 0;
            ns++;
        }
    }
    if (!ns) shapes[0][0] = shapes[0][1] = shapes[0][2] = 1024, shapes[0][3] = 0, ns = 1;
    if (turn_time > 0 && ns > 1) {
        fprintf(stderr, "bench_sgemm: --turn-time takes one shape, got %d\n", ns);
        return 2;
    }
    openblas_set_num_threads(threads);

    for (int i = 0; i < ns; i++) {
        double best, median;
        int calls;
        int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2], nt = shapes[i][3];
        const int r = time_shape(m, n, k, nt, min_time, turn_time, &best, &median, &calls);
        if (r) {
            if (r == -2) fprintf(stderr, "bench_sgemm: stdin closed before the first turn\n");
            else fprintf(stderr, "bench_sgemm: out of memory for %dx%dx%d\n", m, n, k);
            return 1;
        }
        double flop = 2.0 * m * n * k;
        if (!i) printf("{\"threads\": %d, \"results\": [", threads); /* after turn mode's "wait" lines */
        printf("%s{\"m\": %d, \"n\": %d, \"k\": %d, \"nt\": %s, \"gflops\": %.3f, \"median_gflops\": %.3f, "
               "\"calls\": %d}",
               i ? ", " : "", m, n, k, nt ? "true" : "false", flop / best / 1e9, flop / median / 1e9, calls);
        fflush(stdout);
    }
    printf("]}\n");
    return 0;
}
