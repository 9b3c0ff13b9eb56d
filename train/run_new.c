/* A run made or resumed (train/run.h): its stages in order, run by every
 * process alike, then agreed on; and freed.
 *
 *   claim       the directory is locked; temporaries of a killed run are
 *               removed; a run already there is continued only by a
 *               resume and replaced only with force
 *   start       a resume: every setting from last.safetensors (changed
 *               by the caller's config or configure, checked against it);
 *               init weights: the model's shape from them
 *   check       what goes with what (run_check.c)
 *   data        the text (a resume's: the recorded file, checked by size
 *               and checksum)
 *   build       vocabulary, model, optimizers, state, batches (run_build.c)
 *   agree       every process succeeded and runs rank 0's run; a new run
 *               takes rank 0's weights */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/cpu.h"
#include "run_internal.h"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The directory is this run's alone; rank 0 claims it and writes there,
 * the others only read a resume's checkpoint. */
static int claim(tg_run *r, bool force, tg_error *err)
{
    char resume[80], init[80], fname[80];
    const bool f = r->say.flags;
    snprintf(resume, sizeof resume, "%s", f ? "--resume" : "tg_run_resume");
    tg_run_label(&r->say, "init", init);
    snprintf(fname, sizeof fname, "%s", f ? "--force" : "force");
    if (r->resumed && (r->init || force)) return tg_error_set(err, "%s excludes %s", resume, r->init ? init : fname);
    if (r->rank == 0 && (r->lock_fd = tg_run_lock(r->dir, &r->made_dir, r->program, &r->say, err)) < 0) return -1;
    const char *last = r->path[TG_RUN_LAST];
    if (r->resumed) {
        if (!exists(last))
            return tg_error_set(err, "%s: %s does not exist: there is no run to continue in %s%s", resume, last, r->dir,
                                r->rank ? " (every process reads it: the directory must be at the same path on every "
                                          "machine)"
                                        : "");
        return 0;
    }
    if (r->rank) return 0;
    if (!exists(last) && !exists(r->path[TG_RUN_BEST])) return 0; /* no weights to lose */
    if (force) {
        for (int i = 0; i < TG_RUN_N_FILES; i++) remove(r->path[i]);
        return 0;
    }
    char state[256] = "";
    tg_st_file *fl = tg_st_load(last, NULL);
    if (fl && tg_st_meta(fl, "train.step") && tg_st_meta(fl, "train.steps")) {
        const char *s = tg_st_meta(fl, "train.step"), *n = tg_st_meta(fl, "train.steps");
        snprintf(state, sizeof state, " (at step %s of %s: %s)", s, n, !strcmp(s, n) ? "finished" : "resumable");
    }
    tg_st_free(fl);
    if (f)
        return tg_error_set(err,
                            "%s already holds a run%s; continue it with --resume (a larger --steps trains it "
                            "longer), or replace it with --force",
                            r->dir, state);
    return tg_error_set(err,
                        "%s already holds a run%s; continue it with tg_run_resume (more steps train it longer), "
                        "or replace it (force)",
                        r->dir, state);
}

/* The schedule the checkpoint records, for the notices of say_schedule. */
static void recorded_schedule(tg_run *r)
{
    const tg_st_file *f = r->from;
    r->was.known = tg_st_meta(f, "train.lr") && tg_st_meta(f, "train.min_lr") && tg_st_meta(f, "train.steps") &&
        tg_st_meta(f, "train.warmup");
    r->was.steps = r->base.steps;
    r->was.decay_steps = r->base.decay_steps ? r->base.decay_steps : r->base.steps;
    r->was.warmup = r->base.warmup;
    r->was.lr = r->base.lr;
    r->was.min_lr = r->base.min_lr;
}

/* A resume: the checkpoint's settings, as the caller changes them; new
 * weights: the model's settings from them. */
