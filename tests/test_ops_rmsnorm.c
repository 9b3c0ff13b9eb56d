/* ops: RMS normalisation (tg_rmsnorm). */
#include "tg_test.h"

#include "ops/kernels_internal.h"

typedef struct {
    bool w;
    double eps;
} rms_ctx;

static tg_tensor *rms_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const rms_ctx *c = ctx;
    return tg_rmsnorm(g, in[0], c->w ? in[1] : NULL, c->eps);
}

/* the formula written out: x / sqrt(mean(x^2) + eps) * w */
static double rms_naive(const double *xr, const double *w, int C, double eps, int j)
{
    double ss = 0;
    for (int k = 0; k < C; k++) ss += xr[k] * xr[k];
    return xr[j] / sqrt(ss / C + eps) * (w ? w[j] : 1);
}

START_TEST(rmsnorm_matches_the_formula_and_gradchecks)
{
    const struct {
        int rows, C;
        bool w;
        double eps;
    } cases[] = {
        {6, 5, true, 1e-5}, {3, 1, true, 1e-5}, {4, 7, false, 1e-6}, {1, 33, true, 0.5}, {2, 3, true, 1e-5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tg_graph *g = tg_graph_new();
        tg_tensor *in[2] = {tt_randn(g, TT_SHAPE(2, cases[c].rows, cases[c].C), 20 + c),
                            tt_randn(g, TT_SHAPE(cases[c].C), 40 + c)};
        rms_ctx ctx = {cases[c].w, cases[c].eps};
        tg_tensor *y = rms_fn(g, in, &ctx);
        ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
        const int C = cases[c].C;
        for (int64_t r = 0; r < in[0]->numel / C; r++)
            for (int j = 0; j < C; j++) {
                const double want = rms_naive((double *)in[0]->data + r * C, ctx.w ? in[1]->data : NULL, C, ctx.eps, j);
                ck_assert_double_eq_tol(((double *)y->data)[r * C + j], want, 1e-14 * (1 + fabs(want)));
            }
        tt_assert_gradcheck(rms_fn, &ctx, ctx.w ? 2 : 1, in);
        tg_graph_free(g);
    }
}
END_TEST

/* f32 (sums in double) follows f64 to float rounding, forward and backward,
 * on 1 and 2 threads (the same numbers) */
START_TEST(rmsnorm_f32_follows_f64)
{
    const int rows = 300, C = 67; /* enough rows for two threads */
    double y32[2][rows * C], gx32[2][rows * C], gw32[2][C];
    for (int th = 1; th <= 2; th++) {
        tg_set_num_threads(th);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, TT_SHAPE(rows, C), 1), *w = tt_randn(g, TT_SHAPE(C), 2);
        tg_tensor *x32 = tg_tensor_new(g, TG_F32, 2, x->shape), *w32 = tg_tensor_new(g, TG_F32, 1, w->shape);
        for (int64_t i = 0; i < x->numel; i++) ((float *)x32->data)[i] = (float)((double *)x->data)[i];
        for (int64_t i = 0; i < w->numel; i++) ((float *)w32->data)[i] = (float)((double *)w->data)[i];
        tg_tensor_set_requires_grad(g, x32, true);
        tg_tensor_set_requires_grad(g, w32, true);
        tg_tensor *y = tg_rmsnorm(g, x, w, 1e-5), *y2 = tg_rmsnorm(g, x32, w32, 1e-5);
        ck_assert_ptr_nonnull(y2);
        ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_mul(g, y, y))), 0);
        ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_mul(g, y2, y2))), 0);
        for (int i = 0; i < rows * C; i++) {
            y32[th - 1][i] = ((float *)y2->data)[i];
            gx32[th - 1][i] = ((float *)x32->grad)[i];
            ck_assert_double_eq_tol(y32[th - 1][i], ((double *)y->data)[i], 2e-6 * (1 + fabs(((double *)y->data)[i])));
            ck_assert_double_eq_tol(gx32[th - 1][i], ((double *)x->grad)[i], 1e-5 * (1 + fabs(((double *)x->grad)[i])));
        }
        for (int j = 0; j < C; j++) {
            gw32[th - 1][j] = ((float *)w32->grad)[j];
            ck_assert_double_eq_tol(gw32[th - 1][j], ((double *)w->grad)[j], 1e-4 * (1 + fabs(((double *)w->grad)[j])));
        }
        tg_graph_free(g);
    }
    tg_set_num_threads(1);
    ck_assert_mem_eq(y32[0], y32[1], sizeof y32[0]);
    ck_assert_mem_eq(gx32[0], gx32[1], sizeof gx32[0]);
    for (int j = 0; j < C; j++) ck_assert_double_eq_tol(gw32[0][j], gw32[1][j], 1e-5 * (1 + fabs(gw32[0][j])));
}
END_TEST

