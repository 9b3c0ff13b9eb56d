/* nn: issue 23's architecture options of both language models (nn/gpt.c,
 * nn/llama.c, their rows in nn/model.c): --mlp relu2|gelu|swiglu,
 * --qk-norm, --zero-init-proj, --untie-head, --logit-softcap. Each is
 * gradchecked in f64 through the whole loss, counted by num_params, kept
 * in a checkpoint's metadata (and absent from a default model's), and
 * shown to change the model (an option ignored fails here). */
#include "tg_test.h"

/* ---- helpers ---------------------------------------------------------- */

static const tg_model_config GPT = {.arch = "gpt",
                                    .n_layer = 2,
                                    .n_head = 2,
                                    .n_embd = 4,
                                    .block_size = 6,
                                    .vocab_size = 7,
                                    .bias = true,
                                    .tied = true};
static const tg_model_config LLAMA = {.arch = "llama",
                                      .n_layer = 2,
                                      .n_head = 2,
                                      .n_kv_head = 1,
                                      .n_embd = 4,
                                      .hidden_dim = 6,
                                      .block_size = 6,
                                      .vocab_size = 7,
                                      .rope_theta = 10000,
                                      .norm_eps = 1e-5,
                                      .tied = true};

/* The options of case k (0: none), on family base: each case turns on a
 * few, so that every option meets both families. */
static tg_model_config with_options(tg_model_config c, int k)
{
    switch (k) {
    case 1: c.mlp = TG_FFN_RELU2, c.qk_norm = true, c.logit_softcap = 1.5; break;
    case 2: c.mlp = TG_FFN_SWIGLU, c.untie_head = true, c.tied = false, c.zero_init_proj = true; break;
    case 3: c.mlp = TG_FFN_GELU, c.gelu = TG_GELU_TANH, c.qk_norm = true, c.untie_head = true, c.tied = false; break;
    default: break;
    }
    return c;
}

/* Every parameter normal(0, scale), 1-D ones normal(1, scale): nothing zero. */
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

typedef struct lm_gc {
    tg_model *m;
    tg_tensor *idx, *targets;
} lm_gc;

static tg_tensor *lm_gc_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)in; /* the inputs are the model's own parameters */
    lm_gc *c = ctx;
    return tg_model_loss(g, c->m, c->idx, c->targets);
}

/* The loss of m on a fixed batch (f64). */
static double loss_of(tg_model *m)
{
    tg_graph *g = tg_graph_new();
    const int32_t iv[] = {1, 6, 3, 0, 2, 5, 4, 4}, tv[] = {6, 3, 0, 2, 5, 4, 4, 1};
    tg_tensor *l = tg_model_loss(g, m, ids(g, 2, 4, iv), ids(g, 2, 4, tv));
    ck_assert_msg(l != NULL, "%s", tg_graph_error(g));
    const double v = tg_tensor_get(l, 0);
    tg_graph_free(g);
    return v;
}

/* ---- the whole loss, differentiated ------------------------------------ */

/* Gradcheck of the loss against every parameter, each case on both
 * families, composed and fused attention (the fused path with QK norm
 * leaves the in-place qkv op for the split one). */
START_TEST(options_gradcheck)
{
    const int k = 1 + _i % 3, fam = (_i / 3) % 2, composed = _i / 6;
    tg_model_config c = with_options(fam ? LLAMA : GPT, k);
    tg_error err = {0};
    tg_model m;
    ck_assert_msg(tg_model_init(&m, &c, TG_F64, 3, &err) == 0, "%s", err.msg);
    tg_model_set_composed(&m, composed);
    fill(m.params, 40 + _i, 0.6);
    tg_graph *g = tg_graph_new();
    const int32_t iv[] = {1, 6, 3, 0, 2, 5, 4, 4, 3, 1}, tv[] = {6, -1, 0, 2, 5, 4, 4, -1, 1, 0};
    lm_gc ctx = {&m, ids(g, 2, 5, iv), ids(g, 2, 5, tv)};
    tg_tensor *in[64];
    const int n = tg_params_count(m.params);
    for (int i = 0; i < n; i++) in[i] = tg_params_at(m.params, i);
    tt_assert_gradcheck(lm_gc_fn, &ctx, n, in);
    tg_graph_free(g);
    tg_model_release(&m);
}
END_TEST

