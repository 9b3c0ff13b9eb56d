/* ops/softmax.c: softmax and log_softmax, masked (f32_matches_f64 also
 * takes cross-entropy, ops/loss.c, over the same logits).
 *
 * Forward values are compared with naive computations (tt_naive_softmax:
 * exp(x) / sum exp(x), with the mask broadcast by hand here); gradients with
 * tg_gradcheck in f64; masked positions are checked for EXACT zeros. */
#include "tg_test.h"

/* ---- helpers ------------------------------------------------------------ */

static tg_tensor *bool_mask(tg_graph *g, int ndim, const int *shape, const uint8_t *v)
{
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, ndim, shape, v);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* mask (Tq,Tk): key j blocked for query i when j > i + (Tk - Tq) (causal,
 * aligned bottom-right). */
static tg_tensor *causal_mask(tg_graph *g, int tq, int tk)
{
    tg_tensor *m = tg_tensor_new(g, TG_BOOL, 2, (int[]){tq, tk});
    ck_assert_ptr_nonnull(m);
    for (int i = 0; i < tq; i++)
        for (int j = 0; j < tk; j++) ((uint8_t *)m->data)[i * tk + j] = j > i + (tk - tq);
    return m;
}

/* mask of the given shape, each entry blocked with probability 0.4 */
static tg_tensor *random_mask(tg_graph *g, int ndim, const int *shape, uint64_t seed)
{
    tg_tensor *m = tg_tensor_new(g, TG_BOOL, ndim, shape);
    ck_assert_ptr_nonnull(m);
    tg_rng r;
    tg_rng_seed(&r, seed, 3);
    for (int64_t i = 0; i < m->numel; i++) ((uint8_t *)m->data)[i] = tg_rng_uniform(&r) < 0.4;
    return m;
}

/* Unblocks one key in every fully blocked row of a full-shape mask. */
static void keep_one_key(tg_tensor *m)
{
    int n = m->shape[m->ndim - 1];
    uint8_t *v = m->data;
    for (int64_t r = 0; r < m->numel / n; r++) {
        int any = 0;
        for (int j = 0; j < n; j++) any |= !v[r * n + j];
        if (!any) v[r * n + (r % n)] = 0;
    }
}

/* blocked[i] for every element of x: mask broadcast by hand (right-aligned,
 * size-1 dims repeat), or x[i] == -inf. */
static void expand_mask(const tg_tensor *x, const tg_tensor *mask, uint8_t *blocked)
{
    for (int64_t i = 0; i < x->numel; i++) {
        blocked[i] = tg_tensor_get(x, i) == -INFINITY;
        if (!mask) continue;
        int idx[TG_MAX_DIMS];
        int64_t rest = i;
        for (int d = x->ndim - 1; d >= 0; d--) {
            idx[d] = (int)(rest % x->shape[d]);
            rest /= x->shape[d];
        }
        int64_t mi = 0;
        for (int d = 0; d < mask->ndim; d++) {
            int xd = x->ndim - mask->ndim + d;
            mi = mi * mask->shape[d] + (mask->shape[d] == 1 ? 0 : idx[xd]);
        }
        if (((uint8_t *)mask->data)[mi]) blocked[i] = 1;
    }
}

/* ---- gradcheck functions -------------------------------------------------- */

enum { K_SOFTMAX, K_LOG_SOFTMAX };
typedef struct {
    int kind;
    tg_tensor *mask;
    int flags;
} sm_ctx;

/* Test-only op: y = x, except -inf becomes 0 (so that a masked log_softmax
 * has a finite output for gradcheck). Its backward deliberately passes dy
 * through EVERYWHERE, including at the -inf positions: log_softmax must
 * ignore dy at its blocked entries, and gradcheck of x then fails if it
 * does not. */
