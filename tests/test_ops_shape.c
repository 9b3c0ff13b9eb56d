/* ops/shape.c: reshape, transpose, permute, slice, split, concat. */
#include "tg_test.h"

/* ---- one gradcheck function for every op, driven by a spec ------------- */

/* (HEADS keeps 11, and so its gradcheck seed 11 + op, from when the
 * reductions, now in test_ops_reduce.c, were numbered here too) */
enum { RESHAPE, TRANSPOSE, PERMUTE, SLICE, SPLIT_PICK, SPLIT_MIX, CONCAT, HEADS = 11 };

typedef struct spec {
    int op;
    int axis, axis1; /* transpose: axis, axis1 */
    int start, end; /* slice */
    int ndim, shape[4]; /* reshape target */
    int perm[4]; /* permute */
    int n, sizes[8]; /* split sizes; concat: n inputs */
    int pick; /* split: which piece */
} spec;

static tg_tensor *apply(tg_graph *g, tg_tensor **in, void *ctx)
{
    const spec *s = ctx;
    tg_tensor *out[8];
    switch (s->op) {
    case RESHAPE: return tg_reshape(g, in[0], s->ndim, s->shape);
    case TRANSPOSE: return tg_transpose(g, in[0], s->axis, s->axis1);
    case PERMUTE: return tg_permute(g, in[0], s->perm);
    case SLICE: return tg_slice(g, in[0], s->axis, s->start, s->end);
    case SPLIT_PICK:
        if (tg_split(g, in[0], s->axis, s->n, s->sizes, out) != 0) return NULL;
        return out[s->pick];
    case SPLIT_MIX: /* p0 * p1 + p2: every piece reaches the output */
        if (tg_split(g, in[0], s->axis, 3, s->sizes, out) != 0) return NULL;
        return tg_add(g, tg_mul(g, out[0], out[1]), out[2]);
    case CONCAT: return tg_concat(g, s->n, in, s->axis);
    case HEADS: { /* (B,T,C) -> (B,T,H,dh) -> (B,H,T,dh); shape holds B,T,H,dh */
        tg_tensor *h = tg_reshape(g, in[0], 4, s->shape); /* (B,T,H,dh) */
        return tg_transpose(g, h, 1, 2); /* (B,H,T,dh) */
    }
    }
    return NULL;
}

/* gradcheck of one spec on a fresh f64 input of the given shape */
static void check1(spec s, int ndim, const int *shape)
{
    tt_assert_gradcheck1(apply, &s, ndim, shape, 11 + (uint64_t)s.op);
}

/* ---- error helpers ---------------------------------------------------- */

/* y must be NULL with an error containing each needle; a following op
 * given NULL returns NULL and leaves the first message in place. */
static void expect_fail(tg_graph *g, const void *y, const char *n1, const char *n2, const char *n3)
{
    tt_assert_failed(g, y, n1);
    if (n2) tt_assert_error(g, n2);
    if (n3) tt_assert_error(g, n3);
    tg_graph_reset(g);
}

/* an f64 tensor (no grad) whose element i is i */
static tg_tensor *iota(tg_graph *g, tg_dtype dt, int ndim, const int *shape)
{
    tg_tensor *t = tg_tensor_new(g, dt, ndim, shape);
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == TG_F64) ((double *)t->data)[i] = (double)i;
        else if (dt == TG_F32) ((float *)t->data)[i] = (float)i;
        else if (dt == TG_I32) ((int32_t *)t->data)[i] = (int32_t)i;
        else ((uint8_t *)t->data)[i] = (uint8_t)(i % 2);
    }
    return t;
}

/* ---- reshape -------------------------------------------------------- */

