/* train: the run object (train/run.h, train/run_settings.h).
 *
 * - The settings' table: every setting set from its own text reads back
 *   the same; bad text is refused with a message naming the setting and
 *   the value, as a command line would; strings set by name are the
 *   config's own.
 * - A run made, stepped, evaluated, stopped and freed, then resumed from
 *   its directory alone (tg_run_resume(dir, NULL)), ends with the bytes
 *   of the uninterrupted run's checkpoints and the same metrics: for a
 *   GPT with dropout and weight averages, and for a family the test
 *   registers itself.
 * - A resume's config that disagrees with the checkpoint on the model or
 *   the run's identity is refused naming the setting and both values; a
 *   free setting changed is a notice, and wins; the recorded config reads
 *   back.
 * - The time budget's plan: planned once after the step-0 evaluation,
 *   recorded; refused before it. The ETA counts the evaluations at their
 *   timed cost, what the program does after one (its picture) included
 *   (untimed after a resume: named instead).
 * - The directory: locked, a run in it kept unless forced, the
 *   checkpoint a directory names. */
#include "tg_test.h"

#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------------------- */

/* A small GPT on the built-in corpus, quick to train. */
static void small(tg_run_config *c)
{
    tg_run_config_init(c);
    c->n_layer = 1, c->n_head = 2, c->n_embd = 16, c->block_size = 16, c->batch_size = 4, c->corpus_chars = 3000;
    c->steps = 12, c->warmup = 2, c->eval_interval = 4, c->eval_iters = 2, c->lr = 3e-3, c->min_lr = 3e-4;
}

/* the notices of a run, one after another */
static char notices[4096];
static void keep(void *ctx, tg_run_notice kind, const char *msg)
{
    (void)ctx;
    const size_t n = strlen(notices);
    snprintf(notices + n, sizeof notices - n, "%s%s\n", kind == TG_RUN_NOTICE ? "notice: " : "", msg);
}

/* Removes a run's directory and its files. */
static void rm_run(const char *dir)
{
    static const char *const f[] = {"best.safetensors", "last.safetensors", "metrics.csv", "loss.png"};
    char p[600];
    for (int i = 0; i < 4; i++) snprintf(p, sizeof p, "%s/%s", dir, f[i]), remove(p);
    rmdir(dir);
}

/* The loop a program writes (tiny_gpt train's): step 0's evaluation of a
 * new run (and a budget's plan), then steps with the evaluations due, to
 * the end or a stop (then saved). */
static tg_run_stop loop(tg_run *r)
{
    tg_error e = {0};
    if (tg_run_eval_due(r)) ck_assert_msg(tg_run_evaluate(r, NULL, &e) == 0, "%s", e.msg);
    if (tg_run_needs_plan(r)) ck_assert_msg(tg_run_plan_steps(r, NULL, &e) == 0, "%s", e.msg);
    for (;;) {
        const tg_run_stop why = tg_run_should_stop(r, NULL);
        if (why == TG_RUN_DONE) return why;
        if (why != TG_RUN_GO) {
            ck_assert_msg(tg_run_save(r, &e) == 0, "%s", e.msg);
            return why;
        }
        ck_assert_msg(tg_run_step(r, tg_run_lr(r), NULL, &e) == 0, "%s", e.msg);
        if (tg_run_eval_due(r)) ck_assert_msg(tg_run_evaluate(r, NULL, &e) == 0, "%s", e.msg);
    }
}

/* A new run of c in dir, looped to its end (or o's stop), and freed. */
static tg_run_stop run_new(const char *dir, const tg_run_config *c, const tg_run_options *o)
{
    tg_error e = {0};
    tg_run *r = tg_run_new(dir, c, o, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    const tg_run_stop why = loop(r);
    tg_run_free(r);
    return why;
}

static char *slurp(const char *path, size_t *n)
{
    char *b = tg_file_read(path, n, NULL);
    ck_assert_msg(b != NULL, "cannot read %s", path);
    return b;
}

/* The two files hold the same bytes. */
static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    const bool same = na == nb && !memcmp(x, y, na);
    free(x), free(y);
    return same;
}

