/* The f32 speed paths against f64 references computed independently:
 * GELU (exact erf) forward and backward against libm erfc/exp over a dense
 * grid and at extreme inputs, and the f32 layernorm backward (all-f32
 * arithmetic, dw/db summed in f32 over 8 rows at a time) against the f64
 * kernel on rows with a large common offset, a length that is not a
 * multiple of 8 and a row count that is not a multiple of 8. */
#include "tg_test.h"

#include <float.h>

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* Phi(x) = erfc(-x / sqrt 2) / 2 in f64 (erfc keeps the tail exact) */
static double ref_cdf(double x) { return 0.5 * erfc(-x * INV_SQRT2); }

/* Runs f32 GELU forward and backward (dy = 1) on n points. */
static void gelu_f32(tg_graph *g, int n, const float *xv, const float **y, const float **dx)
{
    float *seed = malloc((size_t)n * sizeof *seed);
    for (int i = 0; i < n; i++) seed[i] = 1.0f;
    tg_tensor *x = tg_tensor_from(g, TG_F32, TT_SHAPE(n), xv);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, x, true), 0);
    tg_tensor *yt = tg_gelu(g, x, TG_GELU_ERF);
    ck_assert_ptr_nonnull(yt);
    ck_assert_int_eq(tg_graph_backward_seeded(g, yt, seed), 0);
    free(seed);
    *y = yt->data;
    *dx = x->grad;
}

/* x = -10 .. 10 every 1e-3 (20001 points) and |x| up to 1e30.
 * Bounds, from tg_fphi's (ops/fastmath_internal.h: Phi within 1e-7
 * absolute, checked by test_ops_speedcheck) and the f32 rounding of the
 * products:
 *   forward  |y - x Phi(x)|         <= 1e-7 |x| + 6e-8 |y|
 *   backward |dx - (Phi + x phi)|   <= 1e-7 (1 + |x|) + 1.2e-7 |dx|
 *   tail, x in [-5.5, -1]: |y - x Phi(x)| <= 5e-6 |x Phi(x)| (relative:
 *   Phi keeps relative accuracy where 1 + erf cancels; the f32 rounding of
 *   x^2 / 2, ~6e-8 x^2 / 2 relative in exp(-x^2/2), is most of it).
 * Measured: 0.58, 0.38 and 0.41 of these bounds. */
START_TEST(gelu_f32_dense_and_extreme)
{
    enum { NG = 20001, NX = 14 };
    static const float extra[NX] = {13.19f, -13.19f, 13.2f, -13.2f, 20.0f, -20.0f, 100.0f,
                                    -100.0f, 1e4f, -1e4f, 1e30f, -1e30f, 1e-40f, -1e-40f};
    float *xv = malloc((NG + NX) * sizeof *xv);
    for (int i = 0; i < NG; i++) xv[i] = (float)((i - 10000) * 1e-3);
    for (int i = 0; i < NX; i++) xv[NG + i] = extra[i];
    tg_graph *g = tg_graph_new();
    const float *y, *dx;
    gelu_f32(g, NG + NX, xv, &y, &dx);
    double wy = 0, wd = 0, wt = 0;
    for (int i = 0; i < NG + NX; i++) {
        double v = xv[i], cdf = ref_cdf(v), ye = v * cdf;
        double de = cdf + v * INV_SQRT_2PI * exp(-0.5 * v * v);
        wy = fmax(wy, fabs(y[i] - ye) / (1e-7 * fabs(v) + 6e-8 * fabs(ye) + 1e-45));
        wd = fmax(wd, fabs(dx[i] - de) / (1e-7 * (1 + fabs(v)) + 1.2e-7 * fabs(de)));
        if (v >= -5.5 && v <= -1) wt = fmax(wt, fabs(y[i] - ye) / (5e-6 * fabs(ye)));
    }
    if (getenv("TG_SPEEDPATH_VERBOSE")) fprintf(stderr, "gelu: fwd %.3g bwd %.3g tail %.3g of bound\n", wy, wd, wt);
    ck_assert_msg(wy <= 1, "gelu f32 forward off by %.3g of its bound", wy);
    ck_assert_msg(wd <= 1, "gelu f32 backward off by %.3g of its bound", wd);
    ck_assert_msg(wt <= 1, "gelu f32 tail off by %.3g of its bound", wt);
    /* exact values: gelu(0) = 0 with slope 1/2; x Phi(x) = x once Phi
     * rounds to 1 */
    ck_assert_float_eq(y[10000], 0.0f);
    ck_assert_float_eq(dx[10000], 0.5f);
    ck_assert_float_eq(y[NG + 4], 20.0f);
    ck_assert_float_eq(dx[NG + 4], 1.0f);
    free(xv);
    tg_graph_free(g);
}
END_TEST

/* Infinities and NaN as with libm and the f64 path: gelu(inf) = inf,
 * gelu(-inf) = -inf * 0 = NaN, NaN stays NaN in y and dx; FLT_MAX passes
 * through with slope exactly 1 (0 at -FLT_MAX: x phi(x) is 0 there, not x
 * times a clamped exp, which gave 2.97); at +-inf the slope is NaN
 * (Phi + x phi = 1 + inf 0, as in f64 and PyTorch). */
