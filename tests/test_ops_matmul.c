/* ops/matmul.c: forward against a naive triple loop, gradients by gradcheck
 * and by hand, f32/f64 agreement, accumulation, every error path. */
#include "tg_test.h"

/* ---- shape families ---------------------------------------------------- */

typedef struct mm_case {
    int na, a[4];
    int nb, b[4];
    int ny, y[4]; /* expected output shape, written by hand */
} mm_case;

static const mm_case CASES[] = {
    {2, {2, 3}, 2, {3, 4}, 2, {2, 4}},
    {2, {1, 1}, 2, {1, 1}, 2, {1, 1}},
    {2, {3, 5}, 2, {5, 1}, 2, {3, 1}},
    {2, {1, 7}, 2, {7, 3}, 2, {1, 3}},
    {4, {2, 3, 1, 4}, 2, {4, 7}, 4, {2, 3, 1, 7}}, /* fold with M = 1 */
    {4, {2, 3, 4, 5}, 4, {2, 3, 5, 4}, 4, {2, 3, 4, 4}}, /* (B,H,T,dh) @ (B,H,dh,T) */
    {3, {2, 3, 4}, 2, {4, 5}, 3, {2, 3, 5}}, /* (B,T,C) @ (C,D) */
    {2, {3, 4}, 3, {2, 4, 5}, 3, {2, 3, 5}}, /* (M,K) @ (B,K,N) */
    {4, {1, 3, 2, 4}, 4, {2, 1, 4, 5}, 4, {2, 3, 2, 5}}, /* (1,H,M,K) @ (B,1,K,N) */
    {4, {2, 1, 3, 4}, 4, {1, 3, 4, 2}, 4, {2, 3, 3, 2}},
    {4, {3, 1, 2, 4}, 3, {2, 4, 3}, 4, {3, 2, 2, 3}}, /* batch (3,1) with (2) */
    {4, {1, 1, 3, 4}, 3, {1, 4, 2}, 4, {1, 1, 3, 2}}, /* b batch all 1: fold */
    {3, {5, 1, 1}, 3, {5, 1, 1}, 3, {5, 1, 1}},
    {3, {1, 3, 5}, 3, {3, 5, 2}, 3, {3, 3, 2}}, /* a batch 1, b batched */
    {1, {5}, 2, {5, 3}, 1, {3}}, /* 1-D a: row */
    {2, {3, 5}, 1, {5}, 1, {3}}, /* 1-D b: column */
    {1, {5}, 1, {5}, 0, {0}}, /* dot: scalar */
    {1, {1}, 1, {1}, 0, {0}},
    {1, {7}, 2, {7, 1}, 1, {1}},
    {1, {5}, 3, {2, 5, 3}, 2, {2, 3}},
    {3, {2, 3, 5}, 1, {5}, 2, {2, 3}},
    {4, {2, 1, 3, 5}, 1, {5}, 3, {2, 1, 3}},
    {1, {4}, 4, {2, 3, 4, 1}, 3, {2, 3, 1}},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* The naive product, written without reference to the library's code: a
 * and b are viewed as (a0,a1,M,K) and (b0,b1,K,N) (1-D a is (1,1,1,K),
 * 1-D b is (1,1,K,1)); a batch dimension of size 1 is read at index 0. */
static void naive_matmul(const mm_case *c, const double *a, const double *b, double *y)
{
    int A[4] = {1, 1, 1, 1}, B[4] = {1, 1, 1, 1};
    if (c->na == 1) A[3] = c->a[0];
    else
        for (int i = 0; i < c->na; i++) A[4 - c->na + i] = c->a[i];
    if (c->nb == 1) B[2] = c->b[0];
    else
        for (int i = 0; i < c->nb; i++) B[4 - c->nb + i] = c->b[i];
    int M = A[2], K = A[3], N = B[3];
    int O0 = A[0] > B[0] ? A[0] : B[0], O1 = A[1] > B[1] ? A[1] : B[1];
    int64_t at = 0;
    for (int o0 = 0; o0 < O0; o0++)
        for (int o1 = 0; o1 < O1; o1++)
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++) {
                    int x0 = A[0] == 1 ? 0 : o0, x1 = A[1] == 1 ? 0 : o1;
                    int w0 = B[0] == 1 ? 0 : o0, w1 = B[1] == 1 ? 0 : o1;
                    double s = 0;
                    for (int k = 0; k < K; k++)
                        s += a[(((int64_t)x0 * A[1] + x1) * M + m) * K + k] *
                            b[(((int64_t)w0 * B[1] + w1) * K + k) * N + n];
                    y[at++] = s;
                }
}

