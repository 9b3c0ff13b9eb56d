/* Training checkpoints (train/checkpoint.c): the input as the
 * last.safetensors or best.safetensors of a run, read as `tiny_gpt train
 * --resume` reads it. tg_checkpoint_load_model builds the model (in the
 * dtype the run records, "train.dtype", else f32); tg_checkpoint_load_vocab
 * its vocabulary; tg_checkpoint_load_train its training state into the
 * optimizers the file declares (AdamW; Muon when it holds "muon.momentum",
 * told to leave its matrices to Muon; the averages when it holds
 * "ema.values", at its "ema.decay"). A weights-only file (best.safetensors)
 * is refused as a training state, and must change nothing.
 *
 * What is accepted must hold together: every weight finite, the store the
 * size the config says, the vocabulary fitting the model, the state's
 * counts in step and its values finite (v >= 0), and a save of what was
 * read, read back into new objects, gives the same bits. What is refused
 * must leave the objects as they were. A broken invariant aborts (a
 * finding). */
#include "fuzz_util.h"

#include <math.h>

static bool all_finite(const void *data, bool f32, int64_t n, bool nonneg)
{
    for (int64_t i = 0; i < n; i++) {
        const double x = f32 ? ((const float *)data)[i] : ((const double *)data)[i];
        if (!isfinite(x) || (nonneg && x < 0)) return false;
    }
    return true;
}

static void finding(const char *what, const char *err)
{
    fprintf(stderr, "fuzz: %s%s%s\n", what, err ? ": " : "", err ? err : "");
    abort();
}

/* The objects a resumed run makes for f on model m. */
typedef struct run_state {
    tg_adamw *opt;
    tg_muon *muon;
    tg_ema *ema;
    tg_train_state ts;
} run_state;

static void state_free(run_state *s)
{
    tg_ema_free(s->ema);
    tg_muon_free(s->muon);
    tg_adamw_free(s->opt);
}

/* A decay no run can have (absent, not a number, outside [0, 1)) gives
 * the averages 0.5, which the reader must then refuse. */
static void state_new(run_state *s, const tg_st_file *f, tg_model *m)
{
    memset(s, 0, sizeof *s);
    s->opt = tg_adamw_new(m->params, NULL, NULL);
    if (tg_st_find(f, "muon.momentum")) {
        s->muon = tg_muon_new(m->params, NULL, NULL);
        tg_muon_exclude(s->muon, s->opt, NULL);
    }
    if (tg_st_find(f, "ema.values")) {
        const char *d = tg_st_meta(f, "ema.decay");
        double decay = d ? strtod(d, NULL) : 0.5;
        if (!(decay >= 0 && decay < 1)) decay = 0.5;
        s->ema = tg_ema_new(m->params, decay, NULL);
    }
    tg_train_state_init(&s->ts, 7);
    s->ts.step = 123456789, s->ts.windows = 987654321; /* sentinels: a refusal keeps them */
}

/* The state as a refused read must leave it: fresh (zero moments and
 * momentum, averages equal to the weights, the sentinels). */
static void check_untouched(run_state *s, const tg_model *m, bool f32, const char *err)
{
    const int64_t n = tg_params_numel(m->params);
    const size_t es = f32 ? 4 : 8, bytes = (size_t)n * es;
    for (size_t b = 0; b < bytes; b++)
        if (((unsigned char *)tg_adamw_m(s->opt))[b] || ((unsigned char *)tg_adamw_v(s->opt))[b])
            finding("a refused state changed AdamW's moments", err);
    if (tg_adamw_steps(s->opt) || (s->muon && tg_muon_steps(s->muon)))
        finding("a refused state changed a step count", err);
    for (size_t b = 0; s->muon && b < (size_t)tg_muon_numel(s->muon) * es; b++)
        if (((unsigned char *)tg_muon_momentum(s->muon))[b]) finding("a refused state changed Muon's momentum", err);
    if (s->ema && memcmp(tg_ema_values(s->ema), tg_params_data(m->params), bytes))
        finding("a refused state changed the averages", err);
    if (s->ts.step != 123456789 || s->ts.windows != 987654321) finding("a refused state changed the run's", err);
}

/* An accepted state: its counts in step and range, its values finite. */
static void check_state(run_state *s, const tg_model *m, bool f32)
{
    const int64_t n = tg_params_numel(m->params);
    const tg_train_state *t = &s->ts;
    if (t->step < 0 || t->windows < 0 || !(t->best_val >= 0) || tg_adamw_steps(s->opt) != t->step ||
        (s->muon && tg_muon_steps(s->muon) != t->step))
        finding("an accepted state's counts are not in step", NULL);
    if (!(t->data_rng.inc & 1) || !(t->drop_rng.inc & 1)) finding("an accepted state's stream was never seeded", NULL);
    if (!all_finite(tg_adamw_m(s->opt), f32, n, false) || !all_finite(tg_adamw_v(s->opt), f32, n, true))
        finding("an accepted state's moments are not finite (or v < 0)", NULL);
    if (s->muon && !all_finite(tg_muon_momentum(s->muon), f32, tg_muon_numel(s->muon), false))
        finding("an accepted Muon momentum is not finite", NULL);
    if (s->ema && !all_finite(tg_ema_values(s->ema), f32, tg_ema_numel(s->ema), false))
        finding("accepted averages are not finite", NULL);
}

