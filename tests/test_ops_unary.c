/* ops/unary.c: scale, neg, exp, log, tanh, sqrt, relu and gelu. */
#include "tg_test.h"

/* ---- gradchecks ----------------------------------------------------- */

typedef tg_tensor *(*unop)(tg_graph *, tg_tensor *);

static tg_tensor *apply_un(tg_graph *g, tg_tensor **in, void *ctx) { return ((unop *)ctx)[0](g, in[0]); }

static tg_tensor *scale_by_3(tg_graph *g, tg_tensor *x) { return tg_scale(g, x, -3.0); }
static tg_tensor *gelu_erf(tg_graph *g, tg_tensor *x) { return tg_gelu(g, x, TG_GELU_ERF); }
static tg_tensor *gelu_tanh(tg_graph *g, tg_tensor *x) { return tg_gelu(g, x, TG_GELU_TANH); }
static const unop UNOPS[] = {scale_by_3, tg_neg, tg_exp, tg_log, tg_tanh, tg_sqrt, tg_relu, gelu_erf, gelu_tanh};

START_TEST(unary_gradcheck)
{
    static const int shapes[][5] = {{1, 7}, {2, 3, 5}, {4, 2, 1, 3, 1}, {0}};
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, shapes[k][0], &shapes[k][1], 30 + k);
        double *v = x->data;
        for (int64_t i = 0; i < x->numel; i++) {
            if (_i == 3 || _i == 5) v[i] = fabs(v[i]) + 0.1;        /* log, sqrt: x > 0 */
            if (_i == 6 && fabs(v[i]) < 1e-3) v[i] = 0.5;           /* relu: away from the kink */
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
    tg_graph_free(g);
}
END_TEST


int main(void)
{
    return tt_main("ops_unary", "unary", 0,
                   TT_TESTS(TT_LOOP(unary_gradcheck, 9), unary_values, sqrt_gradient_at_zero_is_zero, f32_matches_f64,
                            unary_errors_named));
}