/* Each option changes the loss of the same weights: a model that ignored
 * it would compute the default's number. The weights are copied by name
 * into the default model where it has them. */
START_TEST(each_option_changes_the_model)
{
    for (int fam = 0; fam < 2; fam++) {
        const tg_model_config base = fam ? LLAMA : GPT;
        tg_model_config opt[3] = {base, base, base};
        opt[0].qk_norm = true;
        opt[1].logit_softcap = 0.7;
        opt[2].untie_head = true, opt[2].tied = false;
        tg_error err = {0};
        tg_model d;
        ck_assert_int_eq(tg_model_init(&d, &base, TG_F64, 1, &err), 0);
        fill(d.params, 5, 0.7);
        const double ref = loss_of(&d);
        for (int k = 0; k < 3; k++) {
            tg_model m;
            ck_assert_msg(tg_model_init(&m, &opt[k], TG_F64, 1, &err) == 0, "%s", err.msg);
            for (int i = 0; i < tg_params_count(m.params); i++) {
                tg_tensor *t = tg_params_at(m.params, i), *s = tg_params_get(d.params, t->name);
                if (s) memcpy(t->data, s->data, (size_t)t->numel * sizeof(double));
            }
            tg_tensor *head = tg_params_get(m.params, fam ? "output.weight" : "lm_head.weight");
            if (k == 2) { /* the untied head: the embedding's values, then one changed */
                ck_assert_ptr_nonnull(head);
                memcpy(head->data, tg_params_at(m.params, 0)->data, (size_t)head->numel * sizeof(double));
                ck_assert_double_eq_tol(loss_of(&m), ref, 1e-12);
                ((double *)head->data)[3] += 0.5;
            } else {
                ck_assert_ptr_null(head);
            }
            const double l = loss_of(&m);
            ck_assert_msg(fabs(l - ref) > 1e-4, "%s option %d: loss %.17g is the default model's %.17g", base.arch, k,
                          l, ref);
            tg_model_release(&m);
        }
        /* the feed-forward kinds: relu2 against gelu on the same c_fc and c_proj */
        tg_model_config r = base, ge = base;
        r.mlp = TG_FFN_RELU2, ge.mlp = TG_FFN_GELU;
        if (fam) r.hidden_dim = ge.hidden_dim = 8;
        tg_model mr, mg;
        ck_assert_int_eq(tg_model_init(&mr, &r, TG_F64, 1, &err), 0);
        ck_assert_int_eq(tg_model_init(&mg, &ge, TG_F64, 1, &err), 0);
        ck_assert_int_eq(tg_params_numel(mr.params), tg_params_numel(mg.params));
        fill(mr.params, 6, 0.7);
        fill(mg.params, 6, 0.7);
        ck_assert_msg(fabs(loss_of(&mr) - loss_of(&mg)) > 1e-4, "%s: relu2 computes gelu's loss", base.arch);
        tg_model_release(&mr);
        tg_model_release(&mg);
        tg_model_release(&d);
    }
}
END_TEST

/* The cap: logits = s tanh(z / s), checked against the uncapped model's
 * logits element by element. */
START_TEST(softcap_caps_the_logits)
{
    for (int fam = 0; fam < 2; fam++) {
        tg_model_config base = fam ? LLAMA : GPT, capped = base;
        capped.logit_softcap = 0.9;
        tg_error err = {0};
        tg_model a, b;
        ck_assert_int_eq(tg_model_init(&a, &base, TG_F64, 2, &err), 0);
        ck_assert_int_eq(tg_model_init(&b, &capped, TG_F64, 2, &err), 0);
        fill(a.params, 9, 0.8);
        fill(b.params, 9, 0.8);
        tg_graph *g = tg_graph_new();
        const int32_t iv[] = {1, 6, 3, 0, 2, 5};
        tg_tensor *za = tg_model_forward(g, &a, ids(g, 1, 6, iv), NULL),
                  *zb = tg_model_forward(g, &b, ids(g, 1, 6, iv), NULL);
        ck_assert_ptr_nonnull(za);
        ck_assert_ptr_nonnull(zb);
        double big = 0;
        for (int64_t i = 0; i < za->numel; i++) {
            const double z = tg_tensor_get(za, i);
            big = fmax(big, fabs(z));
            ck_assert_double_eq_tol(tg_tensor_get(zb, i), 0.9 * tanh(z / 0.9), 1e-14);
        }
        ck_assert_msg(big > 0.9, "%s: the logits (max |z| %g) never reach the cap: the test would not see it",
                      base.arch, big);
        tg_graph_free(g);
        tg_model_release(&a);
        tg_model_release(&b);
    }
}
END_TEST