static tg_tensor *fn_matmul(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_matmul(g, in[0], in[1]);
}

/* ---- forward ----------------------------------------------------------- */

START_TEST(forward_matches_naive)
{
    const mm_case *c = &CASES[_i];
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, c->na, c->a, 10 + (uint64_t)_i);
    tg_tensor *b = tt_randn(g, c->nb, c->b, 100 + (uint64_t)_i);
    tg_tensor *y64 = tg_matmul(g, a, b);
    ck_assert_msg(y64, "case %d: %s", _i, tg_graph_error(g));
    tt_assert_shape(y64, c->ny, c->y);
    double *want = malloc((size_t)y64->numel * sizeof *want);
    naive_matmul(c, a->data, b->data, want);
    for (int64_t i = 0; i < y64->numel; i++)
        ck_assert_msg(fabs(((double *)y64->data)[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])),
                      "case %d f64 element %lld: %.17g vs naive %.17g", _i, (long long)i, ((double *)y64->data)[i],
                      want[i]);

    /* f32: against the naive product of the rounded inputs, in double */
    tg_tensor *a32 = tt_to_f32(g, a), *b32 = tt_to_f32(g, b);
    for (int64_t i = 0; i < a->numel; i++) ((double *)a->data)[i] = ((float *)a32->data)[i];
    for (int64_t i = 0; i < b->numel; i++) ((double *)b->data)[i] = ((float *)b32->data)[i];
    naive_matmul(c, a->data, b->data, want);
    tg_tensor *y32 = tg_matmul(g, a32, b32);
    ck_assert_msg(y32, "case %d: %s", _i, tg_graph_error(g));
    ck_assert_int_eq(y32->dtype, TG_F32);
    tt_assert_shape(y32, c->ny, c->y);
    /* error bound of a K-term f32 dot product in any order, plus the final
     * rounding: (K + 2) u sum_k |a_k b_k|, u = 2^-24 */
    double *bound = malloc((size_t)y32->numel * sizeof *bound);
    for (int64_t i = 0; i < a->numel; i++) ((double *)a->data)[i] = fabs(((double *)a->data)[i]);
    for (int64_t i = 0; i < b->numel; i++) ((double *)b->data)[i] = fabs(((double *)b->data)[i]);
    naive_matmul(c, a->data, b->data, bound);
    const int K = c->a[c->na - 1];
    for (int64_t i = 0; i < y32->numel; i++) {
        double got = ((float *)y32->data)[i];
        ck_assert_msg(fabs(got - want[i]) <= (K + 2) * 0x1p-24 * bound[i], "case %d f32 element %lld: %.9g vs %.9g", _i,
                      (long long)i, got, want[i]);
    }
    free(bound);
    free(want);
    tg_graph_free(g);
}
END_TEST

