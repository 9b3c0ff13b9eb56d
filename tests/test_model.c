/* nn: language models behind one interface (tg_model, nn/model.c), and
 * the metadata number readers a family's config reader uses
 * (tg_st_meta_int / _double / _bool, core/safetensors_read.c).
 *
 * - Each built-in family through tg_model gives the bits its own
 *   (internal) functions give (same seed: same weights, same loss, same
 *   gradients).
 * - A config written by tg_model_config_write reads back equal.
 * - A family of the program's own (a bigram model: one (V,V) table of
 *   logits) registers, trains through the interface, and its config goes
 *   through a file and back.
 * - Registration refuses what would break the table, with its reason. */
#include "tg_test.h"

#include "nn/nn_internal.h" /* the built-in families' own functions, which tg_model's table drives */

/* ---- a family of one's own: logits = W[idx] ---------------------------------- */

typedef struct bigram {
    tg_params *p;
    tg_tensor *w; /* (V, V) */
} bigram;

static void *bigram_create(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    bigram *m = calloc(1, sizeof *m);
    if (!m || !(m->p = tg_params_new(dt, err)) ||
        !(m->w = tg_params_add(m->p, "table.weight", 2, (int[]){c->vocab_size, c->vocab_size}, NULL))) {
        if (m) tg_params_free(m->p);
        free(m);
        tg_error_set(err, "bigram: out of memory or a bad size");
        return NULL;
    }
    tg_rng r;
    tg_rng_seed(&r, seed, 0);
    tg_rng_fill_normal(&r, m->w, 0, 0.02);
    return m;
}
static void bigram_destroy(void *impl)
{
    bigram *m = impl;
    tg_params_free(m->p);
    free(m);
}
static tg_params *bigram_params(void *impl) { return ((bigram *)impl)->p; }
static int64_t bigram_num_params(const tg_model_config *c)
{
    return c->vocab_size > 0 ? (int64_t)c->vocab_size * c->vocab_size : -1;
}
static tg_tensor *bigram_forward(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **w)
{
    (void)w;
    return tg_embedding(g, ((bigram *)impl)->w, idx);
}
static tg_tensor *bigram_loss(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets)
{
    return tg_cross_entropy(g, bigram_forward(g, impl, idx, NULL), targets);
}
static int bigram_write(const tg_model_config *c, tg_st_writer *w)
{
    char v[16];
    snprintf(v, sizeof v, "%d", c->vocab_size);
    return tg_st_writer_add_meta(w, "vocab_size", v);
}
static int bigram_read(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    int64_t v;
    if (tg_st_meta_int(f, "vocab_size", 1, 4096, &v, err)) return -1;
    c->vocab_size = (int)v;
    return 0;
}

static const tg_model_family BIGRAM = {
    "bigram",          "table.weight", NULL,        NULL, bigram_create, bigram_destroy, bigram_params,
    bigram_num_params, bigram_forward, bigram_loss, NULL, NULL,          NULL,           NULL,
    bigram_write,      bigram_read,    NULL};

/* ---- helpers ----------------------------------------------------------------- */

/* A batch (2,5) of ids below V, and targets that follow from them (a
 * model can learn them). */
static void batch(tg_graph *g, int V, tg_tensor **idx, tg_tensor **tgt)
{
    int32_t x[10], y[10];
    for (int i = 0; i < 10; i++) {
        x[i] = (i * 3 + 1) % V;
        y[i] = (x[i] * 2 + 1) % V;
    }
    *idx = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 5), x);
    *tgt = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 5), y);
}

/* Loss and gradients of the model's store (copied out: malloc'd). */
static double loss_and_grads(tg_model *m, void **grads)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *idx, *tgt;
    batch(g, m->config.vocab_size, &idx, &tgt);
    tg_params_zero_grad(m->params);
    tg_tensor *loss = tg_model_loss(g, m, idx, tgt);
    ck_assert_msg(loss && tg_graph_backward(g, loss) == 0, "%s", tg_graph_error(g));
    const double l = tg_tensor_item(loss);
    const size_t bytes = (size_t)tg_params_numel(m->params) * tg_dtype_size(tg_params_dtype(m->params));
    *grads = malloc(bytes);
    memcpy(*grads, tg_params_grad(m->params), bytes);
    tg_graph_free(g);
    return l;
}

