/* ops/unary.c: scale, neg, exp, log, tanh, sqrt, relu, gelu, relu2 and softcap. */
#include "tg_test.h"

/* ---- gradchecks ----------------------------------------------------- */

typedef tg_tensor *(*unop)(tg_graph *, tg_tensor *);

static tg_tensor *apply_un(tg_graph *g, tg_tensor **in, void *ctx) { return ((unop *)ctx)[0](g, in[0]); }

static tg_tensor *scale_by_3(tg_graph *g, tg_tensor *x) { return tg_scale(g, x, -3.0); }
static tg_tensor *gelu_erf(tg_graph *g, tg_tensor *x) { return tg_gelu(g, x, TG_GELU_ERF); }
static tg_tensor *gelu_tanh(tg_graph *g, tg_tensor *x) { return tg_gelu(g, x, TG_GELU_TANH); }
static tg_tensor *softcap_2(tg_graph *g, tg_tensor *x) { return tg_softcap(g, tg_scale(g, x, 3.0), 2.0); }
static const unop UNOPS[] = {scale_by_3, tg_neg,   tg_exp,    tg_log,   tg_tanh,  tg_sqrt,
                             tg_relu,    gelu_erf, gelu_tanh, tg_relu2, softcap_2};

START_TEST(unary_gradcheck)
{
    static const int shapes[][5] = {{1, 7}, {2, 3, 5}, {4, 2, 1, 3, 1}, {0}};
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, shapes[k][0], &shapes[k][1], 30 + k);
        double *v = x->data;
        for (int64_t i = 0; i < x->numel; i++) {
            if (_i == 3 || _i == 5) v[i] = fabs(v[i]) + 0.1; /* log, sqrt: x > 0 */
            if ((_i == 6 || _i == 9) && fabs(v[i]) < 1e-3) v[i] = 0.5; /* relu, relu2: away from the kink */
        }
        tt_assert_gradcheck(apply_un, (void *)&UNOPS[_i], 1, (&x));
        tg_graph_free(g);
    }
}
END_TEST

/* ---- values --------------------------------------------------------- */

START_TEST(unary_values)
{
    tg_graph *g = tg_graph_new();
    double xv[] = {-2, -0.5, 0, 1, 3};
    tg_tensor *x = tg_tensor_from(g, TG_F64, TT_SHAPE(5), xv);
    tg_tensor *r = tg_relu(g, x), *ge = tg_gelu(g, x, TG_GELU_ERF), *gt = tg_gelu(g, x, TG_GELU_TANH);
    tg_tensor *sc = tg_scale(g, x, 0.25), *n = tg_neg(g, x), *t = tg_tanh(g, x), *e = tg_exp(g, x);
    for (int i = 0; i < 5; i++) {
        double v = xv[i];
        ck_assert_double_eq(((double *)r->data)[i], v > 0 ? v : 0);
        ck_assert_double_eq_tol(((double *)ge->data)[i], v * 0.5 * erfc(-v / sqrt(2.0)), 1e-15);
        double u = sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v);
        ck_assert_double_eq_tol(((double *)gt->data)[i], 0.5 * v * (1 + tanh(u)), 1e-15);
        ck_assert_double_eq(((double *)sc->data)[i], v / 4);
        ck_assert_double_eq(((double *)n->data)[i], -v);
        ck_assert_double_eq_tol(((double *)t->data)[i], tanh(v), 1e-15);
        ck_assert_double_eq_tol(((double *)e->data)[i], exp(v), 1e-15 * exp(v));
    }
    /* GELU at 1: Phi(1) = 0.841344746068543 (normal table); tanh form 0.841191990608277 */
    ck_assert_double_eq_tol(((double *)ge->data)[3], 0.841344746068543, 1e-12);
    ck_assert_double_eq_tol(((double *)gt->data)[3], 0.841191990608277, 1e-12);
    double pv[] = {4, 0.25, 0};
    tg_tensor *p = tg_tensor_from(g, TG_F64, TT_SHAPE(3), pv);
    tg_tensor *sq = tg_sqrt(g, p);
    ck_assert_double_eq(((double *)sq->data)[0], 2);
    ck_assert_double_eq(((double *)sq->data)[1], 0.5);
    ck_assert_double_eq(((double *)sq->data)[2], 0);
    tg_tensor *l = tg_log(g, tg_exp(g, x));
    for (int i = 0; i < 5; i++) ck_assert_double_eq_tol(((double *)l->data)[i], xv[i], 1e-15);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

