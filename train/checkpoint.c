/* Checkpoints (train.h): a model's weights under its family's names, its
 * config and vocabulary in __metadata__, and for training checkpoints the
 * optimizer's and the random streams' state, so that a resumed run
 * continues exactly. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/cpu.h"
#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../optim/optim_internal.h"

/* ---- writing ------------------------------------------------------------------ */

/* The objects a checkpoint's state comes from belong to one model: each
 * made on store p (`whose` names it: "the model's"), and AdamW leaving
 * Muon's matrices to Muon (tg_muon_exclude). 0, or -1 with a message
 * starting with fn. */
static int check_objects(const char *fn, const tg_params *p, const char *whose, const tg_adamw *opt,
                         const tg_muon *muon, const tg_ema *ema, tg_error *err)
{
    if (opt && tg_adamw_store(opt) != p)
        return tg_error_set(err, "%s: AdamW (opt) is of another store than %s", fn, whose);
    if (muon && tg_muon_store(muon) != p)
        return tg_error_set(err, "%s: Muon (muon) is of another store than %s", fn, whose);
    if (ema && tg_ema_store(ema) != p)
        return tg_error_set(err, "%s: the averages (ema) are of another store than %s", fn, whose);
    for (int i = 0; muon && opt && i < tg_params_count(p); i++) {
        const tg_tensor *t = tg_params_at(p, i);
        if (tg_muon_updates(muon, t) && tg_adamw_updates(opt, t))
            return tg_error_set(err,
                                "%s: AdamW (opt) updates '%s', which Muon updates too: call "
                                "tg_muon_exclude(muon, opt) when making them",
                                fn, t->name);
    }
    return 0;
}

/* What save is given of the state is what load_train would take back:
 * the objects of the model, the pieces together, the streams seeded,
 * the counts in range and in step. 0, or -1 with a message. */
static int check_state(const tg_model *m, const tg_adamw *opt, const tg_muon *muon, const tg_ema *ema,
                       const tg_train_state *ts, tg_error *err)
{
    static const char fn[] = "checkpoint_save";
    if (muon && !opt)
        return tg_error_set(err,
                            "%s: Muon's state goes with AdamW's: give the AdamW that trains the other "
                            "parameters (opt)",
                            fn);
    if (ema && !opt) return tg_error_set(err, "%s: the averages' state goes with the optimizer's: give opt too", fn);
    if (opt && !ts) return tg_error_set(err, "%s: the optimizer's state goes with the training state: give ts too", fn);
    if (check_objects(fn, m->params, "the model's", opt, muon, ema, err)) return -1;
    if (!opt) return 0;
    if (!(ts->data_rng.inc & 1) || !(ts->drop_rng.inc & 1))
        return tg_error_set(err, "%s: the state's random streams were never seeded (tg_train_state_init)", fn);
    if (ts->step < 0 || !(ts->best_val >= 0))
        return tg_error_set(err,
                            "%s: the state's step %lld or best val loss %g is not a state (step >= 0, "
                            "best >= 0 or inf)",
                            fn, (long long)ts->step, ts->best_val);
    if (ts->windows < 0)
        return tg_error_set(err, "%s: the state's windows drawn, %lld, is below 0", fn, (long long)ts->windows);
    const int64_t steps[2] = {tg_adamw_steps(opt), muon ? tg_muon_steps(muon) : ts->step};
    for (int k = 0; k < 2; k++)
        if (steps[k] != ts->step)
            return tg_error_set(err,
                                "%s: %s has taken %lld step%s but the state is at step %lld (one "
                                "optimizer step per training step)",
                                fn, k ? "Muon" : "AdamW", (long long)steps[k], steps[k] == 1 ? "" : "s",
                                (long long)ts->step);
    return 0;
}

void tg_train_state_init(tg_train_state *ts, uint64_t seed)
{
    if (!ts) return;
    *ts = (tg_train_state){.step = 0, .best_val = INFINITY};
    tg_rng_seed(&ts->data_rng, seed, 1);
    tg_rng_seed(&ts->drop_rng, seed, 4);
}

