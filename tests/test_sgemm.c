/* tapegrad's own f32 gemm kernel (ops/sgemm.c) against a double-precision
 * reference, in all four layouts, on sizes that cross every blocking edge
 * (6-row and 16-column tiles, 96-row, 128-column and 256-deep blocks),
 * with padded leading dimensions, alpha and beta; and the dispatcher
 * tg_sgemm, and the threaded tg_gemm_f32, on both of its sides; and the
 * unpacked entry tg_sgemm_tiles with the transpose tg_sgemm_pack_t that
 * the attention uses.
 *
 * The tolerance is the textbook bound for a sum of K products in float,
 * |computed - exact| <= (K + 3) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|),
 * u = 2^-24: any dropped, doubled or misplaced term breaks it.
 *
 * On a CPU without AVX2 + FMA the kernel's tests cannot run: they note it
 * (no_kernel) and stop, the others run, and the program exits 77 when
 * nothing failed, which CTest reports as skipped. */
#include <stdint.h>

#include "tg_test.h"

#include "../ops/gemm_internal.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* Set by a test that found no AVX2 + FMA kernel to test. */
static bool no_kernel;

/* Exactly n floats (so that AddressSanitizer sees a read past the end). */
static float *fill(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    if (!x) abort();
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) x[i] = frand(&s);
    return x;
}

typedef struct {
    bool ta, tb;
    int M, N, K, lda, ldb, ldc;
    float alpha, beta;
} prob;

/* op(A)(i,k) and op(B)(k,j) of a problem's storage */
static float a_at(const prob *p, const float *A, int i, int k) { return p->ta ? A[(size_t)k * p->lda + i] : A[(size_t)i * p->lda + k]; }
static float b_at(const prob *p, const float *B, int k, int j) { return p->tb ? B[(size_t)j * p->ldb + k] : B[(size_t)k * p->ldb + j]; }

/* Checks C (after the call) against the reference from A, B and C0 (before);
 * the padding columns of C must still hold C0's values. Returns the worst
 * |error| / bound seen (fails the test above 1). */
static double check_against_reference(const prob *p, const float *A, const float *B, const float *C0, const float *C,
                                      const char *what)
{
    const double u = 1.0 / (1 << 24);
    double worst = 0;
    for (int i = 0; i < p->M; i++) {
        for (int j = 0; j < p->N; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < p->K; k++) {
                const double t = (double)a_at(p, A, i, k) * b_at(p, B, k, j);
                s += t;
                sa += fabs(t);
            }
            const double c0 = p->beta != 0 ? C0[(size_t)i * p->ldc + j] : 0;
            const double ref = p->alpha * s + p->beta * c0;
            const double bound = (p->K + 3) * u * (fabs(p->alpha) * sa + fabs(p->beta * c0)) + 1e-30;
            const double got = C[(size_t)i * p->ldc + j], err = fabs(got - ref);
            if (!(err <= bound)) /* (a Check assertion per element would write to its pipe each time) */
                ck_abort_msg("%s ta=%d tb=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d alpha=%g beta=%g: "
                          "C(%d,%d) = %.9g, reference %.9g, error %.3g > bound %.3g",
                          what, p->ta, p->tb, p->M, p->N, p->K, p->lda, p->ldb, p->ldc, p->alpha, p->beta, i, j, got,
                          ref, err, bound);
            if (err / bound > worst) worst = err / bound;
        }
        for (int j = p->N; j < p->ldc; j++)
            if (memcmp(&C[(size_t)i * p->ldc + j], &C0[(size_t)i * p->ldc + j], sizeof(float)) != 0)
                ck_abort_msg("%s M=%d N=%d K=%d: padding C(%d,%d) was written", what, p->M, p->N, p->K, i, j);
    }
    return worst;
}

typedef bool (*gemm_fn)(const prob *p, const float *A, const float *B, float *C);

