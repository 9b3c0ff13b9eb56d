/* The f32 product of a few rows with a weight matrix (ops/gemv_f32.c),
 * which tg_linear runs for at most TG_GEMV_MAX_ROWS rows (decoding).
 *
 * Each test runs on every kernel path this CPU offers (generic, avx2,
 * avx512: tg_isa_set_max), since CTest runs this program once, on the
 * best one.
 *
 * - Against a double-precision reference on sizes around the 16-lane
 *   chunks and the four accumulators (K = 0 .. 16 x 4 + 1 and the model's
 *   288 and 768), N across the thread cut, M = 1 .. TG_GEMV_MAX_ROWS,
 *   padded rows of X and Y (the padding untouched), with and without a
 *   bias. Bound: |computed - exact| <= (K + 2) u (sum_k |w_k x_k| + |b|),
 *   u = 2^-24 (the textbook bound for a sum of K + 1 terms, one rounding
 *   more for the products where they are not fused).
 * - The order of the sums is the one gemv_internal.h states: on the
 *   generic path (no fused multiply-adds) every element equals the same
 *   sums written out here, bit for bit.
 * - An element does not depend on its neighbours: row m of an M-row call
 *   equals a one-row call, and rows [n0, n1) of W alone give the same
 *   bits as in the whole call.
 * - The same bits on 1, 2, 3 and 8 threads.
 * - tg_linear in f32 with 1 .. TG_GEMV_MAX_ROWS rows gives tg_gemv_f32's
 *   bits (x (B,T,in) flattened), and with more rows the gemm's result
 *   within the bound. */
#include "tg_test.h"

#include <math.h>

#include "core/cpu.h"
#include "ops/gemv_internal.h"

static const double U = 0x1p-24;

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* exactly n floats (AddressSanitizer sees a read past the end) */
static float *fill(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    ck_assert_ptr_nonnull(x);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) x[i] = frand(&s);
    return x;
}

/* the paths to test: generic up to this CPU's best */
#define FOR_EACH_PATH(isa)                                                                                             \
    for (tg_isa isa = TG_ISA_GENERIC, best_ = tg_isa_cpu(); isa <= best_;                                              \
         isa = (tg_isa)(isa + 1), tg_isa_set_max(best_))                                                               \
        if (tg_isa_set_max(isa) == isa)

static const int KS[] = {0, 1, 5, 15, 16, 17, 31, 32, 47, 48, 63, 64, 65, 79, 288, 300, 768};
static const int NS[] = {1, 2, 3, 5, 16, 37, 300};

/* one problem: Y (M,N), rows ldy apart (padding NAN), from X (M,K) rows ldx apart */
typedef struct prob {
    int M, N, K, ldx, ldy;
    float *X, *W, *b, *Y;
} prob;

static prob make(int M, int N, int K, bool bias, uint64_t seed)
{
    prob p = {M, N, K, K + 3, N + 2, NULL, NULL, NULL, NULL};
    p.X = fill((size_t)M * p.ldx, seed);
    p.W = fill((size_t)N * K, seed + 1);
    p.b = bias ? fill((size_t)N, seed + 2) : NULL;
    p.Y = malloc((size_t)M * p.ldy * sizeof *p.Y);
    ck_assert_ptr_nonnull(p.Y);
    for (int i = 0; i < M * p.ldy; i++) p.Y[i] = NAN;
    return p;
}

static void run(prob *p) { tg_gemv_f32(p->M, p->N, p->K, p->X, p->ldx, p->W, p->b, p->Y, p->ldy); }

static void drop(prob *p)
{
    free(p->X);
    free(p->W);
    free(p->b);
    free(p->Y);
}

static float y_at(const prob *p, int m, int n) { return p->Y[(size_t)m * p->ldy + n]; }

