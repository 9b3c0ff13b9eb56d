/* nn: the Llama model (nn/llama.c) and what it added to the modules:
 * grouped-query attention, RoPE in attention, RMSNorm, the SwiGLU MLP. */
#include "tg_test.h"

/* ---- helpers ---------------------------------------------------------- */

/* Every parameter normal(0, scale), norm weights normal(1, scale). */
static void fill(tg_params *p, uint64_t seed, double scale)
{
    tg_rng r;
    tg_rng_seed(&r, seed, 11);
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *t = tg_params_at(p, i);
        tg_rng_fill_normal(&r, t, t->ndim == 1 ? 1.0 : 0.0, scale);
    }
}

static tg_tensor *ids(tg_graph *g, int B, int T, const int32_t *v)
{
    return tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, v);
}

static tg_model_config small_config(int n_head, int n_kv_head, bool tied)
{
    return (tg_model_config){.arch = "llama",
                             .n_layer = 2,
                             .n_head = n_head,
                             .n_kv_head = n_kv_head,
                             .n_embd = 4 * n_head,
                             .hidden_dim = 11,
                             .block_size = 7,
                             .vocab_size = 13,
                             .rope_theta = 10000,
                             .norm_eps = 1e-5,
                             .tied = tied};
}

/* ---- the model --------------------------------------------------------- */

START_TEST(llama_names_shapes_and_init)
{
    tg_error err = {0};
    tg_model_config cfg = {.arch = "llama",
                           .n_layer = 3,
                           .n_head = 4,
                           .n_kv_head = 2,
                           .n_embd = 32,
                           .hidden_dim = 40,
                           .block_size = 16,
                           .vocab_size = 300,
                           .rope_theta = 10000,
                           .norm_eps = 1e-5};
    for (int tied = 0; tied < 2; tied++) {
        cfg.tied = tied;
        tg_model m_model;
        tg_llama *m = tg_model_init(&m_model, &cfg, TG_F32, 3, &err) ? NULL : m_model.impl;
        ck_assert_msg(m != NULL, "%s", err.msg);
        ck_assert_int_eq(tg_model_num_params(&cfg), tg_params_numel(m->params));
        ck_assert_int_eq(tg_params_count(m->params), 1 + 3 * 9 + 1 + !tied);
        const char *layer[] = {"attention.wq.weight",    "attention.wk.weight",    "attention.wv.weight",
                               "attention.wo.weight",    "feed_forward.w1.weight", "feed_forward.w2.weight",
                               "feed_forward.w3.weight", "attention_norm.weight",  "ffn_norm.weight"};
        const int shape[][2] = {{32, 32}, {16, 32}, {16, 32}, {32, 32}, {40, 32}, {32, 40}, {40, 32}, {32, 0}, {32, 0}};
        ck_assert_str_eq(tg_params_at(m->params, 0)->name, "tok_embeddings.weight");
        for (int l = 0; l < 3; l++)
            for (int k = 0; k < 9; k++) {
                char want[96];
                snprintf(want, sizeof want, "layers.%d.%s", l, layer[k]);
                const tg_tensor *t = tg_params_at(m->params, 1 + 9 * l + k);
                ck_assert_str_eq(t->name, want);
                ck_assert_int_eq(t->shape[0], shape[k][0]);
                ck_assert_int_eq(t->ndim, shape[k][1] ? 2 : 1);
                if (shape[k][1]) ck_assert_int_eq(t->shape[1], shape[k][1]);
                /* model.py's init: 0.02, and 0.02 / sqrt(2 n_layer) for w3 and wo; norms 1 */
                const bool scaled = strstr(want, "w3") || strstr(want, "wo");
                const double want_sd = shape[k][1] ? (scaled ? 0.02 / sqrt(6.0) : 0.02) : 0;
                double s = 0, s2 = 0;
                for (int64_t i = 0; i < t->numel; i++)
                    s += tg_tensor_get(t, i), s2 += tg_tensor_get(t, i) * tg_tensor_get(t, i);
                const double mean = s / t->numel, sd = sqrt(s2 / t->numel - mean * mean);
                if (!shape[k][1]) ck_assert_msg(mean == 1 && sd == 0, "%s: not all ones", want);
                else ck_assert_msg(fabs(sd / want_sd - 1) < 0.2, "%s: sd %g, want %g", want, sd, want_sd);
            }
        ck_assert_str_eq(tg_params_at(m->params, 28)->name, "norm.weight");
        if (!tied) ck_assert_str_eq(tg_params_at(m->params, 29)->name, "output.weight");
        ck_assert(tied ? m->output == m->tok_embeddings : m->output != m->tok_embeddings);
        tg_model_release(&m_model);
        /* TG_NO_INIT draws nothing: the weights and embeddings zero, the norms' weights 1 */
        tg_model m0_model;
        tg_llama *m0 = tg_model_init(&m0_model, &cfg, TG_F32, TG_NO_INIT, &err) ? NULL : m0_model.impl;
        ck_assert_msg(m0 != NULL, "%s", err.msg);
        for (int i = 0; i < tg_params_count(m0->params); i++) {
            const tg_tensor *t = tg_params_at(m0->params, i);
            for (int64_t k = 0; k < t->numel; k++) ck_assert_double_eq(tg_tensor_get(t, k), t->ndim == 1 ? 1.0 : 0.0);
        }
        tg_model_release(&m0_model);
    }
    /* llama2.c's default width: 288 -> 768; 128 -> 352 (int(2*512/3) = 341, up to a multiple of 32) */
    ck_assert_int_eq(tg_llama_hidden_dim(288, 32), 768);
    ck_assert_int_eq(tg_llama_hidden_dim(128, 32), 352);
    ck_assert_int_eq(tg_llama_hidden_dim(28, 1), 74);
    ck_assert_int_eq(tg_llama_hidden_dim(0, 32), -1);
}
END_TEST