/* f32 and f64 agree to ~1e-5 relative, forward and backward. */
START_TEST(f32_f64_agree)
{
    const mm_case *c = &CASES[_i];
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, c->na, c->a, 20 + (uint64_t)_i);
    tg_tensor *b = tt_randn(g, c->nb, c->b, 200 + (uint64_t)_i);
    tg_tensor *a32 = tt_to_f32(g, a), *b32 = tt_to_f32(g, b);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, a32, true), 0);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, b32, true), 0);
    tg_tensor *y64 = tg_matmul(g, a, b), *y32 = tg_matmul(g, a32, b32);
    ck_assert_ptr_nonnull(y64);
    ck_assert_ptr_nonnull(y32);
    double scale = 0;
    for (int64_t i = 0; i < y64->numel; i++) scale = fmax(scale, fabs(((double *)y64->data)[i]));
    for (int64_t i = 0; i < y64->numel; i++)
        ck_assert_double_le(fabs(((float *)y32->data)[i] - ((double *)y64->data)[i]), 1e-5 * scale);

    double *s64 = malloc((size_t)y64->numel * sizeof *s64);
    float *s32 = malloc((size_t)y64->numel * sizeof *s32);
    for (int64_t i = 0; i < y64->numel; i++) s32[i] = (float)(s64[i] = 0.25 * (double)(i % 7) - 0.5);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y64, s64), 0);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y32, s32), 0);
    tg_tensor *pairs[2][2] = {{a, a32}, {b, b32}};
    for (int p = 0; p < 2; p++) {
        const tg_tensor *d = pairs[p][0], *f = pairs[p][1];
        double gs = 0;
        for (int64_t i = 0; i < d->numel; i++) gs = fmax(gs, fabs(((double *)d->grad)[i]));
        for (int64_t i = 0; i < d->numel; i++)
            ck_assert_double_le(fabs(((float *)f->grad)[i] - ((double *)d->grad)[i]), 1e-5 * gs + 1e-30);
    }
    free(s64);
    free(s32);
    tg_graph_free(g);
}
END_TEST

/* The tutorial's readout: attention weights (0.75, 0.25) over the values
 * [[2,0],[0,4]] give 0.75*[2,0] + 0.25*[0,4] = [1.5, 1], exactly. */
START_TEST(attention_readout)
{
    tg_graph *g = tg_graph_new();
    double w64[] = {0.75, 0.25}, v64[] = {2, 0, 0, 4};
    float w32[] = {0.75f, 0.25f}, v32[] = {2, 0, 0, 4};
    tg_tensor *y64 =
        tg_matmul(g, tg_tensor_from(g, TG_F64, TT_SHAPE(1, 2), w64), tg_tensor_from(g, TG_F64, TT_SHAPE(2, 2), v64));
    tg_tensor *y32 =
        tg_matmul(g, tg_tensor_from(g, TG_F32, TT_SHAPE(1, 2), w32), tg_tensor_from(g, TG_F32, TT_SHAPE(2, 2), v32));
    ck_assert_ptr_nonnull(y64);
    ck_assert_ptr_nonnull(y32);
    tt_assert_shape(y64, TT_SHAPE(1, 2));
    tt_assert_shape(y32, TT_SHAPE(1, 2));
    ck_assert(((double *)y64->data)[0] == 1.5 && ((double *)y64->data)[1] == 1.0);
    ck_assert(((float *)y32->data)[0] == 1.5f && ((float *)y32->data)[1] == 1.0f);
    /* the same readout with a 1-D weight vector gives a 1-D (2) result */
    tg_tensor *r =
        tg_matmul(g, tg_tensor_from(g, TG_F64, TT_SHAPE(2), w64), tg_tensor_from(g, TG_F64, TT_SHAPE(2, 2), v64));
    ck_assert_ptr_nonnull(r);
    tt_assert_shape(r, TT_SHAPE(2));
    ck_assert(((double *)r->data)[0] == 1.5 && ((double *)r->data)[1] == 1.0);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

/* ---- gradients --------------------------------------------------------- */

START_TEST(gradcheck_shapes)
{
    const mm_case *c = &CASES[_i];
    tg_graph *g = tg_graph_new();
    tg_tensor *in[2] = {tt_randn(g, c->na, c->a, 30 + (uint64_t)_i), tt_randn(g, c->nb, c->b, 300 + (uint64_t)_i)};
    tt_assert_gradcheck(fn_matmul, NULL, 2, in);
    tg_graph_free(g);
}
END_TEST

/* Only one operand requiring grad: the other's gradient is skipped, on the
 * fold path and on the per-batch path. */
START_TEST(gradcheck_one_side)
{
    static const int cases[] = {4, 6, 7, 8, 15};
    const mm_case *c = &CASES[cases[_i / 2]];
    tg_graph *g = tg_graph_new();
    tg_tensor *in[2] = {tt_randn(g, c->na, c->a, 40), tt_randn(g, c->nb, c->b, 41)};
    tg_tensor *fixed = in[_i % 2];
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, fixed, false), 0);
    tt_assert_gradcheck(fn_matmul, NULL, 2, in);
    for (int64_t i = 0; i < fixed->numel; i++) ck_assert(((double *)fixed->grad)[i] == 0.0);
    tg_graph_free(g);
}
END_TEST

