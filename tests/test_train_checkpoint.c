/* train: checkpoints (train/checkpoint.c).
 *
 * - A run stopped after k steps, saved, loaded into fresh objects and
 *   continued ends with the same bits as the run that never stopped (both
 *   families, f32 and f64, dropout on so the dropout stream matters).
 * - Every way a file can be wrong is refused with its reason, leaving
 *   what was given unchanged. */
#include "tg_test.h"

static const tg_model_config CFGS[2] = {{.arch = "gpt",
                                         .n_layer = 2,
                                         .n_head = 2,
                                         .n_embd = 8,
                                         .block_size = 8,
                                         .vocab_size = 11,
                                         .bias = true,
                                         .dropout = 0.1},
                                        {.arch = "llama",
                                         .n_layer = 1,
                                         .n_head = 2,
                                         .n_embd = 8,
                                         .block_size = 8,
                                         .vocab_size = 11,
                                         .n_kv_head = 1,
                                         .hidden_dim = 12,
                                         .rope_theta = 10000,
                                         .norm_eps = 1e-5,
                                         .tied = true,
                                         .dropout = 0.1}};

static const char TEXT[] = "the cat sat on the mat and the dog sat on the log while the bird sang; "
                           "the mat was red and the log was wet, the bird flew off and the cat slept";

/* One training step: a batch from data_rng (even steps) or the epochs'
 * windows at ts->windows (odd ones), dropout from drop_rng (the graph's
 * stream seeded from it), AdamW. */
static void step(tg_model *m, tg_adamw *opt, const tg_dataset *d, tg_train_state *ts)
{
    int32_t x[2 * 8], y[2 * 8];
    if (ts->step % 2) tg_dataset_epoch_rows(d, false, &(tg_rows){x, y, 2, 0, 2, 8}, 3, ts->windows);
    else tg_dataset_rows(d, false, &(tg_rows){x, y, 2, 0, 2, 8}, &ts->data_rng);
    ts->windows += 2;
    tg_graph *g = tg_graph_new();
    *tg_graph_rng(g) = ts->drop_rng;
    tg_tensor *idx = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 8), x), *tgt = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 8), y);
    tg_params_zero_grad(m->params);
    tg_tensor *loss = tg_model_loss(g, m, idx, tgt);
    ck_assert_msg(loss && tg_graph_backward(g, loss) == 0, "%s", tg_graph_error(g));
    ts->drop_rng = *tg_graph_rng(g);
    tg_graph_free(g);
    ck_assert_int_eq(tg_adamw_step(opt, 1e-2, NULL), 0);
    ts->step++;
}