int tg_checkpoint_save(const char *path, const tg_checkpoint *c, tg_error *err)
{
    const tg_model *m = c ? c->model : NULL;
    if (!path || !m || !m->family || (c->n_meta > 0 && !c->meta))
        return tg_error_set(err, "checkpoint_save: %s is NULL",
                            !path                  ? "the path"
                                : !m || !m->family ? "the model"
                                                   : "meta");
    const tg_vocab *v = c->vocab;
    const tg_adamw *opt = c->opt;
    const tg_muon *muon = c->muon;
    const tg_ema *ema = c->ema;
    const tg_train_state *ts = c->ts;
    const char *const *meta = c->meta;
    const int n_meta = c->n_meta;
    if (check_state(m, opt, muon, ema, ts, err)) return -1; /* nothing the reader would refuse */
    tg_st_writer *w = tg_st_writer_new();
    int rc = !w || tg_model_config_write(&m->config, w) || tg_st_writer_add_meta(w, "format", "tapegrad tiny_gpt");
    if (!rc && v) rc = tg_vocab_write(v, w);
    for (int i = 0; !rc && i < n_meta; i++) rc = tg_st_writer_add_meta(w, meta[2 * i], meta[2 * i + 1]);
    for (int i = 0; !rc && i < tg_params_count(m->params); i++) {
        const tg_tensor *t = tg_params_at(m->params, i);
        rc = tg_st_writer_add_tensor(w, t->name, t);
    }
    char s[64];
    if (!rc && ts) {
        snprintf(s, sizeof s, "%lld", (long long)ts->step);
        rc = tg_st_writer_add_meta(w, "train.step", s);
    }
    if (!rc && opt && ts) {
        rc = tg_adamw_state_write(opt, w, "optimizer", c->opt_m, c->opt_v);
        rc = rc || (muon && tg_muon_state_write(muon, w, "muon"));
        rc = rc || (ema && tg_ema_state_write(ema, w, "ema"));
        snprintf(s, sizeof s, "%.17g", ts->best_val);
        rc = rc || tg_st_writer_add_meta(w, "train.best_val", s);
        tg_rng_to_string(&ts->data_rng, s, sizeof s);
        rc = rc || tg_st_writer_add_meta(w, "train.data_rng", s);
        tg_rng_to_string(&ts->drop_rng, s, sizeof s);
        rc = rc || tg_st_writer_add_meta(w, "train.dropout_rng", s);
        snprintf(s, sizeof s, "%lld", (long long)ts->windows);
        rc = rc || tg_st_writer_add_meta(w, "train.windows", s);
        rc = rc || tg_st_writer_add_meta(w, "train.isa", tg_isa_name(tg_isa_active()));
    }
    if (!w) return tg_error_set(err, "%s: could not assemble the checkpoint: out of memory", path);
    tg_error e = {0}; /* a failed add sticks in the writer: its save says which */
    rc = tg_st_writer_save(w, path, &e);
    tg_st_writer_free(w);
    return rc ? tg_error_set(err, "%s", e.msg) : 0;
}

/* ---- reading the model ---------------------------------------------------------- */

/* The file's tensor `name` must exist with shape (d0, d1). */
static int expect_2d(const tg_st_file *f, const char *name, int d0, int d1, const char *why, tg_error *err)
{
    const tg_st_tensor *e = tg_st_find(f, name);
    if (!e) return tg_error_set(err, "the checkpoint has no tensor '%s'", name);
    if (e->ndim != 2 || e->shape[0] != d0 || e->shape[1] != d1) {
        char s[96] = "(";
        for (int i = 0; i < e->ndim; i++)
            snprintf(s + strlen(s), sizeof s - strlen(s), i ? ",%lld" : "%lld", (long long)e->shape[i]);
        return tg_error_set(err, "the checkpoint's metadata says %s, so '%s' should be (%d,%d), but it is %s)", why,
                            name, d0, d1, s);
    }
    return 0;
}

