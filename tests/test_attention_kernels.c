/* The AVX2 row kernels of the fused attention (ops/attention_avx2.c):
 * the online-softmax step and the backward step, each against a plain
 * double-precision version of what it must do, tile by tile: widths that
 * are and are not multiples of 8, every visibility limit, running maxima
 * and sums carried across calls, rows that see nothing yet, and the index
 * of the first NaN or +inf at a visible key (and none for hidden ones).
 * (The op as a whole is checked in test_ops_attention.) On a CPU without
 * AVX2 + FMA there is nothing to run: the program exits 77, which CTest
 * reports as skipped. */
#include <stdint.h>

#include "tg_test.h"

#include "../ops/attention_internal.h"
#include "../ops/fastmath_internal.h"

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

enum { NQ = 5, MAXK = 41 };

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

START_TEST(online_step_matches_reference)
{
    uint64_t seed = 99;
    int calls = 0;
    double worst_p = 0, worst_l = 0;
    for (int nk = 1; nk <= MAXK; nk += (nk < 17 ? 1 : 8))
        for (int lim0 = -NQ - 1; lim0 <= nk + 1; lim0++) {
            float m[NQ], l[NQ], alpha[NQ], s[NQ * MAXK];
            double md[NQ], ld[NQ], ad[NQ], pd[NQ * MAXK];
            for (int r = 0; r < NQ; r++) { /* a running state from an earlier block, or none */
                const bool fresh = urand(&seed) < 0.3;
                m[r] = fresh ? -INFINITY : (float)(urand(&seed) * 6 - 3);
                l[r] = fresh ? 0 : (float)(urand(&seed) * 4 + 0.5);
                md[r] = m[r], ld[r] = l[r];
            }
            for (int e = 0; e < NQ * nk; e++) { /* scores in [-8, 8], some -inf */
                const double u = urand(&seed);
                s[e] = u < 0.05 ? -INFINITY : (float)(urand(&seed) * 16 - 8);
            }
            const int64_t want = reference(s, NQ, nk, lim0, md, ld, ad, pd);
            const int64_t got = tg_attn_block_online_avx2(s, NQ, nk, lim0, m, l, alpha);
            ck_assert_msg(got == want, "nk %d lim0 %d: fault %lld, want %lld", nk, lim0, (long long)got,
                          (long long)want);
            for (int r = 0; r < NQ; r++) {
                ck_assert_msg((float)md[r] == m[r], "nk %d lim0 %d row %d: m %g, want %g", nk, lim0, r, m[r], md[r]);
                const double el = fabs(l[r] - ld[r]) / (ld[r] + 1e-30);
                const double ea = fabs(alpha[r] - ad[r]) / (ad[r] + 1e-30);
                /* exp within ~2 ulp, sums of <= 41 terms of size <= 1 */
                if (el > 1e-6 || ea > 3e-7)
                    ck_abort_msg("nk %d lim0 %d row %d: l %.9g vs %.9g, alpha %.9g vs %.9g", nk, lim0, r, l[r],
                                 ld[r], alpha[r], ad[r]);
                worst_l = fmax(worst_l, el);
                for (int c = 0; c < nk; c++) {
                    const double ref = pd[r * nk + c], e = fabs(s[r * nk + c] - ref);
                    if (e > 3e-7 * ref || (ref == 0 && s[r * nk + c] != 0))
                        ck_abort_msg("nk %d lim0 %d P(%d,%d) = %.9g, want %.9g", nk, lim0, r, c, s[r * nk + c], ref);
                    if (ref > 0) worst_p = fmax(worst_p, e / ref);
                }
            }
            calls++;
        }
    printf("test_attention_avx2: %d tiles, worst relative error P %.2g, l %.2g\n", calls, worst_p, worst_l);
}
END_TEST

/* A NaN or +inf at a visible key is reported at its first position; the
 * same values at hidden keys are ignored (they become -inf, then 0). */