START_TEST(a_resumed_run_ends_bit_identical)
{
    tg_error err = {0};
    for (int k = 0; k < 4; k++) {
        const tg_model_config *c = &CFGS[k % 2];
        const tg_dtype dt = k < 2 ? TG_F64 : TG_F32;
        tg_vocab v;
        tg_vocab_bytes(&v, TEXT, strlen(TEXT));
        tg_model_config cc = *c;
        cc.vocab_size = v.size;
        tg_dataset d;
        ck_assert_int_eq(tg_dataset_from_text(&d, &v, TEXT, strlen(TEXT), 8, &err), 0);

        /* the run that never stops: 6 steps; and one stopped after 3 */
        tg_model a, b;
        ck_assert_msg(tg_model_init(&a, &cc, dt, 7, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tg_model_init(&b, &cc, dt, 7, &err), 0);
        tg_adamw *oa = tg_adamw_new(a.params, NULL, NULL), *ob = tg_adamw_new(b.params, NULL, NULL);
        tg_train_state ta, tb;
        tg_train_state_init(&ta, 1);
        ck_assert_int_eq(ta.step, 0);
        ck_assert(isinf(ta.best_val));
        tb = ta;
        for (int s = 0; s < 6; s++) step(&a, oa, &d, &ta);
        for (int s = 0; s < 3; s++) step(&b, ob, &d, &tb);
        tb.best_val = 2.5;
        const char *meta[] = {"train.note", "mid-run"};
        ck_assert_msg(tg_checkpoint_save(
                          tt_path("ck.safetensors"),
                          &(tg_checkpoint){.model = &b, .vocab = &v, .opt = ob, .ts = &tb, .meta = meta, .n_meta = 1},
                          &err) == 0,
                      "%s", err.msg);
        tg_model_release(&b);
        tg_adamw_free(ob);

        /* a new process: everything from the file */
        tg_st_file *f = tg_st_load(tt_path("ck.safetensors"), &err);
        ck_assert_ptr_nonnull(f);
        ck_assert_str_eq(tg_st_meta(f, "train.note"), "mid-run");
        ck_assert_str_eq(tg_st_meta(f, "train.isa"), tg_isa_name(tg_isa_active()));
        tg_model r;
        ck_assert_msg(tg_checkpoint_load_model(f, dt, -1, &r, &err) == 0, "%s", err.msg);
        ck_assert_double_eq(r.config.dropout, 0.1);
        tg_vocab rv;
        ck_assert_int_eq(tg_vocab_read(&rv, f, &err), 0);
        ck_assert_mem_eq(&rv, &v, sizeof v);
        tg_adamw *orr = tg_adamw_new(r.params, NULL, NULL);
        tg_train_state tr;
        ck_assert_msg(tg_checkpoint_load_train(f, orr, NULL, NULL, &tr, 1000, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tr.step, 3);
        ck_assert_double_eq(tr.best_val, 2.5);
        for (int s = 0; s < 3; s++) step(&r, orr, &d, &tr);
        const size_t bytes = (size_t)tg_params_numel(a.params) * tg_dtype_size(dt);
        ck_assert_mem_eq(tg_params_data(r.params), tg_params_data(a.params), bytes);
        ck_assert_mem_eq(tg_adamw_m(orr), tg_adamw_m(oa), bytes);
        ck_assert_mem_eq(tg_adamw_v(orr), tg_adamw_v(oa), bytes);
        ck_assert(tr.data_rng.state == ta.data_rng.state && tr.drop_rng.state == ta.drop_rng.state);
        ck_assert_int_eq(tr.windows, 12);

        /* weights only (no ts): not a training checkpoint */
        ck_assert_int_eq(tg_checkpoint_save(tt_path("w.safetensors"), &(tg_checkpoint){.model = &r}, &err), 0);
        tg_st_file *w = tg_st_load(tt_path("w.safetensors"), &err);
        ck_assert_int_eq(tg_checkpoint_load_train(w, orr, NULL, NULL, &tr, 1000, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "not a training checkpoint"));
        ck_assert_int_eq(tg_vocab_read(&rv, w, &err), -1); /* and no vocabulary was given */
        tg_st_free(w);
        /* a step past max_step */
        ck_assert_int_eq(tg_checkpoint_load_train(f, orr, NULL, NULL, &tr, 2, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "'train.step' = '3' is not an integer in [0, 2]"));

        tg_st_free(f);
        tg_adamw_free(oa);
        tg_adamw_free(orr);
        tg_model_release(&a);
        tg_model_release(&r);
        tg_dataset_release(&d);
        remove(tt_path("ck.safetensors"));
        remove(tt_path("w.safetensors"));
    }
}
END_TEST

/* A file saved, then changed in one way (metadata rewritten, a tensor
 * dropped or replaced), through a copy with the change. */
static void rewrite(const char *in, const char *out, const char *key, const char *value, const char *drop,
                    const char *nan_in)
{
    tg_error err = {0};
    tg_st_file *f = tg_st_load(in, &err);
    ck_assert_ptr_nonnull(f);
    tg_st_writer *w = tg_st_writer_new();
    for (int i = 0; i < tg_st_meta_count(f); i++) {
        const char *v, *k = tg_st_meta_at(f, i, &v);
        if (!key || strcmp(k, key)) tg_st_writer_add_meta(w, k, v);
    }
    if (key && value) tg_st_writer_add_meta(w, key, value);
    static double copy[4096];
    for (int i = 0; i < tg_st_count(f); i++) {
        const tg_st_tensor *e = tg_st_at(f, i);
        if (drop && !strcmp(e->name, drop)) continue;
        const void *data = e->data;
        if (nan_in && !strcmp(e->name, nan_in)) { /* an F64 tensor with a NaN at element 1 */
            ck_assert_uint_le(e->nbytes, sizeof copy);
            memcpy(copy, e->data, e->nbytes);
            copy[1] = NAN;
            data = copy;
        }
        tg_st_writer_add(w, e->name, e->dtype, e->ndim, e->shape, data);
    }
    ck_assert_msg(tg_st_writer_save(w, out, &err) == 0, "%s", err.msg);
    tg_st_writer_free(w);
    tg_st_free(f);
}

START_TEST(bad_checkpoints_are_refused)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config c = CFGS[0];
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 3, &err), 0);
    tg_adamw *o = tg_adamw_new(m.params, NULL, NULL);
    tg_train_state ts = {.step = 0, .best_val = INFINITY};
    tg_rng_seed(&ts.data_rng, 1, 1);
    tg_rng_seed(&ts.drop_rng, 2, 2);
    char good[600], bad[600]; /* (tt_path's buffers rotate) */
    snprintf(good, sizeof good, "%s", tt_path("good.safetensors"));
    snprintf(bad, sizeof bad, "%s", tt_path("bad.safetensors"));
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &ts}, &err), 0);
    tg_st_file *f = tg_st_load(good, &err);
    ck_assert_msg(f != NULL, "%s", err.msg);
    tg_train_state back = {0};
    ck_assert_int_eq(tg_checkpoint_load_train(f, o, NULL, NULL, &back, 10, &err), 0);
    ck_assert(isinf(back.best_val));
    tg_st_free(f);

    static const struct {
        const char *key, *value, *drop, *nan_in, *want;
        bool train; /* refused by load_train (else by load_model) */
    } cases[] = {
        {"train.data_rng", "0123", NULL, NULL, "'train.data_rng' = '0123' is not a random-stream state", true},
        {"train.dropout_rng", NULL, NULL, NULL, "has no 'train.dropout_rng'", true},
        {"train.windows", "-3", NULL, NULL, "'train.windows' = '-3' is not an integer", true},
        {"optimizer.steps", "4", NULL, NULL, "'optimizer.steps' = 4 differs from 'train.step' = 0", true},
        {"train.best_val", "-1", NULL, NULL, "'train.best_val' = '-1' is not a number", true},
        {"train.best_val", "nan", NULL, NULL, "'train.best_val' = 'nan' is not a number", true},
        {NULL, NULL, "optimizer.v", NULL, "not a training checkpoint", true},
        {NULL, NULL, NULL, "optimizer.m", "optimizer state: adamw_state_read: element 1 of the state is m nan", true},
        {"n_layer", "200", NULL, NULL, "describes", false},
        {"n_embd", "0x8", NULL, NULL, "'n_embd' = '0x8' is not an integer", false},
        {"arch", "mamba", NULL, NULL, "'arch' = 'mamba' is not a model family", false},
        {NULL, NULL, "transformer.wte.weight", NULL, "the checkpoint has no tensor 'transformer.wte.weight'", false},
        {NULL, NULL, NULL, "transformer.wpe.weight", "'transformer.wpe.weight' holds nan at element 1", false},
        {"vocab_size", "12", NULL, NULL, "so 'transformer.wte.weight' should be (12,8)", false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        rewrite(good, bad, cases[k].key, cases[k].value, cases[k].drop, cases[k].nan_in);
        f = tg_st_load(bad, &err);
        ck_assert_ptr_nonnull(f);
        err.msg[0] = 0;
        if (cases[k].train) {
            tg_train_state t = {.step = 42, .best_val = 1};
            tg_adamw_set_steps(o, 5, NULL);
            ck_assert_int_eq(tg_checkpoint_load_train(f, o, NULL, NULL, &t, 10, &err), -1);
            ck_assert_int_eq(t.step, 42); /* unchanged */
            ck_assert_int_eq(tg_adamw_steps(o), 5);
        } else {
            tg_model r;
            ck_assert_int_eq(tg_checkpoint_load_model(f, TG_F64, -1, &r, &err), -1);
            ck_assert_ptr_null(r.family);
        }
        ck_assert_msg(strstr(err.msg, cases[k].want), "case %zu: '%s' lacks '%s'", k, err.msg, cases[k].want);
        tg_st_free(f);
        remove(bad);
    }
    /* a state the reader would refuse is not written */
    tg_train_state unseeded = {.step = 0, .best_val = INFINITY}, negative = ts;
    negative.best_val = -1;
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &unseeded}, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "random streams were never seeded"));
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &negative}, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "best val loss -1 is not a state"));
    negative = ts;
    negative.windows = -1;
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &negative}, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint_save: the state's windows drawn, -1, is below 0");
    /* a shard writes the whole store's moments it is given, never its own part */
    tg_adamw *half = tg_adamw_new_shard(m.params, NULL, 0, 10, NULL);
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = half, .ts = &ts}, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "the optimizer is a shard"));
    tg_adamw_free(half);
    remove(good);
    tg_adamw_free(o);
    tg_model_release(&m);
}
END_TEST

