/* ops: RMS normalisation (tg_rmsnorm). */
#include "tg_test.h"

typedef struct { bool w; double eps; } rms_ctx;

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
    const struct { int rows, C; bool w; double eps; } cases[] = {
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
    const int rows = 300, C = 67;   /* enough rows for two threads */
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
                   TT_TESTS(rmsnorm_matches_the_formula_and_gradchecks, rmsnorm_f32_follows_f64, rmsnorm_errors));
}