/* QK norm with the KV cache: decoding token by token gives the full
 * forward's logits (the cache keeps normalised, rotated keys). */
START_TEST(qk_norm_decodes_through_the_cache)
{
    for (int fam = 0; fam < 2; fam++) {
        tg_model_config c = fam ? LLAMA : GPT;
        c.qk_norm = true;
        tg_error err = {0};
        tg_model m;
        ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 4, &err), 0);
        fill(m.params, 12, 0.6);
        tg_graph *g = tg_graph_new();
        const int T = 6, V = 7;
        const int32_t iv[] = {3, 1, 4, 1, 5, 6};
        tg_tensor *full = tg_model_forward(g, &m, ids(g, 1, T, iv), NULL);
        ck_assert_ptr_nonnull(full);
        ck_assert_int_eq(tg_model_cache_enable(&m, 1, &err), 0);
        for (int t = 0; t < T; t++) {
            tg_tensor *lg = tg_model_forward(g, &m, ids(g, 1, 1, iv + t), NULL);
            ck_assert_msg(lg != NULL, "%s", tg_graph_error(g));
            for (int v = 0; v < V; v++)
                ck_assert_double_eq_tol(tg_tensor_get(lg, v), tg_tensor_get(full, (int64_t)t * V + v), 1e-12);
        }
        tg_graph_free(g);
        tg_model_release(&m);
    }
}
END_TEST

/* ---- init, counts, names ----------------------------------------------- */

/* zero_init_proj zeroes exactly the output projections, and leaves every
 * other parameter as the default init draws it (same seed); untie_head
 * adds the head last, drawn, and changes nothing before it. */
START_TEST(zero_init_and_untied_head_init)
{
    static const char *const proj[2][2] = {{"attn.c_proj.weight", "mlp.c_proj.weight"},
                                           {"attention.wo.weight", "feed_forward.w2.weight"}};
    for (int fam = 0; fam < 2; fam++) {
        const tg_model_config base = fam ? LLAMA : GPT;
        tg_model_config z = base, u = base;
        z.zero_init_proj = true;
        u.untie_head = true;
        tg_error err = {0};
        tg_model d, mz, mu;
        ck_assert_int_eq(tg_model_init(&d, &base, TG_F64, 77, &err), 0);
        ck_assert_int_eq(tg_model_init(&mz, &z, TG_F64, 77, &err), 0);
        ck_assert_int_eq(tg_model_init(&mu, &u, TG_F64, 77, &err), 0);
        ck_assert_int_eq(tg_params_count(mz.params), tg_params_count(d.params));
        int zeroed = 0;
        for (int i = 0; i < tg_params_count(d.params); i++) {
            const tg_tensor *a = tg_params_at(d.params, i), *b = tg_params_at(mz.params, i);
            ck_assert_str_eq(a->name, b->name);
            const bool is_proj = strstr(a->name, proj[fam][0]) || strstr(a->name, proj[fam][1]);
            double amax = 0, bmax = 0;
            for (int64_t j = 0; j < a->numel; j++)
                amax = fmax(amax, fabs(tg_tensor_get(a, j))), bmax = fmax(bmax, fabs(tg_tensor_get(b, j)));
            if (is_proj) {
                ck_assert_msg(bmax == 0 && amax > 0, "%s: max |w| %g zero-init, %g default", a->name, bmax, amax);
                zeroed++;
            } else {
                ck_assert_msg(!memcmp(a->data, b->data, (size_t)a->numel * sizeof(double)), "%s differs", a->name);
            }
        }
        ck_assert_int_eq(zeroed, 2 * base.n_layer);
        /* the untied head: one more tensor, last, normal(0, 0.02) by its spread, not the embedding */
        const int n = tg_params_count(d.params);
        ck_assert_int_eq(tg_params_count(mu.params), n + 1);
        for (int i = 0; i < n; i++)
            ck_assert(!memcmp(tg_params_at(d.params, i)->data, tg_params_at(mu.params, i)->data,
                              (size_t)tg_params_at(d.params, i)->numel * sizeof(double)));
        const tg_tensor *h = tg_params_at(mu.params, n), *e = tg_params_at(mu.params, 0);
        ck_assert_str_eq(h->name, fam ? "output.weight" : "lm_head.weight");
        double ss = 0;
        for (int64_t j = 0; j < h->numel; j++) ss += tg_tensor_get(h, j) * tg_tensor_get(h, j);
        ck_assert_double_gt(ss, 0);
        ck_assert(memcmp(h->data, e->data, (size_t)h->numel * sizeof(double)));
        ck_assert(!mu.config.tied);
        tg_model_release(&d);
        tg_model_release(&mz);
        tg_model_release(&mu);
    }
}
END_TEST

