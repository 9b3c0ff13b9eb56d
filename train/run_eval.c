/* A run's evaluations and saves (train/run.h): the train and val loss of
 * its weights (and of their averages), best.safetensors, and
 * last.safetensors with the whole state. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

int tg_run_fail(tg_error *err, const char *fmt, ...)
{
    char buf[TG_ERROR_SIZE]; /* the arguments may include err's own message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tg_error_set(err, "%s", buf);
}

/* ---- the loss estimate ------------------------------------------------------ */

typedef struct estimate_ctx {
    const tg_run *r;
    int64_t step;
    bool val;
} estimate_ctx;

static void est_sum(void *ctx, double *x)
{
    const tg_run *r = ((estimate_ctx *)ctx)->r;
    r->b->sum(r->b->ctx, x, 1);
}

static void est_progress(void *ctx, int64_t done, int64_t iters)
{
    const estimate_ctx *e = ctx;
    e->r->progress(e->r->ctx, e->step, e->val, done, iters);
}

/* The mean loss of the weights in the store over iters batches of the
 * run's size (0: the whole split), as tg_eval_loss. */
static double estimate(tg_run *r, bool val, int64_t iters, tg_error *err)
{
    estimate_ctx e = {r, r->ts.step, val};
    tg_eval_spec s = tg_run_eval_spec(&r->c, iters, r->ts.step);
    s.rank = r->rank, s.ranks = r->ranks, s.sum = est_sum, s.ctx = &e;
    s.progress = r->progress && r->rank == 0 ? est_progress : NULL;
    return tg_eval_loss(r->g, &r->m, &r->d, val, &s, err);
}

tg_eval_spec tg_run_eval_spec(const tg_run_config *c, int64_t iters, int64_t step)
{
    if (!c) return (tg_eval_spec){0};
    return (tg_eval_spec){.batch = c->batch_size,
                          .accum = c->grad_accum,
                          .T = c->block_size,
                          .iters = iters,
                          .seed = (uint64_t)c->seed,
                          .step = step,
                          .whole = iters == 0,
                          .rank = 0,
                          .ranks = 1};
}

/* Train and val loss of the weights in the store into l. */
static int measure(tg_run *r, tg_run_loss *l, const char *weights, tg_error *err)
{
    *l = (tg_run_loss){.step = r->ts.step, .weights = weights};
    l->train = estimate(r, false, r->c.eval_iters, err);
    l->val = isnan(l->train) ? NAN : estimate(r, true, r->c.full_val ? 0 : r->c.eval_iters, err);
    if (isnan(l->train) || isnan(l->val)) return -1; /* tg_eval_loss's message (its graph is reset) */
    if (!isfinite(l->train) || !isfinite(l->val)) {
        r->everywhere = true; /* a sum across processes: the same everywhere */
        return tg_error_set(err, "the loss is not finite at step %lld", (long long)r->ts.step);
    }
    l->train_bpb = tg_bits_per_byte(l->train, r->d.bytes_per_token[0]);
    l->val_bpb = tg_bits_per_byte(l->val, r->d.bytes_per_token[1]);
    return 0;
}

/* ---- checkpoints ---------------------------------------------------------------- */

int tg_run_save_last(tg_run *r, tg_error *err)
{
    const tg_run_backend *b = r->b;
    r->ts.drop_rng = *tg_graph_rng(r->g);
    if (!b->sync_params_agree(r->sync)) { /* the same steps from the same sums: the same weights everywhere */
        r->everywhere = true;
        return tg_error_set(err,
                            "at step %lld the processes' weights differ (their sums across processes did not "
                            "agree)",
                            (long long)r->ts.step);
    }
    if (r->muon && r->c.zero == 1 && r->ranks > 1) b->sync_muon_share(r->sync, r->muon, true); /* from owners */
    const size_t bytes = (size_t)tg_params_numel(r->m.params) * tg_dtype_size(r->c.dtype);
    void *m = NULL, *v = NULL;
    int64_t lo, hi;
    tg_adamw_shard(r->opt, &lo, &hi);
    if (hi - lo != tg_params_numel(r->m.params)) { /* sharded: the moments of every process, on rank 0 */
        if (r->rank == 0 && (!(m = malloc(bytes)) || !(v = malloc(bytes)))) {
            free(m);
            return tg_error_set(err, "out of memory for the optimizer's moments (%zu bytes twice) of the checkpoint",
                                bytes);
        }
        b->sync_gather_shard(r->sync, tg_adamw_m(r->opt), m);
        b->sync_gather_shard(r->sync, tg_adamw_v(r->opt), v);
    }
    int rc = r->ema && tg_run_kv_set(&r->meta, "weights", "raw") ? tg_error_set(err, "out of memory") : 0;
    const double t0 = tg_run_clock();
    const tg_checkpoint ck = {.model = &r->m,
                              .vocab = &r->v,
                              .opt = r->opt,
                              .opt_m = m,
                              .opt_v = v,
                              .muon = r->muon,
                              .ema = r->ema,
                              .ts = &r->ts,
                              .meta = (const char *const *)r->meta.kv,
                              .n_meta = r->meta.n};
    if (!rc && r->rank == 0 && tg_checkpoint_save(r->path[TG_RUN_LAST], &ck, err)) rc = -1;
    free(m);
    free(v);
    r->save_s = tg_run_clock() - t0;
    return rc;
}