static const tg_model_config GPT_CFG = {
    .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 8, .block_size = 8, .vocab_size = 11, .bias = true};
static const tg_model_config LLAMA_CFG = {.arch = "llama",
                                          .n_layer = 2,
                                          .n_head = 4,
                                          .n_embd = 16,
                                          .block_size = 8,
                                          .vocab_size = 13,
                                          .n_kv_head = 2,
                                          .hidden_dim = 24,
                                          .rope_theta = 10000,
                                          .norm_eps = 1e-5,
                                          .tied = false,
                                          .rope_halves = true};

/* ---- tests --------------------------------------------------------------------- */

START_TEST(builtin_families_equal_their_own_functions)
{
    tg_error err = {0};
    for (int k = 0; k < 2; k++) {
        const tg_model_config *c = k ? &LLAMA_CFG : &GPT_CFG;
        tg_model m;
        ck_assert_msg(tg_model_init(&m, c, TG_F64, 42, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(m.config.arch, c->arch);
        ck_assert_ptr_eq(m.family, tg_model_family_find(c->arch));
        ck_assert_int_eq(tg_model_num_params(c), tg_params_numel(m.params));
        void *ga, *gb;
        const double la = loss_and_grads(&m, &ga);

        /* the family's own functions, same seed */
        tg_params *p;
        void *impl;
        if (k) {
            const tg_llama_config lc = {.n_layer = 2,
                                        .n_head = 4,
                                        .n_kv_head = 2,
                                        .n_embd = 16,
                                        .hidden_dim = 24,
                                        .block_size = 8,
                                        .vocab_size = 13,
                                        .rope_theta = 10000,
                                        .rope_flags = TG_ROPE_HALVES,
                                        .norm_eps = 1e-5,
                                        .tied = false};
            tg_llama *l = tg_llama_new(&lc, TG_F64, 42, &err);
            ck_assert_ptr_nonnull(l);
            impl = l;
            p = l->params;
        } else {
            const tg_gpt_config gc = {
                .n_layer = 2, .n_head = 2, .n_embd = 8, .block_size = 8, .vocab_size = 11, .bias = true};
            tg_gpt *gp = tg_gpt_new(&gc, TG_F64, 42, &err);
            ck_assert_ptr_nonnull(gp);
            impl = gp;
            p = gp->params;
        }
        ck_assert_int_eq(tg_params_numel(p), tg_params_numel(m.params));
        const size_t bytes = (size_t)tg_params_numel(p) * sizeof(double);
        ck_assert_mem_eq(tg_params_data(p), tg_params_data(m.params), bytes);
        tg_graph *g = tg_graph_new();
        tg_tensor *idx, *tgt;
        batch(g, c->vocab_size, &idx, &tgt);
        tg_tensor *loss = k ? tg_llama_loss(g, impl, idx, tgt) : tg_gpt_loss(g, impl, idx, tgt);
        ck_assert_int_eq(tg_graph_backward(g, loss), 0);
        ck_assert(tg_tensor_item(loss) == la);
        gb = tg_params_grad(p);
        ck_assert_mem_eq(ga, gb, bytes);
        tg_graph_free(g);
        if (k) tg_llama_free(impl);
        else tg_gpt_free(impl);
        free(ga);

        /* decoding through the cache: positions counted */
        ck_assert_int_eq(tg_model_cache_enable(&m, 1, &err), 0);
        g = tg_graph_new();
        tg_graph_set_grad_enabled(g, false);
        tg_tensor *one = tg_tensor_from(g, TG_I32, TT_SHAPE(1, 1), (int32_t[]){3});
        ck_assert_ptr_nonnull(tg_model_forward(g, &m, one, NULL));
        ck_assert_ptr_nonnull(tg_model_forward(g, &m, one, NULL));
        ck_assert_int_eq(tg_model_cache_len(&m), 2);
        tg_model_cache_clear(&m);
        ck_assert_int_eq(tg_model_cache_len(&m), 0);
        ck_assert_int_eq(tg_model_set_composed(&m, true), 0);
        tg_graph_free(g);
        tg_model_release(&m);
        ck_assert_ptr_null(m.family);
        tg_model_release(&m); /* a zeroed model, again */
    }
}
END_TEST

START_TEST(configs_go_through_a_file_and_back)
{
    tg_error err = {0};
    for (int k = 0; k < 2; k++) {
        tg_model_config c = k ? LLAMA_CFG : GPT_CFG, back;
        c.dropout = 0.125;
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_model_config_write(&c, w), 0);
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("cfg.safetensors"), &err), 0);
        tg_st_writer_free(w);
        tg_st_file *f = tg_st_load(tt_path("cfg.safetensors"), &err);
        ck_assert_ptr_nonnull(f);
        ck_assert_str_eq(tg_st_meta(f, "arch"), c.arch);
        ck_assert_msg(tg_model_config_read(f, &back, &err) == 0, "%s", err.msg);
        if (!k) back.tied = c.tied = true; /* a GPT's head is always tied */
        ck_assert_str_eq(back.arch, c.arch);
        back.arch = c.arch;
        ck_assert_mem_eq(&back, &c, sizeof c);
        tg_st_free(f);
        remove(tt_path("cfg.safetensors"));
    }
    /* a file without arch is a GPT; an unknown arch is named */
    tg_st_writer *w = tg_st_writer_new();
    tg_st_writer_add_meta(w, "arch", "mamba");
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("arch.safetensors"), &err), 0);
    tg_st_writer_free(w);
    tg_st_file *f = tg_st_load(tt_path("arch.safetensors"), &err);
    tg_model_config c;
    ck_assert_int_eq(tg_model_config_read(f, &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "'arch' = 'mamba' is not a model family this program knows (gpt, llama"));
    tg_st_free(f);
    remove(tt_path("arch.safetensors"));
    /* a config of an unknown family cannot be written or counted */
    c = GPT_CFG;
    c.arch = "mamba";
    w = tg_st_writer_new();
    ck_assert_int_eq(tg_model_config_write(&c, w), -1);
    tg_st_writer_free(w);
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    tg_model m;
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown model architecture 'mamba'"));
}
END_TEST

