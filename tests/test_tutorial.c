/* The numbers of the multi-head attention tutorial (a Chinese-language
 * text the attention layers follow; docs/design.md, "The tutorial", says
 * what it works through), each computed with tapegrad's ops (softmax,
 * matmul, scale) and asserted. */
#include "tg_test.h"

static tg_tensor *vec(tg_graph *g, tg_dtype dt, int n, const double *v)
{
    tg_tensor *t = tg_tensor_new(g, dt, 1, (int[]){n});
    ck_assert_ptr_nonnull(t);
    for (int i = 0; i < n; i++) {
        if (dt == TG_F32) ((float *)t->data)[i] = (float)v[i];
        else ((double *)t->data)[i] = v[i];
    }
    return t;
}

static double at(const tg_tensor *t, int64_t i) { return tg_tensor_get(t, i); }

/* "values [2,0] and [0,4] with weights 0.75 and 0.25 read out [1.5, 1]":
 * the weights come from softmax([ln 3, 0]). */
START_TEST(weighted_sum_of_values)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *p = tg_softmax(g, vec(g, TG_F64, 2, (double[]){log(3.0), 0}), NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_double_eq_tol(at(p, 0), 0.75, 1e-15);
    ck_assert_double_eq_tol(at(p, 1), 0.25, 1e-15);
    tg_tensor *v = tg_tensor_from(g, TG_F64, 2, (int[]){2, 2}, (double[]){2, 0, 0, 4}); /* (Tk,d) */
    tg_tensor *o = tg_matmul(g, p, v); /* (d) */
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(o->ndim, 1);
    ck_assert_double_eq_tol(at(o, 0), 1.5, 1e-14);
    ck_assert_double_eq_tol(at(o, 1), 1.0, 1e-14);
    tg_graph_free(g);
}
END_TEST

/* "alpha = (0.5,0.5); a loss that takes only the first weight gives score
 * gradients (0.25,-0.25), not (0.25,0)"; upstream (1,1) gives (0,0). */
START_TEST(softmax_backward_by_hand)
{
    tg_graph *g = tg_graph_new();
    const double upstream[2][2] = {{1, 0}, {1, 1}};
    const double want[2][2] = {{0.25, -0.25}, {0, 0}};
    for (int k = 0; k < 2; k++) {
        tg_graph_reset(g);
        tg_tensor *s = vec(g, TG_F64, 2, (double[]){0, 0}); /* scores */
        ck_assert_int_eq(tg_tensor_set_requires_grad(g, s, true), 0);
        tg_tensor *p = tg_softmax(g, s, NULL);
        ck_assert_ptr_nonnull(p);
        ck_assert_double_eq_tol(at(p, 0), 0.5, 1e-15);
        ck_assert_double_eq_tol(at(p, 1), 0.5, 1e-15);
        ck_assert_int_eq(tg_graph_backward_seeded(g, p, upstream[k]), 0);
        const double *gs = s->grad;
        ck_assert_double_eq_tol(gs[0], want[k][0], 1e-15);
        ck_assert_double_eq_tol(gs[1], want[k][1], 1e-15);
    }
    tg_graph_free(g);
}
END_TEST

/* Head size 64, raw dot products [8,-8]. Unscaled, the first key gets
 * 1 - 1/(1+e^16) ~ 1 - 1.1e-7; scaled by 1/sqrt(64) = 1/8, [0.881, 0.119]. */
START_TEST(scaling_by_sqrt_head_size)
{
    tg_graph *g = tg_graph_new();
    const int d_head = 64;
    const double dots[2] = {8, -8};
    tg_tensor *p = tg_softmax(g, vec(g, TG_F64, 2, dots), NULL);
    ck_assert_ptr_nonnull(p);
    const double tail = 1 / (1 + exp(16.0)); /* e^-8 / (e^8 + e^-8) */
    ck_assert(tail > 1.12e-7 && tail < 1.13e-7);
    ck_assert(fabs((1 - at(p, 0)) - tail) <= 0.01 * tail);
    ck_assert(fabs(at(p, 1) - tail) <= 0.01 * tail);

    const double scale = 1 / sqrt((double)d_head);
    ck_assert(scale == 0.125);
    tg_tensor *ps = tg_softmax(g, tg_scale(g, vec(g, TG_F64, 2, dots), scale), NULL);
    ck_assert_ptr_nonnull(ps);
    ck_assert(fabs(at(ps, 0) - 0.881) < 5e-4);
    ck_assert(fabs(at(ps, 1) - 0.119) < 5e-4);
    /* the second key takes part after scaling */
    ck_assert(at(ps, 1) > 0.1);
    tg_graph_free(g);
}
END_TEST

