/* core: the backward hook (tg_graph_set_backward_hook) and the tape's
 * nodes (tg_graph_node), which distributed/ builds its gradient buckets on.
 *
 * The property distributed/ relies on: when the hook is called for node i, the
 * gradient of every parameter whose earliest reading node (the smallest
 * tape index among the nodes that have it as an input) is >= i is
 * complete, i.e. equal, bit for bit, to what it is after backward. It is
 * checked on a small graph and on the GPT and the Llama with every kind
 * of node they record (embedding, layernorm / RMSNorm, fused and composed
 * attention, RoPE, SwiGLU, the tied head), so an op that wrote a
 * parameter's gradient without listing it as an input would fail here. */
#include "tg_test.h"

/* What the hook saw: the indices in call order and, at each call, a copy
 * of the store's gradients. */
typedef struct seen {
    tg_params *p;
    int calls, cap;
    int *index;
    double *grads; /* calls x numel */
} seen;

static void record(void *ctx, tg_graph *g, int node)
{
    (void)g;
    seen *s = ctx;
    const int64_t n = tg_params_numel(s->p);
    ck_assert_int_lt(s->calls, s->cap);
    s->index[s->calls] = node;
    for (int64_t k = 0; k < n; k++)
        s->grads[(size_t)s->calls * (size_t)n + (size_t)k] =
            tg_params_dtype(s->p) == TG_F32 ? ((float *)tg_params_grad(s->p))[k] : ((double *)tg_params_grad(s->p))[k];
    s->calls++;
}

/* Index of the first tape node of g reading parameter t, or len. */
static int first_reader(tg_graph *g, const tg_tensor *t)
{
    const int len = tg_graph_tape_len(g);
    for (int i = 0; i < len; i++) {
        const tg_node *n = tg_graph_node(g, i);
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == t) return i;
    }
    return len;
}

/* Runs backward from loss on g with the recording hook and checks the
 * order of the calls and the completeness property for every parameter
 * of p; returns the number of (call, parameter) pairs found complete. */
static int check_backward(tg_graph *g, tg_params *p, tg_tensor *loss)
{
    ck_assert_ptr_nonnull(loss);
    const int len = tg_graph_tape_len(g), np = tg_params_count(p);
    const int64_t n = tg_params_numel(p);
    int *first = malloc((size_t)np * sizeof *first);
    for (int j = 0; j < np; j++) first[j] = first_reader(g, tg_params_at(p, j));
    seen s = {p, 0, len, malloc((size_t)len * sizeof(int)), malloc((size_t)len * (size_t)n * sizeof(double))};
    tg_graph_set_backward_hook(g, record, &s);
    ck_assert_int_eq(tg_graph_backward(g, loss), 0);
    tg_graph_set_backward_hook(g, NULL, NULL);

    ck_assert_int_eq(s.calls, len); /* once per node, the last node first */
    for (int c = 0; c < len; c++) ck_assert_int_eq(s.index[c], len - 1 - c);
    const char *base = tg_params_data(p);
    const size_t es = tg_dtype_size(tg_params_dtype(p));
    int complete = 0;
    for (int j = 0; j < np; j++) {
        const tg_tensor *t = tg_params_at(p, j);
        const int64_t off = ((const char *)t->data - base) / (int64_t)es;
        for (int c = 0; c < len; c++) {
            if (s.index[c] > first[j]) continue; /* not yet passed its earliest reader */
            complete++;
            for (int64_t k = 0; k < t->numel; k++) {
                double now = s.grads[(size_t)c * (size_t)n + (size_t)(off + k)];
                double fin = es == 4 ? ((const float *)t->grad)[k] : ((const double *)t->grad)[k];
                ck_assert_msg(now == fin, "%s[%lld] at the call for node %d (earliest reader %d): %.17g, final %.17g",
                              t->name, (long long)k, s.index[c], first[j], now, fin);
            }
        }
    }
    free(first);
    free(s.index);
    free(s.grads);
    return complete;
}

