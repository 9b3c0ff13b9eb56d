/* ops: SiLU and the SwiGLU product (tg_silu, tg_swiglu). */
#include "tg_test.h"

static tg_tensor *silu_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_silu(g, in[0]);
}
static tg_tensor *swiglu_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_swiglu(g, in[0], in[1]);
}
static tg_tensor *swiglu_self_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_swiglu(g, in[0], in[0]); /* x * silu(x): one tensor twice */
}

START_TEST(silu_values_and_gradcheck)
{
    tg_graph *g = tg_graph_new();
    double v[] = {0, 1, -1, 30, -30, 800, -800, 1e-3};
    tg_tensor *x = tg_tensor_from(g, TG_F64, 1, (int[]){8}, v);
    tg_tensor *y = tg_silu(g, x);
    ck_assert_ptr_nonnull(y);
    for (int i = 0; i < 8; i++) {
        const double want = v[i] / (1 + exp(-v[i])); /* finite for |x| < 800: exp(800) is inf, 800/inf = 0 */
        ck_assert_msg(fabs(((double *)y->data)[i] - want) <= 1e-15 * (1 + fabs(want)), "silu(%g) = %.17g, want %.17g",
                      v[i], ((double *)y->data)[i], want);
    }
    tg_tensor *a = tt_randn(g, TT_SHAPE(3, 7), 1), *b = tt_randn(g, TT_SHAPE(3, 7), 2);
    tt_assert_gradcheck(silu_fn, NULL, 1, &a);
    tg_tensor *in[2] = {a, b};
    tt_assert_gradcheck(swiglu_fn, NULL, 2, in);
    tt_assert_gradcheck(swiglu_self_fn, NULL, 1, &a);
    tg_graph_free(g);
}
END_TEST

/* f32 (its own vectorised exp) follows f64 to float rounding, for lengths
 * that are not multiples of the vector width, on 1 and 2 threads */
START_TEST(swiglu_f32_follows_f64)
{
    const int lengths[] = {1, 7, 9, 17, 40000};
    for (size_t c = 0; c < sizeof lengths / sizeof lengths[0]; c++)
        for (int th = 1; th <= 2; th++) {
            tg_set_num_threads(th);
            tg_graph *g = tg_graph_new();
            const int n = lengths[c];
            tg_tensor *a = tt_randn(g, TT_SHAPE(n), 5 + c), *b = tt_randn(g, TT_SHAPE(n), 9 + c);
            for (int i = 0; i < n; i++) ((double *)a->data)[i] *= 6; /* into both tails of the sigmoid */
            tg_tensor *a32 = tg_tensor_new(g, TG_F32, 1, a->shape), *b32 = tg_tensor_new(g, TG_F32, 1, b->shape);
            for (int i = 0; i < n; i++) {
                ((float *)a32->data)[i] = (float)((double *)a->data)[i];
                ((double *)a->data)[i] = ((float *)a32->data)[i]; /* the same inputs on both sides */
                ((float *)b32->data)[i] = (float)((double *)b->data)[i];
                ((double *)b->data)[i] = ((float *)b32->data)[i];
            }
            tg_tensor_set_requires_grad(g, a32, true);
            tg_tensor_set_requires_grad(g, b32, true);
            tg_tensor *y = tg_swiglu(g, a, b), *y32 = tg_swiglu(g, a32, b32);
            ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, y)), 0);
            ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, y32)), 0);
            /* a few f32 ulps of each factor: the exp's few ulps, then 3 roundings */
            for (int i = 0; i < n; i++) {
                const double want = ((double *)y->data)[i], ga = ((double *)a->grad)[i], gb = ((double *)b->grad)[i];
                ck_assert_msg(fabs(((float *)y32->data)[i] - want) <= 4e-7 * (fabs(want) + 1e-30) + 1e-37,
                              "n %d element %d: %.9g vs %.9g", n, i, ((float *)y32->data)[i], want);
                ck_assert_double_eq_tol(((float *)a32->grad)[i], ga, 1e-6 * (1 + fabs(ga)));
                ck_assert_double_eq_tol(((float *)b32->grad)[i], gb, 1e-6 * (1 + fabs(gb)));
            }
            tg_graph_free(g);
        }
    tg_set_num_threads(1);
}
END_TEST

START_TEST(swiglu_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, 2, (int[]){2, 3});
    ck_assert_ptr_null(tg_swiglu(g, a, tg_tensor_new(g, TG_F32, 2, (int[]){3, 2})));
    tt_assert_error(g, "swiglu: a and b must have the same shape, got a f32 (2,3), b f32 (3,2)");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_swiglu(g, a, tg_tensor_new(g, TG_F64, 2, (int[]){2, 3})));
    tt_assert_error(g, "swiglu: dtypes differ");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_swiglu(g, a, NULL));
    tt_assert_error(g, "swiglu: input 1 is NULL");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_silu(g, tg_tensor_new(g, TG_I32, 1, (int[]){2})));
    tt_assert_error(g, "silu: x must be f32 or f64, got i32 (2)");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_silu", "silu", 0, TT_TESTS(silu_values_and_gradcheck, swiglu_f32_follows_f64, swiglu_errors));
}