/* metrics.csv without its timing columns (ms_per_step, tokens_per_s) */
static void untimed(const char *path, char *out, size_t size)
{
    size_t n;
    char *b = slurp(path, &n), *o = out;
    int col = 0;
    for (size_t i = 0; i < n && (size_t)(o - out) < size - 1; i++) {
        if (b[i] == '\n') col = -1;
        if (col != 3 && col != 4) *o++ = b[i];
        if (b[i] == ',' || b[i] == '\n') col++;
    }
    *o = 0;
    free(b);
}

/* ---- the settings ---------------------------------------------------------------------- */

START_TEST(settings_read_back_from_their_text)
{
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    ck_assert_int_ge(n, 50);
    tg_run_config c, d;
    tg_run_config_init(&c);
    tg_run_config_init(&d);
    ck_assert_int_eq(c.n_layer, 4); /* nanoGPT's small CPU recipe */
    ck_assert_int_eq(c.block_size, 64);
    ck_assert_double_eq(c.lr, 1e-3);
    ck_assert_int_eq(c.steps, 2000);
    ck_assert_int_eq(c.optimizer, TG_RUN_ADAMW);
    c.lr = 0.1, c.optimizer = TG_RUN_MUON, c.mlp = TG_FFN_RELU2, c.rope_halves = true, c.seed = 123456789012345;
    c.data = "some/file.txt", c.vocab_size = 50304; /* (0, the default, is "not given": no text gives it) */
    tg_error e = {0};
    for (int k = 0; k < n; k++) { /* every value to text and back */
        char text[256];
        ck_assert_ptr_eq(tg_run_setting_find(t[k].name), &t[k]);
        ck_assert_int_eq(tg_run_config_get(&c, t[k].name, text, sizeof text), 0);
        ck_assert_msg(tg_run_config_set(&d, t[k].name, text, NULL, &e) == 0, "%s: %s", t[k].name, e.msg);
    }
    ck_assert_double_eq(d.lr, 0.1);
    ck_assert_int_eq(d.optimizer, TG_RUN_MUON);
    ck_assert_int_eq(d.mlp, TG_FFN_RELU2);
    ck_assert(d.rope_halves);
    ck_assert_int_eq(d.seed, 123456789012345);
    ck_assert_str_eq(d.data, "some/file.txt");
    ck_assert_ptr_ne(d.data, c.data); /* the config's own copy */
    char buf[64];
    ck_assert_int_eq(tg_run_config_get(&d, "rope", buf, sizeof buf), 0);
    ck_assert_str_eq(buf, "halves");
    ck_assert_int_eq(tg_run_config_get(&d, "min_lr", buf, sizeof buf), 0); /* '_' is '-' */
    ck_assert_str_eq(buf, "0.0001");
    tg_run_config_release(&d);
    ck_assert_ptr_null(d.data); /* what it owned is gone, and not pointed at */
    tg_run_config_release(&d);
}
END_TEST

