/* ops/layernorm.c: layer normalisation over the last axis. */
#include "tg_test.h"

/* ---- helpers --------------------------------------------------------- */

/* Asserts |a - b| <= tol * max(1, |b|) for every element of two float
 * tensors of the same numel (any dtypes). */
static void assert_close(const tg_tensor *a, const tg_tensor *b, double tol, const char *what)
{
    ck_assert_int_eq(a->numel, b->numel);
    for (int64_t i = 0; i < a->numel; i++) {
        double x = tg_tensor_get(a, i), y = tg_tensor_get(b, i);
        ck_assert_msg(fabs(x - y) <= tol * fmax(1.0, fabs(y)), "%s: element %lld: %.10g vs %.10g", what, (long long)i,
                      x, y);
    }
}

/* Same, on raw gradient buffers of tensors a (dtype a->dtype) and b. */
static void assert_grad_close(const tg_tensor *a, const tg_tensor *b, double tol, const char *what)
{
    ck_assert_ptr_nonnull(a->grad);
    ck_assert_ptr_nonnull(b->grad);
    for (int64_t i = 0; i < a->numel; i++) {
        double x = a->dtype == TG_F32 ? ((float *)a->grad)[i] : ((double *)a->grad)[i];
        double y = b->dtype == TG_F32 ? ((float *)b->grad)[i] : ((double *)b->grad)[i];
        ck_assert_msg(fabs(x - y) <= tol * fmax(1.0, fabs(y)), "%s grad: element %lld: %.10g vs %.10g", what,
                      (long long)i, x, y);
    }
}

/* tt_assert_failed, then the error cleared for the next case. */
static void assert_failed(tg_graph *g, const tg_tensor *r, const char *needle)
{
    tt_assert_failed(g, r, needle);
    tg_graph_clear_error(g);
}

/* ---- layernorm ------------------------------------------------------- */

typedef struct {
    bool w, b;
    double eps;
} ln_ctx;

/* inputs: x, then w when ctx->w, then b when ctx->b */
static tg_tensor *ln_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const ln_ctx *c = ctx;
    tg_tensor *w = c->w ? in[1] : NULL, *b = c->b ? in[c->w ? 2 : 1] : NULL;
    return tg_layernorm(g, in[0], w, b, c->eps);
}

/* naive reference: y = (x - mean) / sqrt(var + eps) * w + b, written out */
static void ln_naive(const tg_tensor *x, const tg_tensor *w, const tg_tensor *b, double eps, double *y)
{
    int C = x->shape[x->ndim - 1];
    for (int64_t r = 0; r < x->numel / C; r++) {
        double sum = 0, sq = 0;
        for (int j = 0; j < C; j++) sum += tg_tensor_get(x, r * C + j);
        double mean = sum / C;
        for (int j = 0; j < C; j++) sq += pow(tg_tensor_get(x, r * C + j) - mean, 2);
        double sd = sqrt(sq / C + eps);
        for (int j = 0; j < C; j++)
            y[r * C + j] = (tg_tensor_get(x, r * C + j) - mean) / sd * (w ? tg_tensor_get(w, j) : 1.0) +
                (b ? tg_tensor_get(b, j) : 0.0);
    }
}

START_TEST(layernorm_gradcheck)
{
    const int shapes[][5] = {{1, 5}, {3, 2, 3, 7}, {2, 4, 1}, {2, 1, 3}, {4, 2, 1, 3, 4}, {1, 1}};
    const ln_ctx modes[] = {
        {true, true, 1e-5}, {true, false, 1e-5}, {false, false, 1e-5}, {false, true, 1e-5}, {true, true, 0.5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            tg_graph *g = tg_graph_new();
            int nd = shapes[s][0], C = shapes[s][nd];
            uint64_t seed = 100 + 10 * s + m;
            tg_tensor *in[3];
            int n = 0;
            in[n++] = tt_randn(g, nd, &shapes[s][1], seed);
            if (modes[m].w) in[n++] = tt_randn(g, TT_SHAPE(C), seed + 1000);
            if (modes[m].b) in[n++] = tt_randn(g, TT_SHAPE(C), seed + 2000);
            tt_assert_gradcheck(ln_fn, (void *)&modes[m], n, in);
            tg_graph_free(g);
        }
}
END_TEST

/* C = 1: every row normalises to 0, so the output is b and dx is 0 */
START_TEST(layernorm_c1_is_b)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(4, 1), 1), *w = tt_randn(g, TT_SHAPE(1), 2), *b = tt_randn(g, TT_SHAPE(1), 3);
    tg_tensor *y = tg_layernorm(g, x, w, b, 1e-5);
    ck_assert_ptr_nonnull(y);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tg_tensor_get(y, i), tg_tensor_get(b, 0));
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, (double[]){1, 2, 3, 4}), 0);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(((double *)x->grad)[i], 0);
    ck_assert_double_eq(((double *)w->grad)[0], 0);
    ck_assert_double_eq(((double *)b->grad)[0], 10);
    tg_graph_free(g);
}
END_TEST