static bool run_kernel(const prob *p, const float *A, const float *B, float *C)
{
    return tg_sgemm_kernel(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
}

static bool run_dispatch(const prob *p, const float *A, const float *B, float *C)
{
    tg_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}

static bool run_threaded(const prob *p, const float *A, const float *B, float *C)
{
    tg_gemm_f32(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
    return true;
}

/* One problem through fn. beta = 0 starts C as NaN: it must not be read.
 * Returns the worst error ratio, or -1 when fn has no kernel here. */
static double one(gemm_fn fn, bool ta, bool tb, int M, int N, int K, int pad, float alpha, float beta, uint64_t seed,
                  const char *what)
{
    prob p = {ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, alpha, beta};
    const size_t na = (size_t)(ta ? K : M) * p.lda, nb = (size_t)(tb ? N : K) * p.ldb, nc = (size_t)M * p.ldc;
    float *A = fill(na, seed), *B = fill(nb, seed + 1), *C0 = fill(nc, seed + 2), *C = fill(nc, 0);
    if (beta == 0)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C0[(size_t)i * p.ldc + j] = NAN;
    memcpy(C, C0, nc * sizeof *C);
    double worst = -1;
    if (fn(&p, A, B, C)) worst = check_against_reference(&p, A, B, C0, C, what);
    free(A), free(B), free(C0), free(C);
    return worst;
}

START_TEST(kernel_matches_reference)
{
    static const int Ms[] = {1, 5, 6, 7, 97, 193}, Ns[] = {1, 15, 16, 17, 129, 300}, Ks[] = {1, 8, 9, 256, 257, 600};
    static const float ab[][2] = {{1, 0}, {-0.75f, 1}, {2, 0.5f}};
    int cases = 0;
    double worst = 0;
    uint64_t seed = 1;
    for (int l = 0; l < 4; l++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
                    const int M = Ms[mi], N = Ns[ni], K = Ks[ki];
                    if ((double)M * N * K > 4e6) continue;
                    /* alpha/beta and padding vary with every size */
                    const int v = (int)((l + mi + ni + ki) % 3), pad = (mi + ni + ki) % 2 ? 3 : 0;
                    const double w = one(run_kernel, l & 1, l >> 1, M, N, K, pad, ab[v][0], ab[v][1], seed, "kernel");
                    seed += 3;
                    if (w < 0) {
                        printf("test_sgemm: no AVX2+FMA kernel on this machine; only the OpenBLAS path is tested\n");
                        no_kernel = true;
                        return;
                    }
                    cases++;
                    if (w > worst) worst = w;
                }
    printf("test_sgemm: kernel, %d problems, worst error %.3f of the bound\n", cases, worst);
    ck_assert_int_gt(cases, 400);
}
END_TEST

/* Both sides of the dispatcher (small inner sizes: the kernel; large
 * ones: OpenBLAS) and the threaded split, at 1 and 3 threads. */
START_TEST(dispatch_and_threads_match_reference)
{
    static const int shapes[][3] = {{2048, 65, 128}, {300, 64, 700}, {64, 300, 100}, {260, 300, 260}, {31, 513, 200}};
    for (int threads = 1; threads <= 3; threads += 2) {
        tg_set_num_threads(threads);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int l = 0; l < 4; l++) {
                one(run_dispatch, l & 1, l >> 1, shapes[s][0], shapes[s][1], shapes[s][2], l, 1, l == 3 ? 1 : 0, 7 + s,
                    "tg_sgemm");
                one(run_threaded, l & 1, l >> 1, shapes[s][0], shapes[s][1], shapes[s][2], l, 0.5f, l == 2 ? 1 : 0,
                    17 + s, "tg_gemm_f32");
            }
    }
    tg_set_num_threads(1);
}
END_TEST

/* Any block of rows or columns computed on its own gives the same bits as
 * in the whole product: what lets tg_gemm_f32 split it across threads. */
START_TEST(blocks_give_the_same_bits)
{
    for (int l = 0; l < 4; l++) {
        const bool ta = l & 1, tb = l >> 1;
        const int M = 101, N = 150, K = 300, lda = ta ? M : K, ldb = tb ? K : N;
        float *A = fill((size_t)(ta ? K : M) * lda, 3), *B = fill((size_t)(tb ? N : K) * ldb, 4);
        float *whole = fill((size_t)M * N, 5), *parts = fill((size_t)M * N, 6);
        const bool have = tg_sgemm_kernel(ta, tb, M, N, K, 1, A, lda, B, ldb, 0, whole, N);
        /* rows [0,37) [37,101), then columns [0,70) [70,150) of the rows, as
         * tg_gemm_f32 cuts them: op(A) rows start at A + i (transposed) or
         * A + i lda; op(B) columns at B + j ldb (transposed) or B + j */
        const int r0 = 37, c0 = 70;
        if (have) {
            tg_sgemm_kernel(ta, tb, r0, N, K, 1, A, lda, B, ldb, 0, parts, N);
            tg_sgemm_kernel(ta, tb, M - r0, c0, K, 1, A + (ta ? r0 : (size_t)r0 * lda), lda, B, ldb, 0,
                            parts + (size_t)r0 * N, N);
            tg_sgemm_kernel(ta, tb, M - r0, N - c0, K, 1, A + (ta ? r0 : (size_t)r0 * lda), lda,
                            B + (tb ? (size_t)c0 * ldb : (size_t)c0), ldb, 0, parts + (size_t)r0 * N + c0, N);
        }
        const bool same = memcmp(whole, parts, (size_t)M * N * sizeof(float)) == 0;
        free(A), free(B), free(whole), free(parts);
        if (!have) {
            no_kernel = true;
            return;
        }
        ck_assert_msg(same, "ta=%d tb=%d: blocks differ", ta, tb);
    }
}
END_TEST

/* tg_gemm_f32 cut into parts at 3 threads gives the same bits as one call
 * whenever the kernel does the product: rows cut (M >= N) and columns cut
 * (N > M, N past one 128-column block, K past one 256-deep slice).
 * (OpenBLAS's products, the larger ones and the long ones with A stored
 * transposed, agree only to rounding across thread counts: its edge
 * kernels sum in another order. Those are skipped here, as tg_sgemm
 * picks them: 2 of the 16.) */
START_TEST(threads_give_the_same_bits)
{
    static const int shapes[][3] = {{64, 120, 300}, {300, 200, 100}, {40, 600, 100}, {500, 64, 700}};
    int cases = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int l = 0; l < 4; l++) {
            const bool ta = l & 1, tb = l >> 1;
            const int M = shapes[sh][0], N = shapes[sh][1], K = shapes[sh][2], lda = ta ? M : K, ldb = tb ? K : N;
            if (!tg_sgemm_picks_kernel(ta, tb, N, K)) continue;
            cases++;
            float *A = fill((size_t)(ta ? K : M) * lda, 8), *B = fill((size_t)(tb ? N : K) * ldb, 9);
            float *one_t = fill((size_t)M * N, 10), *three_t = fill((size_t)M * N, 10);
            tg_set_num_threads(1);
            tg_gemm_f32(ta, tb, M, N, K, 1, A, lda, B, ldb, 0.5f, one_t, N);
            tg_set_num_threads(3);
            tg_gemm_f32(ta, tb, M, N, K, 1, A, lda, B, ldb, 0.5f, three_t, N);
            tg_set_num_threads(1);
            const bool same = memcmp(one_t, three_t, (size_t)M * N * sizeof(float)) == 0;
            free(A), free(B), free(one_t), free(three_t);
            ck_assert_msg(same, "%dx%dx%d ta=%d tb=%d: 3 threads differ from 1", M, N, K, ta, tb);
        }
    /* with the kernel on this machine, only the two dW-like products skip */
    if (tg_sgemm_picks_kernel(false, false, 1, 1)) ck_assert_int_eq(cases, 14);
    else no_kernel = true;
}
END_TEST

