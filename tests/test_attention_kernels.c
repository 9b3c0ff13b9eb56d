/* The hand-written row kernels of the fused attention, those of the
 * kernel path in use (tg_isa_active(): ops/attention_avx512.c on avx512,
 * ops/attention_avx2.c on avx2): the online-softmax step and the backward
 * step, each against a plain double-precision version of what it must
 * do, tile by tile: rows and columns of lengths 1..40, 63, 64, 65 and 100
 * (on and off the 8- and 16-lane widths), every causal limit from "sees
 * nothing" to "sees all", -inf scores, rows whose visible scores are all
 * -inf, running maxima and sums carried across calls, rows that see
 * nothing yet, and the index of the first NaN or +inf at a visible key
 * (and none for hidden ones). Also: nothing outside the tile is written;
 * a tile cut into row ranges, or placed at another address, gives the
 * same bits (a thread's range of rows may start anywhere); and on the
 * avx512 path the AVX-512 kernels give the AVX2 ones' bits. (The op as a
 * whole is checked in test_ops_attention.) The generic path has no
 * hand-written tiles (its kernels are compiled C, tested through the op):
 * the program exits 77 there, which CTest reports as skipped. */
#include <stdint.h>

#include "tg_test.h"

#include "../ops/attention_tiles_internal.h"
#include "../ops/fastmath_internal.h"

typedef int64_t (*online_fn)(float *restrict, int, int, int, float *restrict, float *restrict, float *restrict);
typedef void (*grad_fn)(float *restrict, float *restrict, int, int, int, const float *restrict, const float *restrict);

static online_fn online;
static grad_fn grad;
static const char *path;

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* tile widths (and heights below): on and off the lane widths */
static const int LENS[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                           23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 63, 64, 65, 100};
enum { NLENS = sizeof LENS / sizeof LENS[0], MAXQ = 100, MAXK = 100, GUARD = 16 };
/* heights for the sweeps over every width and limit */
static const int NQS[] = {1, 5, 16, 17, 33};
enum { NNQS = sizeof NQS / sizeof NQS[0] };

/* A tile of nq rows of nk at buf + GUARD, with GUARD canaries either side. */
static float *tile_in(float *buf, int nq, int nk)
{
    for (int e = 0; e < GUARD; e++) buf[e] = buf[GUARD + nq * nk + e] = 12345.0f + (float)e;
    return buf + GUARD;
}
static void check_guards(const float *buf, int nq, int nk, const char *what)
{
    for (int e = 0; e < GUARD; e++)
        if (buf[e] != 12345.0f + (float)e || buf[GUARD + nq * nk + e] != 12345.0f + (float)e)
            ck_abort_msg("%s nq %d nk %d: written outside the tile", what, nq, nk);
}

/* The reference for one call: updates m, l in double; p receives P. */
static int64_t reference(const float *s, int nq, int nk, int lim0, double *m, double *l, double *alpha, double *p)
{
    for (int r = 0; r < nq; r++) {
        const int lim = lim0 + r;
        for (int c = 0; c < nk && c <= lim; c++)
            if (isnan(s[r * nk + c]) || s[r * nk + c] == INFINITY) return (int64_t)r * nk + c;
        double mn = m[r];
        for (int c = 0; c < nk && c <= lim; c++) mn = fmax(mn, s[r * nk + c]);
        if (mn == -INFINITY) {
            for (int c = 0; c < nk; c++) p[r * nk + c] = 0;
            alpha[r] = 1;
            continue;
        }
        /* exp of the float difference, as the kernel takes it: the rounding
         * of the subtraction (up to 6e-8 |w - m| relative) is not exp's */
        const double a = m[r] == -INFINITY ? 0 : exp((float)m[r] - (float)mn);
        double sum = 0;
        for (int c = 0; c < nk; c++) {
            const double w = c <= lim ? s[r * nk + c] : -INFINITY;
            p[r * nk + c] = w == -INFINITY ? 0 : exp((float)w - (float)mn);
            sum += p[r * nk + c];
        }
        l[r] = a * l[r] + sum;
        m[r] = mn;
        alpha[r] = a;
    }
    return -1;
}

/* Scores in [-8, 8], some -inf, some rows all -inf; a running state from
 * an earlier block, or none (m -inf, l 0). */