static int start(tg_run *r, const tg_run_config *c, const tg_run_options *o, tg_error *err)
{
    if (!r->resumed && !r->init) return tg_run_config_copy(&r->c, c) ? tg_error_set(err, "out of memory") : 0;
    const char *path = r->resumed ? r->path[TG_RUN_LAST] : r->init;
    if (!(r->from = tg_st_load(path, err))) return -1;
    tg_model_config mc;
    if (tg_model_config_read(r->from, &mc, err)) return tg_error_prefix(err, path);
    if (!r->resumed) { /* the init weights: their model settings, the defaults the others' */
        if (tg_run_config_copy(&r->c, c)) return tg_error_set(err, "out of memory");
        if (tg_run_config_against(&r->c, r->from, path, true, &r->say, err)) return -1;
        int n;
        const tg_run_setting *t = tg_run_settings(&n);
        for (int k = 0; k < n; k++) /* (what they set is not given) */
            if (t[k].role == TG_SETTING_MODEL && t[k].kind != TG_SETTING_STRING)
                memcpy(tg_run_field(&r->base, &t[k]), tg_run_field(&r->c, &t[k]), t[k].size);
        return 0;
    }
    tg_run_config_release(&r->base);
    if (tg_run_config_read(&r->base, r->from, err)) return tg_error_prefix(err, path);
    recorded_schedule(r);
    if (tg_run_config_copy(&r->c, c ? c : &r->base)) return tg_error_set(err, "out of memory");
    if (o && o->configure && o->configure(o->ctx, &r->c, err)) return -1;
    if (tg_run_config_against(&r->c, r->from, path, false, &r->say, err)) return -1;
    /* f32 results are the same bits on one kernel path, to rounding across paths (core/cpu.h) */
    const char *isa = tg_st_meta(r->from, "train.isa"), *now = tg_isa_name(tg_isa_active());
    if (isa && strcmp(isa, now))
        tg_run_notify(&r->say, TG_RUN_NOTICE,
                      "the run was made on the %s kernel path and continues on %s: the same "
                      "run to rounding, not bit for bit (TG_ISA=%s gives its bits, where the CPU has it)",
                      isa, now, isa);
    return 0;
}

/* The text: c->data, or the built-in corpus; a resume's must be the one
 * it was trained on. Token files are read once the vocabulary is known. */
static int load_data(tg_run *r, tg_error *err)
{
    r->tokens = r->c.data_tokens != NULL;
    if (r->tokens) return 0;
    return tg_run_text_read(&r->text, &r->c, r->resumed ? r->from : NULL, r->path[TG_RUN_LAST], true, &r->say, err);
}

/* A checkpoint key as a message names it: a setting by its name, the
 * data's identity in words, other keys as they are. */
static void field_name(const tg_run *r, const char *key, char *buf, size_t size)
{
    char name[80];
    if (!strcmp(key, "train.data_bytes")) snprintf(buf, size, "the data's size in bytes");
    else if (!strcmp(key, "train.data_checksum")) snprintf(buf, size, "the data's checksum");
    else if (!strncmp(key, "train.", 6)) snprintf(buf, size, "%s", tg_run_label(&r->say, key + 6, name));
    else snprintf(buf, size, "%s", key);
}

/* Every process's fields against rank 0's, named for a message. */
static int same(tg_run *r, const tg_run_kv *f, tg_error *err)
{
    tg_run_kv named = {0};
    char name[160], msg[TG_ERROR_SIZE] = "";
    int rc = 0;
    for (int i = 0; i < f->n; i++) {
        field_name(r, f->kv[2 * i], name, sizeof name);
        rc |= tg_run_kv_add(&named, name, f->kv[2 * i + 1]);
    }
    if (rc) r->b->abort(r->b->ctx, "out of memory comparing the run with rank 0's");
    rc = r->b->same(r->b->ctx, (const char *const *)named.kv, named.n, msg, sizeof msg);
    tg_run_kv_free(&named);
    return rc ? tg_error_set(err, "%s", msg) : 0;
}

