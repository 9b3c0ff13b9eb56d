/* ops/reduce.c: sum, mean, sum_all, mean_all. */
#include "tg_test.h"

/* ---- one gradcheck function for every reduction, driven by a spec ------ */

enum { SUM, MEAN, SUM_ALL, MEAN_ALL };

typedef struct spec {
    int op;
    int axis;
    bool keepdim;
} spec;

static tg_tensor *apply(tg_graph *g, tg_tensor **in, void *ctx)
{
    const spec *s = ctx;
    switch (s->op) {
    case SUM: return tg_sum(g, in[0], s->axis, s->keepdim);
    case MEAN: return tg_mean(g, in[0], s->axis, s->keepdim);
    case SUM_ALL: return tg_sum_all(g, in[0]);
    case MEAN_ALL: return tg_mean_all(g, in[0]);
    }
    return NULL;
}

/* gradcheck of one spec on a fresh f64 input of the given shape (seeds
 * 18 to 21, as when these cases shared test_ops_shape.c's spec) */
static void check1(spec s, int ndim, const int *shape)
{
    tt_assert_gradcheck1(apply, &s, ndim, shape, 18 + (uint64_t)s.op);
}

/* tt_assert_failed, then a reset for the next case. */
static void expect_fail(tg_graph *g, const void *y, const char *needle)
{
    tt_assert_failed(g, y, needle);
    tg_graph_reset(g);
}

/* ---- values ------------------------------------------------------------ */

/* naive sum over one axis of a (up to) 4-D f64 tensor, by index */
static double naive_reduce(const tg_tensor *x, int axis, const int *oidx, bool mean)
{
    int idx[4] = {0, 0, 0, 0}, st[4] = {1, 1, 1, 1};
    for (int a = x->ndim - 2; a >= 0; a--) st[a] = st[a + 1] * x->shape[a + 1];
    for (int a = 0; a < x->ndim; a++) idx[a] = oidx[a];
    double s = 0;
    for (int k = 0; k < x->shape[axis]; k++) {
        idx[axis] = k;
        int64_t j = 0;
        for (int a = 0; a < x->ndim; a++) j += (int64_t)idx[a] * st[a];
        s += tg_tensor_get(x, j);
    }
    return mean ? s / x->shape[axis] : s;
}

static void check_reduce_values(tg_graph *g, int ndim, const int *shape)
{
    tg_tensor *x = tt_randn(g, ndim, shape, 40 + (uint64_t)ndim);
    for (int axis = -ndim; axis < ndim; axis++) {
        int ax = axis < 0 ? axis + ndim : axis;
        for (int mean = 0; mean < 2; mean++)
            for (int keep = 0; keep < 2; keep++) {
                tg_tensor *y = mean ? tg_mean(g, x, axis, keep) : tg_sum(g, x, axis, keep);
                ck_assert_ptr_nonnull(y);
                /* the expected shape */
                int want[4], wn = 0;
                for (int a = 0; a < ndim; a++)
                    if (a != ax) want[wn++] = shape[a];
                    else if (keep) want[wn++] = 1;
                tt_assert_shape(y, wn, want);
                /* every element, indexed through x's coordinates with axis fixed at 0 */
                int ost[4] = {1, 1, 1, 1}, oshape[4];
                for (int a = 0; a < ndim; a++) oshape[a] = a == ax ? 1 : shape[a];
                for (int a = ndim - 2; a >= 0; a--) ost[a] = ost[a + 1] * oshape[a + 1];
                for (int64_t i = 0; i < y->numel; i++) {
                    int oidx[4] = {0};
                    for (int a = 0; a < ndim; a++) oidx[a] = (int)(i / ost[a] % oshape[a]);
                    double w = naive_reduce(x, ax, oidx, mean);
                    ck_assert_double_eq_tol(tg_tensor_get(y, i), w, 1e-12 * (1 + fabs(w)));
                }
            }
    }
}