static void fill_online(uint64_t *seed, float *s, int nq, int nk, float *m, float *l)
{
    for (int r = 0; r < nq; r++) {
        const bool fresh = urand(seed) < 0.3, all_ninf = urand(seed) < 0.1;
        m[r] = fresh ? -INFINITY : (float)(urand(seed) * 6 - 3);
        l[r] = fresh ? 0 : (float)(urand(seed) * 4 + 0.5);
        for (int c = 0; c < nk; c++) {
            const double u = urand(seed);
            s[r * nk + c] = all_ninf || u < 0.05 ? -INFINITY : (float)(urand(seed) * 16 - 8);
        }
    }
}

static float sbuf[MAXQ * MAXK + 2 * GUARD];

START_TEST(online_step_matches_reference)
{
    uint64_t seed = 99;
    int calls = 0;
    double worst_p = 0, worst_l = 0;
    static double md[MAXQ], ld[MAXQ], ad[MAXQ], pd[MAXQ * MAXK];
    for (int qi = 0; qi < NNQS; qi++)
        for (int ki = 0; ki < NLENS; ki++) {
            const int nq = NQS[qi], nk = LENS[ki];
            for (int lim0 = -nq - 1; lim0 <= nk + 1; lim0++) {
                float m[MAXQ], l[MAXQ], alpha[MAXQ], *s = tile_in(sbuf, nq, nk);
                fill_online(&seed, s, nq, nk, m, l);
                for (int r = 0; r < nq; r++) md[r] = m[r], ld[r] = l[r];
                const int64_t want = reference(s, nq, nk, lim0, md, ld, ad, pd);
                const int64_t got = online(s, nq, nk, lim0, m, l, alpha);
                check_guards(sbuf, nq, nk, "online");
                ck_assert_msg(got == want, "nq %d nk %d lim0 %d: fault %lld, want %lld", nq, nk, lim0, (long long)got,
                              (long long)want);
                /* exp within ~2 ulp; a sum of n terms <= 1 in 8 lanes: n/8 + 8 roundings */
                const double tol_l = 3e-7 + (nk / 8 + 9) * 6e-8;
                for (int r = 0; r < nq; r++) {
                    ck_assert_msg((float)md[r] == m[r], "nq %d nk %d lim0 %d row %d: m %g, want %g", nq, nk, lim0, r,
                                  m[r], md[r]);
                    const double el = fabs(l[r] - ld[r]) / (ld[r] + 1e-30);
                    const double ea = fabs(alpha[r] - ad[r]) / (ad[r] + 1e-30);
                    if (el > tol_l || ea > 3e-7 || (ld[r] == 0) != (l[r] == 0))
                        ck_abort_msg("nq %d nk %d lim0 %d row %d: l %.9g vs %.9g, alpha %.9g vs %.9g", nq, nk, lim0, r,
                                     l[r], ld[r], alpha[r], ad[r]);
                    worst_l = fmax(worst_l, el);
                    for (int c = 0; c < nk; c++) {
                        const double ref = pd[r * nk + c], e = fabs(s[r * nk + c] - ref);
                        if (e > 3e-7 * ref || (ref == 0 && s[r * nk + c] != 0))
                            ck_abort_msg("nq %d nk %d lim0 %d P(%d,%d) = %.9g, want %.9g", nq, nk, lim0, r, c,
                                         s[r * nk + c], ref);
                        if (ref > 0) worst_p = fmax(worst_p, e / ref);
                    }
                }
                calls++;
            }
        }
    printf("test_attention_kernels (%s): online step, %d tiles, worst relative error P %.2g, l %.2g\n", path, calls,
           worst_p, worst_l);
}
END_TEST

/* A NaN (quiet or signalling) or +inf at a visible key is reported at its
 * first position; the same values at hidden keys are ignored (they become
 * 0), and so is -inf anywhere. */