/* The weight averages go into the checkpoint and back with the state; a
 * file and a run that disagree on averaging are refused; a refused AdamW
 * state leaves the averages as they were. */
START_TEST(averages_in_checkpoints)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config c = CFGS[0];
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 3, &err), 0);
    tg_adamw *o = tg_adamw_new(m.params, NULL, NULL);
    tg_ema *e = tg_ema_new(m.params, 0.9, &err);
    const int64_t n = tg_ema_numel(e);
    double *avg = tg_ema_values(e);
    for (int64_t i = 0; i < n; i++) avg[i] = 0.001 * (double)i;
    tg_adamw_set_steps(o, 3, NULL);
    tg_train_state ts = {.step = 3, .best_val = INFINITY};
    tg_rng_seed(&ts.data_rng, 1, 1);
    tg_rng_seed(&ts.drop_rng, 2, 2);
    char good[600], bad[600];
    snprintf(good, sizeof good, "%s", tt_path("ema.safetensors"));
    snprintf(bad, sizeof bad, "%s", tt_path("ema_bad.safetensors"));
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ema = e, .ts = &ts}, &err), 0);

    tg_adamw *ob = tg_adamw_new(m.params, NULL, NULL);
    tg_ema *back = tg_ema_new(m.params, 0.9, &err);
    tg_train_state t;
    tg_st_file *f = tg_st_load(good, &err);
    ck_assert_msg(tg_checkpoint_load_train(f, ob, NULL, back, &t, 10, &err) == 0, "%s", err.msg);
    ck_assert_mem_eq(tg_ema_values(back), avg, (size_t)n * sizeof(double));
    ck_assert_int_eq(t.step, 3);
    /* the file's tensors are the raw weights, the averages beside them: taken as a model's weights, in f64
     * and in f32 (rounded), and refused for a model of another size */
    ck_assert(tg_checkpoint_has_averages(f));
    ck_assert_str_eq(tg_checkpoint_weights(f), "raw");
    for (int k = 0; k < 2; k++) {
        tg_model w;
        ck_assert_msg(tg_checkpoint_load_model(f, k ? TG_F32 : TG_F64, 0.0, &w, &err) == 0, "%s", err.msg);
        ck_assert_msg(tg_checkpoint_load_averages(f, &w, &err) == 0, "%s", err.msg);
        for (int64_t i = 0; i < n; i++) {
            const double got = k ? ((float *)tg_params_data(w.params))[i] : ((double *)tg_params_data(w.params))[i];
            ck_assert(got == (k ? (double)(float)avg[i] : avg[i]));
        }
        tg_model_release(&w);
    }
    tg_model small;
    tg_model_config sc = c;
    sc.n_layer = 1;
    ck_assert_int_eq(tg_model_init(&small, &sc, TG_F64, 3, &err), 0);
    ck_assert_int_eq(tg_checkpoint_load_averages(f, &small, &err), -1);
    ck_assert_msg(strstr(err.msg, "is not the averages of its"), "%s", err.msg);
    tg_model_release(&small);
    /* a run without averages: refused */
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, NULL, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "the checkpoint's run averages its weights (tensor 'ema.values' present) but this one does "
                     "not: a resumed run keeps its averaging");
    tg_st_free(f);
    /* AdamW's state bad: the averages are put back as they were */
    rewrite(good, bad, NULL, NULL, NULL, "optimizer.v");
    f = tg_st_load(bad, &err);
    tg_ema *fresh = tg_ema_new(m.params, 0.9, &err);
    void *was = malloc((size_t)n * sizeof(double));
    memcpy(was, tg_ema_values(fresh), (size_t)n * sizeof(double));
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, fresh, &t, 10, &err), -1);
    ck_assert_msg(strstr(err.msg, "optimizer state: adamw_state_read: element 1") != NULL, "%s", err.msg);
    ck_assert_mem_eq(tg_ema_values(fresh), was, (size_t)n * sizeof(double));
    tg_st_free(f);
    /* the averages bad */
    rewrite(good, bad, NULL, NULL, NULL, "ema.values");
    f = tg_st_load(bad, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, fresh, &t, 10, &err), -1);
    ck_assert_msg(strstr(err.msg, "the checkpoint's averages: ema_state_read: element 1 of 'ema.values' is nan") !=
                      NULL,
                  "%s", err.msg);
    ck_assert_mem_eq(tg_ema_values(fresh), was, (size_t)n * sizeof(double));
    tg_st_free(f);
    /* the decay missing, or another: each its own message */
    rewrite(good, bad, "ema.decay", NULL, NULL, NULL);
    f = tg_st_load(bad, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, fresh, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "the checkpoint's averages: ema_state_read: the file has no metadata 'ema.decay' (the "
                     "averages' decay)");
    tg_st_free(f);
    rewrite(good, bad, "ema.decay", "0.5", NULL, NULL);
    f = tg_st_load(bad, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, fresh, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "the checkpoint's averages: ema_state_read: metadata 'ema.decay' = '0.5' is not this "
                     "average's decay 0.90000000000000002");
    ck_assert_mem_eq(tg_ema_values(fresh), was, (size_t)n * sizeof(double));
    tg_st_free(f);
    /* a checkpoint without averages, a run with them: refused */
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &ts}, &err), 0);
    f = tg_st_load(good, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, fresh, &t, 10, &err), -1);
    ck_assert_ptr_nonnull(
        strstr(err.msg, "does not average its weights (tensor 'ema.values' absent) but this one does"));
    tg_st_free(f);
    remove(good);
    remove(bad);
    free(was);
    tg_ema_free(fresh);
    tg_ema_free(back);
    tg_ema_free(e);
    tg_adamw_free(ob);
    tg_adamw_free(o);
    tg_model_release(&m);
}
END_TEST