/* Hand formulas for a broadcast case: a (3,4) @ b (2,4,5), seed S (2,3,5):
 * dA = sum_batch S_batch @ B_batch^T, dB_batch = A^T @ S_batch. */
START_TEST(backward_broadcast_by_hand)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, TT_SHAPE(3, 4), 50), *b = tt_randn(g, TT_SHAPE(2, 4, 5), 51);
    tg_tensor *y = tg_matmul(g, a, b); /* (2,3,5) */
    ck_assert_ptr_nonnull(y);
    double s[30];
    for (int i = 0; i < 30; i++) s[i] = 0.1 * i - 1;
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, s), 0);
    const double *A = a->data, *B = b->data, *ga = a->grad, *gb = b->grad;
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 4; k++) {
            double want = 0;
            for (int t = 0; t < 2; t++)
                for (int n = 0; n < 5; n++) want += s[(t * 3 + m) * 5 + n] * B[(t * 4 + k) * 5 + n];
            ck_assert_double_eq_tol(ga[m * 4 + k], want, 1e-12);
        }
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++)
            for (int n = 0; n < 5; n++) {
                double want = 0;
                for (int m = 0; m < 3; m++) want += A[m * 4 + k] * s[(t * 3 + m) * 5 + n];
                ck_assert_double_eq_tol(gb[(t * 4 + k) * 5 + n], want, 1e-12);
            }
    tg_graph_free(g);
}
END_TEST

/* Leaf gradients accumulate: a second backward doubles them, on the fold
 * path (b unbatched) and on the per-batch path. */
START_TEST(backward_accumulates)
{
    static const int cases[] = {0, 6, 5, 8, 16};
    const mm_case *c = &CASES[cases[_i]];
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, c->na, c->a, 60), *b = tt_randn(g, c->nb, c->b, 61);
    tg_tensor *y = tg_matmul(g, a, b);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    double *s = malloc((size_t)y->numel * sizeof *s);
    for (int64_t i = 0; i < y->numel; i++) s[i] = 1.0 + 0.5 * (double)(i % 3);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, s), 0);
    double *ga1 = malloc((size_t)a->numel * sizeof *ga1), *gb1 = malloc((size_t)b->numel * sizeof *gb1);
    memcpy(ga1, a->grad, (size_t)a->numel * sizeof *ga1);
    memcpy(gb1, b->grad, (size_t)b->numel * sizeof *gb1);
    double na = 0;
    for (int64_t i = 0; i < a->numel; i++) na += fabs(ga1[i]);
    ck_assert_double_gt(na, 0);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, s), 0);
    for (int64_t i = 0; i < a->numel; i++) ck_assert_double_eq_tol(((double *)a->grad)[i], 2 * ga1[i], 1e-12);
    for (int64_t i = 0; i < b->numel; i++) ck_assert_double_eq_tol(((double *)b->grad)[i], 2 * gb1[i], 1e-12);
    free(s);
    free(ga1);
    free(gb1);
    tg_graph_free(g);
}
END_TEST