/* What load_train accepted, saved and read back into new objects: the
 * same bits (the writer takes what the reader took). */
static void round_trip(run_state *s, tg_model *m, const tg_vocab *v, tg_dtype dt)
{
    tg_error err = {0};
    const char *path = fuzz_path(1, "back.safetensors");
    if (!path) return;
    if (tg_checkpoint_save(
            path, &(tg_checkpoint){.model = m, .vocab = v, .opt = s->opt, .muon = s->muon, .ema = s->ema, .ts = &s->ts},
            &err))
        finding("a state load_train accepted is refused by save", err.msg);
    tg_st_file *g = tg_st_load(path, &err);
    tg_model r;
    if (!g || tg_checkpoint_load_model(g, dt, -1, &r, &err)) finding("a saved checkpoint does not load", err.msg);
    run_state b;
    state_new(&b, g, &r);
    if (tg_checkpoint_load_train(g, b.opt, b.muon, b.ema, &b.ts, INT64_MAX, &err))
        finding("a saved training state does not load", err.msg);
    const size_t bytes = (size_t)tg_params_numel(m->params) * tg_dtype_size(dt);
    if (tg_params_numel(r.params) != tg_params_numel(m->params) ||
        memcmp(tg_params_data(r.params), tg_params_data(m->params), bytes) ||
        memcmp(tg_adamw_m(b.opt), tg_adamw_m(s->opt), bytes) || memcmp(tg_adamw_v(b.opt), tg_adamw_v(s->opt), bytes) ||
        (s->ema && memcmp(tg_ema_values(b.ema), tg_ema_values(s->ema), bytes)) ||
        (s->muon &&
         memcmp(tg_muon_momentum(b.muon), tg_muon_momentum(s->muon),
                (size_t)tg_muon_numel(s->muon) * tg_dtype_size(dt))) ||
        b.ts.step != s->ts.step || b.ts.windows != s->ts.windows || b.ts.data_rng.state != s->ts.data_rng.state ||
        b.ts.drop_rng.state != s->ts.drop_rng.state || !(b.ts.best_val == s->ts.best_val))
        finding("a checkpoint saved from what was read reads back otherwise", NULL);
    state_free(&b);
    tg_model_release(&r);
    tg_st_free(g);
    unlink(path);
}

/* A forward pass of a few tokens (id 0): the shapes the file gave work. */
static void forward(tg_model *m)
{
    static tg_graph *g;
    if (!g && !(g = tg_graph_new())) return;
    const int T = m->config.block_size < 4 ? m->config.block_size : 4;
    int32_t ids[4] = {0};
    tg_tensor *x = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids); /* (1,T) */
    (void)tg_model_loss(g, m, x, x);
    tg_graph_reset(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "last.safetensors", data, size);
    if (!path) return 0;
    tg_error err = {0};
    tg_st_file *f = tg_st_load(path, &err);
    if (!f) {
        fuzz_report(0, err.msg);
        return 0;
    }
    const char *d = tg_st_meta(f, "train.dtype");
    const tg_dtype dt = d && !strcmp(d, "f64") ? TG_F64 : TG_F32;
    const bool f32 = dt == TG_F32;
    tg_model m;
    if (tg_checkpoint_load_model(f, dt, -1, &m, &err)) {
        if (m.family || m.params) finding("a refused model is not zeroed", err.msg);
        fuzz_report(0, err.msg);
        tg_st_free(f);
        return 0;
    }
    /* the model: the config's size, every weight finite */
    const int64_t n = tg_params_numel(m.params);
    if (n != tg_model_num_params(&m.config)) finding("the model's store is not the size its config says", NULL);
    if (!all_finite(tg_params_data(m.params), f32, n, false)) finding("an accepted weight is not finite", NULL);
    forward(&m);
    tg_vocab v = {0};
    const bool vocab = tg_checkpoint_load_vocab(f, &m, &v, &err) == 0;
    if (vocab && tg_vocab_check_size(&v, m.config.vocab_size, "its", &err))
        finding("an accepted vocabulary does not fit the model", err.msg);
    run_state s;
    state_new(&s, f, &m);
    const int rc = tg_checkpoint_load_train(f, s.opt, s.muon, s.ema, &s.ts, INT64_MAX, &err);
    fuzz_report(rc == 0, err.msg);
    if (rc) {
        check_untouched(&s, &m, f32, err.msg);
    } else {
        check_state(&s, &m, f32);
        round_trip(&s, &m, vocab ? &v : NULL, dt);
    }
    state_free(&s);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
    return 0;
}
