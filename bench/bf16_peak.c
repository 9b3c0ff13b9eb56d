/* bf16_peak: the vdpbf16ps peak of one core beside the f32 FMA peak, the
 * ceilings bench/README.md ("bf16 products") quotes the bf16 and f32
 * products against.
 *
 *   bf16_peak [--time 1]
 *
 * The bf16 probe runs C independent chains of vdpbf16ps on zmm registers
 * (acc = acc + a0 b0 + a1 b1 in each of 16 lanes, a and b unknown to the
 * compiler), for C = 12, 16 and 24: more than its latency times its rate
 * needs (Zen 5 starts two 512-bit ones a cycle, Zen 4 one; on Zen 4 the
 * three counts read the same), and the best of the three counts. Each vdpbf16ps does 32 bf16 products and adds
 * them: counted as 2 FLOP per product, 64 per instruction, the way a
 * product's 2 M N K counts them, so the ratio of the two peaks is the
 * speed-up a bf16 product can have over an f32 one. The f32 FMA peak is
 * bench/fma_peak.c's AVX-512 probe (24 chains x 16 lanes, 2 FLOP each).
 * Each probe runs for --time seconds in runs of about 1 ms, the best run
 * counting (on a shared machine a short run often has the core to itself).
 *
 * bench_bf16 includes this file (with BF16_PEAK_NO_MAIN) to measure both
 * peaks in its own run, between its products (bf16_peak_gflops).
 * A CPU without AVX512_BF16 (checked at run time) reports the peak as absent.
 * Output:
 *   avx512 f32 FMA peak      N GFLOP/s (24 chains x 16 lanes x 2)
 *   avx512 bf16 dot peak     N GFLOP/s (best of 12/16/24 chains: ...), R x the f32 peak */
#define FMA_PEAK_NO_MAIN
#include "fma_peak.c"

#ifdef HAVE_X86

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), noinline))

static volatile float g_half = 0x1p-20f;

/* ITERS x chains vdpbf16ps in `chains` independent chains (a constant
 * where this is inlined: the accumulators stay in registers, each one
 * written every iteration) */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), always_inline)) static inline void
bf16_chains(const int chains, long batches)
{
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(g_half), _mm512_set1_ps(g_one)),
                   b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(g_one), _mm512_set1_ps(g_half));
    __m512 acc[24];
#pragma GCC unroll 24
    for (int c = 0; c < chains; c++) acc[c] = _mm512_set1_ps(0.5f + (float)c);
    for (long bt = 0; bt < batches; bt++)
        for (int i = 0; i < ITERS; i++) {
#pragma GCC unroll 24
            for (int c = 0; c < chains; c++) {
                acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
                __asm__ volatile("" : "+v"(acc[c]));
            }
        }
    __m512 s = acc[0];
#pragma GCC unroll 24
    for (int c = 1; c < chains; c++) s = _mm512_add_ps(s, acc[c]);
    g_sink = _mm512_reduce_add_ps(s);
}
BF16_TARGET static void bf16_chains_12(long batches) { bf16_chains(12, batches); }
BF16_TARGET static void bf16_chains_16(long batches) { bf16_chains(16, batches); }
BF16_TARGET static void bf16_chains_24(long batches) { bf16_chains(24, batches); }

#endif

/* the vdpbf16ps peak of one core in GFLOP/s (64 FLOP an instruction), the
 * best of 12, 16 and 24 chains, each the best of 1 ms runs over span
 * seconds; *chains: the count that gave it. 0 when the CPU (or compiler)
 * lacks AVX512_BF16. */
__attribute__((unused)) static double bf16_peak_gflops(double span, int *chains)
{
    *chains = 0;
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) return 0;
    static void (*const fns[3])(long) = {bf16_chains_12, bf16_chains_16, bf16_chains_24};
    static const int counts[3] = {12, 16, 24};
    double best = 0;
    for (int i = 0; i < 3; i++) {
        const double g = best_rate(fns[i], (double)counts[i] * ITERS * 64, span / 3) / 1e9;
        if (g > best) best = g, *chains = counts[i];
    }
    return best;
#else
    (void)span;
    return 0;
#endif
}

#ifndef BF16_PEAK_NO_MAIN
int main(int argc, char **argv)
{
    double span = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--time") && i + 1 < argc) span = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bf16_peak [--time 1]\n");
            return 2;
        }
    }
    if (!(span > 0)) {
        fprintf(stderr, "bf16_peak: --time must be > 0\n");
        return 2;
    }
    int chains;
    const double f32 = fma_peak_gflops(1, span), bf16 = bf16_peak_gflops(span, &chains);
    if (f32 > 0) printf("avx512 f32 FMA peak  %7.1f GFLOP/s (24 chains x 16 lanes x 2)\n", f32);
    else printf("avx512 f32 FMA peak: absent (no AVX-512 F on this CPU)\n");
    if (bf16 > 0) {
        printf("avx512 bf16 dot peak %7.1f GFLOP/s (vdpbf16ps, best with %d chains x 32 products x 2)", bf16, chains);
        if (f32 > 0) printf(", %.2f x the f32 peak", bf16 / f32);
        printf("\n");
    } else printf("avx512 bf16 dot peak: absent (no AVX512_BF16 on this CPU)\n");
    return 0;
}
#endif