/* relu2 and softcap against their formulas, and softcap's cap: |y| < s,
 * y ~ x for |x| << s */
START_TEST(relu2_softcap_values)
{
    tg_graph *g = tg_graph_new();
    double xv[] = {-2, -0.5, 0, 1e-3, 1, 3, 40, -1e6};
    tg_tensor *x = tg_tensor_from(g, TG_F64, TT_SHAPE(8), xv);
    tg_tensor *r2 = tg_relu2(g, x), *sc = tg_softcap(g, x, 15.0);
    for (int i = 0; i < 8; i++) {
        double v = xv[i], r = v > 0 ? v : 0;
        ck_assert_double_eq(((double *)r2->data)[i], r * r);
        ck_assert_double_eq_tol(((double *)sc->data)[i], 15 * tanh(v / 15), 1e-15 * 15);
        ck_assert(fabs(((double *)sc->data)[i]) <= 15);
    }
    ck_assert_double_eq_tol(((double *)sc->data)[3], 1e-3, 2e-12); /* near the identity: x - x^3 / (3 s^2) */
    ck_assert_double_eq(((double *)sc->data)[7], -15); /* saturated */
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

/* relu2 and softcap, forward and backward, f32 against f64 on lengths
 * across the vector width (the loops f32 and f64 share) */
START_TEST(relu2_softcap_f32_matches_f64)
{
    for (int n = 1; n <= 67; n += 11) {
        for (int op = 0; op < 2; op++) {
            tg_graph *g = tg_graph_new();
            tg_tensor *x64 = tt_randn(g, TT_SHAPE(n), 100 + n), *d64 = tt_randn(g, TT_SHAPE(n), 200 + n);
            float xf[67], df[67];
            for (int i = 0; i < n; i++) {
                ((double *)x64->data)[i] *= 8; /* into softcap's bend (s = 5) */
                xf[i] = (float)((double *)x64->data)[i];
                ((double *)x64->data)[i] = xf[i]; /* both sides on the same inputs */
                df[i] = (float)((double *)d64->data)[i];
                ((double *)d64->data)[i] = df[i];
            }
            tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(n), xf),
                      *d32 = tg_tensor_from(g, TG_F32, TT_SHAPE(n), df);
            tg_tensor_set_requires_grad(g, x64, true);
            tg_tensor_set_requires_grad(g, x32, true);
            tg_tensor *y64 = op ? tg_softcap(g, x64, 5.0) : tg_relu2(g, x64);
            tg_tensor *y32 = op ? tg_softcap(g, x32, 5.0) : tg_relu2(g, x32);
            ck_assert_int_eq(y32->dtype, TG_F32);
            ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_mul(g, y64, d64))), 0);
            ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_mul(g, y32, d32))), 0);
            for (int i = 0; i < n; i++) {
                double a = ((double *)y64->data)[i], b = ((float *)y32->data)[i];
                double ga = ((double *)x64->grad)[i], gb = ((float *)x32->grad)[i];
                /* relu2: one rounding (2^-24 relative); softcap: s tanh(x/s) and
                 * 1 - (y/s)^2 within a few float roundings of s = 5 */
                ck_assert_msg(fabs(a - b) <= (op ? 3e-6 : 1.2e-7) * fabs(a) + (op ? 5 * 3e-7 : 0),
                              "%s y[%d]: f64 %.9g f32 %.9g", op ? "softcap" : "relu2", i, a, b);
                ck_assert_msg(fabs(ga - gb) <= 3e-6 * (fabs(ga) + fabs(((double *)d64->data)[i])),
                              "%s dx[%d]: f64 %.9g f32 %.9g", op ? "softcap" : "relu2", i, ga, gb);
            }
            tg_graph_free(g);
        }
    }
}
END_TEST