START_TEST(layernorm_forward_values)
{
    tg_graph *g = tg_graph_new();
    /* by hand: x = [1,2,3,4], mean 2.5, var 1.25; w = [1,2,3,4], b = [0.5,0,0,-1] */
    double xv[] = {1, 2, 3, 4}, wv[] = {1, 2, 3, 4}, bv[] = {0.5, 0, 0, -1};
    tg_tensor *x = tg_tensor_from(g, TG_F64, TT_SHAPE(4), xv);
    tg_tensor *w = tg_tensor_from(g, TG_F64, TT_SHAPE(4), wv);
    tg_tensor *b = tg_tensor_from(g, TG_F64, TT_SHAPE(4), bv);
    tg_tensor *y = tg_layernorm(g, x, w, b, 1e-5);
    ck_assert_ptr_nonnull(y);
    double s = 1 / sqrt(1.25 + 1e-5);
    double want[] = {-1.5 * s * 1 + 0.5, -0.5 * s * 2, 0.5 * s * 3, 1.5 * s * 4 - 1};
    for (int i = 0; i < 4; i++) ck_assert_double_eq_tol(tg_tensor_get(y, i), want[i], 1e-12);
    /* constant row: var 0, output b */
    tg_tensor *c = tg_tensor_from(g, TG_F64, TT_SHAPE(4), (double[]){3, 3, 3, 3});
    tg_tensor *yc = tg_layernorm(g, c, w, b, 1e-5);
    for (int i = 0; i < 4; i++) ck_assert_double_eq(tg_tensor_get(yc, i), bv[i]);

    /* random shapes against the naive reference, f64 and f32 */
    const int shapes[][4] = {{1, 5}, {3, 2, 3, 7}, {2, 4, 1}, {2, 3, 64}};
    for (size_t k = 0; k < 4; k++) {
        int nd = shapes[k][0], C = shapes[k][nd];
        tg_tensor *xr = tt_randn(g, nd, &shapes[k][1], 7 + k);
        tg_tensor *wr = tt_randn(g, TT_SHAPE(C), 17 + k), *br = tt_randn(g, TT_SHAPE(C), 27 + k);
        for (int64_t i = 0; i < xr->numel; i++) ((double *)xr->data)[i] = 3 * ((double *)xr->data)[i] + 5;
        double *ref = malloc((size_t)xr->numel * sizeof *ref);
        for (int mode = 0; mode < 3; mode++) {
            tg_tensor *wm = mode < 2 ? wr : NULL, *bm = mode < 1 ? br : NULL;
            ln_naive(xr, wm, bm, 0.1, ref);
            tg_tensor *r = tg_tensor_from(g, TG_F64, xr->ndim, xr->shape, ref);
            tg_tensor *y64 = tg_layernorm(g, xr, wm, bm, 0.1);
            ck_assert_ptr_nonnull(y64);
            ck_assert_int_eq(y64->ndim, xr->ndim);
            for (int d = 0; d < xr->ndim; d++) ck_assert_int_eq(y64->shape[d], xr->shape[d]);
            assert_close(y64, r, 1e-12, "layernorm f64 vs naive");
            tg_tensor *y32 =
                tg_layernorm(g, tt_to_f32(g, xr), wm ? tt_to_f32(g, wm) : NULL, bm ? tt_to_f32(g, bm) : NULL, 0.1);
            ck_assert_ptr_nonnull(y32);
            ck_assert_int_eq(y32->dtype, TG_F32);
            assert_close(y32, y64, 1e-5, "layernorm f32 vs f64");
        }
        free(ref);
    }
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

/* w = 1, b = 0 (explicit, and NULL): each output row has mean 0 and
 * variance var / (var + eps) (~1). */
START_TEST(layernorm_normalises_rows)
{
    tg_graph *g = tg_graph_new();
    const int R = 6, C = 33;
    tg_tensor *x = tt_randn(g, TT_SHAPE(R, C), 5);
    for (int64_t i = 0; i < x->numel; i++) ((double *)x->data)[i] = 4 * ((double *)x->data)[i] - 7 + (double)(i / C);
    tg_tensor *ones = tg_tensor_new(g, TG_F64, TT_SHAPE(C)), *zeros = tg_tensor_new(g, TG_F64, TT_SHAPE(C));
    for (int j = 0; j < C; j++) ((double *)ones->data)[j] = 1;
    const double eps = 1e-5;
    for (int mode = 0; mode < 2; mode++) {
        tg_tensor *y = mode ? tg_layernorm(g, x, NULL, NULL, eps) : tg_layernorm(g, x, ones, zeros, eps);
        ck_assert_ptr_nonnull(y);
        for (int r = 0; r < R; r++) {
            const double *xr = (double *)x->data + r * C, *yr = (double *)y->data + r * C;
            double mx = 0, vx = 0, my = 0, vy = 0;
            for (int j = 0; j < C; j++) mx += xr[j] / C, my += yr[j] / C;
            for (int j = 0; j < C; j++) vx += (xr[j] - mx) * (xr[j] - mx) / C, vy += yr[j] * yr[j] / C;
            ck_assert_double_eq_tol(my, 0, 1e-12);
            ck_assert_double_eq_tol(vy, 1, 1e-4);
            ck_assert_double_eq_tol(vy, vx / (vx + eps), 1e-12);
        }
    }
    tg_graph_free(g);
}
END_TEST

/* f32 rows far from zero (1e4 + N(0,1), C = 512): with row statistics in
 * double the output is good to f32 rounding; a float running sum of ~5e6
 * would be off by ~1e-3 in the mean, so 1e-3 error in the output. */
START_TEST(layernorm_f32_large_offset)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 512), 21);
    for (int64_t i = 0; i < x->numel; i++) ((double *)x->data)[i] = (float)(1e4 + ((double *)x->data)[i]);
    tg_tensor *x32 = tt_to_f32(g, x); /* holds exactly the values of x */
    /* w and b hold f32 values too, so both sides see the same numbers */
    tg_tensor *w = tt_to_f32(g, tt_randn(g, TT_SHAPE(512), 22)), *b = tt_to_f32(g, tt_randn(g, TT_SHAPE(512), 23));
    tg_tensor *w64 = tg_tensor_new(g, TG_F64, 1, (int[]){512}), *b64 = tg_tensor_new(g, TG_F64, 1, (int[]){512});
    for (int j = 0; j < 512; j++)
        ((double *)w64->data)[j] = ((float *)w->data)[j], ((double *)b64->data)[j] = ((float *)b->data)[j];
    double *ref = malloc((size_t)x->numel * sizeof *ref);
    for (int mode = 0; mode < 4; mode++) { /* none, w, b, both: each its own loop */
        const bool hw = mode & 1, hb = mode & 2;
        ln_naive(x, hw ? w64 : NULL, hb ? b64 : NULL, 1e-5, ref);
        tg_tensor *r = tg_tensor_from(g, TG_F64, TT_SHAPE(3, 512), ref);
        tg_tensor *y32 = tg_layernorm(g, x32, hw ? w : NULL, hb ? b : NULL, 1e-5);
        ck_assert_ptr_nonnull(y32);
        assert_close(y32, r, 1e-6,
                     hw && hb ? "offset 1e4, w and b"
                         : hw ? "offset 1e4, w"
                         : hb ? "offset 1e4, b"
                              : "offset 1e4");
    }
    free(ref);
    tg_graph_free(g);
}
END_TEST

