/* bench_bf16: tapegrad's bf16 products beside its f32 ones, each as a
 * share of its own peak measured in the same run (bench/README.md, "bf16
 * products"; bench/bench_bf16.py puts PyTorch's beside them).
 *
 *   bench_bf16 [--rounds 3] [--repeats 3] [--threads 1] [--portable]
 *              [--shapes MxNxK[:tn|:nt|:tt],...] [--json]
 *
 * C (M,N) = op(A) op(B) (t: stored transposed), A and B f32 in [-1, 1):
 *   bf16      tg_gemm_bf16 (what the mixed-precision ops call: the
 *             vdpbf16ps kernel where tg_isa_bf16, the portable one else;
 *             the operands rounded from f32 as it packs them)
 *   f32       tg_gemm_f32 (the f32 ops' product: the AVX-512 kernel on
 *             the avx512 path)
 *   portable  (--portable) tg_sgemm_bf16_portable, the kernel a CPU
 *             without AVX512_BF16 runs, the same bits
 * Each round measures both peaks (bench/bf16_peak.c: the vdpbf16ps peak,
 * 64 FLOP an instruction, and the f32 FMA peak; 0.2 s each, best of 1 ms
 * runs) before every shape, keeping the best of the round, then times
 * each implementation: one untimed call, then --repeats calls, the best
 * counting, in the thread's CPU time at 1 thread (time another process
 * had the core does not count) and in wall time on more. GFLOP/s = 2 M N K
 * / seconds / 1e9; bf16 and portable as shares of the round's bf16 peak,
 * f32 of its f32 peak. The 1-minute load average is read at each round's
 * start. Prints a markdown table of the medians over the rounds (each
 * round's share against that round's peak), or with --json one JSON
 * object per round:
 *   {"round", "load", "threads", "isa", "bf16_kernel", "peak_f32",
 *    "peak_bf16", "results": [{"shape", "flop", "bf16", "f32",
 *    "portable"}, ...]}   (GFLOP/s; -1 where not run)
 * Default shapes: 1024x1024x1024 and GPT-2 124M's products at B T = 1024
 * rows: the forward x W^T (:nt) of c_attn, attn c_proj, mlp c_fc, mlp
 * c_proj and the tied head (50304 wide), the backward dX = dY W (:nn)
 * and dW = dY^T X (:tn) of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tapegrad.h"

#include "core/alloc.h"
#include "ops/gemm_bf16_internal.h"
#include "ops/gemm_internal.h"
#include "ops/sgemm_bf16_internal.h"

#include "bench_common.h"

#define BF16_PEAK_NO_MAIN
#include "bf16_peak.c"

enum { IMPLS = 3, MAX_SHAPES = 32, MAX_ROUNDS = 64 };
static const char *const IMPL_NAMES[IMPLS] = {"bf16", "f32", "portable"};

static void fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
}

/* seconds: the thread's CPU time at 1 thread, else the monotonic clock */
static double clock_s(void)
{
    struct timespec ts;
    clock_gettime(tg_num_threads() == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void call(int impl, const bench_shape *g, const float *A, const float *B, float *C)
{
    const int lda = g->ta ? g->M : g->K, ldb = g->tb ? g->K : g->N;
    if (impl == 0) tg_gemm_bf16(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N);
    else if (impl == 1) tg_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N);
    else tg_sgemm_bf16_portable(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N);
}

/* gflops[i]: the best of `repeats` calls of implementation i (-1: not run) */
static int time_shape(const bench_shape *g, int repeats, const bool run[IMPLS], double gflops[IMPLS])
{
    const size_t na = (size_t)g->M * g->K, nb = (size_t)g->K * g->N, nc = (size_t)g->M * g->N;
    float *A = tg_malloc(na * sizeof *A), *B = tg_malloc(nb * sizeof *B), *C = tg_malloc(nc * sizeof *C);
    if (!A || !B || !C) {
        tg_free(A), tg_free(B), tg_free(C);
        return -1;
    }
    fill(A, na, 1), fill(B, nb, 2);
    const double flop = 2.0 * g->M * g->N * g->K;
    for (int i = 0; i < IMPLS; i++) {
        gflops[i] = -1;
        if (!run[i]) continue;
        call(i, g, A, B, C); /* untimed: the operands where the calls leave them */
        double best = 1e30;
        for (int r = 0; r < repeats; r++) {
            const double t0 = clock_s();
            call(i, g, A, B, C);
            const double t = clock_s() - t0;
            if (t < best) best = t;
        }
        gflops[i] = flop / best / 1e9;
    }
    tg_free(A), tg_free(B), tg_free(C);
    return 0;
}

static double load_average(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l = -1;
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_bf16 [--rounds 3] [--repeats 3] [--threads 1] [--portable]\n"
            "                  [--shapes MxNxK[:tn|:nt|:tt],...] [--json]\n");
}