START_TEST(sqrt_gradient_at_zero_is_zero)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F64, TT_SHAPE(2));
    ((double *)x->data)[1] = 4;
    tg_tensor_set_requires_grad(g, x, true);
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_sqrt(g, x))), 0);
    ck_assert_double_eq(((double *)x->grad)[0], 0.0);
    ck_assert_double_eq(((double *)x->grad)[1], 0.25);
    tg_graph_free(g);
}
END_TEST

/* gelu(tanh(x) * exp(y)): the f32 kernels against f64 (the mul is binary.c's). */
START_TEST(f32_matches_f64)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x64 = tt_randn(g, TT_SHAPE(3, 5), 4), *y64 = tt_randn(g, TT_SHAPE(5), 5);
    float xf[15], yf[5];
    for (int i = 0; i < 15; i++) xf[i] = (float)((double *)x64->data)[i];
    for (int i = 0; i < 5; i++) yf[i] = (float)((double *)y64->data)[i];
    tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(3, 5), xf), *y32 = tg_tensor_from(g, TG_F32, TT_SHAPE(5), yf);
    tg_tensor *o64 = tg_gelu(g, tg_mul(g, tg_tanh(g, x64), tg_exp(g, y64)), TG_GELU_ERF);
    tg_tensor *o32 = tg_gelu(g, tg_mul(g, tg_tanh(g, x32), tg_exp(g, y32)), TG_GELU_ERF);
    ck_assert_int_eq(o32->dtype, TG_F32);
    for (int i = 0; i < 15; i++) {
        double a = ((double *)o64->data)[i], b = ((float *)o32->data)[i];
        ck_assert_msg(fabs(a - b) <= 1e-5 * (1 + fabs(a)), "element %d: f64 %g f32 %g", i, a, b);
    }
    tg_graph_free(g);
}
END_TEST

/* ---- errors --------------------------------------------------------- */

START_TEST(unary_errors_named)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 2));
    ck_assert_ptr_null(tg_tanh(g, ids));
    tt_assert_error(g, "tanh: x must be f32 or f64, got i32 (2,2)");
    tg_graph_reset(g);

    double z[] = {1, 0, 2}, neg[] = {1, -0.5};
    ck_assert_ptr_null(tg_log(g, tg_tensor_from(g, TG_F64, TT_SHAPE(3), z)));
    tt_assert_error(g, "log: input x f64 (3) has 0 at element 1");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_sqrt(g, tg_tensor_from(g, TG_F64, TT_SHAPE(2), neg)));
    tt_assert_error(g, "sqrt: input x f64 (2) has -0.5 at element 1");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_scale(g, tg_tensor_from(g, TG_F64, TT_SHAPE(2), neg), NAN));
    tt_assert_error(g, "scale: factor must be finite");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_gelu(g, tg_tensor_from(g, TG_F64, TT_SHAPE(2), neg), (tg_gelu_mode)7));
    tt_assert_error(g, "gelu: unknown mode 7");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_relu(g, NULL));
    tt_assert_error(g, "relu: input 0 is NULL");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_relu2(g, tg_tensor_new(g, TG_I32, TT_SHAPE(2, 2))));
    tt_assert_error(g, "relu2: x must be f32 or f64, got i32 (2,2)");
    tg_graph_reset(g);
    const double caps[] = {0, -1, INFINITY, NAN};
    for (int i = 0; i < 4; i++) {
        ck_assert_ptr_null(tg_softcap(g, tg_tensor_from(g, TG_F64, TT_SHAPE(2), neg), caps[i]));
        tt_assert_error(g, "softcap: the cap must be finite and > 0");
        tg_graph_reset(g);
    }
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_unary", "unary", 0,
                   TT_TESTS(TT_LOOP(unary_gradcheck, 11), unary_values, relu2_softcap_values,
                            relu2_softcap_f32_matches_f64, sqrt_gradient_at_zero_is_zero, f32_matches_f64,
                            unary_errors_named));
}