/* the order gemv_internal.h states, without fused multiply-adds */
static float ordered_dot(const float *w, const float *x, int K, const float *b)
{
    const int nc = K / 16;
    float acc[4][16] = {{0}};
    int c = 0;
    for (; c + 4 <= nc; c += 4)
        for (int r = 0; r < 4; r++)
            for (int l = 0; l < 16; l++) {
                const float prod = w[(c + r) * 16 + l] * x[(c + r) * 16 + l];
                acc[r][l] = acc[r][l] + prod;
            }
    for (int r = 0; c < nc; c++, r++)
        for (int l = 0; l < 16; l++) {
            const float prod = w[c * 16 + l] * x[c * 16 + l];
            acc[r][l] = acc[r][l] + prod;
        }
    float a[16];
    for (int l = 0; l < 16; l++) a[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
    for (int h = 8; h > 0; h /= 2)
        for (int l = 0; l < h; l++) a[l] = a[l] + a[l + h];
    float s = a[0];
    for (int k = nc * 16; k < K; k++) {
        const float prod = w[k] * x[k];
        s = s + prod;
    }
    return b ? s + *b : s;
}

START_TEST(matches_reference)
{
    FOR_EACH_PATH(isa)
    {
        double worst = 0;
        for (size_t ik = 0; ik < sizeof KS / sizeof *KS; ik++)
            for (size_t in = 0; in < sizeof NS / sizeof *NS; in++)
                for (int M = 1; M <= TG_GEMV_MAX_ROWS; M++)
                    for (int bias = 0; bias < 2; bias++) {
                        const int N = NS[in], K = KS[ik];
                        prob p = make(M, N, K, bias, 100 * ik + 10 * in + M);
                        run(&p);
                        for (int m = 0; m < M; m++) {
                            const float *x = p.X + (size_t)m * p.ldx;
                            for (int n = 0; n < N; n++) {
                                const float *w = p.W + (size_t)n * K;
                                double exact = p.b ? p.b[n] : 0, mag = p.b ? fabs(p.b[n]) : 0;
                                for (int k = 0; k < K; k++) {
                                    exact += (double)w[k] * x[k];
                                    mag += fabs((double)w[k] * x[k]);
                                }
                                const double err = fabs(y_at(&p, m, n) - exact), bound = (K + 2) * U * mag;
                                ck_assert_msg(err <= bound,
                                              "%s path, M %d N %d K %d bias %d: y[%d][%d] = %.9g, "
                                              "exact %.9g, error %.3g over the bound %.3g",
                                              tg_isa_name(isa), M, N, K, bias, m, n, y_at(&p, m, n), exact, err, bound);
                                if (bound > 0 && err / bound > worst) worst = err / bound;
                                if (isa == TG_ISA_GENERIC)
                                    ck_assert_msg(y_at(&p, m, n) == ordered_dot(w, x, K, p.b ? p.b + n : NULL),
                                                  "generic path, M %d N %d K %d: y[%d][%d] is not the stated order's",
                                                  M, N, K, m, n);
                            }
                            for (int n = N; n < p.ldy; n++) ck_assert(isnan(y_at(&p, m, n))); /* padding kept */
                        }
                        drop(&p);
                    }
        printf("%s path: worst error / bound %.3f\n", tg_isa_name(isa), worst);
    }
}
END_TEST

START_TEST(elements_do_not_depend_on_neighbours)
{
    FOR_EACH_PATH(isa)
    {
        const int M = TG_GEMV_MAX_ROWS, N = 301, K = 289;
        prob p = make(M, N, K, true, 7);
        run(&p);
        /* each row of X alone */
        for (int m = 0; m < M; m++) {
            float *y = malloc((size_t)N * sizeof *y);
            tg_gemv_f32(1, N, K, p.X + (size_t)m * p.ldx, K, p.W, p.b, y, N);
            for (int n = 0; n < N; n++) ck_assert_msg(y[n] == y_at(&p, m, n), "%s: row %d alone", tg_isa_name(isa), m);
            free(y);
        }
        /* a block of rows of W alone */
        const int cuts[][2] = {{0, 1}, {1, 2}, {3, 20}, {150, 301}, {300, 301}};
        for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
            const int n0 = cuts[c][0], n1 = cuts[c][1];
            float *y = malloc((size_t)M * (n1 - n0) * sizeof *y);
            tg_gemv_f32(M, n1 - n0, K, p.X, p.ldx, p.W + (size_t)n0 * K, p.b + n0, y, n1 - n0);
            for (int m = 0; m < M; m++)
                for (int n = n0; n < n1; n++)
                    ck_assert_msg(y[(size_t)m * (n1 - n0) + n - n0] == y_at(&p, m, n), "%s: rows [%d, %d) alone",
                                  tg_isa_name(isa), n0, n1);
            free(y);
        }
        drop(&p);
    }
}
END_TEST