START_TEST(reduce_values)
{
    tg_graph *g = tg_graph_new();
    check_reduce_values(g, TT_SHAPE(2, 3, 4));
    check_reduce_values(g, TT_SHAPE(1, 5));
    check_reduce_values(g, TT_SHAPE(2, 1, 3, 5));
    check_reduce_values(g, TT_SHAPE(7));
    /* 1-D without keepdim is a scalar; with keepdim (1) */
    tg_tensor *x = tt_randn(g, TT_SHAPE(7), 9);
    tt_assert_shape(tg_sum(g, x, 0, false), 0, NULL);
    tt_assert_shape(tg_mean(g, x, -1, true), TT_SHAPE(1));
    /* by hand */
    tg_tensor *h = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
    tg_tensor *y = tg_sum(g, h, 0, false);
    ck_assert(((double *)y->data)[0] == 5 && ((double *)y->data)[1] == 7 && ((double *)y->data)[2] == 9);
    y = tg_mean(g, h, 1, true);
    tt_assert_shape(y, TT_SHAPE(2, 1));
    ck_assert(((double *)y->data)[0] == 2 && ((double *)y->data)[1] == 5);
    ck_assert(tg_tensor_item(tg_sum_all(g, h)) == 21);
    ck_assert(tg_tensor_item(tg_mean_all(g, h)) == 3.5);
    tt_assert_shape(tg_sum_all(g, h), 0, NULL);
    tt_assert_shape(tg_mean_all(g, h), 0, NULL);
    tg_tensor *sc = tg_scalar(g, TG_F32, 2.5);
    ck_assert(tg_tensor_item(tg_sum_all(g, sc)) == 2.5 && tg_tensor_item(tg_mean_all(g, sc)) == 2.5);
    /* all-reductions against a naive loop */
    x = tt_randn(g, TT_SHAPE(2, 3, 5, 7), 10);
    double s = 0;
    for (int64_t i = 0; i < x->numel; i++) s += ((double *)x->data)[i];
    ck_assert_double_eq_tol(tg_tensor_item(tg_sum_all(g, x)), s, 1e-12 * (1 + fabs(s)));
    ck_assert_double_eq_tol(tg_tensor_item(tg_mean_all(g, x)), s / 210, 1e-12 * (1 + fabs(s / 210)));
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

START_TEST(reduce_f32_accumulates_in_double)
{
    /* 1e8 + 1 == 1e8 in float: a float accumulator would return 0 here */
    tg_graph *g = tg_graph_new();
    float v[18];
    v[0] = 1e8f;
    for (int i = 1; i < 17; i++) v[i] = 1.0f;
    v[17] = -1e8f;
    tg_tensor *x = tg_tensor_from(g, TG_F32, TT_SHAPE(18), v);
    ck_assert(tg_tensor_item(tg_sum_all(g, x)) == 16.0);
    ck_assert(tg_tensor_get(tg_sum(g, x, 0, true), 0) == 16.0);
    tg_tensor *x2 = tg_reshape(g, x, TT_SHAPE(18, 1));
    tg_tensor *x3 = tg_concat(g, 2, (tg_tensor *[]){x2, x2}, 1); /* (18,2): the inner > 1 path */
    tg_tensor *y3 = tg_sum(g, x3, 0, false);
    ck_assert(tg_tensor_get(y3, 0) == 16.0 && tg_tensor_get(y3, 1) == 16.0);
    y3 = tg_mean(g, x3, -2, false);
    ck_assert_double_eq_tol(tg_tensor_get(y3, 0), 16.0 / 18, 1e-7);
    ck_assert_double_eq_tol(tg_tensor_get(y3, 1), 16.0 / 18, 1e-7);
    tg_graph_free(g);
}
END_TEST

START_TEST(reduce_f32_matches_f64)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x64 = tt_randn(g, TT_SHAPE(3, 5, 7), 12);
    tg_tensor *x32 = tg_tensor_new(g, TG_F32, TT_SHAPE(3, 5, 7));
    for (int i = 0; i < 105; i++) ((float *)x32->data)[i] = (float)((double *)x64->data)[i];
    for (int axis = -3; axis < 3; axis++)
        for (int mean = 0; mean < 2; mean++) {
            tg_tensor *a = mean ? tg_mean(g, x32, axis, false) : tg_sum(g, x32, axis, false);
            tg_tensor *b = mean ? tg_mean(g, x64, axis, false) : tg_sum(g, x64, axis, false);
            ck_assert(a->dtype == TG_F32 && b->dtype == TG_F64);
            for (int64_t i = 0; i < a->numel; i++) {
                double w = tg_tensor_get(b, i);
                /* |w| can be small after cancellation: scale by the inputs' size too */
                ck_assert_double_eq_tol(tg_tensor_get(a, i), w, 1e-5 * (fabs(w) + 1));
            }
        }
    double a = tg_tensor_item(tg_mean_all(g, x32)), b = tg_tensor_item(tg_mean_all(g, x64));
    ck_assert_double_eq_tol(a, b, 1e-5 * (fabs(b) + 1));
    tg_graph_free(g);
}
END_TEST