/* "[1000, 1000] should still give [0.5, 0.5]": subtracting the same number
 * from every score changes nothing. */
START_TEST(large_equal_scores)
{
    tg_graph *g = tg_graph_new();
    for (int d = 0; d < 2; d++) {
        tg_tensor *p = tg_softmax(g, vec(g, d ? TG_F32 : TG_F64, 2, (double[]){1000, 1000}), NULL);
        ck_assert_ptr_nonnull(p);
        ck_assert(at(p, 0) == 0.5 && at(p, 1) == 0.5);
    }
    tg_graph_free(g);
}
END_TEST

/* "softmax([0,0]) is [0.5,0.5]; allowing only the first key and masking
 * BEFORE the softmax gives [1,0]; zeroing after it gives [0.5,0]". */
START_TEST(mask_before_softmax)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *s = vec(g, TG_F64, 2, (double[]){0, 0});
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, 1, (int[]){2}, (uint8_t[]){0, 1});
    tg_tensor *p = tg_softmax(g, s, m);
    ck_assert_ptr_nonnull(p);
    ck_assert(at(p, 0) == 1.0 && at(p, 1) == 0.0);
    /* the wrong way, zeroing after the softmax, would give [0.5, 0] */
    tg_tensor *q = tg_softmax(g, s, NULL);
    ck_assert(at(q, 0) == 0.5);
    ck_assert(at(p, 0) != at(q, 0));
    tg_graph_free(g);
}
END_TEST

/* "a fully blocked row is rejected rather than quietly giving NaN". */
START_TEST(fully_blocked_row_is_an_error)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *s = vec(g, TG_F64, 2, (double[]){0, 0});
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, 1, (int[]){2}, (uint8_t[]){1, 1});
    ck_assert_ptr_null(tg_softmax(g, s, m));
    tt_assert_error(g, "softmax: row 0 of x f64 (2) has every key blocked");
    /* the error sticks: the next op given NULL returns NULL */
    ck_assert_ptr_null(tg_softmax(g, NULL, NULL));
    tt_assert_error(g, "every key blocked");
    tg_graph_free(g);
}
END_TEST

/* "logits must be finite or -inf for masked positions": NaN is an error. */
START_TEST(nan_score_is_an_error)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *s = vec(g, TG_F64, 3, (double[]){0, NAN, 1});
    ck_assert_ptr_null(tg_softmax(g, s, NULL));
    tt_assert_error(g, "softmax: score NaN at element 1 (index (1)) of x f64 (3)");
    tg_graph_clear_error(g);
    /* -inf alone is a blocked key, not an error */
    tg_tensor *p = tg_softmax(g, vec(g, TG_F64, 3, (double[]){0, -INFINITY, 0}), NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert(at(p, 0) == 0.5 && at(p, 1) == 0.0 && at(p, 2) == 0.5);
    tg_graph_free(g);
}
END_TEST

/* An all-false mask changes nothing, bit for bit. */
START_TEST(all_false_mask_is_no_mask)
{
    tg_graph *g = tg_graph_new();
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F32 : TG_F64;
        tg_tensor *x = tg_tensor_new(g, dt, 3, (int[]){2, 3, 5});
        tg_rng r;
        tg_rng_seed(&r, 5, 1);
        tg_rng_fill_normal(&r, x, 0, 3);
        tg_tensor *m = tg_tensor_new(g, TG_BOOL, 2, (int[]){3, 5}); /* zero-filled: nothing blocked */
        tg_tensor *a = tg_softmax(g, x, NULL), *b = tg_softmax(g, x, m);
        tg_tensor *la = tg_log_softmax(g, x, NULL), *lb = tg_log_softmax(g, x, m);
        ck_assert(a && b && la && lb);
        ck_assert_mem_eq(a->data, b->data, (size_t)a->numel * tg_dtype_size(dt));
        ck_assert_mem_eq(la->data, lb->data, (size_t)la->numel * tg_dtype_size(dt));
    }
    tg_graph_free(g);
}
END_TEST