/* The weights in the store, evaluated to val loss `val`, into
 * best.safetensors when no evaluation before was lower, with the run's
 * settings, the step and (an averaging run's) whose weights they are. */
static int keep_best(tg_run *r, double val, const char *weights, bool *best, tg_error *err)
{
    if (!(val < r->ts.best_val)) return 0;
    r->ts.best_val = val;
    r->best_step = r->ts.step;
    r->best_weights = weights;
    *best = true;
    if (weights && tg_run_kv_set(&r->meta, "weights", weights)) return tg_error_set(err, "out of memory");
    const tg_train_state at = {.step = r->ts.step};
    const tg_checkpoint ck = {
        .model = &r->m, .vocab = &r->v, .ts = &at, .meta = (const char *const *)r->meta.kv, .n_meta = r->meta.n};
    return r->rank == 0 && tg_checkpoint_save(r->path[TG_RUN_BEST], &ck, err) ? -1 : 0;
}

/* The losses of the weights, or of the weights (raw) and their averages
 * (ema) on the same windows: the lower val loss of the two competes for
 * best.safetensors, which records whose weights it holds. */
static int losses(tg_run *r, tg_run_eval *ev, tg_error *err)
{
    if (!r->ema) {
        ev->n = 1;
        return measure(r, &ev->loss[0], NULL, err) || keep_best(r, ev->loss[0].val, NULL, &ev->best, err) ? -1 : 0;
    }
    ev->n = 2;
    if (measure(r, &ev->loss[0], "raw", err)) return -1;
    if (tg_ema_swap(r->ema, err)) return -1; /* the averages in the store, the weights beside them */
    int rc = measure(r, &ev->loss[1], "ema", err);
    const bool averages = !rc && ev->loss[1].val <= ev->loss[0].val;
    if (averages) rc = keep_best(r, ev->loss[1].val, "ema", &ev->best, err);
    if (tg_ema_swap(r->ema, err)) return -1;
    return rc || (!averages && keep_best(r, ev->loss[0].val, "raw", &ev->best, err)) ? -1 : 0;
}

void tg_run_eval_close(tg_run *r)
{
    if (r->eval_t0 > 0) r->eval_s = tg_run_clock() - r->eval_t0;
    r->eval_t0 = 0;
}

int tg_run_evaluate(tg_run *r, tg_run_eval *out, tg_error *err)
{
    if (!r) return tg_error_set(err, "run_evaluate: NULL run");
    tg_run_eval_close(r);
    r->everywhere = false;
    tg_run_eval ev = {0};
    const double t0 = tg_run_clock();
    if (losses(r, &ev, err)) return -1;
    tg_run_row row = r->pending ? r->row : (tg_run_row){r->ts.step, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    const tg_run_loss *l = &ev.loss[ev.n - 1]; /* the averages' with an averaging run */
    row.train = l->train, row.val = l->val, row.train_bpb = l->train_bpb, row.val_bpb = l->val_bpb;
    r->pending = false;
    if (r->rank == 0) tg_run_metrics_write(r->csv, &row);
    if (tg_run_save_last(r, err)) return -1;
    r->evaluated = true;
    r->eval_s = ev.seconds = tg_run_clock() - t0; /* what the next one is expected to cost (the ETA, the budget), */
    r->eval_t0 = t0; /* with what the program does after it until its next call */
    r->eval_timed = true;
    if (out) *out = ev;
    return 0;
}

int tg_run_save(tg_run *r, tg_error *err)
{
    if (!r) return tg_error_set(err, "run_save: NULL run");
    tg_run_eval_close(r);
    r->everywhere = false;
    if (r->pending && r->rank == 0) tg_run_metrics_write(r->csv, &r->row);
    r->pending = false;
    return tg_run_save_last(r, err);
}

bool tg_run_eval_due(const tg_run *r)
{
    if (!r || r->evaluated) return false;
    const int64_t s = r->ts.step;
    return s == 0 || s % r->c.eval_interval == 0 || s == r->c.steps;
}