static void finite_backward(tg_graph *g, tg_node *nd)
{
    double *gx = tg_grad(g, nd->in[0]);
    const double *dy = nd->out->grad;
    if (gx)
        for (int64_t i = 0; i < nd->out->numel; i++) gx[i] += dy[i];
}
static tg_tensor *finite_or_zero(tg_graph *g, tg_tensor *x)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "finite_or_zero", 1, in)) return NULL;
    tg_tensor *y = tg_op_output(g, TG_F64, x->ndim, x->shape);
    if (!y) return NULL;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = ((double *)x->data)[i];
        ((double *)y->data)[i] = v == -INFINITY ? 0 : v;
    }
    tg_op_record(g, "finite_or_zero", finite_backward, y, 1, in);
    return tg_graph_error(g) ? NULL : y;
}

static tg_tensor *sm_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    sm_ctx *c = ctx;
    if (c->kind == K_SOFTMAX) return tg_softmax_ex(g, in[0], c->mask, c->flags);
    return finite_or_zero(g, tg_log_softmax(g, in[0], c->mask));
}

static void gradcheck_both(tg_tensor *x, tg_tensor *mask)
{
    sm_ctx c = {K_SOFTMAX, mask, 0};
    tt_assert_gradcheck(sm_fn, &c, 1, &x);
    c.kind = K_LOG_SOFTMAX;
    tt_assert_gradcheck(sm_fn, &c, 1, &x);
}

/* ---- softmax forward ------------------------------------------------------ */

static void check_forward(tg_graph *g, tg_tensor *x, tg_tensor *mask)
{
    uint8_t *blocked = malloc((size_t)x->numel);
    double *p = malloc((size_t)x->numel * sizeof *p);
    expand_mask(x, mask, blocked);
    tt_naive_softmax(x, blocked, p);
    tg_tensor *y = tg_softmax(g, x, mask);
    tg_tensor *ly = tg_log_softmax(g, x, mask);
    ck_assert_msg(y && ly, "%s", tg_graph_error(g));
    int n = x->shape[x->ndim - 1];
    for (int64_t r = 0; r < x->numel / n; r++) {
        double s = 0;
        for (int j = 0; j < n; j++) {
            int64_t i = r * n + j;
            double v = tg_tensor_get(y, i), lv = tg_tensor_get(ly, i);
            s += v;
            if (blocked[i]) {
                ck_assert(v == 0.0);
                ck_assert(lv == -INFINITY);
            } else {
                ck_assert_double_eq_tol(v, p[i], 1e-14);
                ck_assert_double_eq_tol(lv, log(p[i]), 1e-12);
            }
        }
        ck_assert_double_eq_tol(s, 1.0, 1e-14);
    }
    free(blocked);
    free(p);
}

START_TEST(forward_no_mask)
{
    tg_graph *g = tg_graph_new();
    check_forward(g, tt_randn(g, TT_SHAPE(5), 1), NULL);
    check_forward(g, tt_randn(g, TT_SHAPE(3, 7), 2), NULL);
    check_forward(g, tt_randn(g, TT_SHAPE(4, 1), 3), NULL);
    check_forward(g, tt_randn(g, TT_SHAPE(2, 3, 5), 4), NULL);
    check_forward(g, tt_randn(g, TT_SHAPE(2, 2, 3, 4), 5), NULL);
    /* size-1 last axis: every weight is exactly 1, every log weight 0 */
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 1), 6);
    tg_tensor *y = tg_softmax(g, x, NULL), *ly = tg_log_softmax(g, x, NULL);
    for (int i = 0; i < 3; i++) {
        ck_assert(tg_tensor_get(y, i) == 1.0);
        ck_assert(tg_tensor_get(ly, i) == 0.0);
    }
    /* tg_softmax is tg_softmax_ex with the default flags */
    tg_tensor *y2 = tg_softmax_ex(g, x, NULL, TG_SOFTMAX_DEFAULT);
    ck_assert_mem_eq(y->data, y2->data, 3 * sizeof(double));
    tg_graph_free(g);
}
END_TEST