/* Muon's state goes into the checkpoint and back; a file and a run that
 * disagree on the optimizer are refused; a refused AdamW state leaves
 * Muon's as it was (everything is put back). */
START_TEST(muon_state_in_checkpoints)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config c = CFGS[0];
    ck_assert_int_eq(tg_model_init(&m, &c, TG_F64, 3, &err), 0);
    tg_adamw *o = tg_adamw_new(m.params, NULL, NULL);
    tg_muon *mu = tg_muon_new(m.params, NULL, NULL);
    ck_assert_int_eq(tg_muon_numel(mu), 2 * (24 * 8 + 8 * 8 + 32 * 8 + 8 * 32)); /* c_attn, c_proj, c_fc, mlp c_proj */
    tg_muon_exclude(mu, o, NULL);
    double *buf = tg_muon_momentum(mu);
    for (int64_t i = 0; i < tg_muon_numel(mu); i++) buf[i] = 0.001 * (double)i;
    tg_muon_set_steps(mu, 3, NULL);
    tg_adamw_set_steps(o, 3, NULL);
    tg_train_state ts = {.step = 3, .best_val = INFINITY};
    tg_rng_seed(&ts.data_rng, 1, 1);
    tg_rng_seed(&ts.drop_rng, 2, 2);
    char good[600], bad[600];
    snprintf(good, sizeof good, "%s", tt_path("muon.safetensors"));
    snprintf(bad, sizeof bad, "%s", tt_path("muon_bad.safetensors"));
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .muon = mu, .ts = &ts}, &err), 0);

    tg_muon *back = tg_muon_new(m.params, NULL, NULL);
    tg_adamw *ob = tg_adamw_new(m.params, NULL, NULL);
    tg_muon_exclude(back, ob, NULL);
    tg_train_state t = {0};
    tg_st_file *f = tg_st_load(good, &err);
    ck_assert_msg(tg_checkpoint_load_train(f, ob, back, NULL, &t, 10, &err) == 0, "%s", err.msg);
    ck_assert_mem_eq(tg_muon_momentum(back), buf, (size_t)tg_muon_numel(mu) * sizeof(double));
    ck_assert_int_eq(tg_muon_steps(back), 3);
    /* without a Muon: refused */
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, NULL, NULL, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "the checkpoint's run trains with Muon (tensor 'muon.momentum' present) but this one does "
                     "not: a resumed run keeps its optimizer");
    tg_st_free(f);

    /* AdamW's state bad: Muon's is put back as it was */
    rewrite(good, bad, NULL, NULL, NULL, "optimizer.v");
    f = tg_st_load(bad, &err);
    ck_assert_ptr_nonnull(f);
    tg_muon *fresh = tg_muon_new(m.params, NULL, NULL);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, fresh, NULL, &t, 10, &err), -1);
    ck_assert_msg(strstr(err.msg, "optimizer state: adamw_state_read: element 1") != NULL, "%s", err.msg);
    ck_assert_int_eq(tg_muon_steps(fresh), 0);
    for (int64_t i = 0; i < tg_muon_numel(fresh); i++) ck_assert(((double *)tg_muon_momentum(fresh))[i] == 0);
    tg_st_free(f);
    /* Muon's state bad, or its steps not the step */
    rewrite(good, bad, NULL, NULL, NULL, "muon.momentum");
    f = tg_st_load(bad, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, fresh, NULL, &t, 10, &err), -1);
    ck_assert_msg(strstr(err.msg, "Muon state: muon_state_read: element 1 of 'muon.momentum' is nan") != NULL, "%s",
                  err.msg);
    tg_st_free(f);
    rewrite(good, bad, "muon.steps", "2", NULL, NULL);
    f = tg_st_load(bad, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, fresh, NULL, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "checkpoint metadata 'muon.steps' = 2 differs from 'train.step' = 3 (one optimizer step per "
                     "training step)");
    tg_st_free(f);
    /* an AdamW-only checkpoint with a Muon: refused */
    ck_assert_int_eq(tg_checkpoint_save(good, &(tg_checkpoint){.model = &m, .opt = o, .ts = &ts}, &err), 0);
    f = tg_st_load(good, &err);
    ck_assert_int_eq(tg_checkpoint_load_train(f, ob, fresh, NULL, &t, 10, &err), -1);
    ck_assert_ptr_nonnull(
        strstr(err.msg, "does not train with Muon (tensor 'muon.momentum' absent) but this one does"));
    tg_st_free(f);
    ck_assert_int_eq(tg_muon_steps(fresh), 0);
    remove(good);
    remove(bad);
    tg_muon_free(fresh);
    tg_muon_free(back);
    tg_adamw_free(ob);
    tg_muon_free(mu);
    tg_adamw_free(o);
    tg_model_release(&m);
}
END_TEST

