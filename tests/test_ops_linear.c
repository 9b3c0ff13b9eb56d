/* ops: linear, y = x w^T + b. */
#include "tg_test.h"

static double grad_at(const tg_tensor *t, int64_t i)
{
    return t->dtype == TG_F32 ? ((float *)t->grad)[i] : ((double *)t->grad)[i];
}

/* inputs: x, w, then b when ctx is non-NULL */
static tg_tensor *linear_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    return tg_linear(g, in[0], in[1], ctx ? in[2] : NULL);
}

/* x shapes of 1 to 4 dims; the last entry is `in` */
static const int X_SHAPES[][5] = {{1, 5}, {2, 3, 5}, {3, 2, 3, 5}, {4, 2, 1, 3, 5}, {2, 1, 1}, {4, 1, 2, 1, 7}};
static const int OUTS[] = {3, 1, 4, 2, 1, 6};

START_TEST(linear_gradcheck)
{
    for (size_t s = 0; s < sizeof OUTS / sizeof OUTS[0]; s++)
        for (int bias = 0; bias < 2; bias++) {
            tg_graph *g = tg_graph_new();
            const int nd = X_SHAPES[s][0], in = X_SHAPES[s][nd], out = OUTS[s];
            tg_tensor *inputs[3] = {tt_randn(g, nd, &X_SHAPES[s][1], 10 + s), tt_randn(g, TT_SHAPE(out, in), 20 + s),
                                    tt_randn(g, TT_SHAPE(out), 30 + s)};
            tt_assert_gradcheck(linear_fn, bias ? (void *)1 : NULL, bias ? 3 : 2, inputs);
            tg_graph_free(g);
        }
}
END_TEST

/* forward and backward against loops written out, in f64 and f32 */
START_TEST(linear_values_vs_naive)
{
    for (size_t s = 0; s < sizeof OUTS / sizeof OUTS[0]; s++)
        for (int bias = 0; bias < 2; bias++) {
            tg_graph *g = tg_graph_new();
            const int nd = X_SHAPES[s][0], in = X_SHAPES[s][nd], out = OUTS[s];
            tg_tensor *x = tt_randn(g, nd, &X_SHAPES[s][1], 40 + s), *w = tt_randn(g, TT_SHAPE(out, in), 50 + s);
            tg_tensor *b = bias ? tt_randn(g, TT_SHAPE(out), 60 + s) : NULL;
            const int64_t rows = x->numel / in;
            tg_tensor *dyt = tt_randn(g, TT_SHAPE((int)(rows * out)), 70 + s);
            const double *X = x->data, *W = w->data, *dy = dyt->data;

            double *y = calloc((size_t)(rows * out), sizeof *y), *dx = calloc((size_t)x->numel, sizeof *dx);
            double *dw = calloc((size_t)w->numel, sizeof *dw), *db = calloc((size_t)out, sizeof *db);
            for (int64_t r = 0; r < rows; r++)
                for (int o = 0; o < out; o++) {
                    double acc = b ? ((double *)b->data)[o] : 0;
                    for (int i = 0; i < in; i++) acc += X[r * in + i] * W[o * in + i];
                    y[r * out + o] = acc;
                    db[o] += dy[r * out + o];
                    for (int i = 0; i < in; i++) {
                        dx[r * in + i] += dy[r * out + o] * W[o * in + i];
                        dw[o * in + i] += dy[r * out + o] * X[r * in + i];
                    }
                }

            for (int dt = 0; dt < 2; dt++) {
                tg_tensor *xx = dt ? tt_to_f32(g, x) : x, *ww = dt ? tt_to_f32(g, w) : w;
                tg_tensor *bb = b ? (dt ? tt_to_f32(g, b) : b) : NULL;
                const double tol = dt ? 1e-5 : 1e-12;
                tg_tensor *yt = tg_linear(g, xx, ww, bb);
                ck_assert_ptr_nonnull(yt);
                ck_assert_int_eq(yt->ndim, nd);
                for (int d = 0; d < nd - 1; d++) ck_assert_int_eq(yt->shape[d], x->shape[d]);
                ck_assert_int_eq(yt->shape[nd - 1], out);
                for (int64_t i = 0; i < rows * out; i++)
                    ck_assert_double_eq_tol(tg_tensor_get(yt, i), y[i], tol * fmax(1, fabs(y[i])));
                const void *seed = dy;
                float *seed32 = NULL;
                if (dt) {
                    seed32 = malloc((size_t)(rows * out) * sizeof *seed32);
                    for (int64_t i = 0; i < rows * out; i++) seed32[i] = (float)dy[i];
                    seed = seed32;
                }
                ck_assert_int_eq(tg_graph_backward_seeded(g, yt, seed), 0);
                free(seed32);
                for (int64_t i = 0; i < x->numel; i++) ck_assert_double_eq_tol(grad_at(xx, i), dx[i], tol * 10);
                for (int64_t i = 0; i < w->numel; i++) ck_assert_double_eq_tol(grad_at(ww, i), dw[i], tol * 10);
                if (bb)
                    for (int o = 0; o < out; o++) ck_assert_double_eq_tol(grad_at(bb, o), db[o], tol * 10);
            }
            free(y), free(dx), free(dw), free(db);
            ck_assert_ptr_null(tg_graph_error(g));
            tg_graph_free(g);
        }
}
END_TEST

