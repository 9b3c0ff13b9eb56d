/* ops/loss.c: cross-entropy of logits against integer targets (-1
 * ignored). Values against a naive log-sum-exp, gradients by gradcheck
 * and by hand, every error named. */
#include "tg_test.h"

static double naive_ce(const tg_tensor *x, const int32_t *t)
{
    int v = x->shape[x->ndim - 1];
    double sum = 0;
    int count = 0;
    for (int64_t r = 0; r < x->numel / v; r++) {
        if (t[r] == -1) continue;
        double z = 0;
        for (int j = 0; j < v; j++) z += exp(tg_tensor_get(x, r * v + j));
        sum += -log(exp(tg_tensor_get(x, r * v + t[r])) / z);
        count++;
    }
    return sum / count;
}

static tg_tensor *ce_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_cross_entropy(g, in[0], in[1]);
}

START_TEST(cross_entropy_forward)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 5), 61);
    int32_t tv[6] = {4, -1, 0, 2, -1, 3};
    tg_tensor *t = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), tv);
    tg_tensor *y = tg_cross_entropy(g, x, t);
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(y->ndim, 0);
    ck_assert_int_eq(y->numel, 1);
    ck_assert_double_eq_tol(tg_tensor_item(y), naive_ce(x, tv), 1e-13);

    tg_tensor *x2 = tt_randn(g, TT_SHAPE(4, 7), 62);
    int32_t tv2[4] = {6, 0, 3, 3};
    y = tg_cross_entropy(g, x2, tg_tensor_from(g, TG_I32, TT_SHAPE(4), tv2));
    ck_assert_double_eq_tol(tg_tensor_item(y), naive_ce(x2, tv2), 1e-13);

    /* 1-D logits with a scalar target */
    tg_tensor *x1 = tt_from_doubles(g, TG_F64, TT_SHAPE(3), (double[]){0, 0, 0});
    y = tg_cross_entropy(g, x1, tg_tensor_from(g, TG_I32, 0, NULL, (int32_t[]){1}));
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    ck_assert_double_eq_tol(tg_tensor_item(y), log(3.0), 1e-15);

    /* stable for huge logits: lse([1000, 0]) = 1000 + log(1 + e^-1000) = 1000 */
    tg_tensor *xh = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 2), (double[]){1000, 0, -1000, -1000});
    y = tg_cross_entropy(g, xh, tg_tensor_from(g, TG_I32, TT_SHAPE(2), (int32_t[]){1, 0}));
    ck_assert_double_eq_tol(tg_tensor_item(y), (1000 + log(2.0)) / 2, 1e-12);

    /* V = 1: the loss is 0 */
    y = tg_cross_entropy(g, tt_randn(g, TT_SHAPE(3, 1), 63),
                         tg_tensor_from(g, TG_I32, TT_SHAPE(3), (int32_t[]){0, 0, -1}));
    ck_assert(tg_tensor_item(y) == 0.0);

    /* a NaN logit in an ignored row is never read */
    tg_tensor *xn = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 2), (double[]){NAN, 1, 0, 0});
    y = tg_cross_entropy(g, xn, tg_tensor_from(g, TG_I32, TT_SHAPE(2), (int32_t[]){-1, 1}));
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    ck_assert_double_eq_tol(tg_tensor_item(y), log(2.0), 1e-15);
    tg_graph_free(g);
}
END_TEST

START_TEST(cross_entropy_gradcheck)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *in[2];
    in[0] = tt_randn(g, TT_SHAPE(4, 7), 71);
    in[1] = tg_tensor_from(g, TG_I32, TT_SHAPE(4), (int32_t[]){6, -1, 0, 3});
    tt_assert_gradcheck(ce_fn, NULL, 2, in);
    in[0] = tt_randn(g, TT_SHAPE(2, 3, 5), 72);
    in[1] = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), (int32_t[]){4, -1, 0, 2, -1, 2});
    tt_assert_gradcheck(ce_fn, NULL, 2, in);
    in[0] = tt_randn(g, TT_SHAPE(1, 3), 73);
    in[1] = tg_tensor_from(g, TG_I32, TT_SHAPE(1), (int32_t[]){1});
    tt_assert_gradcheck(ce_fn, NULL, 2, in);
    in[0] = tt_randn(g, TT_SHAPE(3, 1), 74);
    in[1] = tg_tensor_from(g, TG_I32, TT_SHAPE(3), (int32_t[]){0, -1, 0});
    tt_assert_gradcheck(ce_fn, NULL, 2, in);
    in[0] = tt_randn(g, TT_SHAPE(5), 75);
    in[1] = tg_tensor_from(g, TG_I32, 0, NULL, (int32_t[]){2});
    tt_assert_gradcheck(ce_fn, NULL, 2, in);
    tg_graph_free(g);
}
END_TEST

