/* ops/binary.c: add, sub, mul and div, broadcasting. */
#include "tg_test.h"

/* ---- gradchecks ----------------------------------------------------- */

typedef tg_tensor *(*binop)(tg_graph *, tg_tensor *, tg_tensor *);

static tg_tensor *apply_bin(tg_graph *g, tg_tensor **in, void *ctx) { return ((binop *)ctx)[0](g, in[0], in[1]); }

static const binop BINOPS[] = {tg_add, tg_sub, tg_mul, tg_div};

/* pairs of broadcastable shapes: {ndim_a, a..., ndim_b, b...} */
static const int PAIRS[][10] = {
    {2, 3, 4, 0, 0, 2, 3, 4, 0, 0}, /* same shape */
    {2, 3, 4, 0, 0, 1, 4, 0, 0, 0}, /* row vector */
    {3, 2, 1, 5, 0, 2, 3, 1, 0, 0}, /* both sides broadcast */
    {4, 2, 3, 1, 5, 3, 1, 4, 1, 0}, /* 4-D vs 3-D */
    {1, 1, 0, 0, 0, 3, 2, 1, 3, 0}, /* size-1 vector against 3-D */
    {0, 0, 0, 0, 0, 2, 3, 7, 0, 0}, /* scalar against matrix */
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

/* ---- values --------------------------------------------------------- */

START_TEST(binary_broadcast_values)
{
    tg_graph *g = tg_graph_new();
    double av[] = {1, 2, 3, 4, 5, 6}; /* (2,3) */
    double bv[] = {10, 20, 30}; /* (3)   */
    double cv[] = {2, 4}; /* (2,1) */
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

/* ---- errors --------------------------------------------------------- */

START_TEST(binary_errors_named_and_propagated)
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

    double z[] = {1, 0, 2};
    tg_tensor *zt = tg_tensor_from(g, TG_F64, TT_SHAPE(3), z);
    ck_assert_ptr_null(tg_div(g, zt, zt));
    tt_assert_error(g, "div: divisor b (3) is zero at element 1");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_binary", "binary", 0,
                   TT_TESTS(TT_LOOP(binary_gradcheck, 4 * 6), binary_broadcast_values, broadcast_gradient_sums,
                            binary_errors_named_and_propagated));
}