/* K = 0 leaves beta C (the kernel declines; OpenBLAS scales). */
START_TEST(empty_inner_dimension)
{
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {0}, B[1] = {0};
    ck_assert(!tg_sgemm_kernel(false, false, 2, 3, 0, 1, A, 1, B, 3, 0.5f, C, 3));
    ck_assert_float_eq(C[5], 6);
    tg_sgemm(false, false, 2, 3, 0, 1, A, 1, B, 3, 0.5f, C, 3);
    for (int i = 0; i < 6; i++) ck_assert_float_eq(C[i], 0.5f * (i + 1));
}
END_TEST

/* tg_sgemm_tiles (no packing; A as stored or transposed through its two
 * strides, B read 16 columns wide): against the reference on sizes around
 * the 6 x 16 tile, K = 0 included. B's columns past N hold NaN (they feed
 * only columns that are not stored); without add, C starts as NaN (it
 * must not be read); C's padding columns must stay as they were. */
START_TEST(tiles_match_reference)
{
    static const int Ms[] = {1, 5, 6, 7, 13, 24, 130}, Ns[] = {1, 7, 8, 9, 15, 16, 17, 33}, Ks[] = {0, 1, 3, 16, 24, 130};
    int cases = 0;
    double worst = 0;
    uint64_t seed = 900;
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
                for (int l = 0; l < 4; l++, seed += 3) {
                    const int M = Ms[mi], N = Ns[ni], K = Ks[ki], pad = (int)(mi + ni) % 3;
                    const bool ta = l & 1, add = l >> 1;
                    const float alpha = l == 1 ? -0.75f : l == 2 ? 0.5f : 1;
                    prob p = {ta, false, M, N, K, (ta ? M : K) + pad, (N + 15) / 16 * 16 + pad, N + 1 + pad, alpha,
                              add ? 1 : 0};
                    const size_t na = (size_t)(ta ? K : M) * p.lda + 1, nb = (size_t)K * p.ldb + 1,
                                 nc = (size_t)M * p.ldc;
                    float *A = fill(na, seed), *B = fill(nb, seed + 1), *C0 = fill(nc, seed + 2), *C = fill(nc, 0);
                    for (int k = 0; k < K; k++)
                        for (int j = N; j < p.ldb; j++) B[(size_t)k * p.ldb + j] = NAN;
                    if (!add)
                        for (int i = 0; i < M; i++)
                            for (int j = 0; j < N; j++) C0[(size_t)i * p.ldc + j] = NAN;
                    memcpy(C, C0, nc * sizeof *C);
                    const int64_t ars = ta ? 1 : p.lda, acs = ta ? p.lda : 1;
                    const bool have = tg_sgemm_tiles(M, N, K, alpha, A, ars, acs, B, p.ldb, C, p.ldc, add);
                    const double w = have ? check_against_reference(&p, A, B, C0, C, "tiles") : -1;
                    free(A), free(B), free(C0), free(C);
                    if (!have) {
                        printf("test_sgemm: no AVX2+FMA kernel on this machine; tg_sgemm_tiles is not used\n");
                        no_kernel = true;
                        return;
                    }
                    cases++;
                    if (w > worst) worst = w;
                }
    printf("test_sgemm: tiles, %d problems, worst error %.3f of the bound\n", cases, worst);
    ck_assert_int_eq(cases, 7 * 8 * 6 * 4);
}
END_TEST