START_TEST(reshape_is_a_view)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 4), 1);
    tg_tensor *y = tg_reshape(g, x, TT_SHAPE(4, -1));
    tt_assert_shape(y, TT_SHAPE(4, 6));
    ck_assert_ptr_eq(y->data, x->data);
    ck_assert(y->requires_grad);
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    /* -1 anywhere, and to a scalar and back */
    tt_assert_shape(tg_reshape(g, x, TT_SHAPE(-1)), TT_SHAPE(24));
    tt_assert_shape(tg_reshape(g, x, TT_SHAPE(2, -1, 3)), TT_SHAPE(2, 4, 3));
    tt_assert_shape(tg_reshape(g, x, TT_SHAPE(1, 2, 1, -1)), TT_SHAPE(1, 2, 1, 12));
    tg_tensor *one = tt_randn(g, TT_SHAPE(1, 1), 2);
    tg_tensor *s = tg_reshape(g, one, 0, NULL);
    tt_assert_shape(s, 0, NULL);
    ck_assert_ptr_eq(s->data, one->data);
    tt_assert_shape(tg_reshape(g, s, TT_SHAPE(-1, 1, 1)), TT_SHAPE(1, 1, 1));
    /* writes through x are seen through the view */
    ((double *)x->data)[5] = 42.0;
    ck_assert(tg_tensor_get(y, 5) == 42.0);
    /* no grad mode: a view all the same, nothing recorded */
    tg_graph_reset(g);
    x = tt_randn(g, TT_SHAPE(3, 5), 3);
    tg_graph_set_grad_enabled(g, false);
    y = tg_reshape(g, x, TT_SHAPE(5, 3));
    ck_assert_ptr_eq(y->data, x->data);
    ck_assert(!y->requires_grad);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    tg_graph_free(g);
}
END_TEST

START_TEST(reshape_gradcheck)
{
    check1((spec){.op = RESHAPE, .ndim = 2, .shape = {4, -1}}, TT_SHAPE(2, 3, 4));
    check1((spec){.op = RESHAPE, .ndim = 1, .shape = {5}}, TT_SHAPE(1, 5));
    check1((spec){.op = RESHAPE, .ndim = 3, .shape = {7, 1, 3}}, TT_SHAPE(3, 1, 7));
    check1((spec){.op = RESHAPE, .ndim = 4, .shape = {3, 2, -1, 1}}, TT_SHAPE(2, 3, 5));
    check1((spec){.op = RESHAPE, .ndim = 0}, TT_SHAPE(1));
}
END_TEST

/* the same view used twice: both contributions add into x's gradient */
static tg_tensor *reshape_twice(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *a = tg_reshape(g, in[0], TT_SHAPE(3, 2));
    tg_tensor *b = tg_reshape(g, in[0], TT_SHAPE(3, 2));
    return tg_mul(g, a, b);
}

START_TEST(reshape_accumulates)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x[1] = {tt_randn(g, TT_SHAPE(2, 3), 4)};
    tt_assert_gradcheck(reshape_twice, NULL, 1, x);
    /* d(sum(x*x))/dx = 2x, checked by hand */
    tg_tensor *y = tg_sum_all(g, reshape_twice(g, x, NULL));
    memset(x[0]->grad, 0, 6 * sizeof(double));
    ck_assert_int_eq(tg_graph_backward(g, y), 0);
    for (int i = 0; i < 6; i++)
        ck_assert_double_eq_tol(((double *)x[0]->grad)[i], 2 * ((double *)x[0]->data)[i], 1e-15);
    tg_graph_free(g);
}
END_TEST

