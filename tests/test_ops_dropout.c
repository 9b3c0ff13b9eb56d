/* ops/dropout.c: inverted dropout, its seeded mask and its gradient. */
#include "tg_test.h"

/* ---- helpers --------------------------------------------------------- */

/* tt_assert_failed, then the error cleared for the next case. */
static void assert_failed(tg_graph *g, const tg_tensor *r, const char *needle)
{
    tt_assert_failed(g, r, needle);
    tg_graph_clear_error(g);
}

/* ---- dropout --------------------------------------------------------- */

static tg_tensor *drop_fn(tg_graph *g, tg_tensor **in, void *ctx) { return tg_dropout(g, in[0], *(double *)ctx); }

/* x all ones of n elements on g (f64), not requiring grad */
static tg_tensor *ones_like_n(tg_graph *g, int n)
{
    tg_tensor *x = tg_tensor_new(g, TG_F64, TT_SHAPE(n));
    for (int i = 0; i < n; i++) ((double *)x->data)[i] = 1;
    return x;
}

START_TEST(dropout_mask_is_seeded)
{
    const int n = 1000;
    const double p = 0.4;
    tg_graph *g = tg_graph_new(), *ref = tg_graph_new();
    tg_tensor *x = ones_like_n(g, n);
    tg_graph_seed(g, 42);
    tg_tensor *a = tg_dropout(g, x, p);
    tg_graph_seed(g, 42);
    tg_tensor *b = tg_dropout(g, x, p);
    tg_graph_seed(g, 43);
    tg_tensor *c = tg_dropout(g, x, p);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_ne(a, x);
    /* the mask is keep iff u >= p, u drawn in element order from the stream */
    tg_graph_seed(ref, 42);
    int differ = 0;
    for (int i = 0; i < n; i++) {
        double ya = tg_tensor_get(a, i);
        ck_assert_double_eq(ya, tg_tensor_get(b, i));
        differ += (ya != 0) != (tg_tensor_get(c, i) != 0);
        bool keep = tg_rng_uniform(tg_graph_rng(ref)) >= p;
        ck_assert_double_eq(ya, keep ? 1 / (1 - p) : 0);
    }
    /* two independent masks differ in about 2 * 0.4 * 0.6 * n = 480 places */
    ck_assert_int_gt(differ, 300);
    tg_graph_free(g);
    tg_graph_free(ref);
}
END_TEST

START_TEST(dropout_kept_fraction)
{
    const int n = 100000;
    const double ps[] = {0.1, 0.5, 0.9};
    tg_graph *g = tg_graph_new();
    tg_graph_seed(g, 7);
    tg_tensor *x = ones_like_n(g, n);
    for (int k = 0; k < 3; k++) {
        tg_tensor *y = tg_dropout(g, x, ps[k]);
        ck_assert_ptr_nonnull(y);
        int kept = 0;
        for (int i = 0; i < n; i++) kept += tg_tensor_get(y, i) != 0;
        double mean = n * (1 - ps[k]), sd = sqrt(n * ps[k] * (1 - ps[k]));
        ck_assert_msg(fabs(kept - mean) <= 4 * sd, "p %g: kept %d of %d, expected %g +/- 4*%g", ps[k], kept, n, mean,
                      sd);
    }
    tg_graph_free(g);
}
END_TEST

START_TEST(dropout_kept_values_exact)
{
    tg_graph *g = tg_graph_new();
    const double p = 0.3;
    tg_tensor *x = tt_randn(g, TT_SHAPE(4, 257), 11);
    tg_tensor *x32 = tt_to_f32(g, x);
    tg_graph_seed(g, 5);
    tg_tensor *y = tg_dropout(g, x, p);
    tg_graph_seed(g, 5);
    tg_tensor *y32 = tg_dropout(g, x32, p);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_nonnull(y32);
    int kept = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double xv = ((double *)x->data)[i], yv = ((double *)y->data)[i];
        float xf = ((float *)x32->data)[i], yf = ((float *)y32->data)[i];
        ck_assert(yv == 0 || yv == xv / (1 - p));
        /* f32: the same mask; x / (1-p) worked in double, rounded once */
        ck_assert_int_eq(yv != 0, yf != 0);
        ck_assert(yf == 0 || yf == (float)(xf / (1 - p)));
        if (yv != 0) ck_assert_double_eq_tol(yf, yv, 1e-5 * fmax(1, fabs(yv)));
        kept += yv != 0;
    }
    ck_assert_int_gt(kept, 0);
    ck_assert_int_lt(kept, x->numel);
    tg_graph_free(g);
}
END_TEST