/* num_params is what the model registers, for every option and bias;
 * the feed-forward's names follow its kind. */
START_TEST(counts_and_names)
{
    tg_error err = {0};
    for (int fam = 0; fam < 2; fam++)
        for (int k = 0; k < 4; k++)
            for (int bias = 0; bias < 2 - fam; bias++) {
                tg_model_config c = with_options(fam ? LLAMA : GPT, k);
                c.bias = bias;
                c.n_embd = 8;
                tg_model m;
                ck_assert_msg(tg_model_init(&m, &c, TG_F32, 1, &err) == 0, "%s", err.msg);
                ck_assert_int_eq(tg_model_num_params(&c), tg_params_numel(m.params));
                const bool gated = c.mlp == TG_FFN_SWIGLU || (fam && c.mlp == TG_FFN_DEFAULT);
                const char *up = fam ? (gated ? "layers.1.feed_forward.w3.weight" : "layers.1.feed_forward.c_fc.weight")
                                     : (gated ? "transformer.h.1.mlp.w3.weight" : "transformer.h.1.mlp.c_fc.weight");
                const tg_tensor *t = tg_params_get(m.params, up);
                ck_assert_msg(t != NULL, "%s: no %s", c.arch, up);
                /* a GPT's SwiGLU is llama2.c's width for C = 8 with multiple_of 32; else 4C; a Llama's hidden_dim */
                ck_assert_int_eq(t->shape[0], fam ? c.hidden_dim : gated ? tg_llama_hidden_dim(8, 32) : 32);
                tg_model_release(&m);
            }
}
END_TEST

/* ---- the checkpoint's metadata ---------------------------------------- */

static int write_read(const tg_model_config *c, tg_model_config *back, int *n_keys, tg_error *err)
{
    tg_st_writer *w = tg_st_writer_new();
    ck_assert_int_eq(tg_model_config_write(c, w), 0);
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("cfg.safetensors"), err), 0);
    tg_st_writer_free(w);
    tg_st_file *f = tg_st_load(tt_path("cfg.safetensors"), err);
    ck_assert_ptr_nonnull(f);
    *n_keys = tg_st_meta_count(f);
    const int rc = tg_model_config_read(f, back, err);
    tg_st_free(f);
    remove(tt_path("cfg.safetensors"));
    return rc;
}

/* Each option goes through a file and back; a default model writes none
 * of their keys (so its files are today's) */
