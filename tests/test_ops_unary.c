/* ops: elementwise binary (broadcasting) and unary ops. */
#include "tg_test.h"

/* ---- gradchecks ----------------------------------------------------- */

typedef tg_tensor *(*binop)(tg_graph *, tg_tensor *, tg_tensor *);
typedef tg_tensor *(*unop)(tg_graph *, tg_tensor *);

static tg_tensor *apply_bin(tg_graph *g, tg_tensor **in, void *ctx) { return ((binop *)ctx)[0](g, in[0], in[1]); }
static tg_tensor *apply_un(tg_graph *g, tg_tensor **in, void *ctx) { return ((unop *)ctx)[0](g, in[0]); }

static const binop BINOPS[] = {tg_add, tg_sub, tg_mul, tg_div};

/* pairs of broadcastable shapes: {ndim_a, a..., ndim_b, b...} */
static const int PAIRS[][10] = {
    {2, 3, 4, 0, 0, 2, 3, 4, 0, 0},   /* same shape */
    {2, 3, 4, 0, 0, 1, 4, 0, 0, 0},   /* row vector */
    {3, 2, 1, 5, 0, 2, 3, 1, 0, 0},   /* both sides broadcast */
    {4, 2, 3, 1, 5, 3, 1, 4, 1, 0},   /* 4-D vs 3-D */
    {1, 1, 0, 0, 0, 3, 2, 1, 3, 0},   /* size-1 vector against 3-D */
    {0, 0, 0, 0, 0, 2, 3, 7, 0, 0},   /* scalar against matrix */
};

static void shapes_of(int k, int *na, int *sa, int *nb, int *sb)
{
    const int *p = PAIRS[k];
    *na = p[0];
    for (int i = 0; i < 4; i++) sa[i] = p[1 + i];
    *nb = p[5];
    for (int i = 0; i < 4; i++) sb[i] = p[6 + i];
}

START_TEST(binary_gradcheck)
{
    int op = _i / 6, k = _i % 6, na, nb, sa[4], sb[4];
    shapes_of(k, &na, sa, &nb, sb);
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, na, sa, 10 + k), *b = tt_randn(g, nb, sb, 20 + k);
    if (op == 3) /* keep divisors away from zero */
        for (int64_t i = 0; i < b->numel; i++) ((double *)b->data)[i] += ((double *)b->data)[i] > 0 ? 1.0 : -1.0;
    tt_assert_gradcheck(apply_bin, (void *)&BINOPS[op], 2, ((tg_tensor *[]){a, b}));
    /* and with the operands swapped, so each side is broadcast in turn */
    if (op == 3)
        for (int64_t i = 0; i < a->numel; i++) ((double *)a->data)[i] += ((double *)a->data)[i] > 0 ? 1.0 : -1.0;
    tt_assert_gradcheck(apply_bin, (void *)&BINOPS[op], 2, ((tg_tensor *[]){b, a}));
    tg_graph_free(g);
}
END_TEST

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

START_TEST(binary_broadcast_values)
{
    tg_graph *g = tg_graph_new();
    double av[] = {1, 2, 3, 4, 5, 6};          /* (2,3) */
    double bv[] = {10, 20, 30};                /* (3)   */
    double cv[] = {2, 4};                      /* (2,1) */
    tg_tensor *a = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 3), av);
    tg_tensor *b = tg_tensor_from(g, TG_F64, TT_SHAPE(3), bv);
    tg_tensor *c = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 1), cv);
    tg_tensor *s = tg_add(g, a, b), *d = tg_sub(g, b, a), *m = tg_mul(g, a, c), *q = tg_div(g, a, c);
    ck_assert_int_eq(s->ndim, 2);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            double x = av[i * 3 + j];
            ck_assert_double_eq(((double *)s->data)[i * 3 + j], x + bv[j]);
            ck_assert_double_eq(((double *)d->data)[i * 3 + j], bv[j] - x);
            ck_assert_double_eq(((double *)m->data)[i * 3 + j], x * cv[i]);
            ck_assert_double_eq(((double *)q->data)[i * 3 + j], x / cv[i]);
        }
    tg_graph_free(g);
}
END_TEST

START_TEST(broadcast_gradient_sums)
{
    /* y = a + b with b (3) broadcast over 4 rows: db = column sums of dy = 4 each */
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, TT_SHAPE(4, 3), 1), *b = tt_randn(g, TT_SHAPE(3), 2);
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_add(g, a, b))), 0);
    for (int j = 0; j < 3; j++) ck_assert_double_eq(((double *)b->grad)[j], 4.0);
    for (int i = 0; i < 12; i++) ck_assert_double_eq(((double *)a->grad)[i], 1.0);
    tg_graph_free(g);
}
END_TEST

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

START_TEST(errors_named_and_propagated)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    tg_tensor *b = tg_tensor_new(g, TG_F32, TT_SHAPE(4, 5));
    ck_assert_ptr_null(tg_add(g, a, b));
    tt_assert_error(g, "add: shapes do not broadcast: a f32 (2,3), b f32 (4,5)");
    /* later ops propagate NULL and keep the first message */
    ck_assert_ptr_null(tg_exp(g, tg_mul(g, NULL, a)));
    tt_assert_error(g, "add: shapes do not broadcast");
    tg_graph_reset(g);

    tg_tensor *f = tg_tensor_new(g, TG_F32, TT_SHAPE(3)), *d = tg_tensor_new(g, TG_F64, TT_SHAPE(3));
    ck_assert_ptr_null(tg_sub(g, f, d));
    tt_assert_error(g, "sub: dtypes differ: a f32 (3), b f64 (3)");
    tg_graph_reset(g);

    tg_tensor *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 2));
    ck_assert_ptr_null(tg_tanh(g, ids));
    tt_assert_error(g, "tanh: x must be f32 or f64, got i32 (2,2)");
    tg_graph_reset(g);

    double z[] = {1, 0, 2}, neg[] = {1, -0.5};
    tg_tensor *zt = tg_tensor_from(g, TG_F64, TT_SHAPE(3), z);
    ck_assert_ptr_null(tg_div(g, zt, zt));
    tt_assert_error(g, "div: divisor b (3) is zero at element 1");
    tg_graph_reset(g);
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
    return tt_main("ops_elementwise", "elementwise", 0,
                   TT_TESTS(TT_LOOP(binary_gradcheck, 4 * 6), TT_LOOP(unary_gradcheck, 9), binary_broadcast_values,
                            broadcast_gradient_sums, unary_values, sqrt_gradient_at_zero_is_zero, f32_matches_f64,
                            errors_named_and_propagated));
}