START_TEST(llama_config_errors)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config c = small_config(4, 3, true);
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 1, &err), -1);
    ck_assert_str_eq(err.msg, "llama: n_kv_head 3 must divide n_head 4");
    c = small_config(4, 2, true), c.n_embd = 12; /* head size 3 */
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 1, &err), -1);
    ck_assert_str_eq(err.msg, "llama: n_embd 12 must be n_head 4 times an even head size");
    c = small_config(2, 2, true), c.rope_theta = 1;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 1, &err), -1);
    ck_assert_str_eq(err.msg, "llama: rope_theta must be finite and > 1, got 1");
    c = small_config(2, 2, true), c.norm_eps = 0;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 1, &err), -1);
    ck_assert_str_eq(err.msg, "llama: norm_eps must be in (0, 1], got 0");
    c = small_config(2, 0, true);
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "every size must be >= 1"));
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    ck_assert_int_eq(tg_model_init(&m, NULL, TG_F64, 1, &err), -1);
    ck_assert_str_eq(err.msg, "model_init: the config is NULL");
    tg_model_release(NULL);
}
END_TEST

typedef struct llama_gc {
    tg_model *m;
    tg_tensor *idx, *targets;
} llama_gc;

static tg_tensor *llama_gc_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)in; /* the inputs are the model's own parameters */
    llama_gc *c = ctx;
    return tg_model_loss(g, c->m, c->idx, c->targets);
}

/* The whole loss against every parameter, in f64: MHA, GQA, MQA, tied and
 * not, both RoPE pairings, ignored targets, dropout. */
