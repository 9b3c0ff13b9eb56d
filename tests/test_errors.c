/* Errors across a whole forward pass: the first bad op records a message
 * naming itself and the shapes, every later op returns NULL, backward
 * reports the same message, and nothing aborts. */
#include "tg_test.h"

/* embedding -> layernorm -> matmul -> reshape -> cross-entropy */
static tg_tensor *forward(tg_graph *g, tg_tensor *wte, tg_tensor *w, tg_tensor *ids, tg_tensor *tgt)
{
    tg_tensor *x = tg_embedding(g, wte, ids); /* (B,T,C) */
    tg_tensor *h = tg_layernorm(g, x, NULL, NULL, TG_LAYERNORM_EPS); /* (B,T,C) */
    tg_tensor *logits = tg_matmul(g, h, w); /* (B,T,V) */
    tg_tensor *flat = tg_reshape(g, logits, 2, (int[]){-1, wte->shape[0]}); /* (B*T,V) */
    tg_tensor *ft = tg_reshape(g, tgt, 1, (int[]){-1}); /* (B*T) */
    return tg_cross_entropy(g, flat, ft);
}

typedef struct {
    const char *what;
    int ids_bad; /* put id 9 (out of range) in the batch */
    int w_rows; /* rows of w: C is right */
    tg_dtype w_dtype;
    const char *want; /* substring of the first message */
} bad_case;

static const bad_case CASES[] = {
    {"out-of-range id", 1, 4, TG_F64, "embedding: id 9 at position (1,0)"},
    {"matmul shapes", 0, 5, TG_F64, "matmul: inner dimensions differ: a f64 (2,3,4) x b f64 (5,6)"},
    {"dtype mismatch", 0, 4, TG_F32, "matmul: dtypes differ: a f64 (2,3,4), b f32 (4,6)"},
};

START_TEST(first_error_reaches_backward)
{
    const bad_case *c = &CASES[_i];
    tg_graph *g = tg_graph_new();
    tg_tensor *wte = tt_randn(g, TT_SHAPE(6, 4), 1); /* V=6, C=4 */
    tg_tensor *w = tg_tensor_new(g, c->w_dtype, TT_SHAPE(c->w_rows, 6));
    int32_t idv[6] = {0, 1, 2, 3, 4, 5}, tv[6] = {1, 2, 3, 4, 5, 0};
    if (c->ids_bad) idv[3] = 9;
    tg_tensor *ids = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), idv);
    tg_tensor *tgt = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), tv);
    tg_tensor *loss = forward(g, wte, w, ids, tgt);
    ck_assert_msg(loss == NULL, "%s: expected NULL", c->what);
    tt_assert_error(g, c->want);
    ck_assert_int_eq(tg_graph_backward(g, loss), -1);
    tt_assert_error(g, c->want);
    /* reset clears it and the same graph works again */
    tg_graph_reset(g);
    tg_tensor *wte2 = tt_randn(g, TT_SHAPE(6, 4), 1), *w2 = tt_randn(g, TT_SHAPE(4, 6), 2);
    idv[3] = 3;
    loss = forward(g, wte2, w2, tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), idv),
                   tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), tv));
    ck_assert_msg(loss != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward(g, loss), 0);
    tg_graph_free(g);
}
END_TEST

START_TEST(reshape_and_i32_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3));
    ck_assert_ptr_null(tg_reshape(g, x, 2, (int[]){4, 2}));
    tt_assert_error(g, "reshape");
    tt_assert_error(g, "(2,3)");
    tt_assert_error(g, "(4,2)");
    tg_graph_reset(g);
    tg_tensor *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3));
    tg_tensor *f = tg_tensor_new(g, TG_F32, TT_SHAPE(3, 2));
    ck_assert_ptr_null(tg_matmul(g, ids, f));
    tt_assert_error(g, "matmul: a must be f32 or f64, got i32 (2,3)");
    tg_graph_free(g);
}
END_TEST

/* ---- generations: tensors kept across tg_graph_reset --------------------- */

/* The case: x = 7 kept across a reset, then a new tensor y = 2 is
 * made where x's data was. x + 0 used to give 2; now the op refuses x. */
START_TEST(tensor_kept_across_reset_is_refused)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_scalar(g, TG_F64, 7);
    tg_graph_reset(g);
    tg_tensor *y = tg_scalar(g, TG_F64, 2), *zero = tg_scalar(g, TG_F64, 0);
    ck_assert_ptr_ne(x, y); /* headers are kept apart from data, so x is still x */
    ck_assert_ptr_null(tg_add(g, zero, x));
    tt_assert_error(g,
                    "add: input 1 (f64 ()) was made before the last tg_graph_reset of this graph "
                    "(in generation 0; it is at 1 now)");
    ck_assert(isnan(tg_tensor_item(x)));
    ck_assert_double_eq(tg_tensor_item(y), 2);
    /* an op given only live tensors works again once the error is cleared */
    tg_graph_clear_error(g);
    ck_assert_double_eq(tg_tensor_item(tg_add(g, zero, y)), 2);

    /* a loss kept across a reset: backward refuses it, as does marking it */
    tg_tensor *w = tt_randn(g, TT_SHAPE(3), 1);
    tg_tensor *loss = tg_sum_all(g, tg_mul(g, w, w));
    tg_graph_reset(g);
    ck_assert_int_eq(tg_graph_backward(g, loss), -1);
    tt_assert_error(g, "backward: the tensor (f64 ()) was made before the last tg_graph_reset of this graph");
    tg_graph_clear_error(g);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, w, true), -1);
    tt_assert_error(g, "requires_grad: the tensor (f64 (3)) was made before the last tg_graph_reset");
    tg_graph_free(g);
}
END_TEST