int main(int argc, char **argv)
{
    static const char *const defaults =
        "1024x1024x1024,1024x2304x768:nt,1024x768x768:nt,1024x3072x768:nt,1024x768x3072:nt,1024x50304x768:nt,"
        "1024x768x2304,1024x768x768,1024x768x3072,1024x3072x768,1024x768x50304,"
        "2304x768x1024:tn,768x768x1024:tn,3072x768x1024:tn,768x3072x1024:tn,50304x768x1024:tn";
    int rounds = 3, repeats = 3, threads = 1;
    bool json = false, run[IMPLS] = {true, true, false};
    const char *shapes = defaults;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        tg_error err = {0};
        const bench_int_flag ints[] = {
            {"--rounds", &rounds, 1, MAX_ROUNDS}, {"--repeats", &repeats, 1, 1000}, {"--threads", &threads, 1, 256}};
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--portable")) run[2] = true;
        else if (!strcmp(a, "--shapes") && v) shapes = v, i++;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        } else {
            const int r = v ? bench_set_int(ints, sizeof ints / sizeof *ints, a, v, &err) : 0;
            if (r < 0) {
                fprintf(stderr, "bench_bf16: %s\n", err.msg);
                return 2;
            }
            if (r == 0) {
                usage();
                return 2;
            }
            i++;
        }
    }
    bench_shape list[MAX_SHAPES];
    int n = 0;
    for (const char *s = shapes; *s;) {
        const size_t len = strcspn(s, ",");
        if (n == MAX_SHAPES || bench_parse_shape(s, len, &list[n])) {
            fprintf(stderr, "bench_bf16: --shapes: '%.*s' is not MxNxK[:tn|:nt|:tt] (at most %d shapes)\n", (int)len, s,
                    MAX_SHAPES);
            return 2;
        }
        n++;
        s += len + (s[len] == ',');
    }
    tg_set_num_threads(threads);
    static double g[MAX_ROUNDS][MAX_SHAPES][IMPLS], peaks[MAX_ROUNDS][2], loads[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        loads[r] = load_average();
        peaks[r][0] = peaks[r][1] = 0;
        for (int k = 0; k < n; k++) {
            int chains;
            const double pf = fma_peak_gflops(1, 0.2), pb = bf16_peak_gflops(0.2, &chains);
            if (pf > peaks[r][0]) peaks[r][0] = pf;
            if (pb > peaks[r][1]) peaks[r][1] = pb;
            if (time_shape(&list[k], repeats, run, g[r][k])) {
                fprintf(stderr, "bench_bf16: out of memory\n");
                return 1;
            }
        }
        if (!json) continue;
        printf("{\"round\": %d, \"load\": %.2f, \"threads\": %d, \"isa\": \"%s\", \"bf16_kernel\": \"%s\", "
               "\"peak_f32\": %.1f, \"peak_bf16\": %.1f, \"results\": [",
               r, loads[r], threads, tg_isa_name(tg_isa_active()), tg_isa_bf16() ? "vdpbf16ps" : "portable",
               peaks[r][0], peaks[r][1]);
        for (int k = 0; k < n; k++)
            printf("%s{\"shape\": \"%dx%dx%d:%c%c\", \"flop\": %.0f, \"bf16\": %.1f, \"f32\": %.1f, "
                   "\"portable\": %.1f}",
                   k ? ", " : "", list[k].M, list[k].N, list[k].K, list[k].ta ? 't' : 'n', list[k].tb ? 't' : 'n',
                   2.0 * list[k].M * list[k].N * list[k].K, g[r][k][0], g[r][k][1], g[r][k][2]);
        printf("]}\n");
        fflush(stdout);
    }
    if (json) return 0;
    double v[MAX_ROUNDS], pf[MAX_ROUNDS], pb[MAX_ROUNDS], ld[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) pf[r] = peaks[r][0], pb[r] = peaks[r][1], ld[r] = loads[r];
    printf("%d thread(s), kernel path %s, bf16 products on %s; medians of %d rounds (best of %d calls each); "
           "peaks f32 %.1f, bf16 %.1f GFLOP/s; load %.2f\n\n",
           threads, tg_isa_name(tg_isa_active()), tg_isa_bf16() ? "vdpbf16ps" : "the portable kernel", rounds, repeats,
           median(pf, rounds), median(pb, rounds), median(ld, rounds));
    printf("| shape MxNxK:op(A)op(B) |");
    for (int i = 0; i < IMPLS; i++)
        if (run[i]) printf(" %s GFLOP/s (%% of its peak) |", IMPL_NAMES[i]);
    printf("\n| --- |");
    for (int i = 0; i < IMPLS; i++)
        if (run[i]) printf(" --- |");
    printf("\n");
    for (int k = 0; k < n; k++) {
        printf("| %dx%dx%d:%c%c |", list[k].M, list[k].N, list[k].K, list[k].ta ? 't' : 'n', list[k].tb ? 't' : 'n');
        for (int i = 0; i < IMPLS; i++) {
            if (!run[i]) continue;
            double share[MAX_ROUNDS];
            for (int r = 0; r < rounds; r++) {
                v[r] = g[r][k][i];
                const double p = i == 1 ? peaks[r][0] : peaks[r][1];
                share[r] = p > 0 ? 100 * g[r][k][i] / p : 0;
            }
            printf(" %.1f (%.0f%%) |", median(v, rounds), median(share, rounds));
        }
        printf("\n");
    }
    return 0;
}