START_TEST(bad_text_is_refused_naming_the_setting)
{
    tg_run_config c;
    tg_run_config_init(&c);
    const struct {
        const char *name, *text, *what, *want;
    } cases[] = {
        {"steps", "ten", NULL, "steps: 'ten' is not a number"},
        {"steps", "0x10", "--steps", "--steps: '0x10' is not a number (write it in decimal, as 3, -0.5 or 6e-4)"},
        {"dropout", "1.5", "--dropout", "--dropout: 1.5 is outside [0, 0.999]"},
        {"n-layer", "2.5", NULL, "n-layer: '2.5' is not a whole number"},
        {"lr", "1e-320", NULL, "lr: 1e-320 is out of range: too close to 0"},
        {"bias", "yes", NULL, "bias: 'yes' is not true/false"},
        {"optimizer", "sgd", "--config f:2: optimizer", "--config f:2: optimizer: 'sgd' is not adamw or muon"},
        {"mlp", "relu3", NULL, "mlp: 'relu3' is not gelu, relu2 or swiglu"},
        {"lr",
         "\xc2\xa0"
         "3",
         NULL, "lr: '\\xc2\\xa03' is not a number"},
        {"lrr", "1", NULL, "unknown setting 'lrr'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_error e = {0};
        ck_assert_int_eq(tg_run_config_set(&c, cases[i].name, cases[i].text, cases[i].what, &e), -1);
        ck_assert_msg(strstr(e.msg, cases[i].want), "%s = %s: '%s', wanted '%s'", cases[i].name, cases[i].text, e.msg,
                      cases[i].want);
    }
    ck_assert_int_eq(c.steps, 2000); /* nothing changed */
    ck_assert_double_eq(c.lr, 1e-3);
    /* a value of one's own, parsed as a setting's */
    const tg_run_setting at = {.name = "stop-at", .kind = TG_SETTING_I64, .max = 1e12};
    int64_t v = 7;
    tg_error e = {0};
    ck_assert_int_eq(tg_run_setting_parse(&at, "-1", "--stop-at", &v, &e), -1);
    ck_assert_str_eq(e.msg, "--stop-at: -1 is outside [0, 1e+12]");
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(tg_run_setting_parse(&at, "150", NULL, &v, &e), 0);
    ck_assert_int_eq(v, 150);
    tg_run_config_release(&c);
}
END_TEST

/* ---- stop and resume ------------------------------------------------------------------- */

START_TEST(a_stopped_and_resumed_gpt_ends_on_the_same_bits)
{
    tg_run_config c;
    small(&c);
    c.dropout = 0.1, c.ema = 0.9; /* the streams and the averages must be carried too */
    ck_assert_int_eq(run_new(tt_path("gpt_a"), &c, NULL), TG_RUN_DONE);
    const tg_run_options stop = {.stop_at = 6};
    ck_assert_int_eq(run_new(tt_path("gpt_b"), &c, &stop), TG_RUN_STOP_AT);
    tg_error e = {0};
    tg_run *r = tg_run_resume(tt_path("gpt_b"), NULL, NULL, &e); /* the directory alone */
    ck_assert_msg(r != NULL, "%s", e.msg);
    tg_run_info i;
    ck_assert_int_eq(tg_run_describe(r, &i), 0);
    ck_assert(i.resumed);
    ck_assert_int_eq(i.step, 6);
    ck_assert_int_eq(i.steps, 12);
    ck_assert_double_eq(i.config->ema, 0.9);
    ck_assert(!tg_run_eval_due(r)); /* its step was saved, not to be evaluated again */
    ck_assert_int_eq(loop(r), TG_RUN_DONE);
    tg_run_free(r);
    ck_assert(same_file(tt_path("gpt_a/last.safetensors"), tt_path("gpt_b/last.safetensors")));
    ck_assert(same_file(tt_path("gpt_a/best.safetensors"), tt_path("gpt_b/best.safetensors")));
    static char ma[65536], mb[65536];
    untimed(tt_path("gpt_a/metrics.csv"), ma, sizeof ma);
    untimed(tt_path("gpt_b/metrics.csv"), mb, sizeof mb);
    ck_assert_str_eq(ma, mb);
    ck_assert_int_eq((int)(strchr(ma, '\n') - ma), (int)strlen("step,loss,lr,train_loss,val_loss,train_bpb,val_bpb"));
    /* the recorded config reads back, and a loaded one continues with more steps */
    tg_run_config rec;
    ck_assert_msg(tg_run_config_load(&rec, tt_path("gpt_b"), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(rec.steps, 12);
    ck_assert_double_eq(rec.dropout, 0.1);
    ck_assert_int_eq(rec.n_embd, 16);
    ck_assert_ptr_null(rec.data); /* the built-in corpus */
    rec.steps = 14;
    notices[0] = 0;
    r = tg_run_resume(tt_path("gpt_b"), &rec, &(tg_run_options){.notice = keep}, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert_msg(strstr(notices, "notice: steps 14 replaces the run's 12"), "%s", notices);
    ck_assert_int_eq(loop(r), TG_RUN_DONE);
    tg_run_describe(r, &i);
    ck_assert_int_eq(i.step, 14);
    tg_run_free(r);
    tg_run_config_release(&rec);
    rm_run(tt_path("gpt_a"));
    rm_run(tt_path("gpt_b"));
}
END_TEST

/* A family of the test's own: an embedding and a head (a bigram model). */
typedef struct bigram {
    tg_params *p;
    tg_tensor *wte;
    tg_linear_mod head;
} bigram;
static void *bigram_new(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    bigram *m = calloc(1, sizeof *m);
    tg_rng r;
    tg_rng_seed(&r, seed, 0);
    if (!m || !(m->p = tg_params_new(dt, err)) ||
        !(m->wte = tg_params_add(m->p, "wte.weight", 2, (int[]){c->vocab_size, c->n_embd}, err)) ||
        tg_linear_init(&m->head, m->p, "head", c->n_embd, c->vocab_size, false, err)) {
        if (m) tg_params_free(m->p);
        free(m);
        return NULL;
    }
    tg_linear_init_uniform(&m->head, &r);
    tg_rng_fill_normal(&r, m->wte, 0, 0.5);
    return m;
}
static void bigram_free(void *m) { tg_params_free(((bigram *)m)->p), free(m); }
static tg_params *bigram_params(void *m) { return ((bigram *)m)->p; }
static int64_t bigram_count(const tg_model_config *c) { return 2 * (int64_t)c->vocab_size * c->n_embd; }
static tg_tensor *bigram_forward(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **unused)
{
    (void)unused;
    bigram *m = impl;
    return tg_linear_forward(g, &m->head, tg_embedding(g, m->wte, idx));
}
static tg_tensor *bigram_loss(tg_graph *g, void *m, tg_tensor *idx, tg_tensor *y)
{
    return tg_cross_entropy(g, bigram_forward(g, m, idx, NULL), y);
}
static const tg_model_family BIGRAM = {.arch = "bigram",
                                       .embedding = "wte.weight",
                                       .create = bigram_new,
                                       .destroy = bigram_free,
                                       .params = bigram_params,
                                       .num_params = bigram_count,
                                       .forward = bigram_forward,
                                       .loss = bigram_loss};

START_TEST(a_family_of_ones_own_resumes_on_the_same_bits)
{
    tg_error re = {0};
    if (!tg_model_family_find("bigram")) ck_assert_msg(tg_model_register(&BIGRAM, &re) == 0, "%s", re.msg);
    FILE *f = fopen(tt_path("bigram.txt"), "w"); /* a text of its own */
    for (int i = 0; i < 4000; i++) fputc("abcabd\n"[i % 7], f);
    fclose(f);
    tg_run_config c;
    small(&c);
    c.arch = "bigram", c.n_layer = 1, c.optimizer = TG_RUN_ADAMW;
    ck_assert_int_eq(tg_run_config_set(&c, "data", tt_path("bigram.txt"), NULL, &(tg_error){0}), 0);
    ck_assert_int_eq(run_new(tt_path("bg_a"), &c, NULL), TG_RUN_DONE);
    ck_assert_int_eq(run_new(tt_path("bg_b"), &c, &(tg_run_options){.stop_at = 5}), TG_RUN_STOP_AT);
    tg_error e = {0};
    tg_run *r = tg_run_resume(tt_path("bg_b"), NULL, NULL, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    tg_run_info i;
    tg_run_describe(r, &i);
    ck_assert_str_eq(i.model->config.arch, "bigram");
    ck_assert_str_eq(i.text->path, tt_path("bigram.txt"));
    ck_assert_int_eq(loop(r), TG_RUN_DONE);
    tg_run_free(r);
    ck_assert(same_file(tt_path("bg_a/last.safetensors"), tt_path("bg_b/last.safetensors")));
    /* the text is the run's identity: another one is refused */
    f = fopen(tt_path("bigram.txt"), "a");
    fputc('x', f);
    fclose(f);
    tg_run_config_release(&c);
    ck_assert_int_eq(tg_run_config_load(&c, tt_path("bg_b"), &e), 0);
    ck_assert_int_eq(tg_run_config_set(&c, "steps", "20", NULL, &e), 0);
    ck_assert_ptr_null(tg_run_resume(tt_path("bg_b"), &c, NULL, &e));
    ck_assert_msg(strstr(e.msg, "(4001 bytes, checksum ") && strstr(e.msg, "is not the text the run was trained on"),
                  "%s", e.msg);
    tg_run_config_release(&c);
    remove(tt_path("bigram.txt"));
    rm_run(tt_path("bg_a"));
    rm_run(tt_path("bg_b"));
}
END_TEST

START_TEST(a_resume_that_disagrees_is_refused_naming_the_setting)
{
    tg_run_config c;
    small(&c);
    c.steps = 4;
    ck_assert_int_eq(run_new(tt_path("dis"), &c, NULL), TG_RUN_DONE);
    const struct {
        const char *name, *value, *want;
        bool flags;
    } cases[] = {
        {"n-embd", "32", "n_embd 32 differs from the run's 16", false},
        {"seed", "5", "--seed 5 differs from the run's 1337", true},
        {"optimizer", "muon", "optimizer muon differs from the run's adamw", false},
        {"batch-size", "8", "batch_size 8 x grad_accum 1 = 8 sequences per step differs from the run's 4", false},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tg_run_config rec;
        tg_error e = {0};
        ck_assert_int_eq(tg_run_config_load(&rec, tt_path("dis"), &e), 0);
        ck_assert_int_eq(tg_run_config_set(&rec, cases[k].name, cases[k].value, NULL, &e), 0);
        rec.steps = 8;
        ck_assert_ptr_null(tg_run_resume(tt_path("dis"), &rec, &(tg_run_options){.flag_names = cases[k].flags}, &e));
        ck_assert_msg(strstr(e.msg, cases[k].want), "%s: '%s', wanted '%s'", cases[k].name, e.msg, cases[k].want);
        tg_run_config_release(&rec);
    }
    /* the run is finished: more steps are needed */
    tg_error e = {0};
    ck_assert_ptr_null(tg_run_resume(tt_path("dis"), NULL, NULL, &e));
    ck_assert_msg(strstr(e.msg, "finished at step 4; give steps above 4"), "%s", e.msg);
    /* nor is a new run made over it */
    ck_assert_ptr_null(tg_run_new(tt_path("dis"), &c, NULL, &e));
    ck_assert_msg(strstr(e.msg, "already holds a run (at step 4 of 4: finished)"), "%s", e.msg);
    tg_run *r = tg_run_new(tt_path("dis"), &c, &(tg_run_options){.force = true}, &e); /* unless forced */
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert_ptr_null(tg_run_new(tt_path("dis"), &c, &(tg_run_options){.force = true, .program = "tester"}, &e));
    ck_assert_msg(strstr(e.msg, "another tester is training in this directory"), "%s", e.msg);
    tg_run_free(r);
    rm_run(tt_path("dis"));
}
END_TEST

/* ---- the plan and the ETA ---------------------------------------------------------------- */

START_TEST(a_time_budget_is_planned_once_after_the_first_evaluation)
{
    tg_run_config c;
    small(&c);
    c.time_budget = 30;
    tg_error e = {0};
    ck_assert_int_eq(tg_run_config_set(&c, "steps", "25", NULL, &e), 0); /* given: a cap */
    tg_run *r = tg_run_new(tt_path("plan"), &c, NULL, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert(tg_run_needs_plan(r));
    ck_assert_int_eq(tg_run_plan_steps(r, NULL, &e), -1); /* it counts an evaluation's cost */
    ck_assert_msg(strstr(e.msg, "evaluate the run once before its steps are planned"), "%s", e.msg);
    ck_assert_int_eq(tg_run_evaluate(r, NULL, &e), 0);
    tg_run_plan p;
    ck_assert_msg(tg_run_plan_steps(r, &p, &e) == 0, "%s", e.msg);
    ck_assert(!tg_run_needs_plan(r));
    ck_assert_int_eq(p.steps, 25); /* 30 s hold far more */
    ck_assert_int_ge(p.timed, 5);
    ck_assert(p.step_s > 0 && p.eval_s > 0 && p.margin == 0.1);
    tg_run_info i;
    tg_run_describe(r, &i);
    ck_assert_int_eq(i.steps, 25);
    ck_assert_int_eq(i.step, 0); /* the timed steps were undone */
    tg_run_free(r);
    tg_st_file *f = tg_st_load(tt_path("plan/last.safetensors"), NULL);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(tg_st_meta(f, "train.budget_steps"), "25");
    ck_assert_str_eq(tg_st_meta(f, "train.steps"), "25");
    tg_st_free(f);
    rm_run(tt_path("plan"));
    /* not one step fits a budget already spent */
    c.time_budget = 0.5;
    r = tg_run_new(tt_path("plan"), &c, &(tg_run_options){.spent = 10}, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert_int_eq(tg_run_evaluate(r, NULL, &e), 0);
    ck_assert_int_eq(tg_run_step(r, tg_run_lr(r), NULL, &e), -1); /* (a step plans first) */
    ck_assert_msg(strstr(e.msg, "time_budget 0.5: not one step fits"), "%s", e.msg);
    tg_run_free(r);
    rm_run(tt_path("plan"));
    tg_run_config_release(&c);
}
END_TEST

START_TEST(the_eta_counts_the_evaluations_left)
{
    tg_run_config c;
    small(&c);
    c.steps = 20, c.eval_interval = 5, c.eval_iters = 20; /* evaluations that cost more than the steps */
    tg_error e = {0};
    tg_run *r = tg_run_new(tt_path("eta"), &c, &(tg_run_options){.stop_at = 18}, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    tg_run_eval ev;
    ck_assert_int_eq(tg_run_evaluate(r, &ev, &e), 0);
    nanosleep(&(struct timespec){0, 200000000}, NULL); /* what the program does after it (a picture): counted */
    ck_assert_int_eq(tg_run_step(r, tg_run_lr(r), NULL, &e), 0);
    tg_eta_plan p;
    ck_assert_int_eq(tg_run_eta(r, &p), 0);
    ck_assert_msg(p.eval_s >= ev.seconds + 0.19, "an evaluation of %g s and 0.2 s after it priced %g s", ev.seconds,
                  p.eval_s);
    ck_assert_int_eq(p.steps, 20);
    ck_assert_int_eq(p.stop_at, 18);
    ck_assert(p.step_s > 0 && p.eval_s > 0);
    /* after steps 5, 10 and 15, then the stop's save at 18 */
    ck_assert_int_eq(tg_eta_evals_left(&p, 1), 3);
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 1), 17 * p.step_s + 3 * p.eval_s + p.save_s, 1e-9);
    ck_assert(tg_eta_seconds(&p, 1) > 3 * p.eval_s);
    ck_assert_int_eq(loop(r), TG_RUN_STOP_AT);
    tg_run_free(r);
    r = tg_run_resume(tt_path("eta"), NULL, NULL, &e); /* no evaluation timed yet: named, not priced */
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert_int_eq(tg_run_eta(r, &p), 0);
    ck_assert(p.eval_s < 0);
    char buf[64];
    ck_assert_int_eq(tg_eta_format(&p, 18, buf, sizeof buf), 0);
    ck_assert_msg(strstr(buf, " + 1 evaluation") && !strstr(buf, "evaluations"), "%s", buf);
    tg_run_free(r);
    rm_run(tt_path("eta"));
}
END_TEST

/* ---- stops, the directory, the corpus --------------------------------------------------------- */

START_TEST(stops_the_directory_and_the_corpus)
{
    tg_run_config c;
    small(&c);
    c.steps = 3;
    tg_error e = {0};
    tg_run *r = tg_run_new(tt_path("stops"), &c, NULL, &e);
    ck_assert_msg(r != NULL, "%s", e.msg);
    ck_assert(!tg_run_failed_alone(r));
    int sig = 15;
    ck_assert_int_eq(tg_run_should_stop(r, &sig), TG_RUN_STOP_SIGNAL);
    ck_assert_int_eq(sig, 15);
    sig = 0;
    ck_assert_int_eq(tg_run_should_stop(r, &sig), TG_RUN_GO);
    ck_assert_int_eq(loop(r), TG_RUN_DONE);
    tg_run_free(r);
    char buf[600];
    tg_run_file which;
    ck_assert_str_eq(tg_run_checkpoint(tt_path("stops"), buf, sizeof buf, &which, &e),
                     tt_path("stops/best.safetensors"));
    ck_assert_int_eq(which, TG_RUN_FILE_BEST);
    remove(tt_path("stops/best.safetensors"));
    ck_assert_str_eq(tg_run_checkpoint(tt_path("stops"), buf, sizeof buf, &which, &e),
                     tt_path("stops/last.safetensors"));
    ck_assert_int_eq(which, TG_RUN_FILE_LAST);
    rm_run(tt_path("stops"));
    mkdir(tt_path("stops"), 0777);
    ck_assert_ptr_null(tg_run_checkpoint(tt_path("stops"), buf, sizeof buf, &which, &e));
    ck_assert_msg(strstr(e.msg, "is a directory without best.safetensors or last.safetensors"), "%s", e.msg);
    rmdir(tt_path("stops"));
    /* a failed run leaves no directory it made */
    c.data = tt_path("no such text");
    ck_assert_ptr_null(tg_run_new(tt_path("made"), &c, NULL, &e));
    ck_assert_msg(strstr(e.msg, "No such file or directory"), "%s", e.msg);
    ck_assert_int_ne(access(tt_path("made"), F_OK), 0);
    /* the built-in corpus: the same text from a seed, its floor below the bytes' entropy */
    tg_corpus a, b;
    ck_assert_int_eq(tg_corpus_init(&a, 1, 5000, &e), 0);
    ck_assert_int_eq(tg_corpus_init(&b, 1, 5000, &e), 0);
    ck_assert_uint_ge(a.len, 5000);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_mem_eq(a.text, b.text, a.len);
    ck_assert_int_eq(a.text[a.len - 1], '\n');
    ck_assert(tg_corpus_floor(&a) > 0.1 && tg_corpus_floor(&a) < log(26.0));
    tg_corpus_release(&a);
    tg_corpus_release(&b);
    ck_assert_ptr_null(a.text);
    ck_assert_double_eq(tg_corpus_floor(&a), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("train_run");
    tt_tcase(s, "settings", 0, TT_TESTS(settings_read_back_from_their_text, bad_text_is_refused_naming_the_setting));
    tt_tcase(s, "run", 300,
             TT_TESTS(a_stopped_and_resumed_gpt_ends_on_the_same_bits, a_family_of_ones_own_resumes_on_the_same_bits,
                      a_resume_that_disagrees_is_refused_naming_the_setting,
                      a_time_budget_is_planned_once_after_the_first_evaluation, the_eta_counts_the_evaluations_left,
                      stops_the_directory_and_the_corpus));
    return tt_run_in_tmpdir(s, "tg_train_run", true);
}