/* f32 backward agrees with f64 backward; nothing recorded in no-grad mode */
START_TEST(layernorm_f32_backward_and_nograd)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 2, 9), 41), *w = tt_randn(g, TT_SHAPE(9), 42),
              *b = tt_randn(g, TT_SHAPE(9), 43);
    tg_tensor *x32 = tt_to_f32(g, x), *w32 = tt_to_f32(g, w), *b32 = tt_to_f32(g, b);
    tg_tensor *y = tg_layernorm(g, x, w, b, 1e-5), *y32 = tg_layernorm(g, x32, w32, b32, 1e-5);
    double *dy = tt_seed_values(g, TG_F64, y->numel, 9);
    float *dy32 = tg_arena_alloc(g, (size_t)y->numel * sizeof(float));
    for (int64_t i = 0; i < y->numel; i++) dy32[i] = (float)dy[i];
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy), 0);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32), 0);
    assert_grad_close(x32, x, 1e-4, "x");
    assert_grad_close(w32, w, 1e-4, "w");
    assert_grad_close(b32, b, 1e-5, "b");
    /* a second backward accumulates: twice the first. Exactly for x (one
     * add per element per pass); w and b sum over rows straight into
     * their buffers, so the second pass adds in a different order and may
     * differ from 2x in the last bit. */
    tg_tensor *once[3];
    for (int k = 0; k < 3; k++) {
        tg_tensor *t = (tg_tensor *[]){x, w, b}[k];
        once[k] = tg_tensor_from(g, TG_F64, t->ndim, t->shape, t->grad);
    }
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy), 0);
    for (int k = 0; k < 3; k++) {
        tg_tensor *t = (tg_tensor *[]){x, w, b}[k];
        for (int64_t i = 0; i < t->numel; i++) {
            double got = ((double *)t->grad)[i], want = 2 * ((double *)once[k]->data)[i];
            if (k == 0) ck_assert_double_eq(got, want);
            else ck_assert_double_eq_tol(got, want, 1e-14 * fmax(1, fabs(want)));
        }
    }

    int len = tg_graph_tape_len(g);
    tg_graph_set_grad_enabled(g, false);
    tg_tensor *yn = tg_layernorm(g, x, w, b, 1e-5);
    ck_assert_ptr_nonnull(yn);
    ck_assert(!yn->requires_grad);
    ck_assert_int_eq(tg_graph_tape_len(g), len);
    assert_close(yn, y, 0, "no-grad forward");
    tg_graph_free(g);
}
END_TEST