START_TEST(hook_order_and_completeness_on_a_small_graph)
{
    tg_graph *g = tg_graph_new();
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_tensor *w1 = tg_params_add(p, "w1", TT_SHAPE(3, 4), NULL);
    tg_tensor *w2 = tg_params_add(p, "w2", TT_SHAPE(4, 2), NULL);
    tg_tensor *unused = tg_params_add(p, "unused", TT_SHAPE(2), NULL);
    tg_rng r;
    tg_rng_seed(&r, 5, 1);
    tg_rng_fill_normal(&r, w1, 0, 1);
    tg_rng_fill_normal(&r, w2, 0, 1);
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3), 3);
    /* w1 is read by the first node and again by the last: only the first counts */
    tg_tensor *h = tg_gelu(g, tg_matmul(g, x, w1), TG_GELU_ERF); /* (2,4) */
    tg_tensor *y = tg_matmul(g, h, w2); /* (2,2) */
    tg_tensor *loss = tg_add(g, tg_sum_all(g, tg_mul(g, y, y)), tg_sum_all(g, w1));
    int complete = check_backward(g, p, loss);
    ck_assert_int_gt(complete, tg_graph_tape_len(g)); /* w2 and the unused one are complete early */
    ck_assert_int_eq(first_reader(g, unused), tg_graph_tape_len(g));

    /* the hook stays across a reset until removed, and NULL removes it */
    seen s = {p, 0, 64, malloc(64 * sizeof(int)), malloc(64 * (size_t)tg_params_numel(p) * sizeof(double))};
    tg_graph_set_backward_hook(g, record, &s);
    tg_graph_reset(g);
    x = tt_randn(g, TT_SHAPE(2, 3), 3);
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_matmul(g, x, w1))), 0);
    ck_assert_int_eq(s.calls, 2);
    tg_graph_set_backward_hook(g, NULL, &s);
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_matmul(g, x, w1))), 0);
    ck_assert_int_eq(s.calls, 2); /* removed: the second backward called nothing */
    free(s.index);
    free(s.grads);

    ck_assert_ptr_null(tg_graph_node(g, -1));
    ck_assert_ptr_null(tg_graph_node(g, tg_graph_tape_len(g)));
    ck_assert_ptr_null(tg_graph_node(NULL, 0));
    ck_assert_ptr_nonnull(tg_graph_node(g, 0));
    ck_assert_str_eq(tg_graph_node(g, 0)->op, "matmul");
    tg_graph_set_backward_hook(NULL, record, NULL); /* nothing */
    tg_params_free(p);
    tg_graph_free(g);
}
END_TEST

/* A batch of ids for the models below. */
static void batch(tg_graph *g, int B, int T, int V, tg_tensor **idx, tg_tensor **tgt)
{
    *idx = tg_tensor_new(g, TG_I32, TT_SHAPE(B, T));
    *tgt = tg_tensor_new(g, TG_I32, TT_SHAPE(B, T));
    for (int i = 0; i < B * T; i++) {
        ((int32_t *)(*idx)->data)[i] = (7 * i + 3) % V;
        ((int32_t *)(*tgt)->data)[i] = (5 * i + 1) % V;
    }
}

START_TEST(hook_completeness_on_the_gpt)
{
    for (int variant = 0; variant < 3; variant++) { /* fused, composed, biases */
        const tg_model_config c = {.arch = "gpt",
                                   .n_layer = 2,
                                   .n_head = 2,
                                   .n_embd = 16,
                                   .block_size = 8,
                                   .vocab_size = 11,
                                   .bias = variant == 2};
        tg_error err = {0};
        tg_model m;
        ck_assert_msg(tg_model_init(&m, &c, TG_F64, 1, &err) == 0, "%s", err.msg);
        tg_model_set_composed(&m, variant == 1);
        tg_graph *g = tg_graph_new();
        tg_tensor *idx, *tgt;
        batch(g, 2, 8, 11, &idx, &tgt);
        ck_assert_int_gt(check_backward(g, m.params, tg_model_loss(g, &m, idx, tgt)), 0);
        /* the tied embedding is read by the lookup, before any block (and by the
         * head, last): its gradient is complete only at the very end */
        const tg_tensor *wte = ((tg_gpt *)m.impl)->wte;
        for (int j = 2; j < tg_params_count(m.params); j++)
            ck_assert_int_lt(first_reader(g, wte), first_reader(g, tg_params_at(m.params, j)));
        tg_graph_free(g);
        tg_model_release(&m);
    }
}
END_TEST

START_TEST(hook_completeness_on_the_llama)
{
    for (int variant = 0; variant < 2; variant++) { /* GQA fused and tied; MHA composed and untied */
        const tg_model_config c = {.arch = "llama",
                                   .n_layer = 2,
                                   .n_head = 4,
                                   .n_kv_head = variant ? 4 : 2,
                                   .n_embd = 16,
                                   .hidden_dim = 24,
                                   .block_size = 8,
                                   .vocab_size = 13,
                                   .rope_theta = 10000,
                                   .norm_eps = 1e-5,
                                   .tied = !variant};
        tg_error err = {0};
        tg_model m;
        ck_assert_msg(tg_model_init(&m, &c, TG_F64, 2, &err) == 0, "%s", err.msg);
        tg_model_set_composed(&m, variant);
        tg_graph *g = tg_graph_new();
        tg_tensor *idx, *tgt;
        batch(g, 2, 8, 13, &idx, &tgt);
        ck_assert_int_gt(check_backward(g, m.params, tg_model_loss(g, &m, idx, tgt)), 0);
        tg_graph_free(g);
        tg_model_release(&m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backward_hook");
    TCase *tc = tcase_create("hook");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, hook_order_and_completeness_on_a_small_graph);
    tcase_add_test(tc, hook_completeness_on_the_gpt);
    tcase_add_test(tc, hook_completeness_on_the_llama);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