START_TEST(reshape_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(4, 2)), "reshape: cannot reshape", "f32 (2,3)", "into (4,2)");
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(4, -1)), "reshape: cannot reshape", "(2,3)", "(4,-1)");
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(7, -1)), "reshape: cannot reshape", "(2,3)", "(7,-1)");
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(-1, 3, -1)), "reshape: bad target shape (-1,3,-1)", "(2,3)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(0, 6)), "reshape: bad target shape (0,6)", "f32 (2,3)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(-2, -3)), "reshape: bad target shape (-2,-3)", NULL, NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, 5, (int[]){1, 1, 2, 3, 1}), "reshape: ndim must be 0..4, got 5", "(2,3)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, 0, NULL), "reshape: cannot reshape", "(6 elements) into ()", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, 2, NULL), "reshape: shape is NULL", NULL, NULL);
    /* a huge given entry does not overflow the product */
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_reshape(g, x, TT_SHAPE(2147483647, 2147483647, 2147483647)), "reshape: cannot reshape", NULL,
                NULL);
    expect_fail(g, tg_reshape(g, NULL, TT_SHAPE(2)), "reshape: input 0 is NULL", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

/* ---- transpose / permute ----------------------------------------------- */

/* y = permute(x, perm) with x holding its flat index: check every element
 * of y against the index arithmetic, for any dtype. */
static void check_permuted(const tg_tensor *x, const tg_tensor *y, const int *perm)
{
    int nd = x->ndim, xs[4] = {1, 1, 1, 1}, ys[4] = {1, 1, 1, 1};
    ck_assert_int_eq(y->ndim, nd);
    for (int a = 0; a < nd; a++) ck_assert_int_eq(y->shape[a], x->shape[perm[a]]);
    for (int a = nd - 2; a >= 0; a--) {
        xs[a] = xs[a + 1] * x->shape[a + 1];
        ys[a] = ys[a + 1] * y->shape[a + 1];
    }
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t j = 0; /* x's flat index: y's index along axis a is x's along perm[a] */
        for (int a = 0; a < nd; a++) j += (i / ys[a] % y->shape[a]) * xs[perm[a]];
        ck_assert_msg(tg_tensor_get(y, i) == tg_tensor_get(x, j), "y[%lld] = %g, want x[%lld] = %g", (long long)i,
                      tg_tensor_get(y, i), (long long)j, tg_tensor_get(x, j));
    }
}

START_TEST(transpose_values)
{
    tg_graph *g = tg_graph_new();
    /* hand-written case: (2,3) -> (3,2), y[i][j] = x[j][i] */
    tg_tensor *x = iota(g, TG_F64, TT_SHAPE(2, 3));
    tg_tensor *y = tg_transpose(g, x, 0, 1);
    tt_assert_shape(y, TT_SHAPE(3, 2));
    const double want[6] = {0, 3, 1, 4, 2, 5};
    for (int i = 0; i < 6; i++) ck_assert(((double *)y->data)[i] == want[i]);
    /* (2,3,4) axes (0,2): y[i,j,k] = x[k,j,i] = 12k + 4j + i */
    x = iota(g, TG_F64, TT_SHAPE(2, 3, 4));
    y = tg_transpose(g, x, 0, -1);
    tt_assert_shape(y, TT_SHAPE(4, 3, 2));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) ck_assert(((double *)y->data)[(i * 3 + j) * 2 + k] == 12 * k + 4 * j + i);
    /* the same axis twice is a copy */
    y = tg_transpose(g, x, 1, -2);
    check_permuted(x, y, (int[]){0, 1, 2});
    ck_assert_ptr_ne(y->data, x->data);
    /* 4-D, every pair */
    x = iota(g, TG_F32, TT_SHAPE(2, 3, 5, 7));
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            int p[4] = {0, 1, 2, 3};
            p[a] = b;
            p[b] = a;
            check_permuted(x, tg_transpose(g, x, a, b - 4), p);
        }
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

START_TEST(permute_values)
{
    tg_graph *g = tg_graph_new();
    /* (B,T,H,dh) -> (B,H,T,dh): y[b,h,t,d] = x[b,t,h,d] */
    int B = 2, T = 3, H = 4, dh = 5;
    tg_tensor *x = iota(g, TG_F64, TT_SHAPE(B, T, H, dh));
    tg_tensor *y = tg_permute(g, x, (int[]){0, 2, 1, 3});
    tt_assert_shape(y, TT_SHAPE(B, H, T, dh));
    const double *xv = x->data, *yv = y->data;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                for (int d = 0; d < dh; d++)
                    ck_assert(yv[((b * H + h) * T + t) * dh + d] == xv[((b * T + t) * H + h) * dh + d]);
    /* every permutation of 4 axes (negative spellings too) */
    x = iota(g, TG_F32, TT_SHAPE(2, 1, 3, 5));
    int count = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) {
                int d = 6 - a - b - c;
                if (a == b || a == c || b == c || d < 0 || d > 3 || d == a || d == b || d == c) continue;
                check_permuted(x, tg_permute(g, x, (int[]){a, b - 4, c, d}), (int[]){a, b, c, d});
                count++;
            }
    ck_assert_int_eq(count, 24);
    /* 1-D and 0-D */
    x = iota(g, TG_F64, TT_SHAPE(7));
    check_permuted(x, tg_permute(g, x, (int[]){-1}), (int[]){0});
    x = tg_scalar(g, TG_F64, 3.5);
    y = tg_permute(g, x, NULL);
    tt_assert_shape(y, 0, NULL);
    ck_assert(tg_tensor_item(y) == 3.5);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