START_TEST(reduce_gradcheck)
{
    check1((spec){.op = SUM, .axis = 0}, TT_SHAPE(2, 3, 4));
    check1((spec){.op = SUM, .axis = 1, .keepdim = true}, TT_SHAPE(2, 3, 4));
    check1((spec){.op = SUM, .axis = -1}, TT_SHAPE(2, 3, 5));
    check1((spec){.op = SUM, .axis = 0}, TT_SHAPE(7));
    check1((spec){.op = SUM, .axis = 1, .keepdim = true}, TT_SHAPE(2, 1, 3, 5));
    check1((spec){.op = SUM, .axis = -4}, TT_SHAPE(3, 1, 1, 5));
    check1((spec){.op = MEAN, .axis = 0, .keepdim = true}, TT_SHAPE(1, 5));
    check1((spec){.op = MEAN, .axis = -2}, TT_SHAPE(2, 7, 3));
    check1((spec){.op = MEAN, .axis = 3}, TT_SHAPE(2, 1, 3, 5));
    check1((spec){.op = MEAN, .axis = -1, .keepdim = true}, TT_SHAPE(7));
    check1((spec){.op = SUM_ALL}, TT_SHAPE(3, 5));
    check1((spec){.op = SUM_ALL}, TT_SHAPE(1));
    check1((spec){.op = MEAN_ALL}, TT_SHAPE(2, 3, 1, 5));
    check1((spec){.op = MEAN_ALL}, TT_SHAPE(7));
}
END_TEST

START_TEST(reduce_backward_by_hand)
{
    /* mean over axis 1 of (2,3): dx[o,k] = dy[o] / 3 */
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3), 13);
    tg_tensor *y = tg_mean(g, x, 1, false);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, (double[]){3, -6}), 0);
    const double want[6] = {1, 1, 1, -2, -2, -2};
    for (int i = 0; i < 6; i++) ck_assert_double_eq_tol(((double *)x->grad)[i], want[i], 1e-15);
    /* a second backward accumulates into the leaf */
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_sum(g, x, 0, false))), 0);
    for (int i = 0; i < 6; i++) ck_assert_double_eq_tol(((double *)x->grad)[i], want[i] + 1, 1e-15);
    tg_graph_free(g);
}
END_TEST

START_TEST(reduce_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_sum(g, x, 2, false), "sum: axis 2 out of range for x f32 (2,3)");
    x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3, 4));
    expect_fail(g, tg_mean(g, x, -4, true), "mean: axis -4 out of range for x f64 (2,3,4)");
    x = tg_scalar(g, TG_F64, 2);
    expect_fail(g, tg_sum(g, x, 0, false), "sum: axis 0 out of range for x f64 ()");
    expect_fail(g, tg_sum(g, NULL, 0, false), "sum: input 0 is NULL");
    expect_fail(g, tg_mean_all(g, NULL), "mean_all: input 0 is NULL");
    /* an earlier error sticks: a valid reduction after it returns NULL */
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    ck_assert_ptr_null(tg_sum(g, x, 5, false));
    ck_assert_ptr_null(tg_sum(g, x, 0, false));
    tt_assert_error(g, "sum: axis 5 out of range");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_reduce", "reduce", 0,
                   TT_TESTS(reduce_values, reduce_f32_accumulates_in_double, reduce_f32_matches_f64, reduce_gradcheck,
                            reduce_backward_by_hand, reduce_errors));
}