START_TEST(llama_gradcheck)
{
    const struct {
        int H, Hkv;
        bool tied;
        int rope;
        double dropout;
    } cases[] = {
        {2, 2, true, TG_ROPE_INTERLEAVED, 0},
        {4, 2, false, TG_ROPE_INTERLEAVED, 0},
        {2, 1, true, TG_ROPE_HALVES, 0},
        {2, 1, false, TG_ROPE_INTERLEAVED, 0.2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tg_model_config cfg = small_config(cases[k].H, cases[k].Hkv, cases[k].tied);
        cfg.rope_halves = cases[k].rope == TG_ROPE_HALVES;
        cfg.dropout = cases[k].dropout;
        cfg.n_embd = 2 * cases[k].H; /* head size 2: few elements to check */
        tg_error err = {0};
        tg_model m_model;
        tg_llama *m = tg_model_init(&m_model, &cfg, TG_F64, 10 + k, &err) ? NULL : m_model.impl;
        ck_assert_msg(m != NULL, "%s", err.msg);
        fill(m->params, 20 + k, 0.4);
        tg_graph *g = tg_graph_new();
        const int32_t iv[] = {1, 12, 6, 0, 3, 2, 5, 4, 1, 11};
        const int32_t tv[] = {12, -1, 0, 3, 2, 5, 4, -1, 1, 0};
        llama_gc ctx = {&m_model, ids(g, 2, 5, iv), ids(g, 2, 5, tv)};
        tg_tensor *in[64];
        const int n = tg_params_count(m->params);
        for (int i = 0; i < n; i++) in[i] = tg_params_at(m->params, i);
        tt_assert_gradcheck(llama_gc_fn, &ctx, n, in);
        tg_graph_free(g);
        tg_model_release(&m_model);
    }
}
END_TEST

/* Feeding the tokens through the cache (RoPE at the cache's offset) gives
 * the full forward's logits, f64 within 1e-12, for GQA and MQA. */
START_TEST(llama_incremental_decoding)
{
    for (int Hkv = 1; Hkv <= 4; Hkv *= 2) {
        tg_model_config cfg = small_config(4, Hkv, Hkv == 2);
        tg_error err = {0};
        tg_model m_model;
        tg_llama *m = tg_model_init(&m_model, &cfg, TG_F64, 5, &err) ? NULL : m_model.impl;
        fill(m->params, 6, 0.5);
        tg_graph *g = tg_graph_new();
        const int B = 2, T = 7, V = 13;
        const int32_t iv[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7};
        tg_tensor *full = tg_model_forward(g, &m_model, ids(g, B, T, iv), NULL); /* (B,T,V) */
        ck_assert_msg(full != NULL, "%s", tg_graph_error(g));
        const int chunks[][7] = {{1, 1, 1, 1, 1, 1, 1}, {2, 4, 1}, {7}};
        ck_assert_int_eq(tg_model_cache_enable(&m_model, B, &err), 0);
        for (int k = 0; k < 3; k++) {
            tg_model_cache_clear(&m_model);
            for (int c = 0, t0 = 0; t0 < T; t0 += chunks[k][c++]) {
                const int n = chunks[k][c];
                int32_t part[2 * 7];
                for (int b = 0; b < B; b++) memcpy(part + b * n, iv + b * T + t0, (size_t)n * sizeof *part);
                tg_tensor *lg = tg_model_forward(g, &m_model, ids(g, B, n, part), NULL); /* (B,n,V) */
                ck_assert_msg(lg != NULL, "%s", tg_graph_error(g));
                for (int b = 0; b < B; b++)
                    for (int t = 0; t < n; t++)
                        for (int v = 0; v < V; v++) {
                            const double a = tg_tensor_get(lg, ((int64_t)b * n + t) * V + v);
                            const double e = tg_tensor_get(full, ((int64_t)b * T + t0 + t) * V + v);
                            ck_assert_msg(fabs(a - e) <= 1e-12 * (1 + fabs(e)), "Hkv %d chunking %d: %.17g vs %.17g",
                                          Hkv, k, a, e);
                        }
            }
            ck_assert_int_eq(m->cache[0].len, T);
        }
        tg_graph_free(g);
        tg_model_release(&m_model);
    }
}
END_TEST

/* Decoding one token at a time through the cache, the graph reset before
 * each (as tiny_gpt sample does), allocates nothing once the first
 * tokens have sized the arena: the library's allocation count stays put */
START_TEST(llama_decoding_allocates_nothing_per_token)
{
    tg_model_config cfg = small_config(4, 2, true);
    cfg.block_size = 64;
    tg_error err = {0};
    tg_model m_model;
    tg_llama *m = tg_model_init(&m_model, &cfg, TG_F32, 5, &err) ? NULL : m_model.impl;
    ck_assert_msg(m != NULL, "%s", err.msg);
    fill(m->params, 6, 0.5);
    ck_assert_int_eq(tg_model_cache_enable(&m_model, 1, &err), 0);
    tg_graph *g = tg_graph_new();
    uint64_t after_warmup = 0;
    for (int t = 0; t < cfg.block_size; t++) {
        if (t == 2) after_warmup = tg_alloc_calls();
        tg_graph_reset(g);
        const int32_t id = (int32_t)((3 * t + 1) % cfg.vocab_size);
        tg_tensor *lg = tg_model_forward(g, &m_model, ids(g, 1, 1, &id), NULL); /* (1,1,V) */
        ck_assert_msg(lg != NULL, "token %d: %s", t, tg_graph_error(g));
    }
    ck_assert_int_eq(m->cache[0].len, cfg.block_size);
    ck_assert_msg(tg_alloc_calls() == after_warmup, "%llu allocations over %d decoded tokens",
                  (unsigned long long)(tg_alloc_calls() - after_warmup), cfg.block_size - 2);
    tg_graph_free(g);
    tg_model_release(&m_model);
}
END_TEST

/* ---- grouped-query attention -------------------------------------------- */

/* GQA equals MHA whose key/value heads repeat each kv head G times: the
 * same output, and the gradients of the repeated heads sum to the GQA's */
START_TEST(gqa_equals_mha_with_repeated_kv_heads)
{
    const int B = 2, T = 5, H = 6, Hkv = 2, dh = 4, C = H * dh, G = H / Hkv;
    tg_error err = {0};
    for (int composed = 0; composed < 2; composed++) {
        tg_params *p = tg_params_new(TG_F64, NULL);
        tg_mha_mod gqa, mha;
        tg_mha_config c = {.n_embd = C, .n_head = H, .n_kv_head = Hkv, .layout = TG_MHA_LLAMA, .rope_theta = 10000};
        ck_assert_int_eq(tg_mha_init(&gqa, p, "gqa", &c, &err), 0);
        c.n_kv_head = H;
        ck_assert_int_eq(tg_mha_init(&mha, p, "mha", &c, &err), 0);
        gqa.composed = mha.composed = composed;
        fill(p, 3, 0.5);
        /* mha's kv heads: head h is gqa's head h / G (rows of wk, wv) */
        tg_linear_mod *src[] = {&gqa.k_proj, &gqa.v_proj}, *dst[] = {&mha.k_proj, &mha.v_proj};
        for (int w = 0; w < 2; w++)
            for (int h = 0; h < H; h++)
                memcpy((double *)dst[w]->weight->data + (size_t)h * dh * C,
                       (double *)src[w]->weight->data + (size_t)(h / G) * dh * C, sizeof(double) * dh * C);
        memcpy(mha.q_proj.weight->data, gqa.q_proj.weight->data, sizeof(double) * C * C);
        memcpy(mha.c_proj.weight->data, gqa.c_proj.weight->data, sizeof(double) * C * C);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 9);
        tg_attn_args args = {.causal = true};
        tg_tensor *y1 = tg_mha_forward(g, &gqa, x, NULL, &args), *y2 = tg_mha_forward(g, &mha, x, NULL, &args);
        ck_assert_msg(y1 && y2, "%s", tg_graph_error(g));
        for (int64_t i = 0; i < y1->numel; i++)
            ck_assert_double_eq_tol(tg_tensor_get(y1, i), tg_tensor_get(y2, i), 1e-13);
        ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_add(g, y1, y2))), 0);
        for (int w = 0; w < 2; w++)
            for (int h = 0; h < Hkv; h++)
                for (int e = 0; e < dh * C; e++) {
                    double sum = 0;
                    for (int r = 0; r < G; r++)
                        sum += ((double *)dst[w]->weight->grad)[(size_t)(h * G + r) * dh * C + e];
                    ck_assert_double_eq_tol(((double *)src[w]->weight->grad)[(size_t)h * dh * C + e], sum, 1e-12);
                }
        tg_graph_free(g);
        tg_params_free(p);
    }
}
END_TEST