START_TEST(bad_scores_found_only_where_visible)
{
    int calls = 0;
    for (int ki = 0; ki < NLENS; ki++) {
        const int nk = LENS[ki];
        for (int pos = 0; pos < nk; pos++)
            for (int kind = 0; kind < 3; kind++)
                for (int lim0 = pos - 2; lim0 <= pos + 1; lim0++) {
                    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, alpha[2], *s = tile_in(sbuf, 2, nk);
                    for (int e = 0; e < 2 * nk; e++) s[e] = e % 5 == 3 ? -INFINITY : 0.25f * (float)(e % 7);
                    const float bad = kind == 0 ? NAN : kind == 1 ? INFINITY : __builtin_nansf("");
                    s[nk + pos] = bad; /* row 1: sees c <= lim0 + 1 */
                    if (pos + 1 < nk) s[nk + nk - 1] = bad; /* a later one: not the first */
                    const int64_t got = online(s, 2, nk, lim0, m, l, alpha);
                    check_guards(sbuf, 2, nk, "bad scores");
                    const int64_t want = pos <= lim0 + 1 ? nk + pos : -1;
                    ck_assert_msg(got == want, "nk %d pos %d kind %d lim0 %d: %lld, want %lld", nk, pos, kind, lim0,
                                  (long long)got, (long long)want);
                    if (want < 0)
                        for (int c = 0; c < nk; c++) ck_assert(isfinite(s[nk + c]) && s[nk + c] >= 0);
                    calls++;
                }
    }
    printf("test_attention_kernels (%s): bad scores, %d tiles\n", path, calls);
}
END_TEST

/* Scaled scores in [-8, 2], some -inf, some rows all -inf, NaN and +inf
 * at hidden keys (they must not leak); L in [2, 6], D in [-0.5, 0.5];
 * dP in [-1, 1], NaN at some hidden keys. */
static void fill_grad(uint64_t *seed, float *s, float *dp, int nq, int nk, int lim0, float *L, float *D)
{
    for (int r = 0; r < nq; r++) {
        L[r] = (float)(urand(seed) * 4 + 2), D[r] = (float)(urand(seed) - 0.5);
        const bool all_ninf = urand(seed) < 0.1;
        for (int c = 0; c < nk; c++) {
            const int e = r * nk + c;
            const bool hidden = c > lim0 + r;
            s[e] = all_ninf || urand(seed) < 0.05 ? -INFINITY : (float)(urand(seed) * 10 - 8);
            if (hidden && urand(seed) < 0.2) s[e] = urand(seed) < 0.5 ? NAN : INFINITY;
            dp[e] = (float)(urand(seed) * 2 - 1);
            if (hidden && urand(seed) < 0.3) dp[e] = NAN;
        }
    }
}

static float dpbuf[MAXQ * MAXK + 2 * GUARD];

/* The backward step: P = exp(s - L) where visible and not -inf, dS =
 * P (dP - D) where visible, against double (exp of the float difference,
 * as the kernel takes it), with and without dP. */
START_TEST(grad_step_matches_reference)
{
    uint64_t seed = 7;
    int tiles = 0;
    double worst = 0;
    static float s0[MAXQ * MAXK], dp0[MAXQ * MAXK];
    for (int qi = 0; qi < NNQS; qi++)
        for (int ki = 0; ki < NLENS; ki++) {
            const int nq = NQS[qi], nk = LENS[ki];
            for (int lim0 = -nq - 1; lim0 <= nk + 1; lim0++)
                for (int with_dp = 0; with_dp < 2; with_dp++) {
                    float L[MAXQ], D[MAXQ], *s = tile_in(sbuf, nq, nk), *dp = tile_in(dpbuf, nq, nk);
                    fill_grad(&seed, s0, dp0, nq, nk, lim0, L, D);
                    memcpy(s, s0, sizeof(float) * nq * nk);
                    memcpy(dp, dp0, sizeof(float) * nq * nk);
                    grad(s, with_dp ? dp : NULL, nq, nk, lim0, L, D);
                    check_guards(sbuf, nq, nk, "grad s");
                    check_guards(dpbuf, nq, nk, "grad dp");
                    for (int r = 0; r < nq; r++)
                        for (int c = 0; c < nk; c++) {
                            const int e = r * nk + c;
                            const bool vis = c <= lim0 + r;
                            const double p = vis && s0[e] != -INFINITY ? exp((double)(s0[e] - L[r])) : 0;
                            if (fabs(s[e] - p) > 3e-7 * p || (p == 0 && s[e] != 0))
                                ck_abort_msg("nq %d nk %d lim0 %d P(%d,%d) = %.9g, want %.9g", nq, nk, lim0, r, c, s[e],
                                             p);
                            if (p > 0) worst = fmax(worst, fabs(s[e] - p) / p);
                            if (!with_dp) {
                                if (memcmp(&dp[e], &dp0[e], sizeof dp[e]) != 0)
                                    ck_abort_msg("nk %d: dp written without being asked", nk);
                                continue;
                            }
                            const double g = vis ? (double)s[e] * ((double)dp0[e] - D[r]) : 0;
                            if (fabs(dp[e] - g) > 2.4e-7 * fabs(g) || (g == 0 && dp[e] != 0))
                                ck_abort_msg("nq %d nk %d lim0 %d dS(%d,%d) = %.9g, want %.9g", nq, nk, lim0, r, c,
                                             dp[e], g);
                        }
                    tiles++;
                }
        }
    printf("test_attention_kernels (%s): grad step, %d tiles, worst relative error of P %.2g\n", path, tiles, worst);
}
END_TEST