/* What every process must share with rank 0: what the data is (a text or
 * token files: their recorded keys differ, so it is compared first), the
 * run's recorded settings (the text by size and checksum; its path may
 * differ), the model, the vocabulary, the parameters' count, resumed the
 * checkpoint's state, and what decides the order of the collectives (the
 * buckets, the stop); then the weights. A new run takes rank 0's initial
 * weights, as DDP does (machines whose libm rounds differently draw other
 * ones), but only once the processes are known to hold models of one
 * shape: a broadcast into a smaller model would overrun it. */
static int same_run(tg_run *r, tg_error *err)
{
    if (r->ranks == 1) return 0;
    tg_params *p = r->m.params;
    const size_t bytes = (size_t)tg_params_numel(p) * tg_dtype_size(r->c.dtype);
    tg_run_kv f = {0};
    char buf[1200], data[80], tokens[80];
    tg_run_label(&r->say, "data", data);
    tg_run_label(&r->say, "data-tokens", tokens);
    snprintf(buf, sizeof buf, r->tokens ? "token files (%s)" : "a text (%s or the built-in corpus)",
             r->tokens ? tokens : data);
    int rc = tg_run_kv_add(&f, "the data", buf);
    for (int i = 0; i < r->meta.n; i++) { /* not the data's paths: machines may mount it elsewhere */
        const char *k = r->meta.kv[2 * i];
        if (strcmp(k, "train.data") && strcmp(k, "train.data_tokens") && strcmp(k, "train.val_tokens"))
            rc |= tg_run_kv_add(&f, k, r->meta.kv[2 * i + 1]);
    }
    const tg_model_config *c = &r->m.config;
    const char *ik[7] = {"n_layer", "n_head", "n_embd", "block_size", "vocab_size", "n_kv_head", "hidden_dim"};
    const int iv[7] = {c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, c->n_kv_head, c->hidden_dim};
    rc |= tg_run_kv_add(&f, "arch", c->arch ? c->arch : "");
    for (int i = 0; i < 7; i++) snprintf(buf, sizeof buf, "%d", iv[i]), rc |= tg_run_kv_add(&f, ik[i], buf);
    snprintf(buf, sizeof buf, "%d %d %d %d %d %d %.17g %.17g %.17g %.17g %d %s", c->bias, c->rope_halves, c->tied,
             c->qk_norm, c->zero_init_proj, c->untie_head, c->rope_theta, c->norm_eps, c->dropout, c->logit_softcap,
             (int)c->gelu, tg_ffn_kind_name(c->mlp) ? tg_ffn_kind_name(c->mlp) : "?");
    rc |= tg_run_kv_add(&f, "the model's options", buf);
    tg_vocab_to_string(&r->v, buf, sizeof buf);
    rc |= tg_run_kv_add(&f, "vocab", buf);
    snprintf(buf, sizeof buf, "%zu, checksum %016llx", r->d.n, /* a tokenizer's, or a token file's */
             (unsigned long long)tg_run_fnv1a64(r->d.tokens, r->d.n * sizeof *r->d.tokens));
    rc |= tg_run_kv_add(&f, "tokens", buf);
    tg_run_sync_stats st;
    r->b->sync_stats(r->sync, &st);
    snprintf(buf, sizeof buf, "%lld elements (%zu bytes) in %d bucket%s", (long long)tg_params_numel(p), bytes,
             st.buckets, st.buckets == 1 ? "" : "s");
    rc |= tg_run_kv_add(&f, "parameters", buf);
    rc |= tg_run_kv_add(&f, "start", r->resumed ? "a resume" : r->init ? "init weights" : "a new run");
    snprintf(buf, sizeof buf, "%lld", (long long)r->stop_at);
    rc |= tg_run_kv_add(&f, "train.stop_at", buf);
    if (r->resumed) {
        const tg_st_tensor *m = tg_st_find(r->from, "optimizer.m"), *v = tg_st_find(r->from, "optimizer.v");
        snprintf(buf, sizeof buf, "step %lld, moments %016llx %016llx, data stream %016llx %016llx",
                 (long long)r->ts.step, (unsigned long long)tg_run_fnv1a64(m->data, m->nbytes),
                 (unsigned long long)tg_run_fnv1a64(v->data, v->nbytes), (unsigned long long)r->ts.data_rng.state,
                 (unsigned long long)r->ts.data_rng.inc);
        rc |= tg_run_kv_add(&f, "checkpoint", buf);
    }
    if (rc) r->b->abort(r->b->ctx, "out of memory comparing the run with rank 0's");
    rc = same(r, &f, err);
    tg_run_kv_free(&f);
    if (rc) return -1; /* on every process alike: nothing was broadcast */
    if (!r->from) r->b->bcast(r->b->ctx, tg_params_data(p), bytes, 0); /* the same shapes everywhere */
    tg_run_kv w = {0};
    snprintf(buf, sizeof buf, "checksum %016llx", (unsigned long long)tg_run_fnv1a64(tg_params_data(p), bytes));
    if (tg_run_kv_add(&w, "weights", buf)) r->b->abort(r->b->ctx, "out of memory comparing the run with rank 0's");
    rc = same(r, &w, err);
    tg_run_kv_free(&w);
    return rc;
}