START_TEST(forward_masks)
{
    tg_graph *g = tg_graph_new();
    /* (Tq,Tk) causal, square and bottom-right aligned */
    check_forward(g, tt_randn(g, TT_SHAPE(2, 2, 3, 3), 1), causal_mask(g, 3, 3));
    check_forward(g, tt_randn(g, TT_SHAPE(2, 3, 5), 2), causal_mask(g, 3, 5));
    /* (B,1,1,Tk) key padding: batch 0 pads 2 keys, batch 1 none */
    tg_tensor *pad = bool_mask(g, TT_SHAPE(2, 1, 1, 5), (uint8_t[]){0, 0, 0, 1, 1, 0, 0, 0, 0, 0});
    check_forward(g, tt_randn(g, TT_SHAPE(2, 3, 4, 5), 3), pad);
    /* (B,H,Tq,Tk) per head */
    tg_tensor *ph = random_mask(g, TT_SHAPE(2, 3, 3, 5), 4);
    keep_one_key(ph);
    check_forward(g, tt_randn(g, TT_SHAPE(2, 3, 3, 5), 5), ph);
    /* (Tk) */
    check_forward(g, tt_randn(g, TT_SHAPE(3, 7), 6), bool_mask(g, TT_SHAPE(7), (uint8_t[]){0, 1, 0, 0, 1, 0, 0}));
    /* (B,1,Tk) against 3-D x */
    check_forward(g, tt_randn(g, TT_SHAPE(2, 3, 3), 7), bool_mask(g, TT_SHAPE(2, 1, 3), (uint8_t[]){0, 0, 1, 1, 0, 0}));
    /* unmasked -inf scores count as blocked */
    tg_tensor *x = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 3), (double[]){-INFINITY, 0.5, -1, 2, -INFINITY, 0});
    check_forward(g, x, NULL);
    tg_graph_free(g);
}
END_TEST

START_TEST(forward_stable_and_blocked_scores_unread)
{
    tg_graph *g = tg_graph_new();
    /* the row max is subtracted: huge scores do not overflow */
    tg_tensor *x = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 3), (double[]){1000, 1000, 999, -1000, -1001, -1000});
    tg_tensor *y = tg_softmax(g, x, NULL);
    ck_assert_ptr_nonnull(y);
    double e = exp(-1.0);
    ck_assert_double_eq_tol(tg_tensor_get(y, 0), 1 / (2 + e), 1e-15);
    ck_assert_double_eq_tol(tg_tensor_get(y, 2), e / (2 + e), 1e-15);
    ck_assert_double_eq_tol(tg_tensor_get(y, 4), e / (2 + e), 1e-15);
    tg_tensor *ly = tg_log_softmax(g, x, NULL);
    ck_assert_double_eq_tol(tg_tensor_get(ly, 0), -log(2 + e), 1e-13);
    ck_assert_double_eq_tol(tg_tensor_get(ly, 5), -log(2 + e), 1e-13);
    /* a blocked key's score is never read: NaN and +inf there are fine */
    tg_tensor *xn = tt_from_doubles(g, TG_F64, TT_SHAPE(1, 4), (double[]){0, NAN, INFINITY, 0});
    tg_tensor *m = bool_mask(g, TT_SHAPE(4), (uint8_t[]){0, 1, 1, 0});
    y = tg_softmax(g, xn, m);
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    ck_assert(tg_tensor_get(y, 0) == 0.5 && tg_tensor_get(y, 1) == 0.0 && tg_tensor_get(y, 2) == 0.0 &&
              tg_tensor_get(y, 3) == 0.5);
    /* mask entries other than 0 count as blocked */
    tg_tensor *m2 = bool_mask(g, TT_SHAPE(4), (uint8_t[]){0, 7, 255, 0});
    tg_tensor *y2 = tg_softmax(g, xn, m2);
    ck_assert_ptr_nonnull(y2);
    ck_assert_mem_eq(y->data, y2->data, 4 * sizeof(double));
    tg_graph_free(g);
}
END_TEST