static bool same_bits(const float *a, const float *b, int n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

/* Each row is its own: a tile run as row ranges [0, a) and [a, nq) (the
 * second with its limit moved by a), or copied to an address 1..15
 * floats further on, gives the same bits, forward and backward. Heights
 * and widths from LENS, limits at every offset from a sweep of a few. */
START_TEST(bits_independent_of_start)
{
    uint64_t seed = 5;
    static float s0[MAXQ * MAXK], s1[MAXQ * MAXK], dp0[MAXQ * MAXK], dp1[MAXQ * MAXK];
    static float big[MAXQ * MAXK + 16], bigdp[MAXQ * MAXK + 16];
    int cases = 0;
    for (int qi = 0; qi < NLENS; qi++)
        for (int ki = 0; ki < NLENS; ki += 3) {
            const int nq = LENS[qi], nk = LENS[ki], n = nq * nk;
            const int lim0 = (int)(urand(&seed) * (nk + nq + 3)) - nq - 1;
            float m0[MAXQ], l0[MAXQ], m[MAXQ], l[MAXQ], a0[MAXQ], a1[MAXQ], L[MAXQ], D[MAXQ];
            /* forward: whole, then split at a, then shifted by off */
            fill_online(&seed, s0, nq, nk, m0, l0);
            memcpy(s1, s0, sizeof(float) * n);
            memcpy(m, m0, sizeof m), memcpy(l, l0, sizeof l);
            const int64_t want = online(s0, nq, nk, lim0, m0, l0, a0);
            float mw[MAXQ], lw[MAXQ];
            memcpy(mw, m0, sizeof mw), memcpy(lw, l0, sizeof lw);
            const int a = 1 + (int)(urand(&seed) * (nq - 1)), off = 1 + (int)(urand(&seed) * 15);
            if (want < 0 && nq > 1) {
                float mm[MAXQ], ll[MAXQ];
                memcpy(mm, m, sizeof mm), memcpy(ll, l, sizeof ll);
                memcpy(big, s1, sizeof(float) * n);
                ck_assert(online(big, a, nk, lim0, mm, ll, a1) < 0);
                ck_assert(online(big + (int64_t)a * nk, nq - a, nk, lim0 + a, mm + a, ll + a, a1 + a) < 0);
                ck_assert_msg(same_bits(big, s0, n) && same_bits(mm, mw, nq) && same_bits(ll, lw, nq) &&
                                  same_bits(a1, a0, nq),
                              "online nq %d nk %d lim0 %d: split at row %d differs", nq, nk, lim0, a);
            }
            memcpy(big + off, s1, sizeof(float) * n);
            ck_assert(online(big + off, nq, nk, lim0, m, l, a1) == want);
            if (want < 0)
                ck_assert_msg(same_bits(big + off, s0, n) && same_bits(m, mw, nq) && same_bits(l, lw, nq) &&
                                  same_bits(a1, a0, nq),
                              "online nq %d nk %d lim0 %d: at offset %d differs", nq, nk, lim0, off);
            /* backward likewise */
            fill_grad(&seed, s0, dp0, nq, nk, lim0, L, D);
            memcpy(s1, s0, sizeof(float) * n), memcpy(dp1, dp0, sizeof(float) * n);
            grad(s0, dp0, nq, nk, lim0, L, D);
            memcpy(big, s1, sizeof(float) * n), memcpy(bigdp, dp1, sizeof(float) * n);
            grad(big, bigdp, a, nk, lim0, L, D);
            grad(big + (int64_t)a * nk, bigdp + (int64_t)a * nk, nq - a, nk, lim0 + a, L + a, D + a);
            ck_assert_msg(same_bits(big, s0, n) && same_bits(bigdp, dp0, n),
                          "grad nq %d nk %d lim0 %d: split at row %d differs", nq, nk, lim0, a);
            memcpy(big + off, s1, sizeof(float) * n), memcpy(bigdp + off, dp1, sizeof(float) * n);
            grad(big + off, bigdp + off, nq, nk, lim0, L, D);
            ck_assert_msg(same_bits(big + off, s0, n) && same_bits(bigdp + off, dp0, n),
                          "grad nq %d nk %d lim0 %d: at offset %d differs", nq, nk, lim0, off);
            cases++;
        }
    printf("test_attention_kernels (%s): %d tiles, same bits split by rows and moved\n", path, cases);
}
END_TEST

#ifdef TG_AVX2_KERNELS
/* On the avx512 path: the AVX-512 kernels give the AVX2 ones' bits (P,
 * dS, l, alpha; m the same value), every width and limit. */
START_TEST(avx512_bits_equal_avx2)
{
    uint64_t seed = 11;
    static float s0[MAXQ * MAXK], s1[MAXQ * MAXK], dp0[MAXQ * MAXK], dp1[MAXQ * MAXK];
    int tiles = 0;
    for (int qi = 0; qi < NNQS; qi++)
        for (int ki = 0; ki < NLENS; ki++) {
            const int nq = NQS[qi], nk = LENS[ki], n = nq * nk;
            for (int lim0 = -nq - 1; lim0 <= nk + 1; lim0++) {
                float m0[MAXQ], l0[MAXQ], m1[MAXQ], l1[MAXQ], a0[MAXQ], a1[MAXQ], L[MAXQ], D[MAXQ];
                fill_online(&seed, s0, nq, nk, m0, l0);
                memcpy(s1, s0, sizeof(float) * n), memcpy(m1, m0, sizeof m1), memcpy(l1, l0, sizeof l1);
                const int64_t f0 = tg_attn_block_online_avx512(s0, nq, nk, lim0, m0, l0, a0);
                const int64_t f1 = tg_attn_block_online_avx2(s1, nq, nk, lim0, m1, l1, a1);
                ck_assert_int_eq(f0, f1);
                if (f0 < 0) {
                    for (int r = 0; r < nq; r++) ck_assert(m0[r] == m1[r]);
                    ck_assert_msg(same_bits(s0, s1, n) && same_bits(l0, l1, nq) && same_bits(a0, a1, nq),
                                  "online nq %d nk %d lim0 %d: AVX-512 and AVX2 differ", nq, nk, lim0);
                }
                for (int with_dp = 0; with_dp < 2; with_dp++) {
                    fill_grad(&seed, s0, dp0, nq, nk, lim0, L, D);
                    memcpy(s1, s0, sizeof(float) * n), memcpy(dp1, dp0, sizeof(float) * n);
                    tg_attn_block_grad_avx512(s0, with_dp ? dp0 : NULL, nq, nk, lim0, L, D);
                    tg_attn_block_grad_avx2(s1, with_dp ? dp1 : NULL, nq, nk, lim0, L, D);
                    ck_assert_msg(same_bits(s0, s1, n) && same_bits(dp0, dp1, n),
                                  "grad nq %d nk %d lim0 %d: AVX-512 and AVX2 differ", nq, nk, lim0);
                }
                tiles++;
            }
        }
    printf("test_attention_kernels (%s): %d tiles, the same bits as the AVX2 kernels\n", path, tiles);
}
END_TEST
#endif

int main(void)
{
    const tg_isa isa = tg_isa_active();
    path = tg_isa_name(isa);
#ifdef TG_AVX2_KERNELS
    if (isa == TG_ISA_AVX512) online = tg_attn_block_online_avx512, grad = tg_attn_block_grad_avx512;
    else if (isa == TG_ISA_AVX2) online = tg_attn_block_online_avx2, grad = tg_attn_block_grad_avx2;
#endif
    if (!online) {
        printf("test_attention_kernels: the %s path has no hand-written attention tiles (its compiled kernels are "
               "tested through the op, test_ops_attention): skipped\n",
               path);
        return 77;
    }
    Suite *s = suite_create("attention_kernels");
    TCase *tc = tcase_create("attention_kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, online_step_matches_reference);
    tcase_add_test(tc, bad_scores_found_only_where_visible);
    tcase_add_test(tc, grad_step_matches_reference);
    tcase_add_test(tc, bits_independent_of_start);
#ifdef TG_AVX2_KERNELS
    if (isa == TG_ISA_AVX512) tcase_add_test(tc, avx512_bits_equal_avx2);
#endif
    suite_add_tcase(s, tc);
    return tt_run(s);
}
