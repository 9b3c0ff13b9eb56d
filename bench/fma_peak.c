/* fma_peak: the f32 fused multiply-add peak of one core, AVX2 and AVX-512,
 * the ceiling bench/README.md quotes the gemm kernels' GFLOP/s against.
 *
 *   fma_peak [--time 1]
 *
 * Each probe runs CHAINS independent chains of vector FMAs
 * (acc = acc * m + d, m and d unknown to the compiler), enough to cover
 * the FMA latency on every FMA port (4 cycles x 2 ports needs 8 in flight;
 * 12 for AVX2, whose 16 ymm registers hold 12 chains and the two
 * operands, 24 for AVX-512 with its 32 zmm registers). Each probe runs
 * for --time seconds in runs of about 1 ms, and the best run counts
 * (on a shared machine a short run often has the core to itself):
 *   GFLOP/s = 2 x lanes (8 or 16) x FMAs per second / 1e9.
 * A third probe times a chain of dependent integer adds (one cycle each
 * on every x86-64 core of the last decade) for the clock, so the peaks
 * can be read as FLOP per cycle too.
 *
 * A path this CPU lacks (checked at run time) is reported as absent. The
 * program is one thread: pin it (taskset -c N) and keep the machine quiet
 * for figures worth quoting. bench_ops --gemm includes this file (with
 * FMA_PEAK_NO_MAIN) to measure the AVX-512 peak in its own run, between
 * its products (fma_peak_gflops). Output, one line per probe:
 *   avx2   peak  N GFLOP/s (12 chains x 8 lanes)
 *   avx512 peak  N GFLOP/s (24 chains x 16 lanes)
 *   clock        N GHz (dependent integer adds), then FLOP/cycle */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

enum { ITERS = 1 << 10 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifdef HAVE_X86

/* A value the compiler cannot know (so the chains are not folded). */
static volatile float g_one = 1.0f, g_tiny = 1e-7f;
static volatile float g_sink;

/* ITERS x 12 FMAs of 8 lanes */
__attribute__((target("avx2,fma"), noinline)) static void chains_avx2(long batches)
{
    const __m256 m = _mm256_set1_ps(g_one), d = _mm256_set1_ps(g_tiny);
    /* distinct starts, so that no two chains are the same computation */
    __m256 a0 = _mm256_set1_ps(0.5f), a1 = _mm256_set1_ps(1.5f), a2 = _mm256_set1_ps(2.5f), a3 = _mm256_set1_ps(3.5f),
           a4 = _mm256_set1_ps(4.5f), a5 = _mm256_set1_ps(5.5f), a6 = _mm256_set1_ps(6.5f), a7 = _mm256_set1_ps(7.5f),
           a8 = _mm256_set1_ps(8.5f), a9 = _mm256_set1_ps(9.5f), a10 = _mm256_set1_ps(10.5f),
           a11 = _mm256_set1_ps(11.5f);
    for (long b = 0; b < batches; b++)
        for (int i = 0; i < ITERS; i++) {
            a0 = _mm256_fmadd_ps(a0, m, d), a1 = _mm256_fmadd_ps(a1, m, d), a2 = _mm256_fmadd_ps(a2, m, d);
            a3 = _mm256_fmadd_ps(a3, m, d), a4 = _mm256_fmadd_ps(a4, m, d), a5 = _mm256_fmadd_ps(a5, m, d);
            a6 = _mm256_fmadd_ps(a6, m, d), a7 = _mm256_fmadd_ps(a7, m, d), a8 = _mm256_fmadd_ps(a8, m, d);
            a9 = _mm256_fmadd_ps(a9, m, d), a10 = _mm256_fmadd_ps(a10, m, d), a11 = _mm256_fmadd_ps(a11, m, d);
            /* every chain in a register, computed every iteration */
            __asm__ volatile(""
                             : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), "+x"(a8),
                               "+x"(a9), "+x"(a10), "+x"(a11));
        }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    g_sink = _mm256_cvtss_f32(s);
}