/* A tensor of another graph is a constant there while that graph lives
 * on unreset (evalstep keeps its batch on a graph of its own; gradcheck
 * runs f on a private graph with the caller's inputs); once the other
 * graph is reset, using it is the same error. */
START_TEST(tensors_of_another_graph)
{
    tg_graph *g = tg_graph_new(), *h = tg_graph_new();
    tg_tensor *c = tg_tensor_from(h, TG_F64, 1, (int[]){3}, (double[]){1, 2, 3}); /* on h */
    tg_tensor *w = tt_randn(g, TT_SHAPE(3), 2);
    for (int step = 0; step < 3; step++) { /* g is reset every step, h never */
        tg_tensor *y = tg_sum_all(g, tg_mul(g, w, c)); /* () */
        ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
        double want = 0;
        for (int i = 0; i < 3; i++) want += ((double *)w->data)[i] * (i + 1);
        ck_assert_double_eq_tol(tg_tensor_item(y), want, 1e-15);
        tg_graph_reset(g);
        w = tt_randn(g, TT_SHAPE(3), 3 + step);
    }
    tg_graph_reset(h);
    tg_tensor *d = tg_tensor_from(h, TG_F64, 1, (int[]){3}, (double[]){7, 8, 9}); /* in c's place */
    ck_assert_ptr_null(tg_mul(g, w, c));
    tt_assert_error(g,
                    "mul: input 1 (f64 (3)) was made before the last tg_graph_reset of its graph (not the "
                    "graph of this op) (in generation 0; it is at 1 now)");
    ck_assert_double_eq(tg_tensor_get(d, 0), 7);
    tg_graph_free(h);
    tg_graph_free(g);
}
END_TEST

static tg_tensor *dot_fresh(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *c = tg_tensor_from(g, TG_F64, 1, (int[]){3}, (double[]){1, -2, 0.5}); /* (3) */
    return tg_sum_all(g, tg_mul(g, tg_exp(g, in[0]), c)); /* () */
}

static tg_tensor *dot_kept(tg_graph *g, tg_tensor **in, void *ctx)
{
    tg_tensor **keep = ctx; /* a constant made on the first call and, wrongly, kept */
    if (!*keep) *keep = tg_tensor_from(g, TG_F64, 1, (int[]){3}, (double[]){1, -2, 0.5});
    return tg_sum_all(g, tg_mul(g, tg_exp(g, in[0]), *keep));
}

/* gradcheck runs f on a private graph that it resets before every
 * evaluation, with inputs that live on the caller's graph: those work
 * (also after the caller's graph was reset and they were made again), a
 * tensor f keeps from one evaluation to the next is caught, and so is an
 * input kept across a reset of its own graph. */
START_TEST(gradcheck_and_generations)
{
    tg_graph *g = tg_graph_new();
    for (int step = 0; step < 2; step++) {
        tg_tensor *x = tt_randn(g, TT_SHAPE(3), 5 + step);
        tt_assert_gradcheck(dot_fresh, NULL, 1, (tg_tensor *[]){x});
        tg_graph_reset(g);
    }
    tg_tensor *x = tt_randn(g, TT_SHAPE(3), 4), *keep = NULL;
    tg_gradcheck_result res;
    ck_assert(!tg_gradcheck(dot_kept, &keep, 1, &x, NULL, &res));
    ck_assert_msg(strstr(res.message,
                         "gradcheck: f failed at input 0 element 0 + eps: mul: input 1 (f64 (3)) "
                         "was made before the last tg_graph_reset of this graph"),
                  "%s", res.message);
    tg_graph_reset(g);
    ck_assert(!tg_gradcheck(dot_fresh, NULL, 1, &x, NULL, &res));
    ck_assert_msg(strstr(res.message, "gradcheck: input 0 was made before the last tg_graph_reset of its graph"), "%s",
                  res.message);
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("errors");
    tt_tcase(s, "errors", 0, TT_TESTS(TT_LOOP(first_error_reaches_backward, 3), reshape_and_i32_errors));
    tt_tcase(s, "generations", 0,
             TT_TESTS(tensor_kept_across_reset_is_refused, tensors_of_another_graph, gradcheck_and_generations));
    return tt_run(s);
}