/* The objects given to save and load_train must belong together: the
 * optimizers and the averages on the model's store (the optimizer's, for
 * load_train), Muon's state beside an AdamW that leaves Muon's matrices
 * alone (tg_muon_exclude), the optimizers' step counts the state's step.
 * Anything else is refused with its reason, and save then writes nothing. */
START_TEST(save_and_load_check_their_objects)
{
    tg_error err = {0};
    tg_model m, other;
    ck_assert_int_eq(tg_model_init(&m, &CFGS[0], TG_F64, 3, &err), 0);
    ck_assert_int_eq(tg_model_init(&other, &CFGS[1], TG_F64, 3, &err), 0);
    tg_adamw *o = tg_adamw_new(m.params, NULL, NULL), *o_other = tg_adamw_new(other.params, NULL, NULL);
    tg_adamw *o_all = tg_adamw_new(m.params, NULL, NULL); /* never told to leave Muon's matrices */
    tg_muon *mu = tg_muon_new(m.params, NULL, NULL), *mu_other = tg_muon_new(other.params, NULL, NULL);
    tg_muon_exclude(mu, o, NULL);
    tg_ema *e = tg_ema_new(m.params, 0.9, &err), *e_other = tg_ema_new(other.params, 0.9, &err);
    tg_train_state ts;
    tg_train_state_init(&ts, 1);
    char path[600];
    snprintf(path, sizeof path, "%s", tt_path("objects.safetensors"));
    static const struct {
        int opt, muon, ema; /* 0: none; 1: m's; 2: another store's (opt 3: m's AdamW not told to leave Muon's) */
        bool ts;
        const char *want;
    } cases[] = {
        {1, 0, 2, true, "checkpoint_save: the averages (ema) are of another store than the model's"},
        {1, 2, 0, true, "checkpoint_save: Muon (muon) is of another store than the model's"},
        {2, 0, 0, true, "checkpoint_save: AdamW (opt) is of another store than the model's"},
        {0, 1, 0, true,
         "checkpoint_save: Muon's state goes with AdamW's: give the AdamW that trains the other "
         "parameters (opt)"},
        {0, 0, 1, true, "checkpoint_save: the averages' state goes with the optimizer's: give opt too"},
        {1, 1, 1, false, "checkpoint_save: the optimizer's state goes with the training state: give ts too"},
        {3, 1, 0, true,
         "checkpoint_save: AdamW (opt) updates 'transformer.h.0.attn.c_attn.weight', which Muon "
         "updates too: call tg_muon_exclude(muon, opt) when making them"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const tg_adamw *opts[4] = {NULL, o, o_other, o_all};
        const tg_muon *mus[3] = {NULL, mu, mu_other};
        const tg_ema *emas[3] = {NULL, e, e_other};
        err.msg[0] = 0;
        ck_assert_int_eq(tg_checkpoint_save(path,
                                            &(tg_checkpoint){.model = &m,
                                                             .opt = opts[cases[k].opt],
                                                             .muon = mus[cases[k].muon],
                                                             .ema = emas[cases[k].ema],
                                                             .ts = cases[k].ts ? &ts : NULL},
                                            &err),
                         -1);
        ck_assert_msg(!strcmp(err.msg, cases[k].want), "case %zu: '%s', wanted '%s'", k, err.msg, cases[k].want);
        ck_assert_msg(access(path, F_OK) != 0, "case %zu: a refused save wrote %s", k, path);
    }
    /* the step counts: one optimizer step per training step */
    tg_adamw_set_steps(o, 2, NULL);
    ck_assert_int_eq(
        tg_checkpoint_save(path, &(tg_checkpoint){.model = &m, .opt = o, .muon = mu, .ema = e, .ts = &ts}, &err), -1);
    ck_assert_str_eq(err.msg,
                     "checkpoint_save: AdamW has taken 2 steps but the state is at step 0 (one optimizer step "
                     "per training step)");
    tg_adamw_set_steps(o, 0, NULL);
    tg_muon_set_steps(mu, 1, NULL);
    ck_assert_int_eq(
        tg_checkpoint_save(path, &(tg_checkpoint){.model = &m, .opt = o, .muon = mu, .ema = e, .ts = &ts}, &err), -1);
    ck_assert_str_eq(err.msg,
                     "checkpoint_save: Muon has taken 1 step but the state is at step 0 (one optimizer step "
                     "per training step)");
    ck_assert(access(path, F_OK) != 0);
    tg_muon_set_steps(mu, 0, NULL);

    /* a good file; load_train checks what it is given the same way, changing nothing */
    ck_assert_msg(
        tg_checkpoint_save(path, &(tg_checkpoint){.model = &m, .opt = o, .muon = mu, .ema = e, .ts = &ts}, &err) == 0,
        "%s", err.msg);
    tg_st_file *f = tg_st_load(path, &err);
    ck_assert_ptr_nonnull(f);
    tg_train_state t = {.step = 42};
    ck_assert_int_eq(tg_checkpoint_load_train(f, o_all, mu, e, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg,
                     "checkpoint_load_train: AdamW (opt) updates 'transformer.h.0.attn.c_attn.weight', which "
                     "Muon updates too: call tg_muon_exclude(muon, opt) when making them");
    ck_assert_int_eq(tg_checkpoint_load_train(f, o, mu_other, e, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint_load_train: Muon (muon) is of another store than the optimizer's");
    ck_assert_int_eq(tg_checkpoint_load_train(f, o, mu, e_other, &t, 10, &err), -1);
    ck_assert_str_eq(err.msg, "checkpoint_load_train: the averages (ema) are of another store than the optimizer's");
    ck_assert_int_eq(t.step, 42);
    ck_assert_msg(tg_checkpoint_load_train(f, o, mu, e, &t, 10, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.step, 0);
    tg_st_free(f);
    remove(path);
    tg_ema_free(e);
    tg_ema_free(e_other);
    tg_muon_free(mu);
    tg_muon_free(mu_other);
    tg_adamw_free(o);
    tg_adamw_free(o_all);
    tg_adamw_free(o_other);
    tg_model_release(&m);
    tg_model_release(&other);
}
END_TEST

/* A checkpoint whose tensors are F16 or BF16 (a model saved in half
 * precision) loads, each value exactly; it was refused as "holds only 0
 * float values: a tensor is missing" (issue 22). */
START_TEST(half_precision_checkpoints_load)
{
    tg_error err = {0};
    for (int k = 0; k < 4; k++) {
        tg_model m, r;
        tg_model_config c = CFGS[k % 2];
        ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 3, &err), 0);
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_model_config_write(&m.config, w), 0);
        uint16_t *h[64];
        const int n = tg_params_count(m.params);
        ck_assert_int_le(n, 64);
        for (int i = 0; i < n; i++) {
            tg_tensor *t = tg_params_at(m.params, i);
            h[i] = malloc((size_t)t->numel * 2);
            int64_t shape[8];
            for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
            for (int64_t j = 0; j < t->numel; j++) {
                const int q = (int)((i * 131 + j * 17) % 255) - 127; /* q/128: exact in both */
                ((float *)t->data)[j] = (float)q / 128;
                const float v = (float)q / 128;
                uint32_t bits;
                memcpy(&bits, &v, 4);
                if (k < 2) h[i][j] = (uint16_t)(bits >> 16); /* BF16: the top half of an exact float */
                else { /* F16: sign, exponent rebiased, 10 bits */ const uint32_t e = bits >> 23 & 255;
                    h[i][j] = (uint16_t)((bits >> 16 & 0x8000) | (q ? (e - 112) << 10 | (bits >> 13 & 0x3FF) : 0));
                }
            }
            ck_assert_int_eq(tg_st_writer_add(w, t->name, k < 2 ? "BF16" : "F16", t->ndim, shape, h[i]), 0);
        }
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("half.safetensors"), &err), 0);
        tg_st_writer_free(w);
        for (int i = 0; i < n; i++) free(h[i]);
        tg_st_file *f = tg_st_load(tt_path("half.safetensors"), &err);
        ck_assert_msg(f, "%s", err.msg);
        ck_assert_msg(tg_checkpoint_load_model(f, TG_F64, -1, &r, &err) == 0, "%s", err.msg);
        for (int i = 0; i < n; i++) {
            const tg_tensor *a = tg_params_at(m.params, i), *b = tg_params_at(r.params, i);
            for (int64_t j = 0; j < a->numel; j++)
                ck_assert_msg(((float *)a->data)[j] == ((double *)b->data)[j], "%s[%lld]", a->name, (long long)j);
        }
        tg_model_release(&r);
        tg_st_free(f);
        tg_model_release(&m);
    }
}
END_TEST