START_TEST(transpose_permute_gradcheck)
{
    check1((spec){.op = TRANSPOSE, .axis = 0, .axis1 = 1}, TT_SHAPE(2, 3));
    check1((spec){.op = TRANSPOSE, .axis = 0, .axis1 = -1}, TT_SHAPE(3, 1, 5));
    check1((spec){.op = TRANSPOSE, .axis = 1, .axis1 = 2}, TT_SHAPE(2, 3, 4, 5));
    check1((spec){.op = TRANSPOSE, .axis = -2, .axis1 = -1}, TT_SHAPE(1, 7));
    check1((spec){.op = TRANSPOSE, .axis = 3, .axis1 = 0}, TT_SHAPE(2, 3, 5, 1));
    check1((spec){.op = PERMUTE, .perm = {0, 2, 1, 3}}, TT_SHAPE(2, 3, 4, 5));
    check1((spec){.op = PERMUTE, .perm = {3, 0, 2, 1}}, TT_SHAPE(2, 3, 1, 5));
    check1((spec){.op = PERMUTE, .perm = {2, 0, 1}}, TT_SHAPE(3, 5, 7));
    check1((spec){.op = PERMUTE, .perm = {-1, -3, -2}}, TT_SHAPE(1, 3, 5));
    check1((spec){.op = PERMUTE, .perm = {0}}, TT_SHAPE(7));
    /* the multi-head split: reshape (B,T,C) to (B,T,H,dh), then transpose */
    check1((spec){.op = HEADS, .shape = {2, 3, 2, 3}}, TT_SHAPE(2, 3, 6));
}
END_TEST

START_TEST(heads_split_values)
{
    /* reshape (B,T,C)->(B,T,H,dh), transpose(1,2): y[b,h,t,d] = x[b,t,h*dh+d] */
    tg_graph *g = tg_graph_new();
    int B = 2, T = 3, H = 2, dh = 3, C = H * dh;
    tg_tensor *x = iota(g, TG_F64, TT_SHAPE(B, T, C));
    spec s = {.op = HEADS, .shape = {B, T, H, dh}};
    tg_tensor *in[1] = {x};
    tg_tensor *y = apply(g, in, &s);
    tt_assert_shape(y, TT_SHAPE(B, H, T, dh));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                for (int d = 0; d < dh; d++)
                    ck_assert(((double *)y->data)[((b * H + h) * T + t) * dh + d] ==
                              ((double *)x->data)[(b * T + t) * C + h * dh + d]);
    tg_graph_free(g);
}
END_TEST