/* x @ x: both gradient contributions land in the same buffer. */
START_TEST(backward_same_operand)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 3), 70);
    tg_tensor *in[2] = {x, x};
    tt_assert_gradcheck(fn_matmul, NULL, 2, in);
    tg_graph_free(g);
}
END_TEST

START_TEST(no_record_without_grad)
{
    tg_graph *g = tg_graph_new();
    double v[6] = {1, 2, 3, 4, 5, 6};
    tg_tensor *a = tg_tensor_from(g, TG_F64, TT_SHAPE(2, 3), v), *b = tg_tensor_from(g, TG_F64, TT_SHAPE(3, 2), v);
    tg_tensor *y = tg_matmul(g, a, b);
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    ck_assert(!y->requires_grad);
    /* [[1,2,3],[4,5,6]] @ [[1,2],[3,4],[5,6]] = [[22,28],[49,64]] */
    ck_assert(((double *)y->data)[0] == 22 && ((double *)y->data)[1] == 28);
    ck_assert(((double *)y->data)[2] == 49 && ((double *)y->data)[3] == 64);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, a, true), 0);
    tg_graph_set_grad_enabled(g, false);
    ck_assert_ptr_nonnull(tg_matmul(g, a, b));
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    tg_graph_set_grad_enabled(g, true);
    y = tg_matmul(g, a, b);
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    ck_assert(y->requires_grad);
    tg_graph_free(g);
}
END_TEST

/* ---- errors ------------------------------------------------------------ */

/* The failed call returned NULL with `needle` in the message; a matmul
 * given that NULL (and a valid tensor `ok` made on g before the failure)
 * returns NULL and keeps the first message. */
static void assert_failed(tg_graph *g, tg_tensor *y, const char *needle, tg_tensor *ok)
{
    ck_assert_ptr_null(y);
    tt_assert_error(g, needle);
    char first[512];
    snprintf(first, sizeof first, "%s", tg_graph_error(g));
    ck_assert_ptr_nonnull(ok);
    ck_assert_ptr_null(tg_matmul(g, y, ok));
    ck_assert_ptr_null(tg_matmul(g, ok, y));
    ck_assert_str_eq(tg_graph_error(g), first);
}

START_TEST(error_inner_dimensions)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)), *b = tg_tensor_new(g, TG_F32, TT_SHAPE(4, 5));
    assert_failed(g, tg_matmul(g, a, b), "matmul: inner dimensions differ: a f32 (2,3) x b f32 (4,5)", a);

    tg_graph_reset(g);
    a = tg_tensor_new(g, TG_F64, TT_SHAPE(3));
    b = tg_tensor_new(g, TG_F64, TT_SHAPE(4));
    assert_failed(g, tg_matmul(g, a, b), "matmul: inner dimensions differ: a f64 (3) x b f64 (4)", a);

    tg_graph_reset(g);
    a = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3, 4));
    b = tg_tensor_new(g, TG_F64, TT_SHAPE(3));
    assert_failed(g, tg_matmul(g, a, b), "inner dimensions differ: a f64 (2,3,4) x b f64 (3)", a);

    tg_graph_reset(g);
    a = tg_tensor_new(g, TG_F64, TT_SHAPE(4));
    b = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3, 4)); /* a 1-D a meets b's K = 3 */
    assert_failed(g, tg_matmul(g, a, b), "inner dimensions differ: a f64 (4) x b f64 (2,3,4)", b);
    tg_graph_free(g);
}
END_TEST