START_TEST(threads_give_the_same_bits)
{
    FOR_EACH_PATH(isa)
    {
        const int shapes[][3] = {{1, 32000, 288}, {1, 768, 288}, {2, 288, 768}, {TG_GEMV_MAX_ROWS, 1000, 100}};
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            const int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            tg_set_num_threads(1);
            prob one = make(M, N, K, i % 2, 11 + i);
            run(&one);
            const int counts[] = {2, 3, 8};
            for (int t = 0; t < 3; t++) {
                tg_set_num_threads(counts[t]);
                prob p = make(M, N, K, i % 2, 11 + i);
                run(&p);
                ck_assert_msg(memcmp(p.Y, one.Y, (size_t)M * p.ldy * sizeof *p.Y) == 0,
                              "%s path, (%d,%d,%d) on %d threads differs from 1 thread", tg_isa_name(isa), M, N, K,
                              counts[t]);
                drop(&p);
            }
            drop(&one);
        }
        tg_set_num_threads(1);
    }
}
END_TEST

START_TEST(linear_takes_it_for_a_few_rows)
{
    FOR_EACH_PATH(isa)
    {
        const int in = 70, out = 45;
        for (int rows = 1; rows <= TG_GEMV_MAX_ROWS + 2; rows++)
            for (int bias = 0; bias < 2; bias++) {
                tg_graph *g = tg_graph_new();
                tg_tensor *x = tt_randn_dt(g, TG_F32, 3, (int[]){1, rows, in}, 3 + rows); /* (1,rows,in) */
                tg_tensor *w = tt_randn_dt(g, TG_F32, 2, (int[]){out, in}, 4); /* (out,in) */
                tg_tensor *b = bias ? tt_randn_dt(g, TG_F32, 1, (int[]){out}, 5) : NULL; /* (out) */
                tg_tensor *y = tg_linear(g, x, w, b); /* (1,rows,out) */
                ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
                const float *X = x->data, *W = w->data, *B = b ? b->data : NULL, *Y = y->data;
                float *ref = malloc((size_t)rows * out * sizeof *ref);
                tg_gemv_f32(rows, out, in, X, in, W, B, ref, out);
                for (int i = 0; i < rows * out; i++) {
                    if (rows <= TG_GEMV_MAX_ROWS) {
                        ck_assert_msg(Y[i] == ref[i], "%s path, %d rows: linear is not gemv's bits", tg_isa_name(isa),
                                      rows);
                    } else { /* the gemm: the same products to rounding */
                        double mag = B ? fabs(B[i % out]) : 0;
                        for (int k = 0; k < in; k++) mag += fabs((double)X[i / out * in + k] * W[i % out * in + k]);
                        ck_assert_msg(fabs(Y[i] - ref[i]) <= 2 * (in + 2) * U * mag, "%s path, %d rows",
                                      tg_isa_name(isa), rows);
                    }
                }
                free(ref);
                tg_graph_free(g);
            }
    }
}
END_TEST

int main(void)
{
    return tt_main("gemv", "gemv", 120,
                   TT_TESTS(matches_reference, elements_do_not_depend_on_neighbours, threads_give_the_same_bits,
                            linear_takes_it_for_a_few_rows));
}