/* A resume: what the schedule does from here. More steps do not stretch
 * the cosine, whose end is the run's decay_steps (the steps after it
 * train at min_lr); and schedule settings given anew change the learning
 * rate from the next step on. */
static void say_schedule(tg_run *r)
{
    const tg_run_config *c = &r->c;
    const int64_t s = r->ts.step, from = (s > c->decay_steps ? s : c->decay_steps) + 1;
    char ds[80], mlr[80], range[80];
    tg_run_label(&r->say, "decay-steps", ds);
    tg_run_label(&r->say, "min-lr", mlr);
    if (!r->was.known) return;
    if (c->steps > r->was.steps && c->steps > c->decay_steps && !tg_run_given(c, &r->base, "decay-steps")) {
        if (from < c->steps)
            snprintf(range, sizeof range, "steps %lld to %lld train", (long long)from, (long long)c->steps);
        else snprintf(range, sizeof range, "step %lld trains", (long long)from);
        tg_run_notify(&r->say, TG_RUN_NOTICE,
                      "the cosine schedule ends at the run's %s %lld, so %s at %s %g; give %s "
                      "%lld to decay over the longer run instead",
                      ds, (long long)c->decay_steps, range, mlr, c->min_lr, ds, (long long)c->steps);
    }
    tg_lr_schedule was = r->sched;
    was.warmup = r->was.warmup, was.decay_steps = r->was.decay_steps, was.lr = r->was.lr, was.min_lr = r->was.min_lr;
    const double now = tg_lr_at(&r->sched, s), then = tg_lr_at(&was, s);
    if (now != then)
        tg_run_notify(&r->say, TG_RUN_NOTICE,
                      "the schedule changed: step %lld trains at learning rate %.4g, where the "
                      "run's schedule gave %.4g",
                      (long long)s + 1, now, then);
}

/* The stages' failure, agreed: the first failing process's message on every one. */
static int agreed(tg_run *r, bool failed, tg_error *err)
{
    char msg[TG_ERROR_SIZE];
    snprintf(msg, sizeof msg, "%s", failed && err ? err->msg : "");
    bool all = false;
    const int who = r->b->agree(r->b->ctx, failed, msg, sizeof msg, &all);
    if (who < 0) return 0;
    r->everywhere = true;
    if (all || r->ranks == 1) return tg_error_set(err, "%s", msg);
    return tg_error_set(err, "rank %d: %s", who, msg);
}