/* Before a model is built: the embeddings must have the config's shape,
 * so a small file claiming a huge config is refused without allocating. */
static int check_embeddings(const tg_st_file *f, const tg_model_config *c, tg_error *err)
{
    const tg_model_family *fam = tg_model_family_find(c->arch);
    char why[160];
    snprintf(why, sizeof why, "vocab_size %d, n_embd %d", c->vocab_size, c->n_embd);
    if (expect_2d(f, fam->embedding, c->vocab_size, c->n_embd, why, err)) return -1;
    snprintf(why, sizeof why, "block_size %d, n_embd %d", c->block_size, c->n_embd);
    return fam->position ? expect_2d(f, fam->position, c->block_size, c->n_embd, why, err) : 0;
}

/* And the file must hold at least as many float values as the config
 * needs (the embeddings alone may fit a config of a larger model). */
static int check_config_against_tensors(const tg_st_file *f, const tg_model_config *c, tg_error *err)
{
    const int64_t need = tg_model_num_params(c);
    int64_t have = 0;
    for (int i = 0; i < tg_st_count(f); i++) {
        const tg_st_tensor *e = tg_st_at(f, i);
        const char *d = e->dtype; /* every float dtype tg_st_copy_to reads (F16 and BF16 too) */
        if ((!strcmp(d, "F32") || !strcmp(d, "F64") || !strcmp(d, "F16") || !strcmp(d, "BF16")) &&
            strncmp(e->name, "optimizer.", 10))
            have += e->numel;
    }
    if (need < 0 || have < need)
        return tg_error_set(err,
                            "the checkpoint's metadata (%s: n_layer %d, n_head %d, n_embd %d, block_size "
                            "%d, vocab_size %d) describes %lld parameters, but the file holds only %lld float values: "
                            "a tensor is missing, or the metadata is wrong",
                            c->arch, c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, (long long)need,
                            (long long)have);
    return 0;
}

/* Every value of p's tensors is finite. */
static int check_finite(const tg_params *p, tg_error *err)
{
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *t = tg_params_at(p, i);
        for (int64_t k = 0; k < t->numel; k++) {
            const double x = tg_tensor_get(t, k);
            if (!isfinite(x))
                return tg_error_set(err, "the checkpoint's '%s' holds %g at element %lld", t->name, x, (long long)k);
        }
    }
    return 0;
}

int tg_checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, tg_model *m, tg_error *err)
{
    if (!f || !m) return tg_error_set(err, "checkpoint_load_model: %s is NULL", f ? "the model" : "the file");
    memset(m, 0, sizeof *m);
    tg_model_config cfg;
    tg_error e = {0};
    if (tg_model_config_read(f, &cfg, &e) != 0) return tg_error_set(err, "%s", e.msg);
    if (dropout >= 0) cfg.dropout = dropout;
    /* TG_NO_INIT: the file fills every parameter, so nothing is drawn. A
     * config the family refuses gets the family's message, once the file's
     * embeddings are known to be its (so building stays proportional to it) */
    if (check_embeddings(f, &cfg, err)) return -1;
    if (tg_model_num_params(&cfg) < 0)
        return tg_model_init(m, &cfg, dt, TG_NO_INIT, &e) ? tg_error_set(err, "%s", e.msg) : 0;
    if (check_config_against_tensors(f, &cfg, err)) return -1;
    if (tg_model_init(m, &cfg, dt, TG_NO_INIT, &e)) return tg_error_set(err, "%s", e.msg);
    if (tg_st_load_params(m->params, f, &e) != 0) {
        tg_model_release(m);
        return tg_error_set(err, "%s", e.msg);
    }
    if (check_finite(m->params, err)) {
        tg_model_release(m);
        return -1;
    }
    const tg_model_family *fam = m->family;
    const tg_st_tensor *head = cfg.tied && fam->head ? tg_st_find(f, fam->head) : NULL;
    if (head) { /* the head is tied: accept it only if it is the embedding */
        const tg_st_tensor *emb = tg_st_find(f, fam->embedding);
        if (!emb || head->nbytes != emb->nbytes || strcmp(head->dtype, emb->dtype) ||
            memcmp(head->data, emb->data, head->nbytes)) {
            tg_error_set(err, "%s differs from %s; this %s ties the head to the token embedding", fam->head,
                         fam->embedding, fam->arch);
            tg_model_release(m);
            return -1;
        }
    }
    return 0;
}