/* ---- gradients -------------------------------------------------------------- */

START_TEST(gradcheck_no_mask)
{
    tg_graph *g = tg_graph_new();
    gradcheck_both(tt_randn(g, TT_SHAPE(1), 1), NULL);
    gradcheck_both(tt_randn(g, TT_SHAPE(5), 2), NULL);
    gradcheck_both(tt_randn(g, TT_SHAPE(3, 7), 3), NULL);
    gradcheck_both(tt_randn(g, TT_SHAPE(4, 1), 4), NULL);
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 3, 5), 5), NULL);
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 2, 3, 4), 6), NULL);
    tg_graph_free(g);
}
END_TEST

START_TEST(gradcheck_masks)
{
    tg_graph *g = tg_graph_new();
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 2, 3, 3), 11), causal_mask(g, 3, 3));
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 3, 5), 12), causal_mask(g, 3, 5));
    tg_tensor *pad = bool_mask(g, TT_SHAPE(2, 1, 1, 5), (uint8_t[]){0, 0, 0, 1, 1, 0, 0, 0, 0, 1});
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 3, 4, 5), 13), pad);
    tg_tensor *ph = random_mask(g, TT_SHAPE(2, 3, 3, 5), 14);
    keep_one_key(ph);
    gradcheck_both(tt_randn(g, TT_SHAPE(2, 3, 3, 5), 15), ph);
    gradcheck_both(tt_randn(g, TT_SHAPE(3, 7), 16), bool_mask(g, TT_SHAPE(7), (uint8_t[]){0, 1, 0, 0, 1, 0, 0}));
    /* unmasked -inf scores next to a mask */
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 4), 17);
    ((double *)x->data)[1] = -INFINITY;
    gradcheck_both(x, bool_mask(g, TT_SHAPE(4), (uint8_t[]){0, 0, 1, 0}));
    tg_graph_free(g);
}
END_TEST

/* Backward from a random seed that is nonzero everywhere, including at
 * blocked positions: blocked gradients are exactly 0, allowed ones match
 * the row formulas computed here. */
START_TEST(blocked_gradient_exactly_zero)
{
    tg_graph *g = tg_graph_new();
    const int n = 5, rows = 12;
    for (int kind = 0; kind < 2; kind++) {
        tg_tensor *m = random_mask(g, TT_SHAPE(2, 2, 3, 5), 21); /* (B,H,Tq,Tk) */
        uint8_t *b = m->data;
        b[7] = 1;
        keep_one_key(m);
        tg_tensor *x = tt_randn(g, TT_SHAPE(2, 2, 3, 5), 22);
        ((double *)x->data)[7] = NAN; /* blocked, so never read */
        tg_tensor *y = kind == K_SOFTMAX ? tg_softmax(g, x, m) : tg_log_softmax(g, x, m);
        ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
        double seed[60];
        tg_rng r;
        tg_rng_seed(&r, 23, 1);
        for (int i = 0; i < 60; i++) seed[i] = 1 + tg_rng_uniform(&r);
        ck_assert_int_eq(tg_graph_backward_seeded(g, y, seed), 0);
        const double *gx = x->grad, *yv = y->data;
        int n_blocked = 0;
        for (int row = 0; row < rows; row++) {
            double s = 0; /* softmax: sum_k p_k dp_k; log_softmax: sum_{k allowed} dy_k */
            for (int j = 0; j < n; j++) {
                int i = row * n + j;
                if (!b[i]) s += kind == K_SOFTMAX ? yv[i] * seed[i] : seed[i];
            }
            for (int j = 0; j < n; j++) {
                int i = row * n + j;
                if (b[i]) {
                    ck_assert(kind == K_SOFTMAX ? yv[i] == 0.0 : yv[i] == -INFINITY);
                    ck_assert(gx[i] == 0.0);
                    n_blocked++;
                    continue;
                }
                double want = kind == K_SOFTMAX ? yv[i] * (seed[i] - s) : seed[i] - exp(yv[i]) * s;
                ck_assert_double_eq_tol(gx[i], want, 1e-14);
            }
        }
        ck_assert_int_gt(n_blocked, 10);
        tg_graph_reset(g);
    }
    tg_graph_free(g);
}
END_TEST