/* One f32 forward and backward (dy seeded, x and w needing grad as asked;
 * with add, x's gradient already holds a contribution) on the path in
 * use: y, dx and dw copied out. */
static void rms_f32_run(int rows, int C, bool with_w, bool x_grad, bool add, float *y, float *gx, float *gw)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_to_f32(g, tt_randn(g, TT_SHAPE(rows, C), 100 + C));
    tg_tensor *w = with_w ? tt_to_f32(g, tt_randn(g, TT_SHAPE(C), 200 + C)) : NULL;
    if (!x_grad) tg_tensor_set_requires_grad(g, x, false);
    tg_tensor *out = tg_rmsnorm(g, x, w, 1e-5);
    ck_assert_msg(out != NULL, "%s", tg_graph_error(g));
    if (add) out = tg_add(g, out, tg_mul(g, x, x)); /* x gets a second contribution, added after */
    ck_assert_msg(out != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, out, tt_seed_values(g, TG_F32, out->numel, 300 + C)), 0);
    memcpy(y, out->data, (size_t)rows * C * sizeof(float));
    if (x_grad) memcpy(gx, x->grad, (size_t)rows * C * sizeof(float));
    if (w) memcpy(gw, w->grad, (size_t)C * sizeof(float));
    tg_graph_free(g);
}

/* f32 on the avx512 path (ops/rmsnorm_avx512.c) gives the plain code's
 * bits (the generic path), forward and backward, with and without w, dx
 * stored or added or not wanted, rows off the groups of 8 and widths off
 * the vectors */
START_TEST(rmsnorm_f32_paths_same_bits)
{
    if (tg_isa_cpu() < TG_ISA_AVX512) return; /* nothing to compare with */
    const int shapes[][2] = {{1, 1}, {3, 5}, {8, 16}, {9, 17}, {17, 288}, {64, 256}, {23, 100}, {70, 768}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int mode = 0; mode < 8; mode++) {
            const int rows = shapes[s][0], C = shapes[s][1];
            const bool with_w = mode & 1, x_grad = (mode & 2) || !with_w, add = (mode & 4) && x_grad;
            const size_t n = (size_t)rows * C;
            float *r[2][3];
            for (int p = 0; p < 2; p++) {
                r[p][0] = calloc(n, sizeof(float)), r[p][1] = calloc(n, sizeof(float));
                r[p][2] = calloc((size_t)C, sizeof(float));
                tg_isa_set_max(p ? TG_ISA_AVX512 : TG_ISA_GENERIC);
                rms_f32_run(rows, C, with_w, x_grad, add, r[p][0], r[p][1], r[p][2]);
            }
            tg_isa_set_max(TG_ISA_AVX512);
            ck_assert_msg(!memcmp(r[0][0], r[1][0], n * sizeof(float)), "y differs, %d x %d mode %d", rows, C, mode);
            ck_assert_msg(!memcmp(r[0][1], r[1][1], n * sizeof(float)), "dx differs, %d x %d mode %d", rows, C, mode);
            ck_assert_msg(!memcmp(r[0][2], r[1][2], (size_t)C * sizeof(float)), "dw differs, %d x %d mode %d", rows, C,
                          mode);
            for (int p = 0; p < 2; p++) free(r[p][0]), free(r[p][1]), free(r[p][2]);
        }
}
END_TEST

/* The AVX-512 rows against ops/rmsnorm.c's plain sums written out here
 * (this file is compiled without fused multiply-adds), down to the
 * doubles the op keeps: rstd and the dw sums, whose last bits rarely
 * reach a float */