START_TEST(error_batch_broadcast)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4)), *b = tg_tensor_new(g, TG_F32, TT_SHAPE(3, 4, 5));
    assert_failed(g, tg_matmul(g, a, b), "matmul: batch dimensions do not broadcast: a f32 (2,3,4) x b f32 (3,4,5)", a);

    tg_graph_reset(g);
    a = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3, 4, 5));
    b = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 2, 5, 6));
    assert_failed(g, tg_matmul(g, a, b), "batch dimensions do not broadcast: a f64 (2,3,4,5) x b f64 (2,2,5,6)", b);
    tg_graph_free(g);
}
END_TEST

START_TEST(error_dtypes)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *f32 = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)), *f64 = tg_tensor_new(g, TG_F64, TT_SHAPE(3, 2));
    assert_failed(g, tg_matmul(g, f32, f64), "matmul: dtypes differ: a f32 (2,3), b f64 (3,2)", f32);

    tg_graph_reset(g);
    tg_tensor *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3));
    f64 = tg_tensor_new(g, TG_F64, TT_SHAPE(3, 2));
    assert_failed(g, tg_matmul(g, ids, f64), "matmul: a must be f32 or f64, got i32 (2,3)", f64);

    tg_graph_reset(g);
    tg_tensor *mask = tg_tensor_new(g, TG_BOOL, TT_SHAPE(3, 2));
    f32 = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    assert_failed(g, tg_matmul(g, f32, mask), "matmul: b must be f32 or f64, got bool (3,2)", f32);
    tg_graph_free(g);
}
END_TEST

START_TEST(error_null_input)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 2));
    assert_failed(g, tg_matmul(g, NULL, x), "matmul: input 0 is NULL", x);
    tg_graph_reset(g);
    x = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 2));
    assert_failed(g, tg_matmul(g, x, NULL), "matmul: input 1 is NULL", x);
    ck_assert_ptr_null(tg_matmul(NULL, x, x)); /* no graph: NULL, no crash */
    tg_graph_free(g);
}
END_TEST

START_TEST(error_scalar_operand)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *s = tg_scalar(g, TG_F64, 2.0), *x = tg_tensor_new(g, TG_F64, TT_SHAPE(1, 3));
    assert_failed(g, tg_matmul(g, s, x),
                  "matmul: operands must have at least 1 dimension, got a scalar: a f64 () x b f64 (1,3)", x);
    tg_graph_reset(g);
    s = tg_scalar(g, TG_F32, 2.0);
    x = tg_tensor_new(g, TG_F32, TT_SHAPE(3));
    assert_failed(g, tg_matmul(g, x, s), "at least 1 dimension, got a scalar: a f32 (3) x b f32 ()", x);
    tg_graph_free(g);
}
END_TEST

/* A graph that already holds an error makes valid calls return NULL. */
START_TEST(error_sticks)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tg_tensor_new(g, TG_F64, TT_SHAPE(2, 3)), *b = tg_tensor_new(g, TG_F64, TT_SHAPE(3, 2));
    ck_assert_ptr_null(tg_matmul(g, a, a));
    tt_assert_error(g, "inner dimensions differ: a f64 (2,3) x b f64 (2,3)");
    ck_assert_ptr_null(tg_matmul(g, a, b));
    tt_assert_error(g, "inner dimensions differ: a f64 (2,3) x b f64 (2,3)");
    tg_graph_clear_error(g);
    ck_assert_ptr_nonnull(tg_matmul(g, a, b));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_matmul", "matmul", 0,
                   TT_TESTS(TT_LOOP(forward_matches_naive, N_CASES), TT_LOOP(f32_f64_agree, N_CASES), attention_readout,
                            TT_LOOP(gradcheck_shapes, N_CASES), TT_LOOP(gradcheck_one_side, 10),
                            backward_broadcast_by_hand, TT_LOOP(backward_accumulates, 5), backward_same_operand,
                            no_record_without_grad, error_inner_dimensions, error_batch_broadcast, error_dtypes,
                            error_null_input, error_scalar_operand, error_sticks));
}