/* by hand: x = [1,2], w = [[1,0],[0,1],[1,1]], b = [0.5,-1,2] -> [1.5, 1, 5] */
START_TEST(linear_by_hand)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_from(g, TG_F64, TT_SHAPE(2), (double[]){1, 2});
    tg_tensor *w = tg_tensor_from(g, TG_F64, TT_SHAPE(3, 2), (double[]){1, 0, 0, 1, 1, 1});
    tg_tensor *b = tg_tensor_from(g, TG_F64, TT_SHAPE(3), (double[]){0.5, -1, 2});
    tg_tensor *y = tg_linear(g, x, w, b);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(y->ndim, 1);
    ck_assert_int_eq(y->shape[0], 3);
    const double want[] = {1.5, 1, 5};
    for (int i = 0; i < 3; i++) ck_assert_double_eq(tg_tensor_get(y, i), want[i]);
    tg_tensor *y0 = tg_linear(g, x, w, NULL);
    for (int i = 0; i < 3; i++) ck_assert_double_eq(tg_tensor_get(y0, i), want[i] - tg_tensor_get(b, i));
    tg_graph_free(g);
}
END_TEST

/* beta = 1: gradients add, across two uses of x in one graph and across
 * two backward calls */
START_TEST(linear_grads_accumulate)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 4), 1), *w = tt_randn(g, TT_SHAPE(2, 4), 2);
    tg_tensor *b = tt_randn(g, TT_SHAPE(2), 3);
    /* L = sum(linear(x, w, b)) + sum(linear(x, w, b)) = 2 sum(...):
     * dx[r][i] = 2 sum_o w[o][i], dw[o][i] = 2 sum_r x[r][i], db[o] = 2 * 3 */
    tg_tensor *l = tg_add(g, tg_sum_all(g, tg_linear(g, x, w, b)), tg_sum_all(g, tg_linear(g, x, w, b)));
    ck_assert_int_eq(tg_graph_backward(g, l), 0);
    ck_assert_int_eq(tg_graph_backward(g, l), 0); /* leaves accumulate: 4 sum(...) */
    const double *X = x->data, *W = w->data;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 4; i++)
            ck_assert_double_eq_tol(((double *)x->grad)[r * 4 + i], 4 * (W[i] + W[4 + i]), 1e-12);
    for (int o = 0; o < 2; o++) {
        ck_assert_double_eq_tol(((double *)b->grad)[o], 12, 1e-12);
        for (int i = 0; i < 4; i++)
            ck_assert_double_eq_tol(((double *)w->grad)[o * 4 + i], 4 * (X[i] + X[4 + i] + X[8 + i]), 1e-12);
    }
    tg_graph_free(g);
}
END_TEST

START_TEST(linear_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 5), 1), *w = tt_randn(g, TT_SHAPE(4, 5), 2);
    tg_tensor *b = tt_randn(g, TT_SHAPE(4), 3);
    struct {
        tg_tensor *x, *w, *b;
        const char *needle;
    } cases[] = {
        {x, tt_randn(g, TT_SHAPE(4, 6), 4), NULL,
         "x's last dimension must equal w's in: x f64 (2,3,5), w (out, in) f64 (4,6)"},
        {x, tt_randn(g, TT_SHAPE(5), 5), NULL, "w must be 2-D (out, in), got f64 (5)"},
        {x, tt_randn(g, TT_SHAPE(1, 4, 5), 5), NULL, "w must be 2-D (out, in), got f64 (1,4,5)"},
        {x, w, tt_randn(g, TT_SHAPE(5), 6), "b must be (out) = (4) for w f64 (4,5), got f64 (5)"},
        {x, w, tt_randn(g, TT_SHAPE(1, 4), 6), "b must be (out) = (4) for w f64 (4,5), got f64 (1,4)"},
        {x, tg_tensor_new(g, TG_F32, TT_SHAPE(4, 5)), NULL,
         "x and w must have the same float dtype: x f64 (2,3,5), w f32 (4,5)"},
        {x, w, tg_tensor_new(g, TG_F32, TT_SHAPE(4)), "b must have x's dtype: x f64 (2,3,5), b f32 (4)"},
        {tg_tensor_new(g, TG_I32, TT_SHAPE(2, 5)), w, b, "x must be f32 or f64, got i32 (2,5)"},
        {tg_scalar(g, TG_F64, 1), w, b, "x must have at least 1 dimension (..., in), got f64 ()"},
        {NULL, w, b, "linear: input 0 is NULL"},
        {x, NULL, b, "linear: input 1 is NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_ptr_null(tg_graph_error(g));
        ck_assert_ptr_null(tg_linear(g, cases[i].x, cases[i].w, cases[i].b));
        tt_assert_error(g, cases[i].needle);
        tt_assert_error(g, "linear: ");
        tg_graph_clear_error(g);
    }
    ck_assert_ptr_nonnull(tg_linear(g, x, w, b));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main(
        "ops_linear", "linear", 0,
        TT_TESTS(linear_gradcheck, linear_values_vs_naive, linear_by_hand, linear_grads_accumulate, linear_errors));
}