START_TEST(gelu_f32_nonfinite)
{
    const float xv[5] = {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX};
    tg_graph *g = tg_graph_new();
    const float *y, *dx;
    gelu_f32(g, 5, xv, &y, &dx);
    ck_assert(isinf(y[0]) && y[0] > 0);
    ck_assert(isnan(y[1]));
    ck_assert(isnan(y[2]) && isnan(dx[2]));
    ck_assert_float_eq(y[3], FLT_MAX);
    ck_assert(y[4] == 0.0f);
    ck_assert(isnan(dx[0]) && isnan(dx[1]));
    ck_assert_float_eq(dx[3], 1.0f);
    ck_assert_float_eq(dx[4], 0.0f);
    tg_graph_free(g);
}
END_TEST

/* f32 layernorm forward + backward against f64 on the same (f32-valued)
 * inputs: x (37, 77) = offset + N(0,1), w = 1 + N(0,1)/2, b, dy ~ N(0,1).
 * mode 0: w and b, all requiring grad; 1: no w, no b; 2: x a constant
 * (only dw and db: the accumulate-only path). Bounds:
 *   dx within 5e-7 (1 + |dx|): dx = rstd (g - mean g - xhat mean(g xhat)),
 *     a few f32 roundings (6e-8 each) on terms of size ~|g| ~ 1-3
 *     (measured 1.1e-7);
 *   dw, db within 2e-6 (1 + |.|): sums over 37 rows of terms ~1, f32
 *     within 8 rows, and the final f32 rounding (measured 6e-7). */
START_TEST(layernorm_f32_backward_matches_f64)
{
    enum { R = 37, C = 77 };
    static const double offsets[2] = {0.0, 1e3};
    for (int oi = 0; oi < 2; oi++)
        for (int mode = 0; mode < 3; mode++) {
            tg_graph *g = tg_graph_new();
            tg_tensor *x = tt_randn(g, TT_SHAPE(R, C), 70 + oi), *w = tt_randn(g, TT_SHAPE(C), 72),
                      *b = tt_randn(g, TT_SHAPE(C), 73), *dy = tt_randn(g, TT_SHAPE(R, C), 74);
            double *xd = x->data, *wd = w->data, *bd = b->data, *dyd = dy->data;
            float x32v[R * C], w32v[C], b32v[C], dy32v[R * C];
            for (int i = 0; i < R * C; i++) {
                xd[i] = x32v[i] = (float)(offsets[oi] + xd[i]);
                dyd[i] = dy32v[i] = (float)dyd[i];
            }
            for (int j = 0; j < C; j++) {
                wd[j] = w32v[j] = (float)(1 + 0.5 * wd[j]);
                bd[j] = b32v[j] = (float)bd[j];
            }
            tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(R, C), x32v);
            tg_tensor *w32 = tg_tensor_from(g, TG_F32, TT_SHAPE(C), w32v);
            tg_tensor *b32 = tg_tensor_from(g, TG_F32, TT_SHAPE(C), b32v);
            tg_tensor *xc = tg_tensor_from(g, TG_F64, TT_SHAPE(R, C), xd); /* x without grad */
            if (mode != 2) ck_assert_int_eq(tg_tensor_set_requires_grad(g, x32, true), 0);
            if (mode != 1) {
                ck_assert_int_eq(tg_tensor_set_requires_grad(g, w32, true), 0);
                ck_assert_int_eq(tg_tensor_set_requires_grad(g, b32, true), 0);
            }
            tg_tensor *xin = mode == 2 ? xc : x;
            tg_tensor *y = tg_layernorm(g, xin, mode == 1 ? NULL : w, mode == 1 ? NULL : b, 1e-5);
            tg_tensor *y32 = tg_layernorm(g, x32, mode == 1 ? NULL : w32, mode == 1 ? NULL : b32, 1e-5);
            ck_assert_msg(y && y32, "%s", tg_graph_error(g));
            ck_assert_int_eq(tg_graph_backward_seeded(g, y, dyd), 0);
            ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32v), 0);
            double ex = 0, ew = 0, eb = 0;
            for (int i = 0; i < R * C && mode != 2; i++) {
                double want = ((double *)x->grad)[i];
                ex = fmax(ex, fabs(((float *)x32->grad)[i] - want) / (5e-7 * (1 + fabs(want))));
            }
            for (int j = 0; j < C && mode != 1; j++) {
                double ww = ((double *)w->grad)[j], wb = ((double *)b->grad)[j];
                ew = fmax(ew, fabs(((float *)w32->grad)[j] - ww) / (2e-6 * (1 + fabs(ww))));
                eb = fmax(eb, fabs(((float *)b32->grad)[j] - wb) / (2e-6 * (1 + fabs(wb))));
            }
            ck_assert_msg(ex <= 1, "offset %g mode %d: dx off by %.3g of its bound", offsets[oi], mode, ex);
            ck_assert_msg(ew <= 1, "offset %g mode %d: dw off by %.3g of its bound", offsets[oi], mode, ew);
            ck_assert_msg(eb <= 1, "offset %g mode %d: db off by %.3g of its bound", offsets[oi], mode, eb);
            if (getenv("TG_SPEEDPATH_VERBOSE"))
                fprintf(stderr, "offset %g mode %d: dx %.3g dw %.3g db %.3g of bound\n", offsets[oi], mode, ex, ew, eb);
            tg_graph_free(g);
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_speedpath");
    TCase *tc = tcase_create("f32");
    tcase_add_test(tc, gelu_f32_dense_and_extreme);
    tcase_add_test(tc, gelu_f32_nonfinite);
    tcase_add_test(tc, layernorm_f32_backward_matches_f64);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