/* The attention weights of grouped heads come back as (B,H,Tq,Tk), rows
 * summing to 1, future keys 0; a per-head mask reaches the right head */
START_TEST(gqa_weights_and_masks)
{
    const int B = 1, T = 4, H = 4, Hkv = 2, dh = 2, C = H * dh;
    tg_error err = {0};
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_mha_mod m;
    tg_mha_config c = {.n_embd = C, .n_head = H, .n_kv_head = Hkv, .layout = TG_MHA_LLAMA};
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), 0);
    fill(p, 4, 0.7);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 2), *A = NULL;
    /* head 3 may not see key 0 (beyond causality) */
    tg_tensor *mask = tg_tensor_new(g, TG_BOOL, 4, (int[]){1, H, T, T});
    for (int i = 1; i < T; i++) ((uint8_t *)mask->data)[(3 * T + i) * T + 0] = 1;
    tg_attn_args args = {.causal = true, .weights = &A, .mask = mask};
    ck_assert_ptr_nonnull(tg_mha_forward(g, &m, x, NULL, &args));
    ck_assert_ptr_nonnull(A);
    ck_assert_int_eq(A->ndim, 4);
    ck_assert_int_eq(A->shape[1], H);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            double s = 0;
            for (int j = 0; j < T; j++) {
                const double a = tg_tensor_get(A, ((int64_t)h * T + i) * T + j);
                if (j > i || (h == 3 && j == 0 && i > 0)) ck_assert_double_eq(a, 0);
                else if (i > 0 || h != 3) ck_assert_double_gt(a, 0);
                s += a;
            }
            ck_assert_double_eq_tol(s, 1, 1e-14);
        }
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