START_TEST(transpose_permute_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_transpose(g, x, 0, 2), "transpose: axes (0, 2) out of range", "f32 (2,3)", NULL);
    x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3));
    expect_fail(g, tg_transpose(g, x, -3, 1), "transpose: axes (-3, 1) out of range", "f64 (2,3)", NULL);
    x = tg_scalar(g, TG_F64, 1);
    expect_fail(g, tg_transpose(g, x, 0, 0), "transpose: axes (0, 0) out of range", "f64 ()", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4));
    expect_fail(g, tg_permute(g, x, (int[]){0, 0, 1}), "permute: perm (0,0,1) is not a permutation", "f32 (2,3,4)",
                NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4));
    expect_fail(g, tg_permute(g, x, (int[]){0, 1, 3}), "permute: perm (0,1,3) is not a permutation", "(2,3,4)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4));
    expect_fail(g, tg_permute(g, x, (int[]){2, -1, 0}), "permute: perm (2,-1,0) is not a permutation", NULL, NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4));
    expect_fail(g, tg_permute(g, x, NULL), "permute: perm is NULL", NULL, NULL);
    expect_fail(g, tg_permute(g, NULL, (int[]){0}), "permute: input 0 is NULL", NULL, NULL);
    expect_fail(g, tg_transpose(g, NULL, 0, 1), "transpose: input 0 is NULL", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

/* ---- slice / split -------------------------------------------------- */

START_TEST(slice_values)
{
    tg_graph *g = tg_graph_new();
    /* (2,5,3) axis 1 [1,4): y[a,b,c] = x[a,b+1,c] */
    tg_tensor *x = iota(g, TG_F64, TT_SHAPE(2, 5, 3));
    tg_tensor *y = tg_slice(g, x, -2, 1, 4);
    tt_assert_shape(y, TT_SHAPE(2, 3, 3));
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++) ck_assert(((double *)y->data)[(a * 3 + b) * 3 + c] == (a * 5 + b + 1) * 3 + c);
    /* last axis of a 4-D tensor, a single column */
    x = iota(g, TG_F32, TT_SHAPE(2, 1, 3, 4));
    y = tg_slice(g, x, 3, 2, 3);
    tt_assert_shape(y, TT_SHAPE(2, 1, 3, 1));
    for (int i = 0; i < 6; i++) ck_assert(((float *)y->data)[i] == (float)(i * 4 + 2));
    /* the whole axis is a copy */
    y = tg_slice(g, x, 0, 0, 2);
    ck_assert_ptr_ne(y->data, x->data);
    ck_assert_int_eq(memcmp(y->data, x->data, 24 * sizeof(float)), 0);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

/* overlapping slices of x: the backward must add both into the overlap */
static tg_tensor *two_slices(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_mul(g, tg_slice(g, in[0], 1, 0, 4), tg_slice(g, in[0], 1, 1, 5));
}

START_TEST(slice_gradcheck)
{
    check1((spec){.op = SLICE, .axis = 0, .start = 1, .end = 4}, TT_SHAPE(5, 3));
    check1((spec){.op = SLICE, .axis = -2, .start = 2, .end = 7}, TT_SHAPE(2, 7, 3));
    check1((spec){.op = SLICE, .axis = 3, .start = 0, .end = 1}, TT_SHAPE(2, 3, 4, 5));
    check1((spec){.op = SLICE, .axis = 2, .start = 1, .end = 3}, TT_SHAPE(1, 3, 5, 1));
    check1((spec){.op = SLICE, .axis = 0, .start = 0, .end = 1}, TT_SHAPE(1, 5));
    check1((spec){.op = SLICE, .axis = 0, .start = 6, .end = 7}, TT_SHAPE(7));
    tg_graph *g = tg_graph_new();
    tg_tensor *x[1] = {tt_randn(g, TT_SHAPE(3, 5), 5)};
    tt_assert_gradcheck(two_slices, NULL, 1, x);
    tg_graph_free(g);
}
END_TEST

START_TEST(split_qkv)
{
    /* the fused attention projection: (B,T,3C) -> three (B,T,C) */
    tg_graph *g = tg_graph_new();
    int B = 2, T = 3, C = 4;
    tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, 3 * C), 6);
    tg_tensor *qkv[3] = {NULL, NULL, NULL};
    ck_assert_int_eq(tg_split(g, x, -1, 3, (int[]){C, C, C}, qkv), 0);
    for (int p = 0; p < 3; p++) {
        tt_assert_shape(qkv[p], TT_SHAPE(B, T, C));
        ck_assert(qkv[p]->requires_grad);
        tg_tensor *s = tg_slice(g, x, 2, p * C, (p + 1) * C);
        ck_assert_int_eq(memcmp(s->data, qkv[p]->data, (size_t)(B * T * C) * sizeof(double)), 0);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int c = 0; c < C; c++)
                    ck_assert(((double *)qkv[p]->data)[(b * T + t) * C + c] ==
                              ((double *)x->data)[(b * T + t) * 3 * C + p * C + c]);
    }
    ck_assert_int_eq(tg_graph_tape_len(g), 6); /* three recorded slices, three test slices */
    tg_graph_free(g);

    for (int p = 0; p < 3; p++)
        check1((spec){.op = SPLIT_PICK, .axis = -1, .n = 3, .sizes = {C, C, C}, .pick = p}, TT_SHAPE(B, T, 3 * C));
    check1((spec){.op = SPLIT_MIX, .axis = 2, .sizes = {C, C, C}}, TT_SHAPE(B, T, 3 * C));
    check1((spec){.op = SPLIT_MIX, .axis = 0, .sizes = {1, 1, 1}}, TT_SHAPE(3, 5));
    check1((spec){.op = SPLIT_PICK, .axis = 1, .n = 3, .sizes = {2, 1, 2}, .pick = 1}, TT_SHAPE(2, 5, 3));
    check1((spec){.op = SPLIT_PICK, .axis = 0, .n = 1, .sizes = {7}, .pick = 0}, TT_SHAPE(7, 1));
}
END_TEST