START_TEST(zero_blocked_rows_flag)
{
    tg_graph *g = tg_graph_new();
    /* (B,1,1,Tk): batch 1 is all padding; plus a causal-like per-row mask */
    tg_tensor *m = bool_mask(g, TT_SHAPE(2, 1, 1, 4), (uint8_t[]){0, 0, 1, 0, 1, 1, 1, 1});
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 2, 3, 4), 31);
    ck_assert_ptr_null(tg_softmax(g, x, m));
    tt_assert_error(g, "row 6 (index (1,0,0)) of x f64 (2,2,3,4) has every key blocked");
    tg_graph_clear_error(g);

    tg_tensor *y = tg_softmax_ex(g, x, m, TG_SOFTMAX_ZERO_BLOCKED_ROWS);
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    uint8_t b[48];
    double p[48];
    expand_mask(x, m, b);
    tt_naive_softmax(x, b, p);
    for (int i = 0; i < 48; i++) {
        if (i >= 24) ck_assert(tg_tensor_get(y, i) == 0.0);
        else if (b[i]) ck_assert(tg_tensor_get(y, i) == 0.0);
        else ck_assert_double_eq_tol(tg_tensor_get(y, i), p[i], 1e-14);
    }
    double seed[48];
    for (int i = 0; i < 48; i++) seed[i] = 0.5 + i;
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, seed), 0);
    for (int i = 24; i < 48; i++) ck_assert(((double *)x->grad)[i] == 0.0);

    /* gradcheck with fully blocked rows, and with unmasked -inf rows */
    sm_ctx c = {K_SOFTMAX, m, TG_SOFTMAX_ZERO_BLOCKED_ROWS};
    tt_assert_gradcheck(sm_fn, &c, 1, &x);
    tg_tensor *x2 = tt_randn(g, TT_SHAPE(3, 5), 32);
    for (int j = 0; j < 5; j++) ((double *)x2->data)[5 + j] = -INFINITY;
    tg_tensor *m2 = causal_mask(g, 3, 5);
    c.mask = m2;
    tt_assert_gradcheck(sm_fn, &c, 1, &x2);
    /* the flag does not hide a NaN score */
    ((double *)x2->data)[0] = NAN;
    tt_assert_failed(g, tg_softmax_ex(g, x2, NULL, TG_SOFTMAX_ZERO_BLOCKED_ROWS), "score NaN at element 0");
    tg_graph_free(g);
}
END_TEST

START_TEST(records_only_x)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3), 41);
    tg_tensor *m = bool_mask(g, TT_SHAPE(3), (uint8_t[]){0, 1, 0});
    ck_assert_ptr_nonnull(tg_softmax(g, x, m));
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    /* a constant x records nothing */
    tg_tensor *c = tt_from_doubles(g, TG_F64, TT_SHAPE(3), (double[]){1, 2, 3});
    tg_tensor *y = tg_log_softmax(g, c, m);
    ck_assert_ptr_nonnull(y);
    ck_assert(!y->requires_grad);
    ck_assert_int_eq(tg_graph_tape_len(g), 1);
    tg_graph_free(g);
}
END_TEST

/* ---- softmax errors ----------------------------------------------------------- */