/* tg_eval_loss is the mean of the model's loss over the windows its own
 * stream draws (seed * 1000003 + step, stream 2 for val), computed here
 * batch by batch; two processes' rows summed give the one-process value;
 * the graph's modes come back as they were. */
static void count_progress(void *ctx, int64_t done, int64_t iters)
{
    int *n = ctx;
    ck_assert_int_eq(done, *n);
    ck_assert_int_eq(iters, 3);
    (*n)++;
}
static double partial; /* the other "process"'s sum, for a sum over two */
static void add_partial(void *ctx, double *x) { (void)ctx, *x += partial; }

/* TEXT's bytes as a dataset (windows up to 8) and an f64 model of CFGS[0] for them. */
static void eval_fixture(tg_dataset *d, tg_model *m)
{
    tg_error err = {0};
    tg_vocab v;
    tg_vocab_bytes(&v, TEXT, strlen(TEXT));
    ck_assert_int_eq(tg_dataset_from_text(d, &v, TEXT, strlen(TEXT), 8, &err), 0);
    tg_model_config c = CFGS[0];
    c.vocab_size = v.size;
    ck_assert_msg(tg_model_init(m, &c, TG_F64, 5, &err) == 0, "%s", err.msg);
    tg_vocab_release(&v);
}

START_TEST(eval_loss_is_the_mean_over_its_windows)
{
    tg_error err = {0};
    tg_dataset d;
    tg_model m;
    eval_fixture(&d, &m);
    tg_graph *g = tg_graph_new();
    int calls = 0;
    tg_eval_spec s = {.batch = 4,
                      .accum = 1,
                      .T = 8,
                      .iters = 3,
                      .seed = 9,
                      .step = 20,
                      .rank = 0,
                      .ranks = 1,
                      .progress = count_progress,
                      .ctx = &calls};
    const double got = tg_eval_loss(g, &m, &d, true, &s, &err);
    ck_assert_int_eq(calls, 3);
    ck_assert(tg_graph_training(g) && tg_graph_grad_enabled(g));
    /* by hand: the same windows, in eval mode */
    tg_rng r;
    tg_rng_seed(&r, 9 * 1000003u + 20, 2);
    double sum = 0;
    tg_graph *h = tg_graph_new();
    tg_graph_set_training(h, false);
    tg_graph_set_grad_enabled(h, false);
    for (int i = 0; i < 3; i++) {
        int32_t x[32], y[32];
        tg_dataset_rows(&d, true, &(tg_rows){x, y, 4, 0, 4, 8}, &r);
        sum += tg_tensor_item(tg_model_loss(h, &m, tg_tensor_from(h, TG_I32, TT_SHAPE(4, 8), x),
                                            tg_tensor_from(h, TG_I32, TT_SHAPE(4, 8), y)));
        tg_graph_reset(h);
    }
    ck_assert(got == sum / 3);
    /* two processes of 2 rows each: rank 1's sum, then rank 0's with it added */
    tg_eval_spec s1 = {.batch = 2, .accum = 1, .T = 8, .iters = 3, .seed = 9, .step = 20, .rank = 1, .ranks = 2};
    partial = tg_eval_loss(g, &m, &d, true, &s1, &err) * 3 * 2; /* alone it divides its sum by iters x ranks */
    tg_eval_spec s0 = s1;
    s0.rank = 0;
    s0.sum = add_partial;
    const double two = tg_eval_loss(g, &m, &d, true, &s0, &err);
    ck_assert_msg(fabs(two - got) <= 1e-12 * fabs(got), "two processes %.17g, one %.17g", two, got);
    /* refusals */
    s.iters = 0;
    ck_assert(isnan(tg_eval_loss(g, &m, &d, true, &s, &err)));
    ck_assert_ptr_nonnull(strstr(err.msg, "iters 0"));
    s.iters = 1;
    s.T = 60; /* the val split holds no window of 61 */
    ck_assert(isnan(tg_eval_loss(g, &m, &d, true, &s, &err)));
    ck_assert_msg(strstr(err.msg, "the val split's 15 tokens hold no window of T + 1 = 61"), "%s", err.msg);
    tg_graph_free(h);
    tg_graph_free(g);
    tg_model_release(&m);
    tg_dataset_release(&d);
}
END_TEST