START_TEST(split_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *junk = (tg_tensor *)&g; /* a non-NULL pointer the error must overwrite */
    tg_tensor *out[3] = {junk, junk, junk};
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, 2, 3, (int[]){2, 2, 3}, out), -1);
    for (int i = 0; i < 3; i++) ck_assert_ptr_null(out[i]);
    expect_fail(g, out[0], "split: sizes (2,2,3) must be >= 1 and sum to the length 6 of axis 2", "f32 (2,3,6)",
                "they sum to 7");

    out[0] = out[1] = out[2] = junk;
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, -1, 3, (int[]){0, 3, 3}, out), -1);
    for (int i = 0; i < 3; i++) ck_assert_ptr_null(out[i]);
    expect_fail(g, out[2], "split: sizes (0,3,3) must be >= 1", "axis -1", "(2,3,6)");

    out[0] = out[1] = junk;
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, 3, 2, (int[]){3, 3}, out), -1);
    ck_assert(!out[0] && !out[1]);
    expect_fail(g, out[0], "split: axis 3 out of range", "f32 (2,3,6)", NULL);

    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, 0, 0, (int[]){2}, out), -1);
    expect_fail(g, NULL, "split: need n >= 1 sizes, got n 0", NULL, NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, 0, 2, NULL, out), -1);
    expect_fail(g, NULL, "split: need n >= 1 sizes", "sizes NULL", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 6));
    ck_assert_int_eq(tg_split(g, x, 0, 2, (int[]){1, 1}, NULL), -1);
    expect_fail(g, NULL, "split: out is NULL", NULL, NULL);

    out[0] = out[1] = junk;
    ck_assert_int_eq(tg_split(g, NULL, 0, 2, (int[]){1, 1}, out), -1);
    ck_assert(!out[0] && !out[1]);
    expect_fail(g, NULL, "split: input 0 is NULL", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

START_TEST(slice_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, 1, 3, 3), "slice: range [3, 3) is not within axis 1 of length 5", "f32 (2,5,3)",
                NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, 1, 4, 2), "slice: range [4, 2)", "(2,5,3)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, -2, 2, 6), "slice: range [2, 6) is not within axis -2 of length 5", "(2,5,3)", NULL);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, 0, -1, 1), "slice: range [-1, 1)", "(2,5,3)", NULL);
    x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, 3, 0, 1), "slice: axis 3 out of range", "f64 (2,5,3)", NULL);
    x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 5, 3));
    expect_fail(g, tg_slice(g, x, -4, 0, 1), "slice: axis -4 out of range", "f64 (2,5,3)", NULL);
    expect_fail(g, tg_slice(g, NULL, 0, 0, 1), "slice: input 0 is NULL", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

/* ---- concat -------------------------------------------------------------- */

START_TEST(concat_values)
{
    tg_graph *g = tg_graph_new();
    /* by hand: (2,1) and (2,2) along axis 1 */
    tg_tensor *a = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 1), (double[]){1, 2});
    tg_tensor *b = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 2), (double[]){3, 4, 5, 6});
    tg_tensor *y = tg_concat(g, 2, (tg_tensor *[]){a, b}, -1);
    tt_assert_shape(y, TT_SHAPE(2, 3));
    const double want[6] = {1, 3, 4, 2, 5, 6};
    for (int i = 0; i < 6; i++) ck_assert(((double *)y->data)[i] == want[i]);

    /* the inverse of split, along every axis of a 4-D tensor */
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 4, 5, 6), 7);
    for (int axis = -4; axis < 4; axis++) {
        int len = x->shape[(axis + 4) % 4];
        int sizes[3] = {1, len - 2, 1};
        tg_tensor *p[3];
        ck_assert_int_eq(tg_split(g, x, axis, 3, sizes, p), 0);
        tg_tensor *z = tg_concat(g, 3, p, axis);
        tt_assert_shape(z, TT_SHAPE(3, 4, 5, 6));
        ck_assert_int_eq(memcmp(z->data, x->data, 360 * sizeof(double)), 0);
        /* out of order is not the identity */
        tg_tensor *w = tg_concat(g, 3, (tg_tensor *[]){p[1], p[0], p[2]}, axis);
        ck_assert_int_ne(memcmp(w->data, x->data, 360 * sizeof(double)), 0);
    }
    /* more pieces than a tape node holds inputs: seven (1,2) rows */
    tg_tensor *rows[7];
    x = tt_randn(g, TT_SHAPE(7, 2), 8);
    ck_assert_int_eq(tg_split(g, x, 0, 7, (int[]){1, 1, 1, 1, 1, 1, 1}, rows), 0);
    y = tg_concat(g, 7, rows, 0);
    tt_assert_shape(y, TT_SHAPE(7, 2));
    ck_assert_int_eq(memcmp(y->data, x->data, 14 * sizeof(double)), 0);
    /* one piece: a copy */
    y = tg_concat(g, 1, &x, 1);
    ck_assert_ptr_ne(y->data, x->data);
    ck_assert_int_eq(memcmp(y->data, x->data, 14 * sizeof(double)), 0);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