START_TEST(bad_scores_found_only_where_visible)
{
    for (int nk = 3; nk <= 27; nk += 4)
        for (int pos = 0; pos < nk; pos++)
            for (int kind = 0; kind < 2; kind++)
                for (int lim0 = pos - 2; lim0 <= pos + 1; lim0++) {
                    float s[2 * 27], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, alpha[2];
                    for (int e = 0; e < 2 * nk; e++) s[e] = 0.25f * (float)(e % 7);
                    s[nk + pos] = kind ? INFINITY : NAN;                /* row 1: sees c <= lim0 + 1 */
                    const int64_t got = tg_attn_block_online_avx2(s, 2, nk, lim0, m, l, alpha);
                    const int64_t want = pos <= lim0 + 1 ? nk + pos : -1;
                    ck_assert_msg(got == want, "nk %d pos %d %s lim0 %d: %lld, want %lld", nk, pos,
                                  kind ? "inf" : "NaN", lim0, (long long)got, (long long)want);
                    if (want < 0 && lim0 + 1 >= 0)
                        for (int c = 0; c < nk; c++) ck_assert(isfinite(s[nk + c]));
                }
}
END_TEST

/* The backward step: P = exp(s - L) where visible and not -inf, dS =
 * P (dP - D) where visible, against double (exp of the float difference,
 * as the kernel takes it), with and without dP. */
START_TEST(grad_step_matches_reference)
{
    uint64_t seed = 7;
    int tiles = 0;
    double worst = 0;
    for (int nk = 1; nk <= MAXK; nk += (nk < 17 ? 1 : 8))
        for (int lim0 = -NQ - 1; lim0 <= nk + 1; lim0++)
            for (int with_dp = 0; with_dp < 2; with_dp++) {
                float s[NQ * MAXK], dp[NQ * MAXK], L[NQ], D[NQ], s0[NQ * MAXK], dp0[NQ * MAXK];
                for (int r = 0; r < NQ; r++) L[r] = (float)(urand(&seed) * 4 + 2), D[r] = (float)(urand(&seed) - 0.5);
                for (int e = 0; e < NQ * nk; e++) {
                    s0[e] = urand(&seed) < 0.05 ? -INFINITY : (float)(urand(&seed) * 10 - 8);
                    dp0[e] = (float)(urand(&seed) * 2 - 1);
                    if ((e % nk) > lim0 + e / nk && urand(&seed) < 0.3) dp0[e] = NAN; /* hidden: must not leak */
                    s[e] = s0[e], dp[e] = dp0[e];
                }
                tg_attn_block_grad_avx2(s, with_dp ? dp : NULL, NQ, nk, lim0, L, D);
                for (int r = 0; r < NQ; r++)
                    for (int c = 0; c < nk; c++) {
                        const int e = r * nk + c;
                        const bool vis = c <= lim0 + r;
                        const double p = vis && s0[e] != -INFINITY ? exp((double)(s0[e] - L[r])) : 0;
                        if (fabs(s[e] - p) > 3e-7 * p || (p == 0 && s[e] != 0))
                            ck_abort_msg("nk %d lim0 %d P(%d,%d) = %.9g, want %.9g", nk, lim0, r, c, s[e], p);
                        if (p > 0) worst = fmax(worst, fabs(s[e] - p) / p);
                        if (!with_dp) {
                            if (memcmp(&dp[e], &dp0[e], sizeof dp[e]) != 0)
                                ck_abort_msg("nk %d: dp written without being asked", nk);
                            continue;
                        }
                        const double g = vis ? (double)s[e] * ((double)dp0[e] - D[r]) : 0;
                        if (fabs(dp[e] - g) > 2.4e-7 * fabs(g) || (g == 0 && dp[e] != 0))
                            ck_abort_msg("nk %d lim0 %d dS(%d,%d) = %.9g, want %.9g", nk, lim0, r, c, dp[e], g);
                    }
                tiles++;
            }
    printf("test_attention_avx2: grad step, %d tiles, worst relative error of P %.2g\n", tiles, worst);
}
END_TEST

int main(void)
{
    if (!tg_cpu_avx2()) {
        printf("test_attention_avx2: no AVX2 + FMA here, nothing to test (the portable kernels are in use): skipped\n");
        return 77;
    }
    Suite *s = suite_create("attention_avx2");
    TCase *tc = tcase_create("attention_avx2");
    tcase_add_test(tc, online_step_matches_reference);
    tcase_add_test(tc, bad_scores_found_only_where_visible);
    tcase_add_test(tc, grad_step_matches_reference);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
