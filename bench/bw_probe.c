/* build/bench/bw_probe: how fast this machine reads memory, the ceiling
 * of decoding (each token reads every weight once), for
 * bench/bench_decode.py.
 *
 *   bw_probe [--threads T] [--seconds S] MB [MB ...]
 *
 * For each size, a buffer of that many MB of floats (written once first,
 * so its pages exist) is summed again and again for about S seconds (0.3
 * by default), T threads each summing its own contiguous share of every
 * pass, all starting a pass together. One JSON line per size:
 * {"mb": M, "threads": T, "passes": N, "best_gbs": B, "median_gbs": D}
 * (GB = 1e9 bytes per second; best = the fastest pass). A size that fits
 * the caches measures the caches: the probe is for the model's own size
 * and for one far larger than the last-level cache. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LANES 64 /* four AVX-512 registers: independent adds */
#define MAX_THREADS 64
#define MAX_PASSES 100000

typedef struct probe {
    const float *buf;
    size_t n; /* floats */
    int threads;
    pthread_barrier_t start, end;
    volatile int stop;
    float sink[MAX_THREADS];
} probe;

typedef struct worker {
    probe *p;
    int index;
} worker;

/* the sum of n floats in 16 independent lanes, so the loop vectorises and
 * is bounded by the loads */
static float sum(const float *restrict x, size_t n)
{
    float a[LANES] = {0};
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) a[l] += x[i + l];
    for (; i < n; i++) a[0] += x[i];
    float s = 0;
    for (int l = 0; l < LANES; l++) s += a[l];
    return s;
}

static void share(const probe *p, int index, size_t *lo, size_t *hi)
{
    *lo = p->n / LANES * index / p->threads * LANES;
    *hi = index + 1 == p->threads ? p->n : p->n / LANES * (index + 1) / p->threads * LANES;
}

/* workers 1 .. T-1: a pass each time the caller starts one */
static void *work(void *arg)
{
    worker *w = arg;
    probe *p = w->p;
    size_t lo, hi;
    share(p, w->index, &lo, &hi);
    for (;;) {
        pthread_barrier_wait(&p->start);
        if (p->stop) return NULL;
        p->sink[w->index] += sum(p->buf + lo, hi - lo);
        pthread_barrier_wait(&p->end);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run(double mb, int threads, double seconds)
{
    probe p = {.threads = threads};
    p.n = (size_t)(mb * 1e6 / sizeof(float));
    if (p.n < (size_t)LANES * threads) p.n = (size_t)LANES * threads;
    float *buf = malloc(p.n * sizeof *buf);
    double *pass = malloc(MAX_PASSES * sizeof *pass);
    if (!buf || !pass) {
        fprintf(stderr, "bw_probe: out of memory for %.1f MB\n", mb);
        free(buf);
        free(pass);
        return 1;
    }
    for (size_t i = 0; i < p.n; i++) buf[i] = (float)(i & 1023) * 1e-3f;
    p.buf = buf;
    pthread_barrier_init(&p.start, NULL, (unsigned)threads);
    pthread_barrier_init(&p.end, NULL, (unsigned)threads);
    pthread_t tid[MAX_THREADS];
    worker w[MAX_THREADS];
    for (int t = 1; t < threads; t++) {
        w[t] = (worker){&p, t};
        pthread_create(&tid[t], NULL, work, &w[t]);
    }
    size_t lo, hi;
    share(&p, 0, &lo, &hi);
    int passes = 0;
    const double t_end = now_s() + seconds;
    for (int warm = 1; passes < MAX_PASSES && (warm >= 0 || passes == 0 || now_s() < t_end); warm--) {
        const double t0 = now_s();
        pthread_barrier_wait(&p.start);
        p.sink[0] += sum(buf + lo, hi - lo);
        pthread_barrier_wait(&p.end);
        const double dt = now_s() - t0;
        if (warm < 0) pass[passes++] = dt; /* the first two passes warm up */
    }
    p.stop = 1;
    pthread_barrier_wait(&p.start);
    for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    qsort(pass, (size_t)passes, sizeof *pass, cmp_double);
    const double bytes = (double)p.n * sizeof(float);
    float sink = 0;
    for (int t = 0; t < threads; t++) sink += p.sink[t];
    printf("{\"mb\": %.3f, \"threads\": %d, \"passes\": %d, \"best_gbs\": %.2f, \"median_gbs\": %.2f, \"sink\": %g}\n",
           bytes / 1e6, threads, passes, bytes / pass[0] / 1e9, bytes / pass[passes / 2] / 1e9, (double)sink);
    fflush(stdout);
    pthread_barrier_destroy(&p.start);
    pthread_barrier_destroy(&p.end);
    free(buf);
    free(pass);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 1, rc = 0, sizes = 0;
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            char *end;
            const double mb = strtod(argv[i], &end);
            if (*end || !(mb > 0)) {
                fprintf(stderr, "usage: bw_probe [--threads T] [--seconds S] MB [MB ...]\n");
                return 2;
            }
            if (threads < 1 || threads > MAX_THREADS) {
                fprintf(stderr, "bw_probe: --threads must be in [1, %d]\n", MAX_THREADS);
                return 2;
            }
            rc |= run(mb, threads, seconds);
            sizes++;
        }
    }
    if (!sizes) fprintf(stderr, "usage: bw_probe [--threads T] [--seconds S] MB [MB ...]\n");
    return sizes ? rc : 2;
}