START_TEST(layernorm_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 7), 1), *w = tt_randn(g, TT_SHAPE(7), 2),
              *b = tt_randn(g, TT_SHAPE(7), 3);
    tg_tensor *w6 = tt_randn(g, TT_SHAPE(6), 4), *w2d = tt_randn(g, TT_SHAPE(1, 7), 5);
    tg_tensor *x32 = tt_to_f32(g, x), *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 7));

    assert_failed(g, tg_layernorm(g, x, w6, b, 1e-5),
                  "layernorm: w must have shape (C) = (7) for x f64 (2,3,7), got f64 (6)");
    assert_failed(g, tg_layernorm(g, x, w, w6, 1e-5),
                  "layernorm: b must have shape (C) = (7) for x f64 (2,3,7), got f64 (6)");
    assert_failed(g, tg_layernorm(g, x, w2d, NULL, 1e-5),
                  "w must have shape (C) = (7) for x f64 (2,3,7), got f64 (1,7)");
    assert_failed(g, tg_layernorm(g, x, NULL, w2d, 1e-5), "b must have shape (C) = (7)");
    assert_failed(g, tg_layernorm(g, x, w, b, 0), "layernorm: eps must be > 0, got 0 (x f64 (2,3,7))");
    assert_failed(g, tg_layernorm(g, x, w, b, -1e-5), "eps must be > 0, got -1e-05");
    assert_failed(g, tg_layernorm(g, x, w, b, NAN), "eps must be > 0, got nan");
    assert_failed(g, tg_layernorm(g, x32, w, b, 1e-5), "layernorm: dtypes differ: x f32 (2,3,7), w f64 (7)");
    assert_failed(g, tg_layernorm(g, x, w, tt_to_f32(g, b), 1e-5),
                  "layernorm: dtypes differ: x f64 (2,3,7), b f32 (7)");
    assert_failed(g, tg_layernorm(g, ids, NULL, NULL, 1e-5), "layernorm: x must be f32 or f64, got i32 (2,7)");
    assert_failed(g, tg_layernorm(g, x, tg_tensor_new(g, TG_I32, TT_SHAPE(7)), NULL, 1e-5),
                  "layernorm: w must be f32 or f64, got i32 (7)");
    assert_failed(g, tg_layernorm(g, tg_scalar(g, TG_F64, 2), NULL, NULL, 1e-5),
                  "layernorm: x must have at least 1 dimension, got f64 ()");
    assert_failed(g, tg_layernorm(g, NULL, w, b, 1e-5), "layernorm: input 0 is NULL");
    /* and the graph still works after the errors were cleared */
    ck_assert_ptr_nonnull(tg_layernorm(g, x, w, b, 1e-5));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_layernorm", "layernorm", 0,
                   TT_TESTS(layernorm_gradcheck, layernorm_c1_is_b, layernorm_forward_values, layernorm_normalises_rows,
                            layernorm_f32_large_offset, layernorm_f32_backward_and_nograd, layernorm_errors));
}