/* ITERS x 24 FMAs of 16 lanes */
__attribute__((target("avx512f,fma"), noinline)) static void chains_avx512(long batches)
{
    const __m512 m = _mm512_set1_ps(g_one), d = _mm512_set1_ps(g_tiny);
    __m512 a[24];
    for (int c = 0; c < 24; c++) a[c] = _mm512_set1_ps(0.5f + (float)c);
    __m512 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7], a8 = a[8], a9 = a[9],
           a10 = a[10], a11 = a[11], a12 = a[12], a13 = a[13], a14 = a[14], a15 = a[15], a16 = a[16], a17 = a[17],
           a18 = a[18], a19 = a[19], a20 = a[20], a21 = a[21], a22 = a[22], a23 = a[23];
    for (long b = 0; b < batches; b++)
        for (int i = 0; i < ITERS; i++) {
            a0 = _mm512_fmadd_ps(a0, m, d), a1 = _mm512_fmadd_ps(a1, m, d), a2 = _mm512_fmadd_ps(a2, m, d);
            a3 = _mm512_fmadd_ps(a3, m, d), a4 = _mm512_fmadd_ps(a4, m, d), a5 = _mm512_fmadd_ps(a5, m, d);
            a6 = _mm512_fmadd_ps(a6, m, d), a7 = _mm512_fmadd_ps(a7, m, d), a8 = _mm512_fmadd_ps(a8, m, d);
            a9 = _mm512_fmadd_ps(a9, m, d), a10 = _mm512_fmadd_ps(a10, m, d), a11 = _mm512_fmadd_ps(a11, m, d);
            a12 = _mm512_fmadd_ps(a12, m, d), a13 = _mm512_fmadd_ps(a13, m, d), a14 = _mm512_fmadd_ps(a14, m, d);
            a15 = _mm512_fmadd_ps(a15, m, d), a16 = _mm512_fmadd_ps(a16, m, d), a17 = _mm512_fmadd_ps(a17, m, d);
            a18 = _mm512_fmadd_ps(a18, m, d), a19 = _mm512_fmadd_ps(a19, m, d), a20 = _mm512_fmadd_ps(a20, m, d);
            a21 = _mm512_fmadd_ps(a21, m, d), a22 = _mm512_fmadd_ps(a22, m, d), a23 = _mm512_fmadd_ps(a23, m, d);
            __asm__ volatile(""
                             : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8),
                               "+v"(a9), "+v"(a10), "+v"(a11));
            __asm__ volatile(""
                             : "+v"(a12), "+v"(a13), "+v"(a14), "+v"(a15), "+v"(a16), "+v"(a17), "+v"(a18), "+v"(a19),
                               "+v"(a20), "+v"(a21), "+v"(a22), "+v"(a23));
        }
    __m512 s = _mm512_add_ps(a0, a1);
    s = _mm512_add_ps(s, _mm512_add_ps(a2, a3)), s = _mm512_add_ps(s, _mm512_add_ps(a4, a5));
    s = _mm512_add_ps(s, _mm512_add_ps(a6, a7)), s = _mm512_add_ps(s, _mm512_add_ps(a8, a9));
    s = _mm512_add_ps(s, _mm512_add_ps(a10, a11)), s = _mm512_add_ps(s, _mm512_add_ps(a12, a13));
    s = _mm512_add_ps(s, _mm512_add_ps(a14, a15)), s = _mm512_add_ps(s, _mm512_add_ps(a16, a17));
    s = _mm512_add_ps(s, _mm512_add_ps(a18, a19)), s = _mm512_add_ps(s, _mm512_add_ps(a20, a21));
    s = _mm512_add_ps(s, _mm512_add_ps(a22, a23));
    g_sink = _mm512_reduce_add_ps(s);
}

/* ITERS x 16 dependent one-cycle integer adds */
__attribute__((noinline, unused)) static void add_chain(long batches)
{
    uint64_t x = (uint64_t)batches;
    for (long b = 0; b < batches; b++)
        for (int i = 0; i < ITERS; i++)
            __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                             "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                             "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                             "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0"
                             : "+r"(x));
    g_sink = (float)x;
}

#endif

/* the best rate (operations per second) of fn over `span` seconds, timed
 * in runs of about 1 ms each (batches sized from a first call): on a
 * shared machine a short run often has the core to itself, a long one
 * rarely does. ops_per_batch units of work per batch. */
static double best_rate(void (*fn)(long), double ops_per_batch, double span)
{
    double t0 = now_s();
    fn(1);
    const double per = now_s() - t0;
    const long batches = per > 0 && per < 1e-3 ? (long)(1e-3 / per) + 1 : 1;
    double best = 0;
    const double start = now_s();
    for (int r = 0; r < 10 || now_s() - start < span; r++) {
        t0 = now_s();
        fn(batches);
        const double t = now_s() - t0, rate = ops_per_batch * (double)batches / t;
        if (rate > best) best = rate;
    }
    return best;
}

/* the FMA peak of one core in GFLOP/s, AVX-512 (avx512) or AVX2, best of
 * 1 ms runs over span seconds; 0 when the CPU (or compiler) lacks it */
__attribute__((unused)) static double fma_peak_gflops(int avx512, double span)
{
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (avx512)
        return __builtin_cpu_supports("avx512f") ? best_rate(chains_avx512, 24.0 * ITERS * 16 * 2, span) / 1e9 : 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
        ? best_rate(chains_avx2, 12.0 * ITERS * 8 * 2, span) / 1e9
        : 0;
#else
    (void)avx512, (void)span, (void)best_rate;
    return 0;
#endif
}

#ifndef FMA_PEAK_NO_MAIN
int main(int argc, char **argv)
{
    double span = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time") && i + 1 < argc) span = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: fma_peak [--time 1]\n");
            return 2;
        }
    }
    if (!(span > 0)) {
        fprintf(stderr, "fma_peak: --time must be > 0\n");
        return 2;
    }
#ifdef HAVE_X86
    const double clock = best_rate(add_chain, 16.0 * ITERS, span) / 1e9, p2 = fma_peak_gflops(0, span),
                 p5 = fma_peak_gflops(1, span);
    if (p2 > 0) printf("avx2   peak %7.1f GFLOP/s (12 chains x 8 lanes)\n", p2);
    else printf("avx2   peak: absent (no AVX2 + FMA on this CPU)\n");
    if (p5 > 0) printf("avx512 peak %7.1f GFLOP/s (24 chains x 16 lanes)\n", p5);
    else printf("avx512 peak: absent (no AVX-512 F on this CPU)\n");
    printf("clock       %7.2f GHz (dependent integer adds)", clock);
    if (p2 > 0) printf(": avx2 %.1f", p2 / clock);
    if (p5 > 0) printf(", avx512 %.1f", p5 / clock);
    printf(" FLOP/cycle\n");
#else
    printf("fma_peak: not an x86-64 GCC build; nothing to measure\n");
#endif
    return 0;
}
#endif