/* Causal mask on three tokens: row i sees keys 0..i, rows sum to 1 and
 * "weight on any future position: 0". */
START_TEST(causal_rows)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *s = tg_tensor_new(g, TG_F64, 2, (int[]){3, 3});
    tg_rng r;
    tg_rng_seed(&r, 9, 1);
    tg_rng_fill_normal(&r, s, 0, 1);
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, 2, (int[]){3, 3}, (uint8_t[]){0, 1, 1, 0, 0, 1, 0, 0, 0});
    tg_tensor *p = tg_softmax(g, s, m);
    ck_assert_ptr_nonnull(p);
    ck_assert(at(p, 0) == 1.0);
    for (int i = 0; i < 3; i++) {
        double sum = 0;
        for (int j = 0; j < 3; j++) {
            sum += at(p, i * 3 + j);
            if (j > i) ck_assert(at(p, i * 3 + j) == 0.0);
            else ck_assert(at(p, i * 3 + j) > 0.0);
        }
        ck_assert_double_eq_tol(sum, 1.0, 1e-15);
    }
    tg_graph_free(g);
}
END_TEST

/* KV cache: keys 0..4 cached, queries at positions 3 and 4, all scores 0,
 * values [10,20,30,40,50]. Key j allowed iff j <= position: outputs
 * [25, 30]. The upper-left alignment (j <= query row) gives [10, 15]. */
START_TEST(kv_cache_alignment)
{
    tg_graph *g = tg_graph_new();
    const double value[5] = {10, 20, 30, 40, 50};
    const int pos[2] = {3, 4};
    uint8_t aligned[10], upper_left[10];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++) {
            aligned[i * 5 + j] = j > pos[i];
            upper_left[i * 5 + j] = j > i;
        }
    tg_tensor *s = tg_tensor_new(g, TG_F64, 2, (int[]){2, 5}); /* zeros */
    tg_tensor *pa = tg_softmax(g, s, tg_tensor_from(g, TG_BOOL, 2, (int[]){2, 5}, aligned));
    tg_tensor *pu = tg_softmax(g, s, tg_tensor_from(g, TG_BOOL, 2, (int[]){2, 5}, upper_left));
    ck_assert(pa && pu);
    tg_tensor *v = tg_tensor_from(g, TG_F64, 2, (int[]){5, 1}, value); /* (Tk,1) */
    tg_tensor *oa = tg_matmul(g, pa, v), *ou = tg_matmul(g, pu, v); /* (Tq,1) */
    ck_assert(oa && ou);
    const double want_a[2] = {25, 30}, want_u[2] = {10, 15};
    for (int i = 0; i < 2; i++) {
        ck_assert_double_eq_tol(at(oa, i), want_a[i], 1e-12);
        ck_assert_double_eq_tol(at(ou, i), want_u[i], 1e-12);
    }
    tg_graph_free(g);
}
END_TEST

/* f32 and f64 give the same weights. */
START_TEST(f32_agrees_with_f64)
{
    tg_graph *g = tg_graph_new();
    const double sc[6] = {1, -1, 0.25, 3, -2, 0.5};
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, 1, (int[]){6}, (uint8_t[]){0, 0, 1, 0, 0, 0});
    tg_tensor *pd = tg_softmax(g, vec(g, TG_F64, 6, sc), m);
    tg_tensor *pf = tg_softmax(g, vec(g, TG_F32, 6, sc), m);
    ck_assert(pd && pf);
    ck_assert_int_eq(pf->dtype, TG_F32);
    for (int i = 0; i < 6; i++) ck_assert(fabs(at(pd, i) - at(pf, i)) <= 1e-5 * fabs(at(pd, i)));
    ck_assert(at(pf, 2) == 0.0);
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("tutorial", "attention_softmax", 0,
                   TT_TESTS(weighted_sum_of_values, softmax_backward_by_hand, scaling_by_sqrt_head_size,
                            large_equal_scores, mask_before_softmax, fully_blocked_row_is_an_error,
                            nan_score_is_an_error, all_false_mask_is_no_mask, causal_rows, kv_cache_alignment,
                            f32_agrees_with_f64));
}