START_TEST(a_family_of_ones_own)
{
    tg_error err = {0};
    ck_assert_msg(tg_model_register(&BIGRAM, &err) == 0, "%s", err.msg);
    ck_assert_ptr_eq(tg_model_family_find("bigram"), &BIGRAM);
    ck_assert_str_eq(tg_model_family_names(), "gpt, llama, bigram");
    tg_model_config c = {.arch = "bigram", .vocab_size = 7};
    tg_model m;
    ck_assert_msg(tg_model_init(&m, &c, TG_F64, 3, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(tg_model_num_params(&c), 49);
    /* it trains through the interface: SGD on the loss */
    tg_sgd *o = tg_sgd_new(m.params, 0, 0, &err);
    void *gr;
    const double first = loss_and_grads(&m, &gr);
    free(gr);
    double last = first;
    for (int s = 0; s < 50; s++) {
        last = loss_and_grads(&m, &gr);
        free(gr);
        ck_assert_int_eq(tg_sgd_step(o, 1.0, NULL), 0);
    }
    ck_assert_msg(last < 0.5 * first, "loss %g -> %g", first, last);
    tg_sgd_free(o);
    /* no cache, no composed path: said so */
    ck_assert_int_eq(tg_model_cache_enable(&m, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "family 'bigram' has no KV cache"));
    ck_assert_int_eq(tg_model_set_composed(&m, true), -1);
    ck_assert_int_eq(tg_model_cache_len(&m), 0);
    /* its config through a file */
    tg_st_writer *w = tg_st_writer_new();
    ck_assert_int_eq(tg_model_config_write(&m.config, w), 0);
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("bigram.safetensors"), &err), 0);
    tg_st_writer_free(w);
    tg_st_file *f = tg_st_load(tt_path("bigram.safetensors"), &err);
    tg_model_config back;
    ck_assert_int_eq(tg_model_config_read(f, &back, &err), 0);
    ck_assert_str_eq(back.arch, "bigram");
    ck_assert_int_eq(back.vocab_size, 7);
    tg_st_free(f);
    remove(tt_path("bigram.safetensors"));
    tg_model_release(&m);

    /* refusals */
    static const struct {
        const char *arch;
        const char *want;
    } bad_names[] = {{"", "1-31 bytes of [a-z0-9_]"},
                     {"GPT", "1-31 bytes"},
                     {"a-b", "1-31 bytes"},
                     {"abcdefghijklmnopqrstuvwxyz012345", "1-31 bytes"},
                     {"gpt", "there is a family 'gpt' already"},
                     {"bigram", "there is a family 'bigram' already"}};
    for (int k = 0; k < 6; k++) {
        tg_model_family fam = BIGRAM;
        fam.arch = bad_names[k].arch;
        ck_assert_int_eq(tg_model_register(&fam, &err), -1);
        ck_assert_msg(strstr(err.msg, bad_names[k].want), "case %d: '%s'", k, err.msg);
    }
    tg_model_family nofwd = BIGRAM;
    nofwd.arch = "nofwd";
    nofwd.forward = NULL;
    ck_assert_int_eq(tg_model_register(&nofwd, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "lacks its embedding's name, a required function"));
    /* without config functions: n_layer, n_embd, block_size, vocab_size through the file; one alone is refused */
    tg_model_family plain = BIGRAM, half = BIGRAM;
    plain.arch = "plain", plain.config_write = NULL, plain.config_read = NULL;
    half.arch = "half", half.config_read = NULL;
    ck_assert_int_eq(tg_model_register(&half, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "one of config_write and config_read (give both or neither)"));
    ck_assert_msg(tg_model_register(&plain, &err) == 0, "%s", err.msg);
    const tg_model_config pc = {.arch = "plain", .n_layer = 2, .n_embd = 3, .block_size = 4, .vocab_size = 7};
    w = tg_st_writer_new();
    ck_assert_int_eq(tg_model_config_write(&pc, w), 0);
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("plain.safetensors"), &err), 0);
    tg_st_writer_free(w);
    f = tg_st_load(tt_path("plain.safetensors"), &err);
    ck_assert_int_eq(tg_model_config_read(f, &back, &err), 0);
    ck_assert_str_eq(back.arch, "plain");
    ck_assert(back.n_layer == 2 && back.n_embd == 3 && back.block_size == 4 && back.vocab_size == 7);
    ck_assert_str_eq(tg_st_meta(f, "n_embd"), "3");
    tg_st_free(f);
    remove(tt_path("plain.safetensors"));
    /* the table fills up: 16 in all */
    static tg_model_family more[TG_MODEL_MAX_FAMILIES];
    static char names[TG_MODEL_MAX_FAMILIES][8];
    int added = 0;
    for (int k = 0; k < TG_MODEL_MAX_FAMILIES; k++) {
        more[k] = BIGRAM;
        snprintf(names[k], sizeof names[k], "m%d", k);
        more[k].arch = names[k];
        if (tg_model_register(&more[k], &err) == 0) added++;
        else break;
    }
    ck_assert_int_eq(added, TG_MODEL_MAX_FAMILIES - 4);
    ck_assert_ptr_nonnull(strstr(err.msg, "the table holds 16 families"));
}
END_TEST

