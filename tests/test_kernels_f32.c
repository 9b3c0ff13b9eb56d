/* The tuned f32 paths against f64 references: the call-free exp and
 * normal CDF of ops/fastmath_internal.h over dense grids (against libm);
 * GELU (exact erf) forward and backward against libm erfc/exp over a dense
 * grid and at extreme inputs; the f32 softmax / log_softmax rows against
 * the f64 kernel, with and without masks; and the f32 layernorm backward
 * (all-f32 arithmetic, dw/db summed in f32 over 8 rows at a time) against
 * the f64 kernel on rows with a large common offset, a length that is not
 * a multiple of 8 and a row count that is not a multiple of 8. */
#include "tg_test.h"

#include <float.h>

#include "ops/fastmath_internal.h"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

/* 1 + erf z = 2 Phi(z sqrt 2) within 2e-7 of f64 erf, every 1e-6 on
 * [-6, 6] (12 million points, covering both branches and the 3/4 and 4
 * switch points); e = exp(-z^2) within 4e-6 relative (the rounding of z^2
 * in f32 alone is up to 6e-8 z^2 relative). Tails: Phi keeps relative
 * accuracy for z < 0 (to 1e-4, the fit weighs absolute error) down to
 * z = -3.9, where 1 + erf z in f32 has none. */
START_TEST(phi_matches_libm_erf)
{
    double worst = 0, worst_z = 0, worst_e = 0, worst_tail = 0;
    for (long i = -6000000; i <= 6000000; i++) {
        float z = (float)(i * 1e-6), e;
        double ph = tg_fphi(z, &e), zd = z;
        double err = fabs(2 * ph - (1 + erf(zd)));
        if (err > worst) { worst = err; worst_z = zd; }
        double ex = exp(-zd * zd);
        if (zd * zd < 87) worst_e = fmax(worst_e, fabs(e - ex) / ex);
        if (zd < -0.75 && zd > -3.9) worst_tail = fmax(worst_tail, fabs(ph - 0.5 * erfc(-zd)) / (0.5 * erfc(-zd)));
    }
    ck_assert_msg(worst <= 2e-7, "1 + erf off by %.3g at z = %.7g", worst, worst_z);
    ck_assert_msg(worst_e <= 4e-6, "exp(-z^2) off by %.3g relative", worst_e);
    ck_assert_msg(worst_tail <= 1e-4, "Phi tail off by %.3g relative", worst_tail);
    /* beyond the fit: 1 and 0 exactly past |z| = 4, and the limits */
    float e;
    ck_assert_float_eq(tg_fphi(4.5f, &e), 1.0f);
    ck_assert_float_eq(tg_fphi(-4.5f, &e), 0.0f);
    ck_assert_float_eq(tg_fphi(INFINITY, &e), 1.0f);
    ck_assert_float_eq(e, tg_fexp(-87.0f));
    ck_assert_float_eq(tg_fphi(-INFINITY, &e), 0.0f);
    ck_assert_float_eq(tg_fphi(0.0f, &e), 0.5f);
    ck_assert_float_eq(e, 1.0f);
}
END_TEST

/* exp on [-87, 0] every 1e-6 within 2e-7 relative; below -87 clamped */
START_TEST(fexp_matches_libm_exp)
{
    double worst = 0, worst_x = 0;
    for (long i = 0; i <= 87000000; i += 3) {
        float x = -(float)(i * 1e-6);
        double ex = exp((double)x), err = fabs(tg_fexp(x) - ex) / ex;
        if (err > worst) { worst = err; worst_x = x; }
    }
    ck_assert_msg(worst <= 2e-7, "exp off by %.3g relative at x = %.7g", worst, worst_x);
    ck_assert_float_eq(tg_fexp(0.0f), 1.0f);
    ck_assert_float_eq(tg_fexp(-1000.0f), tg_fexp(-87.0f));
    ck_assert(tg_fexp(-87.0f) > 0 && isnormal(tg_fexp(-87.0f)));
}
END_TEST

/* f32 softmax / log_softmax rows of 37 (4 full 8-lane blocks and a tail)
 * against the f64 kernel (a separate code path, unchanged), forward and
 * backward, with no mask, a (5,37) mask (stride 1) and a (5,1) mask
 * broadcast along the row (stride 0, copied per row): blocked keys give 0
 * (softmax) / -inf (log_softmax) and zero gradient. Then a NaN at an allowed
 * key inside the vector part is named by its element. */