START_TEST(rmsnorm_avx512_rows_are_the_plain_sums)
{
    if (tg_isa_cpu() < TG_ISA_AVX512) return;
    tg_isa_set_max(TG_ISA_AVX512);
    const int shapes[][2] = {{1, 1}, {5, 7}, {8, 8}, {13, 33}, {16, 288}, {11, 300}};
    uint64_t st = 7;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int rows = shapes[s][0], C = shapes[s][1];
        const size_t n = (size_t)rows * C;
        float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float)), *w = malloc((size_t)C * sizeof(float));
        float *y = malloc(n * sizeof(float)), *gx = malloc(n * sizeof(float));
        double *rstd = malloc((size_t)rows * sizeof(double)), *gw = calloc((size_t)C, sizeof(double));
        for (size_t i = 0; i < n; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = (float)((double)(st >> 11) * 0x1p-53 * 4 - 2);
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            dy[i] = (float)((double)(st >> 11) * 0x1p-53 * 2 - 1);
        }
        for (int j = 0; j < C; j++) w[j] = 0.5f + (float)j / (float)C;
        ck_assert(tg_rmsnorm_forward_avx512(rows, C, x, w, 1e-5, y, rstd));
        ck_assert(tg_rmsnorm_backward_avx512(rows, C, x, w, dy, rstd, gx, true, gw));
        double *want_gw = calloc((size_t)C, sizeof(double));
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * C, *dyr = dy + (size_t)r * C;
            volatile double ss = 0, gxs = 0; /* one rounding per operation */
            for (int j = 0; j < C; j++) {
                volatile double p = (double)xr[j] * xr[j];
                ss = ss + p;
            }
            const double sr = 1.0 / sqrt(ss / C + 1e-5);
            ck_assert_msg(rstd[r] == sr, "rstd row %d of %d x %d", r, rows, C);
            for (int j = 0; j < C; j++) {
                volatile double p = (double)dyr[j] * w[j] * xr[j];
                gxs = gxs + p;
                ck_assert_msg(y[(size_t)r * C + j] == (float)(xr[j] * sr * w[j]), "y %d,%d", r, j);
            }
            const double c = gxs * sr * sr / C;
            for (int j = 0; j < C; j++) {
                volatile double p = xr[j] * c, d = (double)dyr[j] * w[j] - p;
                ck_assert_msg(gx[(size_t)r * C + j] == (float)(sr * d), "dx %d,%d of %d x %d", r, j, rows, C);
                volatile double q = (double)dyr[j] * xr[j] * sr;
                want_gw[j] = want_gw[j] + q;
            }
        }
        ck_assert_msg(!memcmp(gw, want_gw, (size_t)C * sizeof(double)), "dw sums of %d x %d", rows, C);
        memset(gw, 0, (size_t)C * sizeof(double)); /* dw alone (x needs no gradient) */
        ck_assert(tg_rmsnorm_backward_avx512(rows, C, x, w, dy, rstd, NULL, true, gw));
        ck_assert_msg(!memcmp(gw, want_gw, (size_t)C * sizeof(double)), "dw alone, %d x %d", rows, C);
        free(x), free(dy), free(w), free(y), free(gx), free(rstd), free(gw), free(want_gw);
    }
}
END_TEST

START_TEST(rmsnorm_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, 2, (int[]){2, 3});
    ck_assert_ptr_null(tg_rmsnorm(g, x, tg_tensor_new(g, TG_F32, 1, (int[]){4}), 1e-5));
    tt_assert_error(g, "rmsnorm: w must have shape (C) = (3) for x f32 (2,3), got f32 (4)");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rmsnorm(g, x, tg_tensor_new(g, TG_F64, 1, (int[]){3}), 1e-5));
    tt_assert_error(g, "rmsnorm: dtypes differ");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rmsnorm(g, x, NULL, 0));
    tt_assert_error(g, "rmsnorm: eps must be > 0 and finite, got 0 (x f32 (2,3))");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rmsnorm(g, tg_scalar(g, TG_F32, 1), NULL, 1e-5));
    tt_assert_error(g, "rmsnorm: x must have at least 1 dimension, got f32 ()");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rmsnorm(g, NULL, NULL, 1e-5));
    tt_assert_error(g, "rmsnorm: input 0 is NULL");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_rmsnorm", "rmsnorm", 0,
                   TT_TESTS(rmsnorm_matches_the_formula_and_gradchecks, rmsnorm_f32_follows_f64,
                            rmsnorm_f32_paths_same_bits, rmsnorm_avx512_rows_are_the_plain_sums, rmsnorm_errors));
}
