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
 * On the avx512 path (TG_ISA unset or avx512 on an AVX-512 CPU) the same
 * tests reach ops/sgemm_avx512.c through the dispatch, and the avx512_*
 * tests call it directly: random sizes off its 14-row and 16/32-column
 * tiles and its 384-deep slices in all four layouts with padded leading
 * dimensions, cuts into row and column blocks against one call bit for
 * bit, and tg_sgemm_tiles_avx512 with B, A and C ending where a
 * PROT_NONE page begins (so a read past what its contract allows
 * faults). On other paths they say so and pass.
 *
 * On a CPU without AVX2 + FMA the kernel's tests cannot run: they note it
 * (no_kernel) and stop, the others run, and the program exits 77 when
 * nothing failed, which CTest reports as skipped. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdint.h>
#include <sys/mman.h>

#include "tg_test.h"

#include "../ops/gemm_internal.h"
#include "../ops/sgemm_avx512_internal.h"
#include "../ops/sgemm_internal.h"

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
static float a_at(const prob *p, const float *A, int i, int k)
{
    return p->ta ? A[(size_t)k * p->lda + i] : A[(size_t)i * p->lda + k];
}
static float b_at(const prob *p, const float *B, int k, int j)
{
    return p->tb ? B[(size_t)j * p->ldb + k] : B[(size_t)k * p->ldb + j];
}

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
static double one_prob(gemm_fn fn, prob p, uint64_t seed, const char *what)
{
    const bool ta = p.ta, tb = p.tb;
    const int M = p.M, N = p.N, K = p.K;
    const float beta = p.beta;
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

static double one(gemm_fn fn, bool ta, bool tb, int M, int N, int K, int pad, float alpha, float beta, uint64_t seed,
                  const char *what)
{
    return one_prob(fn, (prob){ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, alpha, beta}, seed,
                    what);
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
 * picks them: 2 of the 16 on the avx2 path, none on the avx512 path,
 * whose kernel takes every product.) */
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
    /* with the AVX2 kernel on this machine, only the two dW-like products
     * skip; with the AVX-512 one, none */
    if (tg_sgemm_picks_kernel(false, false, 1, 1)) ck_assert_int_eq(cases, tg_isa_active() == TG_ISA_AVX512 ? 16 : 14);
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
    static const int Ms[] = {1, 5, 6, 7, 13, 24, 130}, Ns[] = {1, 7, 8, 9, 15, 16, 17, 33},
                     Ks[] = {0, 1, 3, 16, 24, 130};
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
                    prob p = {ta,          false, M,          N, K, (ta ? M : K) + pad, (N + 15) / 16 * 16 + pad,
                              N + 1 + pad, alpha, add ? 1 : 0};
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

/* ---- the avx512 path's kernel (ops/sgemm_avx512.c), called directly -- */

static bool on_avx512(const char *test)
{
    if (tg_isa_active() == TG_ISA_AVX512) return true;
    printf("test_sgemm: %s: not on the avx512 path (%s), not run\n", test, tg_isa_name(tg_isa_active()));
    return false;
}

static bool run_avx512(const prob *p, const float *A, const float *B, float *C)
{
    return tg_sgemm_kernel_avx512(p->ta, p->tb, p->M, p->N, p->K, p->alpha, A, p->lda, B, p->ldb, p->beta, C, p->ldc);
}

static uint32_t next_u32(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

/* A size in [1, hi]: half the time one next to a multiple of 14, 16 or
 * 32 (the kernel's rows, vector and tile widths), else anything. */
static int edge_size(uint64_t *s, int hi)
{
    static const int widths[] = {14, 16, 32};
    int n;
    if (next_u32(s) % 2) {
        const int w = widths[next_u32(s) % 3], m = 1 + (int)(next_u32(s) % (uint32_t)(hi / w));
        n = m * w + (int)(next_u32(s) % 3) - 1;
    } else n = 1 + (int)(next_u32(s) % (uint32_t)hi);
    return n < 1 ? 1 : n > hi ? hi : n;
}

/* Random problems, every layout, against the f64 reference: M, N up to
 * 300 and K up to 800 (so one, two or three 384-deep slices), odd and
 * off-width sizes, leading dimensions larger than the rows (by 0 to 40
 * floats each, independently; one problem in 4 with lda 1024 or 2048),
 * alpha and beta cases (beta = 0: C starts as NaN). */
START_TEST(avx512_kernel_random_sizes)
{
    if (!on_avx512("avx512_kernel_random_sizes")) return;
    static const float ab[][2] = {{1, 0}, {-0.75f, 1}, {2, 0.5f}, {0.5f, -2}, {1, 1}};
    uint64_t s = 12345;
    int cases = 0;
    double worst = 0;
    while (cases < 240) {
        const bool ta = cases & 1, tb = (cases >> 1) & 1;
        const int M = edge_size(&s, 300), N = edge_size(&s, 300), K = edge_size(&s, cases % 5 ? 300 : 800);
        if ((double)M * N * K > 6e6) continue;
        const int v = (int)(next_u32(&s) % 5);
        int pads[3];
        for (int i = 0; i < 3; i++) pads[i] = next_u32(&s) % 3 ? (int)(next_u32(&s) % 41) : 0;
        /* one in 8: A's rows 1024 or 2048 floats apart (A as stored is
         * then packed, not read in place) */
        if ((cases >> 2) % 4 == 3) pads[0] = ((cases >> 4) % 2 ? 1024 : 2048) - (ta ? M : K);
        const prob p = {ta,          tb,       M,       N, K, (ta ? M : K) + pads[0], (tb ? K : N) + pads[1],
                        N + pads[2], ab[v][0], ab[v][1]};
        const double w = one_prob(run_avx512, p, 1000 + 4 * (uint64_t)cases, "avx512 kernel");
        ck_assert_msg(w >= 0, "tg_sgemm_kernel_avx512 declined %dx%dx%d", M, N, K);
        if (w > worst) worst = w;
        cases++;
    }
    printf("test_sgemm: avx512 kernel, %d random problems, worst error %.3f of the bound\n", cases, worst);
}
END_TEST

/* cuts[0..n] ascending from 0 to total: n blocks of random sizes (some
 * off the tile widths) */
static int random_cuts(uint64_t *s, int total, int *cuts, int max_blocks)
{
    int n = 0;
    cuts[0] = 0;
    while (cuts[n] < total && n < max_blocks - 1) {
        const int step = 1 + (int)(next_u32(s) % (uint32_t)(total / 2 + 1));
        cuts[n + 1] = cuts[n] + step < total ? cuts[n] + step : total;
        n++;
    }
    if (cuts[n] < total) cuts[++n] = total;
    return n;
}

/* A product cut into blocks of rows, of columns, and both, one call per
 * block (as ops/gemm.c cuts it across threads, at any row or column),
 * gives the same bits as one call: every layout, alpha and beta, K
 * across slices. */
START_TEST(avx512_cuts_give_the_same_bits)
{
    if (!on_avx512("avx512_cuts_give_the_same_bits")) return;
    uint64_t s = 777;
    for (int t = 0; t < 48; t++) {
        const bool ta = t & 1, tb = (t >> 1) & 1;
        const int M = edge_size(&s, 200), N = edge_size(&s, 200), K = edge_size(&s, t % 3 ? 300 : 1000);
        const float alpha = t % 4 ? 1 : -1.5f, beta = t % 3 == 0 ? 0 : 0.75f;
        const int lda = (t >> 2) % 3 == 2 ? 1024 : (ta ? M : K) + t % 5, ldb = (tb ? K : N) + t % 7, ldc = N + t % 3;
        float *A = fill((size_t)(ta ? K : M) * lda, 40 + t), *B = fill((size_t)(tb ? N : K) * ldb, 80 + t);
        float *C0 = fill((size_t)M * ldc, 120 + t), *whole = malloc((size_t)M * ldc * sizeof(float)),
              *parts = malloc((size_t)M * ldc * sizeof(float));
        if (!whole || !parts) abort();
        memcpy(whole, C0, (size_t)M * ldc * sizeof(float));
        ck_assert(tg_sgemm_kernel_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, whole, ldc));
        for (int mode = 0; mode < 3; mode++) { /* rows, columns, both */
            int rc[9], cc[9];
            const int nr = mode != 1 ? random_cuts(&s, M, rc, 8) : (rc[0] = 0, rc[1] = M, 1);
            const int nc = mode != 0 ? random_cuts(&s, N, cc, 8) : (cc[0] = 0, cc[1] = N, 1);
            memcpy(parts, C0, (size_t)M * ldc * sizeof(float));
            for (int bi = 0; bi < nr; bi++)
                for (int bj = 0; bj < nc; bj++) {
                    const int i0 = rc[bi], j0 = cc[bj];
                    /* op(A) rows from i0: A + i0 (transposed) or A + i0 lda;
                     * op(B) columns from j0: B + j0 ldb (transposed) or B + j0 */
                    ck_assert(tg_sgemm_kernel_avx512(
                        ta, tb, rc[bi + 1] - i0, cc[bj + 1] - j0, K, alpha, A + (ta ? (size_t)i0 : (size_t)i0 * lda),
                        lda, B + (tb ? (size_t)j0 * ldb : (size_t)j0), ldb, beta, parts + (size_t)i0 * ldc + j0, ldc));
                }
            ck_assert_msg(memcmp(whole, parts, (size_t)M * ldc * sizeof(float)) == 0,
                          "%dx%dx%d ta=%d tb=%d: %s blocks (%d x %d) differ from one call", M, N, K, ta, tb,
                          mode == 0       ? "row"
                              : mode == 1 ? "column"
                                          : "row and column",
                          nr, nc);
        }
        free(A), free(B), free(C0), free(whole), free(parts);
    }
}
END_TEST

/* n floats that end where an unreadable page begins: reading past the
 * last one faults. *base and *len are what munmap needs. */
static float *at_page_end(size_t n, void **base, size_t *len)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = n * sizeof(float);
    const size_t span = (bytes + page - 1) / page * page;
    *len = span + page;
    char *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + span, page, PROT_NONE) != 0) abort();
    *base = m;
    return (float *)(m + span - bytes);
}