START_TEST(softmax_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3), 51);

    tt_assert_failed(g, tg_softmax(g, NULL, NULL), "softmax: input 0 is NULL");
    tg_graph_clear_error(g);

    tg_tensor *xi = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3));
    tt_assert_failed(g, tg_softmax(g, xi, NULL), "softmax: x must be f32 or f64, got i32 (2,3)");
    tg_graph_clear_error(g);

    tg_tensor *mf = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    tt_assert_failed(g, tg_softmax(g, x, mf), "softmax: mask must be bool, got f32 (2,3), for x f64 (2,3)");
    tg_graph_clear_error(g);
    tg_tensor *mi = tg_tensor_new(g, TG_I32, TT_SHAPE(3));
    tt_assert_failed(g, tg_log_softmax(g, x, mi), "log_softmax: mask must be bool, got i32 (3), for x f64 (2,3)");
    tg_graph_clear_error(g);

    tg_tensor *x24 = tt_randn(g, TT_SHAPE(2, 4), 52);
    tt_assert_failed(g, tg_softmax(g, x24, causal_mask(g, 3, 3)),
                     "softmax: mask bool (3,3) does not broadcast to x f64 (2,4)");
    tg_graph_clear_error(g);
    tg_tensor *m4 = tg_tensor_new(g, TG_BOOL, TT_SHAPE(1, 1, 2, 4));
    tt_assert_failed(g, tg_softmax(g, x24, m4), "softmax: mask bool (1,1,2,4) does not broadcast to x f64 (2,4)");
    tg_graph_clear_error(g);

    tg_tensor *s = tg_scalar(g, TG_F64, 1.0);
    tt_assert_failed(g, tg_softmax(g, s, NULL), "softmax: x must have at least one axis, got f64 ()");
    tg_graph_clear_error(g);

    tt_assert_failed(g, tg_softmax_ex(g, x, NULL, 4), "softmax: unknown flags 0x4");
    tg_graph_clear_error(g);

    /* a fully blocked row, named by its index */
    tg_tensor *xb = tt_randn(g, TT_SHAPE(2, 2, 2, 4), 53);
    uint8_t mb[16] = {0};
    for (int j = 0; j < 4; j++) mb[12 + j] = 1; /* (B,H,Tq,Tk) = (2,2,2,4) row 3 */
    tg_tensor *mfull = tg_tensor_new(g, TG_BOOL, TT_SHAPE(2, 2, 2, 4));
    memcpy(mfull->data, mb, 16);
    tt_assert_failed(g, tg_softmax(g, xb, mfull),
                     "softmax: row 3 (index (0,1,1)) of x f64 (2,2,2,4) has every key blocked");
    tg_graph_clear_error(g);
    tt_assert_failed(g, tg_log_softmax(g, xb, mfull),
                     "log_softmax: row 3 (index (0,1,1)) of x f64 (2,2,2,4) has every key blocked");
    tg_graph_clear_error(g);
    /* ...also when the mask and -inf scores together block it */
    tg_tensor *x1 = tt_from_doubles(g, TG_F64, TT_SHAPE(3), (double[]){-INFINITY, 1, 2});
    tt_assert_failed(g, tg_softmax(g, x1, bool_mask(g, TT_SHAPE(3), (uint8_t[]){0, 1, 1})),
                     "softmax: row 0 of x f64 (3) has every key blocked");
    tg_graph_clear_error(g);
    /* ...and by -inf scores alone */
    tg_tensor *xinf = tt_from_doubles(g, TG_F32, TT_SHAPE(2, 2), (double[]){0, 1, -INFINITY, -INFINITY});
    tt_assert_failed(g, tg_softmax(g, xinf, NULL), "softmax: row 1 (index (1)) of x f32 (2,2) has every key blocked");
    tg_graph_clear_error(g);

    /* NaN / +inf at an allowed key, named by element */
    tg_tensor *xn = tt_from_doubles(g, TG_F64, TT_SHAPE(2, 3), (double[]){0, 1, 2, 3, 4, NAN});
    tt_assert_failed(g, tg_softmax(g, xn, NULL), "softmax: score NaN at element 5 (index (1,2)) of x f64 (2,3)");
    tg_graph_clear_error(g);
    tg_tensor *xp = tt_from_doubles(g, TG_F32, TT_SHAPE(2, 3), (double[]){0, INFINITY, 2, 3, 4, 5});
    tt_assert_failed(g, tg_log_softmax(g, xp, bool_mask(g, TT_SHAPE(3), (uint8_t[]){1, 0, 0})),
                     "log_softmax: score +inf at element 1 (index (0,1)) of x f32 (2,3)");
    tg_graph_clear_error(g);

    /* an error already on the graph sticks: a valid softmax returns NULL */
    tg_fail(g, "earlier: something");
    ck_assert_ptr_null(tg_softmax(g, x, NULL));
    ck_assert_str_eq(tg_graph_error(g), "earlier: something");
    tg_graph_free(g);
}
END_TEST