START_TEST(dropout_identity)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 5), 1);
    ck_assert_ptr_eq(tg_dropout(g, x, 0), x);
    tg_graph_set_training(g, false);
    ck_assert_ptr_eq(tg_dropout(g, x, 0.5), x);
    ck_assert_ptr_eq(tg_dropout(g, x, 1), x);
    tg_graph_set_training(g, true);
    tg_graph_set_grad_enabled(g, false);
    ck_assert_ptr_eq(tg_dropout(g, x, 0.5), x);
    tg_graph_set_grad_enabled(g, true);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    /* and in training with grad it is not the identity */
    tg_tensor *y = tg_dropout(g, x, 0.5);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_ne(y, x);
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    tg_graph_free(g);
}
END_TEST

START_TEST(dropout_gradcheck)
{
    const int shapes[][4] = {{1, 5}, {3, 2, 3, 7}, {2, 1, 1}, {3, 4, 1, 3}};
    double ps[] = {0.3, 0.7};
    for (size_t k = 0; k < 4; k++)
        for (size_t m = 0; m < 2; m++) {
            tg_graph *g = tg_graph_new();
            tg_tensor *in[1] = {tt_randn(g, shapes[k][0], &shapes[k][1], 80 + k)};
            tt_assert_gradcheck(drop_fn, &ps[m], 1, in);
            tg_graph_free(g);
        }
}
END_TEST

/* backward: dx = dy * keep / (1-p), f64 and f32, checked element by element */
START_TEST(dropout_backward_values)
{
    tg_graph *g = tg_graph_new();
    const double p = 0.25;
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 50), 3), *x32 = tt_to_f32(g, x);
    tg_graph_seed(g, 9);
    tg_tensor *y = tg_dropout(g, x, p);
    tg_graph_seed(g, 9);
    tg_tensor *y32 = tg_dropout(g, x32, p);
    double *dy = tt_seed_values(g, TG_F64, 100, 4);
    float dy32[100];
    for (int i = 0; i < 100; i++) dy32[i] = (float)dy[i];
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy), 0);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32), 0);
    for (int i = 0; i < 100; i++) {
        bool keep = ((double *)y->data)[i] != 0;
        ck_assert_double_eq(((double *)x->grad)[i], keep ? dy[i] / (1 - p) : 0);
        ck_assert_double_eq_tol(((float *)x32->grad)[i], ((double *)x->grad)[i], 1e-5 * fmax(1, fabs(dy[i]) * 2));
    }
    /* a second backward adds the same again (doubling is exact) */
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy), 0);
    for (int i = 0; i < 100; i++)
        ck_assert_double_eq(((double *)x->grad)[i], ((double *)y->data)[i] != 0 ? 2 * (dy[i] / (1 - p)) : 0);
    tg_graph_free(g);
}
END_TEST

START_TEST(dropout_p1_zeros)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(4, 3), 2), *x32 = tt_to_f32(g, x);
    tg_tensor *y = tg_dropout(g, x, 1), *y32 = tg_dropout(g, x32, 1);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_nonnull(y32);
    for (int i = 0; i < 12; i++) {
        ck_assert(tg_tensor_get(y, i) == 0 && !signbit(tg_tensor_get(y, i)));
        ck_assert(tg_tensor_get(y32, i) == 0);
    }
    double dy[12];
    for (int i = 0; i < 12; i++) dy[i] = i + 1;
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy), 0);
    for (int i = 0; i < 12; i++) ck_assert(((double *)x->grad)[i] == 0);
    tg_graph_free(g);
}
END_TEST

START_TEST(dropout_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3), 1);
    assert_failed(g, tg_dropout(g, x, -0.1), "dropout: p must be in [0, 1], got -0.1 (x f64 (2,3))");
    assert_failed(g, tg_dropout(g, x, 1.5), "dropout: p must be in [0, 1], got 1.5");
    assert_failed(g, tg_dropout(g, x, NAN), "dropout: p must be in [0, 1], got nan");
    /* a bad p is an error in eval mode too, where dropout is otherwise the identity */
    tg_graph_set_training(g, false);
    assert_failed(g, tg_dropout(g, x, 2), "dropout: p must be in [0, 1], got 2");
    tg_graph_set_training(g, true);
    assert_failed(g, tg_dropout(g, tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3)), 0.5),
                  "dropout: x must be f32 or f64, got i32 (2,3)");
    assert_failed(g, tg_dropout(g, NULL, 0.5), "dropout: input 0 is NULL");
    ck_assert_ptr_nonnull(tg_dropout(g, x, 0.5));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_dropout", "dropout", 0,
                   TT_TESTS(dropout_mask_is_seeded, dropout_kept_fraction, dropout_kept_values_exact, dropout_identity,
                            dropout_gradcheck, dropout_backward_values, dropout_p1_zeros, dropout_errors));
}