/* tg_sgemm_tiles_avx512 against its contract: B (K rows of ldb floats)
 * readable only up to column roundup(N, 16) of its last row, A only up to
 * its last element A(M-1, K-1), C only up to C(M-1, N-1), each followed
 * by a PROT_NONE page; A as stored (acs = 1), transposed (ars = 1) or
 * with both strides apart from 1; against the f64 reference, with C's
 * columns N .. ldc-1 untouched and, without add, C's old values (NaN)
 * not read. */
START_TEST(avx512_tiles_contract)
{
    if (!on_avx512("avx512_tiles_contract")) return;
    static const int Ms[] = {1, 13, 14, 15, 29, 40}, Ns[] = {1, 15, 16, 17, 31, 32, 33, 48, 50, 64},
                     Ks[] = {0, 1, 5, 64, 130};
    const double u = 1.0 / (1 << 24);
    uint64_t seed = 3000;
    int cases = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
                for (int l = 0; l < 6; l++, seed += 3) {
                    const int M = Ms[mi], N = Ns[ni], K = Ks[ki], n16 = (N + 15) / 16 * 16;
                    const int mode = l % 3; /* A as stored, transposed, both strides apart from 1 */
                    const bool add = l >= 3;
                    const float alpha = l == 1 ? -0.75f : l == 4 ? 0.5f : 1;
                    const int64_t ars = mode == 0 ? K + 2
                        : mode == 1               ? 1
                                                  : 2,
                                  acs = mode == 0 ? 1
                        : mode == 1               ? M + 1
                                                  : 2 * M + 1;
                    const int64_t ldb = n16 + (l % 2) * 16, ldc = N + (int64_t)(l % 3);
                    void *ab, *bb, *cb;
                    size_t al, bl, cl;
                    const size_t na = K ? (size_t)((M - 1) * ars + (K - 1) * acs + 1) : 1,
                                 nb = K ? (size_t)((K - 1) * ldb + n16) : 1, nc = (size_t)((M - 1) * ldc + N);
                    float *A = at_page_end(na, &ab, &al), *B = at_page_end(nb, &bb, &bl),
                          *C = at_page_end(nc, &cb, &cl);
                    float *C0 = malloc(nc * sizeof(float));
                    if (!C0) abort();
                    uint64_t r = seed;
                    for (size_t i = 0; i < na; i++) A[i] = frand(&r);
                    for (size_t i = 0; i < nb; i++) B[i] = (int64_t)(i % (size_t)ldb) < N ? frand(&r) : NAN;
                    for (size_t i = 0; i < nc; i++) C0[i] = add || (int64_t)(i % (size_t)ldc) >= N ? frand(&r) : NAN;
                    memcpy(C, C0, nc * sizeof(float));
                    tg_sgemm_tiles_avx512(M, N, K, alpha, A, ars, acs, B, ldb, C, ldc, add);
                    for (int i = 0; i < M; i++) {
                        for (int j = 0; j < N; j++) {
                            double sum = 0, sa = 0;
                            for (int k = 0; k < K; k++) {
                                const double t = (double)A[i * ars + k * acs] * B[k * ldb + j];
                                sum += t, sa += fabs(t);
                            }
                            const double c0 = add ? C0[i * ldc + j] : 0, ref = alpha * sum + c0;
                            const double bound = (K + 3) * u * (fabs(alpha) * sa + fabs(c0)) + 1e-30,
                                         got = C[i * ldc + j];
                            if (!(fabs(got - ref) <= bound))
                                ck_abort_msg("tiles_avx512 M=%d N=%d K=%d ars=%ld acs=%ld ldb=%ld add=%d: C(%d,%d) = "
                                             "%.9g, reference %.9g",
                                             M, N, K, (long)ars, (long)acs, (long)ldb, add, i, j, got, ref);
                        }
                        for (int64_t j = N; j < ldc && i * ldc + j < (int64_t)nc; j++)
                            ck_assert_msg(memcmp(&C[i * ldc + j], &C0[i * ldc + j], sizeof(float)) == 0,
                                          "tiles_avx512 M=%d N=%d K=%d: C(%d,%ld) past N was written", M, N, K, i,
                                          (long)j);
                    }
                    munmap(ab, al), munmap(bb, bl), munmap(cb, cl), free(C0);
                    cases++;
                }
    printf("test_sgemm: tiles_avx512, %d problems at page ends\n", cases);
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
    tcase_add_test(tc, avx512_kernel_random_sizes);
    tcase_add_test(tc, avx512_cuts_give_the_same_bits);
    tcase_add_test(tc, avx512_tiles_contract);
    suite_add_tcase(s, tc);
    const int rc = tt_run(s);
    if (rc == EXIT_SUCCESS && no_kernel) {
        printf("test_sgemm: the kernel's tests did not run here: skipped\n");
        return 77;
    }
    return rc;
}