/* The sum of the losses of the windows of 4 targets of val's 14, from
 * window `first` on, every `every`-th, each alone at its length (the
 * last is 2 long). */
static double hand_windows(tg_graph *h, tg_model *m, const int32_t *val, int first, int every)
{
    double sum = 0;
    for (int at = 4 * first; at < 14; at += 4 * every) {
        const int len = 14 - at < 4 ? 14 - at : 4;
        sum += len *
            tg_tensor_item(tg_model_loss(h, m, tg_tensor_from(h, TG_I32, TT_SHAPE(1, len), val + at),
                                         tg_tensor_from(h, TG_I32, TT_SHAPE(1, len), val + at + 1)));
        tg_graph_reset(h);
    }
    return sum;
}

/* tg_eval_spec.whole: every target of the split once. The val split's 15
 * tokens are 14 targets, in windows of 4: 4 + 4 + 4 + 2, each computed
 * here alone at its own length; any batch and any split across processes
 * give the same mean, to rounding. */
START_TEST(eval_loss_whole_counts_every_target_once)
{
    tg_error err = {0};
    tg_dataset d;
    tg_model m;
    eval_fixture(&d, &m);
    ck_assert_uint_eq(d.n - d.n_train, 15);
    /* by hand: each window alone, its mean times its targets */
    tg_graph *h = tg_graph_new();
    tg_graph_set_training(h, false);
    tg_graph_set_grad_enabled(h, false);
    const int32_t *val = d.tokens + d.n_train;
    const double want = hand_windows(h, &m, val, 0, 1) / 14;
    tg_graph *g = tg_graph_new();
    for (int b = 1; b <= 5; b++) { /* 4, 2, 2, 1 and 1 micro-batches; the last ones padded */
        tg_eval_spec s = {.batch = b, .accum = 3, .T = 4, .iters = 0, .whole = true, .rank = 0, .ranks = 1};
        const double got = tg_eval_loss(g, &m, &d, true, &s, &err);
        ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "batch %d: %.17g, by hand %.17g (%s)", b, got, want,
                      err.msg);
    }
    ck_assert(tg_graph_training(g) && tg_graph_grad_enabled(g));
    /* two processes of 1 row: rank 1 runs windows 1 and 3, rank 0 windows 0 and 2 */
    tg_eval_spec s1 = {.batch = 1, .accum = 1, .T = 4, .whole = true, .rank = 1, .ranks = 2};
    partial = tg_eval_loss(g, &m, &d, true, &s1, &err) * 14; /* alone it divides its sum by the targets */
    const double sum = hand_windows(h, &m, val, 1, 2);
    ck_assert_msg(fabs(partial - sum) <= 1e-12 * sum, "rank 1: %.17g, by hand %.17g", partial, sum);
    tg_eval_spec s0 = s1;
    s0.rank = 0;
    s0.sum = add_partial;
    const double two = tg_eval_loss(g, &m, &d, true, &s0, &err);
    ck_assert_msg(fabs(two - want) <= 1e-12 * want, "two processes %.17g, by hand %.17g", two, want);
    /* the train split too: every one of its targets, whatever the batch */
    tg_eval_spec a = {.batch = 3, .accum = 1, .T = 8, .whole = true, .rank = 0, .ranks = 1}, b = a;
    b.batch = 7;
    const double ta = tg_eval_loss(g, &m, &d, false, &a, &err), tb = tg_eval_loss(g, &m, &d, false, &b, &err);
    ck_assert_msg(isfinite(ta) && fabs(ta - tb) <= 1e-12 * ta, "%.17g against %.17g", ta, tb);
    /* a split of one token has no target */
    int32_t one[5] = {1, 2, 3, 4, 5};
    tg_dataset small = {.tokens = one, .n = 5, .n_train = 4, .bytes_per_token = {1, 1}};
    ck_assert(isnan(tg_eval_loss(g, &m, &small, true, &a, &err)));
    ck_assert_msg(strstr(err.msg, "the val split's 1 tokens hold no target"), "%s", err.msg);
    tg_graph_free(h);
    tg_graph_free(g);
    tg_model_release(&m);
    tg_dataset_release(&d);
}
END_TEST