static void check_concat(int axis, int n, const int (*shapes)[3], int ndim)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x[8];
    for (int k = 0; k < n; k++) x[k] = tt_randn(g, ndim, shapes[k], 20 + (uint64_t)k);
    spec s = {.op = CONCAT, .axis = axis, .n = n};
    tt_assert_gradcheck(apply, &s, n, x);
    tg_graph_free(g);
}

START_TEST(concat_gradcheck)
{
    check_concat(1, 2, (const int[][3]){{2, 3}, {2, 5}}, 2);
    check_concat(0, 3, (const int[][3]){{1, 3, 2}, {4, 3, 2}, {2, 3, 2}}, 3);
    check_concat(-2, 3, (const int[][3]){{2, 1, 3}, {2, 5, 3}, {2, 1, 3}}, 3);
    check_concat(-1, 4, (const int[][3]){{1, 1}, {1, 3}, {1, 1}, {1, 2}}, 2);
    check_concat(0, 6, (const int[][3]){{1, 2}, {3, 2}, {1, 2}, {2, 2}, {1, 2}, {1, 2}}, 2);
    check_concat(0, 1, (const int[][3]){{5}}, 1);
    /* 4-D */
    tg_graph *g = tg_graph_new();
    tg_tensor *x[2] = {tt_randn(g, TT_SHAPE(2, 1, 3, 2), 30), tt_randn(g, TT_SHAPE(2, 2, 3, 2), 31)};
    spec s = {.op = CONCAT, .axis = 1, .n = 2};
    tt_assert_gradcheck(apply, &s, 2, x);
    /* only some inputs require grad */
    tg_tensor_set_requires_grad(g, x[0], false);
    tt_assert_gradcheck(apply, &s, 2, x);
    tg_graph_free(g);
}
END_TEST