/* ---- f32 against f64 ------------------------------------------------------------ */

START_TEST(f32_matches_f64)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *xd = tt_randn(g, TT_SHAPE(2, 3, 4, 5), 101);
    tg_tensor *xf = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4, 5));
    for (int i = 0; i < 120; i++) ((float *)xf->data)[i] = (float)((double *)xd->data)[i];
    /* compare against f64 run on the same (rounded) values */
    for (int i = 0; i < 120; i++) ((double *)xd->data)[i] = ((float *)xf->data)[i];
    tg_tensor *m = causal_mask(g, 4, 5);
    tg_tensor *pd = tg_softmax(g, xd, m), *pf = tg_softmax(g, xf, m);
    tg_tensor *ld = tg_log_softmax(g, xd, m), *lf = tg_log_softmax(g, xf, m);
    ck_assert(pd && pf && ld && lf);
    ck_assert_int_eq(pf->dtype, TG_F32);
    for (int i = 0; i < 120; i++) {
        double a = tg_tensor_get(pd, i), b = tg_tensor_get(pf, i);
        ck_assert(fabs(a - b) <= 1e-5 * fabs(a) + 1e-30);
        a = tg_tensor_get(ld, i);
        b = tg_tensor_get(lf, i);
        if (a == -INFINITY) ck_assert(b == -INFINITY);
        else ck_assert(fabs(a - b) <= 1e-5 * fabs(a) + 1e-6);
    }
    tg_tensor *t = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3, 4), (int32_t[24]){0, 1, 2, 3, 4,  -1, 0, 1, 2, 3, 4, 0,
                                                                              1, 2, 3, 4, -1, 0,  1, 2, 3, 4, 0, 1});
    double cd = tg_tensor_item(tg_cross_entropy(g, xd, t)), cf = tg_tensor_item(tg_cross_entropy(g, xf, t));
    ck_assert(fabs(cd - cf) <= 1e-5 * fabs(cd));

    /* f32 gradients agree with f64 too */
    tg_tensor_set_requires_grad(g, xf, true);
    tg_tensor *yd = tg_cross_entropy(g, xd, t), *yf = tg_cross_entropy(g, xf, t);
    ck_assert_int_eq(tg_graph_backward(g, yd), 0);
    ck_assert_int_eq(tg_graph_backward(g, yf), 0);
    for (int i = 0; i < 120; i++) {
        double a = ((double *)xd->grad)[i], b = ((float *)xf->grad)[i];
        ck_assert(fabs(a - b) <= 1e-5 * fabs(a) + 1e-7);
    }
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops_softmax");
    tt_tcase(s, "softmax", 0,
             TT_TESTS(forward_no_mask, forward_masks, forward_stable_and_blocked_scores_unread, gradcheck_no_mask,
                      gradcheck_masks, blocked_gradient_exactly_zero, zero_blocked_rows_flag, records_only_x,
                      softmax_errors));
    tt_tcase(s, "f32_f64", 0, TT_TESTS(f32_matches_f64));
    return tt_run(s);
}
