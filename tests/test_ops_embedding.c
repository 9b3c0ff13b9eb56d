/* ops/embedding.c: rows of a weight gathered by integer ids, and their
 * gradients scattered back. */
#include "tg_test.h"

/* ---- helpers --------------------------------------------------------- */

/* tt_assert_failed, then the error cleared for the next case. */
static void assert_failed(tg_graph *g, const tg_tensor *r, const char *needle)
{
    tt_assert_failed(g, r, needle);
    tg_graph_clear_error(g);
}

/* ---- embedding ------------------------------------------------------- */

/* inputs: weight, ids */
static tg_tensor *emb_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_embedding(g, in[0], in[1]);
}

START_TEST(embedding_forward_values)
{
    tg_graph *g = tg_graph_new();
    const int V = 5, C = 3;
    double wv[5 * 3];
    for (int v = 0; v < V; v++)
        for (int c = 0; c < C; c++) wv[v * C + c] = 10 * v + c + 0.25;
    tg_tensor *w = tg_tensor_from(g, TG_F64, TT_SHAPE(V, C), wv);
    tg_tensor *w32 = tt_to_f32(g, w);
    int32_t iv[] = {4, 0, 2, 2, 1, 4, 3, 0};
    const int shapes[][4] = {{0}, {1, 8}, {2, 2, 3}, {3, 2, 2, 2}, {2, 1, 1}};
    for (size_t k = 0; k < 5; k++) {
        int nd = shapes[k][0];
        tg_tensor *ids = tg_tensor_from(g, TG_I32, nd, &shapes[k][1], iv);
        for (int pass = 0; pass < 2; pass++) {
            tg_tensor *y = tg_embedding(g, pass ? w32 : w, ids);
            ck_assert_ptr_nonnull(y);
            ck_assert_int_eq(y->dtype, pass ? TG_F32 : TG_F64);
            ck_assert_int_eq(y->ndim, nd + 1);
            for (int d = 0; d < nd; d++) ck_assert_int_eq(y->shape[d], ids->shape[d]);
            ck_assert_int_eq(y->shape[nd], C);
            for (int64_t i = 0; i < ids->numel; i++)
                for (int c = 0; c < C; c++) ck_assert_double_eq(tg_tensor_get(y, i * C + c), 10 * iv[i] + c + 0.25);
        }
    }
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

START_TEST(embedding_gradcheck)
{
    int32_t iv[] = {1, 3, 1, 0, 3, 1, 2, 1, 4, 0, 2, 2};
    const int ids_shapes[][4] = {{1, 7}, {2, 2, 3}, {1, 1}, {3, 2, 1, 3}, {0}, {2, 1, 3}};
    const int w_shapes[][2] = {{5, 3}, {5, 1}, {6, 4}, {5, 7}};
    for (size_t k = 0; k < sizeof ids_shapes / sizeof ids_shapes[0]; k++)
        for (size_t m = 0; m < sizeof w_shapes / sizeof w_shapes[0]; m++) {
            tg_graph *g = tg_graph_new();
            tg_tensor *in[2];
            in[0] = tt_randn(g, 2, w_shapes[m], 60 + k * 7 + m);
            in[1] = tg_tensor_from(g, TG_I32, ids_shapes[k][0], &ids_shapes[k][1], iv);
            tt_assert_gradcheck(emb_fn, NULL, 2, in);
            tg_graph_free(g);
        }
}
END_TEST

/* a row used 3 times gets the sum of its 3 output gradients; unused rows
 * get exactly 0; a second backward accumulates */
START_TEST(embedding_scatter_add)
{
    for (int pass = 0; pass < 2; pass++) {
        tg_graph *g = tg_graph_new();
        tg_tensor *w = tt_randn(g, TT_SHAPE(4, 2), 3);
        if (pass) w = tt_to_f32(g, w);
        tg_tensor *ids = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 2), (int32_t[]){1, 3, 1, 1});
        tg_tensor *y = tg_embedding(g, w, ids); /* (2,2,2) */
        ck_assert_ptr_nonnull(y);
        double dy[8] = {1, 2, 10, 20, 100, 200, 1000, 2000};
        float dy32[8];
        for (int i = 0; i < 8; i++) dy32[i] = (float)dy[i];
        /* all-equal dy: row 1 gets exactly 3x */
        double ones[8] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
        float ones32[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
        ck_assert_int_eq(tg_graph_backward_seeded(g, y, pass ? (void *)ones32 : (void *)ones), 0);
        double want1[8] = {0, 0, 1.5, 1.5, 0, 0, 0.5, 0.5};
        for (int i = 0; i < 8; i++)
            ck_assert_double_eq(pass ? ((float *)w->grad)[i] : ((double *)w->grad)[i], want1[i]);
        /* distinct dy, accumulated on top */
        ck_assert_int_eq(tg_graph_backward_seeded(g, y, pass ? (void *)dy32 : (void *)dy), 0);
        double want2[8] = {0, 0, 1.5 + 1 + 100 + 1000, 1.5 + 2 + 200 + 2000, 0, 0, 0.5 + 10, 0.5 + 20};
        for (int i = 0; i < 8; i++)
            ck_assert_double_eq(pass ? ((float *)w->grad)[i] : ((double *)w->grad)[i], want2[i]);
        ck_assert_ptr_null(ids->grad);
        tg_graph_free(g);
    }
}
END_TEST

START_TEST(embedding_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *w = tt_randn(g, TT_SHAPE(5, 4), 1);
    tg_tensor *bad_hi = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 3), (int32_t[]){0, 1, 2, 3, 4, 5});
    tg_tensor *bad_lo = tg_tensor_from(g, TG_I32, TT_SHAPE(4), (int32_t[]){0, 4, -1, 2});
    tg_tensor *ok = tg_tensor_from(g, TG_I32, TT_SHAPE(2), (int32_t[]){0, 4});
    assert_failed(g, tg_embedding(g, w, bad_hi),
                  "embedding: id 5 at position (1,2) (flat 5) of ids i32 (2,3) is outside [0, V) with V = 5 "
                  "(weight f64 (5,4))");
    assert_failed(g, tg_embedding(g, w, bad_lo), "embedding: id -1 at position (2) (flat 2) of ids i32 (4)");
    assert_failed(g, tg_embedding(g, w, bad_lo), "V = 5");
    assert_failed(g, tg_embedding(g, w, tt_to_f32(g, w)), "embedding: ids must be i32, got f32 (5,4)");
    assert_failed(g, tg_embedding(g, tt_randn(g, TT_SHAPE(5), 2), ok),
                  "embedding: weight must be 2-D (V,C), got f64 (5)");
    assert_failed(g, tg_embedding(g, tt_randn(g, TT_SHAPE(1, 5, 4), 2), ok),
                  "weight must be 2-D (V,C), got f64 (1,5,4)");
    assert_failed(g, tg_embedding(g, tg_tensor_new(g, TG_I32, TT_SHAPE(5, 4)), ok),
                  "embedding: weight must be f32 or f64, got i32 (5,4)");
    assert_failed(g, tg_embedding(g, w, tg_tensor_new(g, TG_I32, TT_SHAPE(1, 2, 1, 2))),
                  "embedding: ids may have at most 3 dimensions, got i32 (1,2,1,2)");
    assert_failed(g, tg_embedding(g, w, NULL), "embedding: input 1 is NULL");
    ck_assert_ptr_nonnull(tg_embedding(g, w, ok));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_embedding", "embedding", 0,
                   TT_TESTS(embedding_forward_values, embedding_gradcheck, embedding_scatter_add, embedding_errors));
}