/* d logits = (softmax - onehot) * dloss / count on counted rows, exactly 0
 * on ignored rows; the upstream dloss scales it. */
START_TEST(cross_entropy_backward_values)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 5), 81);
    int32_t tv[3] = {2, -1, 4};
    tg_tensor *y = tg_cross_entropy(g, x, tg_tensor_from(g, TG_I32, TT_SHAPE(3), tv));
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, (double[]){3.0}), 0);
    uint8_t none[15] = {0};
    double p[15];
    tt_naive_softmax(x, none, p);
    const double *gx = x->grad;
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 5; j++) {
            int i = r * 5 + j;
            if (tv[r] == -1) ck_assert(gx[i] == 0.0);
            else ck_assert_double_eq_tol(gx[i], 3.0 / 2 * (p[i] - (j == tv[r])), 1e-14);
        }
    tg_graph_free(g);
}
END_TEST

START_TEST(cross_entropy_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 5), 91);

    tg_tensor *t = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), (int32_t[]){0, 1, 2, 3, -2, 4});
    tt_assert_failed(g, tg_cross_entropy(g, x, t),
                     "cross_entropy: target -2 at position 4 (index (1,1)) is outside [0, 5) and is not -1");
    tt_assert_error(g, "logits f64 (2,3,5), targets i32 (2,3)");
    tg_graph_clear_error(g);

    t = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), (int32_t[]){0, 5, 2, 3, 1, 4});
    tt_assert_failed(g, tg_cross_entropy(g, x, t),
                     "cross_entropy: target 5 at position 1 (index (0,1)) is outside [0, 5)");
    tg_graph_clear_error(g);

    t = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), (int32_t[]){-1, -1, -1, -1, -1, -1});
    tt_assert_failed(g, tg_cross_entropy(g, x, t),
                     "cross_entropy: every target is -1 (ignored), so there is nothing to average: logits f64 (2,3,5), "
                     "targets i32 (2,3)");
    tg_graph_clear_error(g);

    tg_tensor *tf = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    tt_assert_failed(g, tg_cross_entropy(g, x, tf),
                     "cross_entropy: targets must be i32, got f32 (2,3), for logits f64 (2,3,5)");
    tg_graph_clear_error(g);

    tg_tensor *ts = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 4));
    tt_assert_failed(g, tg_cross_entropy(g, x, ts),
                     "cross_entropy: targets' shape must be logits' shape without the last axis: logits f64 (2,3,5), "
                     "targets i32 (2,4)");
    tg_graph_clear_error(g);
    tg_tensor *t3 = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3, 5));
    tt_assert_failed(g, tg_cross_entropy(g, x, t3), "logits f64 (2,3,5), targets i32 (2,3,5)");
    tg_graph_clear_error(g);

    tg_tensor *xi = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 5));
    tt_assert_failed(g, tg_cross_entropy(g, xi, tg_tensor_new(g, TG_I32, TT_SHAPE(2))),
                     "cross_entropy: logits must be f32 or f64, got i32 (2,5)");
    tg_graph_clear_error(g);

    tt_assert_failed(g, tg_cross_entropy(g, tg_scalar(g, TG_F64, 1), tg_tensor_new(g, TG_I32, 0, NULL)),
                     "cross_entropy: logits must have at least one axis, got f64 ()");
    tg_graph_clear_error(g);

    tt_assert_failed(g, tg_cross_entropy(g, x, NULL), "cross_entropy: input 1 is NULL");
    tg_graph_clear_error(g);

    tg_tensor *xn = tt_from_doubles(g, TG_F32, TT_SHAPE(2, 2), (double[]){0, 1, INFINITY, 0});
    tt_assert_failed(g, tg_cross_entropy(g, xn, tg_tensor_from(g, TG_I32, TT_SHAPE(2), (int32_t[]){0, 1})),
                     "cross_entropy: logit +inf at element 2 (index (1,0)) of logits f32 (2,2)");
    tg_graph_clear_error(g);
    tg_tensor *xd = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 2), (double[]){0, 1, -INFINITY, -INFINITY});
    tt_assert_failed(g, tg_cross_entropy(g, xd, tg_tensor_from(g, TG_I32, TT_SHAPE(2), (int32_t[]){0, 1})),
                     "cross_entropy: every logit of row 1 (index (1)) of logits f64 (2,2) is -inf");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main(
        "ops_loss", "cross_entropy", 0,
        TT_TESTS(cross_entropy_forward, cross_entropy_gradcheck, cross_entropy_backward_values, cross_entropy_errors));
}