START_TEST(mha_config_errors)
{
    tg_error err = {0};
    tg_params *p = tg_params_new(TG_F32, NULL);
    tg_mha_mod m;
    tg_mha_config c = {.n_embd = 12, .n_head = 4, .n_kv_head = 3, .layout = TG_MHA_LLAMA};
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), -1);
    ck_assert_str_eq(err.msg, "mha 'a': n_kv_head 3 must divide n_head 4");
    c.n_kv_head = 2, c.rope_theta = 10000; /* head size 3: odd */
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "RoPE needs an even head size (got 3: n_embd 12 / n_head 4)"));
    c.n_embd = 8, c.rope_theta = 0.5;
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), -1);
    ck_assert_str_eq(err.msg, "mha 'a': rope_theta must be 0 (no RoPE) or finite and > 1, got 0.5");
    c.rope_theta = 0, c.layout = 9;
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), -1);
    ck_assert_str_eq(err.msg, "mha 'a': unknown layout 9");
    /* RoPE only in self-attention */
    c.layout = TG_MHA_LLAMA, c.rope_theta = 10000;
    ck_assert_int_eq(tg_mha_init(&m, p, "a", &c, &err), 0);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, 3, (int[]){1, 2, 8});
    ck_assert_ptr_null(tg_mha_forward(g, &m, x, x, NULL));
    tt_assert_error(g, "mha: rotary embedding works with self-attention only, but kv was given");
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

int main(void)
{
    return tt_main("nn_llama", "llama", 120,
                   TT_TESTS(llama_names_shapes_and_init, llama_config_errors, llama_gradcheck,
                            llama_incremental_decoding, llama_decoding_allocates_nothing_per_token,
                            gqa_equals_mha_with_repeated_kv_heads, gqa_weights_and_masks, mha_config_errors));
}