START_TEST(concat_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    tg_tensor *b = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3));
    expect_fail(g, tg_concat(g, 2, (tg_tensor *[]){a, b}, 0),
                "concat: input 1 f64 (2,3) does not match input 0 f32 (2,3)", NULL, NULL);
    a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    b = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 4));
    expect_fail(g, tg_concat(g, 2, (tg_tensor *[]){a, b}, 0),
                "concat: input 1 f32 (2,4) does not match input 0 f32 (2,3)", "except axis 0", NULL);
    a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    b = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 1));
    tg_tensor *c = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_concat(g, 3, (tg_tensor *[]){a, c, b}, 1), "concat: input 2 f32 (2,3,1) does not match", NULL,
                NULL);
    a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_concat(g, 1, &a, 2), "concat: axis 2 out of range for input 0 f32 (2,3)", NULL, NULL);
    a = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3));
    b = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_concat(g, 2, (tg_tensor *[]){a, b}, 0), "input 1 f32 (2,3) does not match input 0 i32 (2,3)",
                NULL, NULL);
    expect_fail(g, tg_concat(g, 0, &a, 0), "concat: need n >= 1 tensors, got n 0", NULL, NULL);
    expect_fail(g, tg_concat(g, 2, NULL, 0), "concat: need n >= 1 tensors", "xs NULL", NULL);
    a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    expect_fail(g, tg_concat(g, 2, (tg_tensor *[]){a, NULL}, 0), "concat: input 1 is NULL", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

/* ---- non-float dtypes --------------------------------------------------- */

START_TEST(int_and_bool)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = iota(g, TG_I32, TT_SHAPE(2, 3, 4));
    tg_tensor *r = tg_reshape(g, x, TT_SHAPE(-1, 4));
    tt_assert_shape(r, TT_SHAPE(6, 4));
    ck_assert(r->dtype == TG_I32 && r->data == x->data && !r->requires_grad);
    tg_tensor *t = tg_transpose(g, x, 0, 2);
    ck_assert(t->dtype == TG_I32 && !t->requires_grad);
    check_permuted(x, t, (int[]){2, 1, 0});
    check_permuted(r, tg_permute(g, r, (int[]){1, 0}), (int[]){1, 0});
    tg_tensor *s = tg_slice(g, x, 1, 1, 2);
    tt_assert_shape(s, TT_SHAPE(2, 1, 4));
    for (int i = 0; i < 8; i++) ck_assert_int_eq(((int32_t *)s->data)[i], (i / 4) * 12 + 4 + i % 4);
    tg_tensor *cat = tg_concat(g, 2, (tg_tensor *[]){x, x}, 0);
    tt_assert_shape(cat, TT_SHAPE(4, 3, 4));
    ck_assert_int_eq(((int32_t *)cat->data)[24 + 5], 5);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);

    tg_tensor *m = iota(g, TG_BOOL, TT_SHAPE(3, 2)); /* 0,1,0,1,0,1 */
    tg_tensor *mt = tg_transpose(g, m, 0, 1);
    ck_assert(mt->dtype == TG_BOOL);
    const uint8_t want[6] = {0, 0, 0, 1, 1, 1};
    ck_assert_int_eq(memcmp(mt->data, want, 6), 0);
    ck_assert_ptr_eq(tg_reshape(g, m, TT_SHAPE(1, 1, 6))->data, m->data);
    ck_assert_ptr_null(tg_graph_error(g));

    expect_fail(g, tg_sum(g, x, 0, false), "sum: x must be f32 or f64, got i32 (2,3,4)", NULL, NULL);
    x = iota(g, TG_I32, TT_SHAPE(5));
    expect_fail(g, tg_sum_all(g, x), "sum_all: x must be f32 or f64, got i32 (5)", NULL, NULL);
    x = iota(g, TG_BOOL, TT_SHAPE(5));
    expect_fail(g, tg_mean(g, x, -1, true), "mean: x must be f32 or f64, got bool (5)", NULL, NULL);
    x = iota(g, TG_I32, TT_SHAPE(5));
    expect_fail(g, tg_mean_all(g, x), "mean_all: x must be f32 or f64, got i32 (5)", NULL, NULL);
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_shape", "shape", 0,
                   TT_TESTS(reshape_is_a_view, reshape_gradcheck, reshape_accumulates, reshape_errors, transpose_values,
                            permute_values, transpose_permute_gradcheck, heads_split_values, transpose_permute_errors,
                            slice_values, slice_gradcheck, split_qkv, split_errors, slice_errors, concat_values,
                            concat_gradcheck, concat_errors, int_and_bool));
}