/* The readers' whole-text rules: what a writer of numbers puts, nothing else. */
START_TEST(metadata_numbers_are_whole_text)
{
    static const char *const kv[] = {"i",
                                     "42",
                                     "neg",
                                     "-7",
                                     "hex",
                                     "0x1",
                                     "sp",
                                     " 3",
                                     "plus",
                                     "+3",
                                     "big",
                                     "9223372036854775807",
                                     "d",
                                     "2.5e-3",
                                     "dint",
                                     "3",
                                     "dexp",
                                     "1E+2",
                                     "dinf",
                                     "inf",
                                     "dnan",
                                     "nan",
                                     "dsub",
                                     "4.9e-324",
                                     "dhex",
                                     "0x1p3",
                                     "ddot",
                                     ".",
                                     "b",
                                     "True",
                                     "b0",
                                     "0",
                                     "bx",
                                     "yes",
                                     "bom",
                                     "\xef\xbb\xbf"
                                     "1"};
    tg_error err = {0};
    tg_st_writer *w = tg_st_writer_new();
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i += 2)
        ck_assert_int_eq(tg_st_writer_add_meta(w, kv[i], kv[i + 1]), 0);
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("meta.safetensors"), &err), 0);
    tg_st_writer_free(w);
    tg_st_file *f = tg_st_load(tt_path("meta.safetensors"), &err);
    ck_assert_ptr_nonnull(f);
    int64_t i;
    double d;
    bool b;
    ck_assert_int_eq(tg_st_meta_int(f, "i", 0, 100, &i, &err), 0);
    ck_assert_int_eq(i, 42);
    ck_assert_int_eq(tg_st_meta_int(f, "neg", -10, 0, &i, &err), 0);
    ck_assert_int_eq(i, -7);
    ck_assert_int_eq(tg_st_meta_int(f, "i", 0, 41, &i, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint metadata 'i' = '42' is not an integer in [0, 41]");
    static const char *const bad_int[] = {"hex", "sp", "plus", "big", "d", "bom"};
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(tg_st_meta_int(f, bad_int[k], INT64_MIN, INT64_MAX, &i, &err), -1);
        ck_assert_msg(strstr(err.msg, "is not an integer"), "%s: %s", bad_int[k], err.msg);
    }
    ck_assert_ptr_nonnull(strstr(err.msg, "'\\xef\\xbb\\xbf1'")); /* shown escaped */
    ck_assert_int_eq(tg_st_meta_int(f, "none", 0, 1, &i, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint metadata has no 'none'");

    ck_assert_int_eq(tg_st_meta_double(f, "d", 0, 1, &d, &err), 0);
    ck_assert(d == 2.5e-3);
    ck_assert_int_eq(tg_st_meta_double(f, "dint", 0, 10, &d, &err), 0);
    ck_assert(d == 3);
    ck_assert_int_eq(tg_st_meta_double(f, "dexp", 0, 1000, &d, &err), 0);
    ck_assert(d == 100);
    ck_assert_int_eq(tg_st_meta_double(f, "dsub", 1e-300, 1, &d, &err), -1); /* a number, out of range */
    ck_assert_ptr_nonnull(strstr(err.msg, "is not a number in [1e-300, 1]"));
    static const char *const bad_dbl[] = {"dinf", "dnan", "dhex", "ddot", "sp", "plus"};
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(tg_st_meta_double(f, bad_dbl[k], -1e308, 1e308, &d, &err), -1);
        ck_assert_msg(strstr(err.msg, "is not a number"), "%s: %s", bad_dbl[k], err.msg);
    }

    ck_assert_int_eq(tg_st_meta_bool(f, "b", &b, &err), 0);
    ck_assert(b);
    ck_assert_int_eq(tg_st_meta_bool(f, "b0", &b, &err), 0);
    ck_assert(!b);
    ck_assert_int_eq(tg_st_meta_bool(f, "bx", &b, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint metadata 'bx' = 'yes' is not true or false");
    tg_st_free(f);
    remove(tt_path("meta.safetensors"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("model");
    tt_tcase(s, "model", 0,
             TT_TESTS(builtin_families_equal_their_own_functions, configs_go_through_a_file_and_back,
                      a_family_of_ones_own, metadata_numbers_are_whole_text));
    return tt_run_in_tmpdir(s, "tg_model", false);
}