START_TEST(options_go_through_a_file)
{
    tg_error err = {0};
    for (int fam = 0; fam < 2; fam++) {
        int n0, n;
        tg_model_config back;
        ck_assert_int_eq(write_read(fam ? &LLAMA : &GPT, &back, &n0, &err), 0);
        ck_assert(back.mlp == TG_FFN_DEFAULT && !back.qk_norm && !back.zero_init_proj && back.logit_softcap == 0);
        ck_assert(back.tied && !back.untie_head);
        for (int k = 1; k < 4; k++) {
            tg_model_config c = with_options(fam ? LLAMA : GPT, k);
            c.zero_init_proj = k != 2 ? c.zero_init_proj : true;
            if (k == 1) c.logit_softcap = 0.1 + 1.0 / 3; /* a number that needs all 17 digits */
            ck_assert_msg(write_read(&c, &back, &n, &err) == 0, "%s", err.msg);
            ck_assert_int_gt(n, n0);
            ck_assert_str_eq(back.arch, c.arch);
            /* the family's own kind is not written: it reads back as the default */
            ck_assert_int_eq(back.mlp, c.mlp == (fam ? TG_FFN_SWIGLU : TG_FFN_GELU) ? TG_FFN_DEFAULT : c.mlp);
            ck_assert_int_eq(back.qk_norm, c.qk_norm);
            ck_assert_int_eq(back.zero_init_proj, c.zero_init_proj);
            ck_assert_int_eq(back.tied, c.tied); /* a file's answer; untie_head asks for it when building */
            if (!fam) ck_assert_int_eq(back.untie_head, c.untie_head);
            ck_assert(back.logit_softcap == c.logit_softcap);
            ck_assert_int_eq(back.gelu, c.gelu);
        }
    }
    /* bad values are named */
    static const char *const bad[][2] = {
        {"mlp", "relu3"}, {"qk_norm", "yes"}, {"logit_softcap", "-1"}, {"zero_init_proj", "2"}, {"tied", "maybe"}};
    for (int i = 0; i < 5; i++) {
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_model_config_write(&GPT, w), 0);
        tg_st_writer_add_meta(w, bad[i][0], bad[i][1]);
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("bad.safetensors"), &err), 0);
        tg_st_writer_free(w);
        tg_st_file *f = tg_st_load(tt_path("bad.safetensors"), &err);
        tg_model_config c;
        ck_assert_int_eq(tg_model_config_read(f, &c, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[i][0]) != NULL, "%s: %s", bad[i][0], err.msg);
        tg_st_free(f);
        remove(tt_path("bad.safetensors"));
    }
}
END_TEST

/* ---- refusals ----------------------------------------------------------- */

START_TEST(bad_options_are_refused)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config c = GPT;
    c.mlp = (tg_ffn_kind)9;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "gpt: unknown mlp 9"));
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    c = GPT;
    c.logit_softcap = -2;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "gpt: logit_softcap must be 0 (none) or finite and > 0, got -2"));
    c = LLAMA;
    c.logit_softcap = NAN;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "llama: logit_softcap must be"));
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    c = LLAMA;
    c.gelu = TG_GELU_TANH; /* a GELU form for SwiGLU */
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "llama: this Llama's MLP is SwiGLU (no GELU to choose"));
    c.mlp = TG_FFN_GELU;
    ck_assert_msg(tg_model_init(&m, &c, TG_F32, 1, &err) == 0, "%s", err.msg);
    tg_model_release(&m);
    c = LLAMA;
    c.mlp = (tg_ffn_kind)-1;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "llama: unknown mlp -1"));
    ck_assert_ptr_null(tg_ffn_kind_name((tg_ffn_kind)4));
    ck_assert_str_eq(tg_ffn_kind_name(TG_FFN_RELU2), "relu2");
    /* the module's own check */
    tg_params *p = tg_params_new(TG_F64, &err);
    tg_mha_mod a;
    const tg_mha_config ac = {.n_embd = 4, .n_head = 2, .qk_norm_eps = -1};
    ck_assert_int_eq(tg_mha_init(&a, p, "a", &ac, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "mha 'a': qk_norm_eps must be 0 (no QK norm) or in (0, 1], got -1"));
    tg_params_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nn_options");
    tt_tcase(s, "options", 0,
             TT_TESTS(TT_LOOP(options_gradcheck, 12), each_option_changes_the_model, softcap_caps_the_logits,
                      qk_norm_decodes_through_the_cache, zero_init_and_untied_head_init, counts_and_names,
                      options_go_through_a_file, bad_options_are_refused));
    return tt_run_in_tmpdir(s, "tg_nn_options", true);
}