START_TEST(softmax_f32_matches_f64)
{
    enum { R = 15, N = 37 };
    tg_graph *g = tg_graph_new();
    tg_tensor *x64 = tt_randn(g, TT_SHAPE(3, 5, N), 40), *dy64 = tt_randn(g, TT_SHAPE(3, 5, N), 41);
    float x32v[R * N], dy32v[R * N];
    for (int i = 0; i < R * N; i++) {
        x32v[i] = (float)(3 * ((double *)x64->data)[i]);
        ((double *)x64->data)[i] = x32v[i];
        dy32v[i] = (float)((double *)dy64->data)[i];
        ((double *)dy64->data)[i] = dy32v[i];
    }
    bool full[5 * N], col[5];
    for (int i = 0; i < 5 * N; i++) full[i] = (i % N) > (i / N) * 7; /* causal-like */
    for (int i = 0; i < 5; i++) col[i] = i == 2;                      /* all of row 2 blocked */
    for (int mk = 0; mk < 3; mk++)
        for (int lg = 0; lg < 2; lg++) {
            tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(3, 5, N), x32v);
            ck_assert_int_eq(tg_tensor_set_requires_grad(g, x32, true), 0);
            memset(x64->grad, 0, sizeof(double) * R * N); /* a leaf: its gradient accumulates */
            tg_tensor *mask = mk == 0 ? NULL
                              : mk == 1 ? tg_tensor_from(g, TG_BOOL, TT_SHAPE(5, N), full)
                                        : tg_tensor_from(g, TG_BOOL, TT_SHAPE(5, 1), col);
            int fl = TG_SOFTMAX_ZERO_BLOCKED_ROWS;
            if (lg && mk == 2) continue; /* log_softmax has no zero-row option */
            tg_tensor *y32 = lg ? tg_log_softmax(g, x32, mask) : tg_softmax_ex(g, x32, mask, fl);
            tg_tensor *y64 = lg ? tg_log_softmax(g, x64, mask) : tg_softmax_ex(g, x64, mask, fl);
            ck_assert_msg(y32 && y64, "%s", tg_graph_error(g));
            ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32v), 0);
            ck_assert_int_eq(tg_graph_backward_seeded(g, y64, dy64->data), 0);
            for (int i = 0; i < R * N; i++) {
                double a = ((float *)y32->data)[i], b = ((double *)y64->data)[i];
                if (isinf(b)) ck_assert_msg(a == b, "y[%d] %g, want %g", i, a, b);
                else ck_assert_msg(fabs(a - b) <= 4e-7 * (1 + fabs(b)), "mask %d log %d: y[%d] %.9g, want %.9g", mk, lg, i, a, b);
                double ga = ((float *)x32->grad)[i], gb = ((double *)x64->grad)[i];
                ck_assert_msg(fabs(ga - gb) <= 2e-6 * (1 + fabs(gb)), "mask %d log %d: dx[%d] %.9g, want %.9g", mk, lg, i, ga, gb);
                if (mk == 2 && (i / N) % 5 == 2) ck_assert(ga == 0 && a == 0);
            }
        }
    x32v[3 * N + 12] = NAN;
    ck_assert_ptr_null(tg_softmax(g, tg_tensor_from(g, TG_F32, TT_SHAPE(3, 5, N), x32v), NULL));
    tt_assert_error(g, "softmax: score NaN at element 123 (index (0,3,12)) of x f32 (3,5,37)");
    tg_graph_free(g);
}
END_TEST

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
 * absolute, checked by phi_matches_libm_erf above) and the f32 rounding
 * of the products:
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
    Suite *s = suite_create("kernels_f32");
    TCase *tc = tcase_create("f32");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, phi_matches_libm_erf);
    tcase_add_test(tc, fexp_matches_libm_exp);
    tcase_add_test(tc, gelu_f32_dense_and_extreme);
    tcase_add_test(tc, gelu_f32_nonfinite);
    tcase_add_test(tc, softmax_f32_matches_f64);
    tcase_add_test(tc, layernorm_f32_backward_matches_f64);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
