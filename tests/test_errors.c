/* Errors across a whole forward pass: the first bad op records a message
 * naming itself and the shapes, every later op returns NULL, backward
 * reports the same message, and nothing aborts. */
#include "tg_test.h"

/* embedding -> layernorm -> matmul -> reshape -> cross-entropy */
static tg_tensor *forward(tg_graph *g, tg_tensor *wte, tg_tensor *w, tg_tensor *ids, tg_tensor *tgt)
{
    tg_tensor *x = tg_embedding(g, wte, ids);                         /* (B,T,C) */
    tg_tensor *h = tg_layernorm(g, x, NULL, NULL, TG_LAYERNORM_EPS);  /* (B,T,C) */
    tg_tensor *logits = tg_matmul(g, h, w);                           /* (B,T,V) */
    tg_tensor *flat = tg_reshape(g, logits, 2, (int[]){-1, wte->shape[0]}); /* (B*T,V) */
    tg_tensor *ft = tg_reshape(g, tgt, 1, (int[]){-1});               /* (B*T) */
    return tg_cross_entropy(g, flat, ft);
}

typedef struct {
    const char *what;
    int ids_bad;      /* put id 9 (out of range) in the batch */
    int w_rows;       /* rows of w: C is right */
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
    tg_tensor *wte = tt_randn(g, TT_SHAPE(6, 4), 1);   /* V=6, C=4 */
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

int main(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_add_loop_test(tc, first_error_reaches_backward, 0, 3);
    tcase_add_test(tc, reshape_and_i32_errors);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