/* tg_sgemm_pack_t: the exact transpose, zero past column n, on sizes
 * around its 8 x 8 blocks. */
START_TEST(pack_t_is_the_transpose)
{
    static const int ns[] = {1, 7, 8, 9, 17, 64, 130}, ws[] = {1, 3, 8, 16, 17, 32};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof ws / sizeof *ws; b++) {
            const int n = ns[a], w = ws[b], ld = w + (int)a, ldd = n + 16 + (int)b;
            float *src = fill((size_t)n * ld, 40 + a), *dst = fill((size_t)w * ldd, 50 + b);
            tg_sgemm_pack_t(dst, ldd, src, ld, n, w);
            for (int d = 0; d < w; d++)
                for (int j = 0; j < ldd; j++) {
                    const float want = j < n ? src[(size_t)j * ld + d] : 0, got = dst[(size_t)d * ldd + j];
                    if (memcmp(&want, &got, sizeof got) != 0)
                        ck_abort_msg("n=%d w=%d ld=%d ldd=%d: dst(%d,%d) = %g, want %g", n, w, ld, ldd, d, j, got,
                                     want);
                }
            free(src), free(dst);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sgemm");
    TCase *tc = tcase_create("sgemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kernel_matches_reference);
    tcase_add_test(tc, dispatch_and_threads_match_reference);
    tcase_add_test(tc, blocks_give_the_same_bits);
    tcase_add_test(tc, threads_give_the_same_bits);
    tcase_add_test(tc, empty_inner_dimension);
    tcase_add_test(tc, tiles_match_reference);
    tcase_add_test(tc, pack_t_is_the_transpose);
    suite_add_tcase(s, tc);
    const int rc = tt_run(s);
    if (rc == EXIT_SUCCESS && no_kernel) {
        printf("test_sgemm: the kernel's tests did not run here: skipped\n");
        return 77;
    }
    return rc;
}