/* ---- reading the training state ------------------------------------------------ */

int tg_checkpoint_load_vocab(const tg_st_file *f, const tg_model *m, tg_vocab *v, tg_error *err)
{
    if (!f || !m || !v)
        return tg_error_set(err, "checkpoint_load_vocab: the %s is NULL",
                            !f       ? "file"
                                : !m ? "model"
                                     : "vocabulary"),
               -1;
    if (tg_st_meta(f, "vocab")) {
        if (tg_vocab_read(v, f, err)) return -1;
    } else if (!strcmp(m->config.arch, "llama")) {
        tg_vocab_llama2c(v);
    } else {
        return tg_error_set(err, "the checkpoint has no 'vocab' in its metadata (weights from elsewhere)"), -1;
    }
    if (!tg_vocab_check_size(v, m->config.vocab_size, "its", err)) return 0;
    tg_vocab_release(v);
    return -1;
}

/* Puts the averages' copy back (a later part of the file was refused) and frees it. */
static void restore_avg(tg_ema *e, void *keep, size_t bytes)
{
    if (e && keep) memcpy(tg_ema_values(e), keep, bytes);
    tg_free(keep);
}

int tg_checkpoint_load_train(const tg_st_file *f, tg_adamw *opt, tg_muon *muon, tg_ema *ema, tg_train_state *ts,
                             int64_t max_step, tg_error *err)
{
    if (!f || !opt || !ts)
        return tg_error_set(err, "checkpoint_load_train: %s is NULL",
                            !f         ? "the file"
                                : !opt ? "the optimizer"
                                       : "the state");
    if (check_objects("checkpoint_load_train", tg_adamw_store(opt), "the optimizer's", opt, muon, ema, err)) return -1;
    if (!tg_st_find(f, "optimizer.m") || !tg_st_find(f, "optimizer.v") || !tg_st_meta(f, "train.step"))
        return tg_error_set(err,
                            "not a training checkpoint: optimizer state or train.step missing (a "
                            "best.safetensors holds weights only: start from it with --init)");
    tg_train_state t;
    int64_t asteps;
    const char *best = tg_st_meta(f, "train.best_val");
    tg_error e2 = {0};
    if (tg_st_meta_int(f, "train.step", 0, max_step, &t.step, &e2) ||
        tg_st_meta_int(f, "optimizer.steps", 0, INT64_MAX, &asteps, &e2))
        return tg_error_set(err, "%s", e2.msg);
    t.windows = 0; /* a checkpoint from before train.windows: its run drew random windows */
    if (tg_st_meta(f, "train.windows") && tg_st_meta_int(f, "train.windows", 0, INT64_MAX, &t.windows, &e2))
        return tg_error_set(err, "%s", e2.msg);
    if (best && !strcmp(best, "inf")) t.best_val = INFINITY;
    else if (tg_st_meta_double(f, "train.best_val", 0, 1e300, &t.best_val, &e2)) return tg_error_set(err, "%s", e2.msg);
    static const char *const keys[2] = {"train.data_rng", "train.dropout_rng"};
    tg_rng *rngs[2] = {&t.data_rng, &t.drop_rng};
    for (int k = 0; k < 2; k++) {
        const char *s = tg_st_meta(f, keys[k]);
        if (!s) return tg_error_set(err, "checkpoint metadata has no '%s'", keys[k]);
        if (tg_rng_from_string(rngs[k], s, &e2)) { /* "rng_from_string: '<text>' is not ..." */
            const char *why = e2.msg + strlen("rng_from_string: ");
            return tg_error_set(err, "checkpoint metadata '%s'%s%s", keys[k], *why == '\'' ? " = " : ": ", why);
        }
    }
    if (asteps != t.step)
        return tg_error_set(err,
                            "checkpoint metadata 'optimizer.steps' = %lld differs from 'train.step' = %lld "
                            "(one optimizer step per training step)",
                            (long long)asteps, (long long)t.step);
    /* a run keeps its optimizer: Muon's momentum is there exactly when muon is */
    const bool has_muon = tg_st_find(f, "muon.momentum") != NULL;
    if (has_muon != (muon != NULL))
        return tg_error_set(err,
                            "the checkpoint's run %s Muon (tensor 'muon.momentum' %s) but this one %s: a "
                            "resumed run keeps its optimizer",
                            has_muon ? "trains with" : "does not train with", has_muon ? "present" : "absent",
                            muon ? "does" : "does not");
    const bool has_ema = tg_st_find(f, "ema.values") != NULL;
    if (has_ema != (ema != NULL))
        return tg_error_set(err,
                            "the checkpoint's run %s its weights (tensor 'ema.values' %s) but this one %s: "
                            "a resumed run keeps its averaging",
                            has_ema ? "averages" : "does not average", has_ema ? "present" : "absent",
                            ema ? "does" : "does not");
    if (muon) {
        int64_t msteps;
        if (tg_st_meta_int(f, "muon.steps", 0, INT64_MAX, &msteps, &e2)) return tg_error_set(err, "%s", e2.msg);
        if (msteps != t.step)
            return tg_error_set(err,
                                "checkpoint metadata 'muon.steps' = %lld differs from 'train.step' = %lld "
                                "(one optimizer step per training step)",
                                (long long)msteps, (long long)t.step);
    }
    /* the averages first, Muon's state next, AdamW's last; what was read
     * is put back when a later one is refused, so a refused file changes
     * nothing */
    void *keep_avg = NULL;
    const size_t abytes = tg_ema_state_bytes(ema);
    if (ema) {
        if (!(keep_avg = tg_malloc(abytes ? abytes : 1)))
            return tg_error_set(err, "out of memory for a copy of the averages (%zu bytes)", abytes);
        memcpy(keep_avg, tg_ema_values(ema), abytes);
        if (tg_ema_state_read(ema, f, "ema", &e2)) {
            tg_free(keep_avg);
            return tg_error_set(err, "the checkpoint's averages: %s", e2.msg);
        }
    }
    void *keep = NULL;
    int64_t keep_steps = tg_muon_steps(muon);
    const size_t mbytes = tg_muon_state_bytes(muon);
    if (muon) {
        if (!(keep = tg_malloc(mbytes ? mbytes : 1)))
            return restore_avg(ema, keep_avg, abytes),
                   tg_error_set(err, "out of memory for a copy of Muon's state (%zu bytes)", mbytes);
        memcpy(keep, tg_muon_momentum(muon), mbytes);
        if (tg_muon_state_read(muon, f, "muon", &e2)) {
            tg_free(keep);
            restore_avg(ema, keep_avg, abytes);
            return tg_error_set(err, "the checkpoint's Muon state: %s", e2.msg);
        }
    }
    if (tg_adamw_state_read(opt, f, "optimizer", &e2)) {
        if (muon) {
            memcpy(tg_muon_momentum(muon), keep, mbytes);
            tg_muon_set_steps(muon, keep_steps, NULL); /* the count it had */
        }
        tg_free(keep);
        restore_avg(ema, keep_avg, abytes);
        return tg_error_set(err, "the checkpoint's optimizer state: %s", e2.msg);
    }
    tg_free(keep);
    tg_free(keep_avg);
    *ts = t;
    return 0;
}