static tg_run *make(const char *dir, const tg_run_config *c, const tg_run_options *o, bool resume, tg_error *err)
{
    tg_run *r = calloc(1, sizeof *r);
    if (!r) return tg_error_set(err, "run: out of memory"), NULL;
    r->t_start = tg_run_clock() - (o ? o->spent : 0);
    r->lock_fd = -1;
    r->budget_left_at = r->best_step = -1;
    r->resumed = resume;
    r->evaluated = resume; /* the step a resume starts at was evaluated, or was a stop */
    r->b = o && o->backend ? o->backend : tg_run_local_backend();
    r->rank = r->b->rank;
    r->ranks = r->b->size;
    if (r->rank == 0) tg_run_say_from(&r->say, o);
    r->say.flags = o && o->flag_names;
    r->program = o ? o->program : NULL;
    r->stop_at = o ? o->stop_at : 0;
    r->progress = o ? o->progress : NULL;
    r->ctx = o ? o->ctx : NULL;
    r->init = o ? o->init : NULL;
    tg_run_config_init(&r->base);
    r->text.floor_nats = -1;
    snprintf(r->dir, sizeof r->dir, "%s", dir ? dir : "");
    for (int i = 0; i < TG_RUN_N_FILES; i++) snprintf(r->path[i], sizeof r->path[i], "%s/%s", r->dir, TG_RUN_FILES[i]);
    bool failed = !dir || (!resume && !c);
    if (failed) tg_error_set(err, "%s: NULL %s", resume ? "run_resume" : "run_new", dir ? "config" : "directory");
    failed = failed || claim(r, o && o->force, err) || start(r, c, o, err) || tg_run_check(r, err) ||
        load_data(r, err) || tg_run_build(r, err);
    if (agreed(r, failed, err) || same_run(r, err)) goto fail;
    failed = r->rank == 0 &&
        !(r->csv =
              tg_run_metrics_open(r->path[TG_RUN_METRICS], resume ? r->ts.step : -1, r->c.log_digits, &r->say, err));
    if (agreed(r, failed, err)) goto fail;
    r->everywhere = false;
    r->probe_s = r->b->sync_probe(r->sync, 3); /* (the gradients are still zero) */
    r->first_step = r->ts.step;
    if (!resume && r->ema && tg_ema_reset(r->ema, err))
        goto fail; /* the averages start as the weights every process now holds */
    if (r->ranks == 1 && r->c.zero)
        tg_run_notify(&r->say, TG_RUN_NOTICE, "%s 1 on one process: there is nothing to shard",
                      r->say.flags ? "--zero" : "zero");
    if (resume) say_schedule(r);
    tg_st_free(r->from);
    r->from = NULL;
    r->init = NULL;
    return r;
fail:
    if (r->made_dir) rmdir(r->dir); /* only while still empty: a failed run leaves no empty directory behind */
    tg_run_free(r);
    return NULL;
}

tg_run *tg_run_new(const char *dir, const tg_run_config *c, const tg_run_options *o, tg_error *err)
{
    return make(dir, c, o, false, err);
}

tg_run *tg_run_resume(const char *dir, const tg_run_config *c, const tg_run_options *o, tg_error *err)
{
    return make(dir, c, o, true, err);
}

void tg_run_free(tg_run *r)
{
    if (!r) return;
    if (r->pending && r->csv) tg_run_metrics_write(r->csv, &r->row);
    tg_metrics_close(r->csv);
    if (r->lock_fd >= 0) close(r->lock_fd);
    free(r->x);
    free(r->y);
    tg_graph_free(r->g);
    tg_ema_free(r->ema);
    tg_muon_free(r->muon);
    tg_adamw_free(r->opt);
    if (r->sync) r->b->sync_free(r->sync);
    tg_model_release(&r->m);
    tg_st_free(r->from);
    tg_dataset_release(&r->d);
    tg_vocab_release(&r->v);
    tg_run_text_release(&r->text);
    tg_run_kv_free(&r->meta);
    tg_run_config_release(&r->c);
    tg_run_config_release(&r->base);
    free(r);
}