/* tg_checkpoint_load_vocab: the file's vocabulary, llama2.c's for a Llama
 * without one, a GPT without one refused, and a vocab_size that does not
 * fit refused naming both sizes (tg_vocab_check_size). */
START_TEST(the_vocabulary_of_a_checkpoint)
{
    tg_error err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s", tt_path("v.safetensors"));
    for (int fam = 0; fam < 2; fam++) {
        tg_model_config c = CFGS[fam];
        tg_vocab bytes, back = {0};
        tg_vocab_bytes(&bytes, TEXT, strlen(TEXT));
        c.vocab_size = bytes.size;
        tg_model m;
        ck_assert_int_eq(tg_model_init(&m, &c, TG_F32, 3, &err), 0);
        for (int with = 0; with < 2; with++) {
            ck_assert_int_eq(
                tg_checkpoint_save(path, &(tg_checkpoint){.model = &m, .vocab = with ? &bytes : NULL}, &err), 0);
            tg_st_file *f = tg_st_load(path, &err);
            ck_assert_ptr_nonnull(f);
            const int rc = tg_checkpoint_load_vocab(f, &m, &back, &err);
            if (with) { /* the byte vocabulary back */
                ck_assert_msg(rc == 0, "%s", err.msg);
                ck_assert_int_eq(back.kind, TG_VOCAB_BYTES);
                ck_assert_int_eq(back.size, bytes.size);
                ck_assert_mem_eq(back.chars, bytes.chars, (size_t)bytes.size);
            } else if (fam == 0) {
                ck_assert_int_eq(rc, -1);
                ck_assert_msg(strstr(err.msg, "the checkpoint has no 'vocab' in its metadata"), "%s", err.msg);
            } else { /* llama2.c's 259 ids, more than this model's */
                ck_assert_int_eq(rc, -1);
                char want[128];
                snprintf(want, sizeof want, "the model's vocab_size %d does not match its vocabulary of 259 ids",
                         bytes.size);
                ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
            }
            tg_vocab_release(&back);
            tg_st_free(f);
        }
        char want[128];
        snprintf(want, sizeof want, "vocab_size %d does not match the vocabulary of %d characters", bytes.size + 1,
                 bytes.size);
        ck_assert_int_eq(tg_vocab_check_size(&bytes, bytes.size + 1, "the", &err), -1);
        ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
        tg_vocab llama2c;
        tg_vocab_llama2c(&llama2c);
        ck_assert_int_eq(tg_vocab_check_size(&llama2c, 300, "its", &err), 0); /* ids past 259 unused */
        tg_model_release(&m);
    }
    remove(path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train_checkpoint");
    tt_tcase(s, "checkpoint", 0,
             TT_TESTS(a_resumed_run_ends_bit_identical, bad_checkpoints_are_refused, muon_state_in_checkpoints,
                      averages_in_checkpoints, save_and_load_check_their_objects, half_precision_checkpoints_load,
                      the_vocabulary_of_a_checkpoint, eval_loss_is_the_mean_over_its_windows,
                      eval_loss_whole_counts_every_target_once));
    return tt_run_in_tmpdir(s, "tg_train_ckpt", false);
}
