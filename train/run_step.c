/* A run's optimizer steps (train/run.h): the micro-batches, the sums
 * across processes, clipping, AdamW and Muon; whether to stop before the
 * next one; the time budget's plan; what the run is. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

/* Muon under ZeRO-1 on several processes: each matrix is its owner's
 * (tg_muon_owner) to update, whole, and send. */
static bool muon_sharded(const tg_run *r) { return r->muon && r->c.zero == 1 && r->ranks > 1; }

/* One optimizer step: grad_accum micro-batches of this process's rows,
 * each backward seeded with 1 / (processes x grad_accum), so that summed
 * across the processes (while the last micro-batch's backward runs) the
 * gradients are the mean over the whole global batch; clipping by the
 * global norm; AdamW on the range this process updates (everything, or
 * with zero 1 its shard, gathered into every process's weights after);
 * Muon. The step's loss (the mean over every micro-batch of every
 * process), or NAN with the message. */
static double train_step(tg_run *r, int64_t step, double lr, tg_error *err)
{
    const tg_run_config *c = &r->c;
    const tg_run_backend *b = r->b;
    const int B = c->batch_size, T = c->block_size, A = c->grad_accum, R = r->ranks;
    const double inv = 1.0 / ((double)A * R);
    const float inv_f = (float)inv;
    const void *seed = c->dtype == TG_F32 ? (const void *)&inv_f : (const void *)&inv;
    double sum = 0;
    const tg_rows rows = {r->x, r->y, R * B, r->rank * B, B, T}; /* this process's rows of the batch */
    for (int k = 0; k < A; k++) {
        if (c->sampling == TG_RUN_EPOCHS) tg_dataset_epoch_rows(&r->d, false, &rows, (uint64_t)c->seed, r->ts.windows);
        else tg_dataset_rows(&r->d, false, &rows, &r->ts.data_rng);
        r->ts.windows += R * B;
        tg_tensor *xt = tg_tensor_from(r->g, TG_I32, 2, (int[]){B, T}, r->x); /* (B,T) */
        tg_tensor *yt = tg_tensor_from(r->g, TG_I32, 2, (int[]){B, T}, r->y); /* (B,T) */
        tg_tensor *loss = tg_model_loss(r->g, &r->m, xt, yt); /* () */
        const bool last = k == A - 1; /* earlier micro-batches only accumulate */
        if (last) b->sync_begin(r->sync, r->g);
        const int rc = tg_graph_backward_seeded(r->g, loss, seed);
        if (last) b->sync_end(r->sync);
        if (rc != 0) {
            tg_run_fail(err, "step %lld: %s", (long long)step, tg_graph_error(r->g));
            return NAN;
        }
        const double lv = tg_tensor_item(loss);
        tg_graph_reset(r->g);
        if (!isfinite(lv)) {
            tg_error_set(err, "step %lld: the loss is %g", (long long)step, lv);
            return NAN;
        }
        sum += lv;
    }
    b->sum(b->ctx, &sum, 1);
    if (c->grad_clip > 0) {
        const double norm = b->sync_clip(r->sync, c->grad_clip);
        if (!isfinite(norm)) {
            r->everywhere = true; /* the norm of the summed gradients: the same on every process */
            tg_error_set(err, "step %lld: the gradient norm is %g", (long long)step, norm);
            return NAN;
        }
    }
    if (muon_sharded(r)) b->sync_muon_grads(r->sync, r->muon);
    if (tg_adamw_step_grad(r->opt, lr, b->sync_grad(r->sync), err)) return NAN;
    b->sync_gather_params(r->sync); /* (Muon's matrices: AdamW left them, the same everywhere) */
    if (r->muon) { /* its learning rate follows the same schedule, scaled to muon_lr */
        const double mlr = c->lr > 0 ? lr * (c->muon_lr / c->lr) : c->muon_lr;
        if (muon_sharded(r)) {
            if (tg_muon_step_part(r->muon, mlr, r->rank, r->ranks, err)) return NAN;
            b->sync_muon_share(r->sync, r->muon, false);
        } else {
            if (tg_muon_step(r->muon, mlr, err)) return NAN;
        }
    }
    tg_params_zero_grad(r->m.params);
    return sum / ((double)A * R);
}

double tg_run_lr(const tg_run *r) { return r ? tg_lr_at(&r->sched, r->ts.step) : 0; }

int tg_run_step(tg_run *r, double lr, tg_run_step_info *out, tg_error *err)
{
    if (!r) return tg_error_set(err, "run_step: NULL run");
    tg_run_eval_close(r);
    if (r->plan && tg_run_plan_steps(r, NULL, err)) return -1;
    r->everywhere = false;
    if (r->pending && r->rank == 0) tg_run_metrics_write(r->csv, &r->row);
    r->pending = false;
    const tg_run_config *c = &r->c;
    const double t0 = tg_run_clock();
    const double loss = train_step(r, r->ts.step + 1, lr, err);
    if (isnan(loss)) return -1;
    if (r->ema && tg_ema_update(r->ema, err)) return -1;
    r->ts.step++;
    r->evaluated = false;
    const double ms = 1e3 * (tg_run_clock() - t0);
    r->ms_avg = r->ts.step == r->first_step + 1 ? ms : 0.9 * r->ms_avg + 0.1 * ms;
    const double tokens = (double)r->ranks * c->batch_size * c->grad_accum * c->block_size;
    r->row = (tg_run_row){r->ts.step, loss, lr, ms, tokens / (r->ms_avg / 1e3), NAN, NAN, NAN, NAN};
    if (tg_run_eval_due(r)) r->pending = true; /* the evaluation writes the row, with its losses */
    else if (r->rank == 0) tg_run_metrics_write(r->csv, &r->row);
    if (out)
        *out = (tg_run_step_info){.step = r->ts.step,
                                  .loss = loss,
                                  .lr = lr,
                                  .ms = ms,
                                  .ms_avg = r->ms_avg,
                                  .tokens_per_s = r->row.tokens_per_s};
    return 0;
}

/* ---- stopping ------------------------------------------------------------------- */

/* the share of the budget the chosen steps leave unused (tg_run_plan_steps) */
#define BUDGET_MARGIN 0.1

/* A time budget is a deadline: when the machine has slowed since the
 * steps were timed so that the next step and what follows it (an
 * evaluation, or the save of a stop) would end past the budget, the run
 * stops as if interrupted, resumable; its steps so far are the chosen
 * run's. (Rank 0's clock decides.) A step costs what the recent steps
 * took (their moving average), an evaluation with its saves what the
 * latest one took (timed again at each), and what follows half as much
 * again, up to half the margin: on a machine whose speed moves, one
 * evaluation is no measure of the next, and with at most half the margin
 * a run on a steady machine never stops for it. */
static bool out_of_time(const tg_run *r)
{
    const tg_run_config *c = &r->c;
    if (!(c->time_budget > 0) || r->resumed || r->rank) return false;
    const int64_t step = r->ts.step;
    const double step_s = r->ms_avg > 0 ? r->ms_avg / 1e3 : r->step_s;
    const bool last = step + 1 == c->steps, evaluates = (step + 1) % c->eval_interval == 0 || last;
    /* then, but for the last step (the run ends with its evaluation), room to stop at the next check: a
     * stop's save and picture, at most what an evaluation with its saves takes */
    const double after = step_s + (evaluates ? r->eval_s : 0) + (last ? 0 : r->eval_s);
    const double slack = fmin(0.5 * after, 0.5 * BUDGET_MARGIN * c->time_budget);
    return tg_run_clock() - r->t_start + after + slack > c->time_budget;
}

tg_run_stop tg_run_should_stop(tg_run *r, int *signal)
{
    if (!r) return TG_RUN_GO;
    tg_run_eval_close(r);
    if (r->ts.step >= r->c.steps) return TG_RUN_DONE;
    /* a signal on any process (mpirun passes Ctrl-C on as SIGTERM to every one, not at the same instant):
     * every process stops at the same step; lateness is rank 0's clock's, for every process */
    int64_t v[2] = {signal ? *signal : 0, out_of_time(r)};
    r->b->max(r->b->ctx, v, 2);
    if (signal) *signal = (int)v[0];
    if (v[0]) return TG_RUN_STOP_SIGNAL;
    if (v[1]) return TG_RUN_STOP_LATE;
    if (r->stop_at && r->ts.step >= r->stop_at) return TG_RUN_STOP_AT;
    return TG_RUN_GO;
}

/* ---- the time budget's plan ---------------------------------------------------- */

/* The steps the budget holds, fixed once and for all before the first
 * step. The step-0 evaluation with its saves was timed (eval_s). Steps
 * are timed on a snapshot of the state and undone, so the run is the
 * same run as that many steps would be: BUDGET_WARM untimed, then as
 * many as take about BUDGET_TIMING of the budget (at least
 * BUDGET_MIN_TIMED, at most BUDGET_MAX_TIMED), their mean the step's
 * cost: on a shared machine a longer look sees the load a few steps
 * miss. Rank 0 decides and tells the others (each count too: the steps
 * sum across processes). The count is recorded (train.steps,
 * train.budget_steps) in last.safetensors at once: a resume continues
 * the same steps and schedule. */
#define BUDGET_WARM 2
#define BUDGET_MIN_TIMED 5
#define BUDGET_MAX_TIMED 200
#define BUDGET_TIMING 0.02

/* n steps from step `first` on, for their time alone: 0, or -1 (the message). */
static int timing_steps(tg_run *r, int64_t first, int64_t n, tg_error *err)
{
    for (int64_t k = first; k < first + n; k++) {
        if (isnan(train_step(r, k + 1, tg_lr_at(&r->sched, k), err))) return -1;
        if (r->ema && tg_ema_update(r->ema, err))
            return -1; /* timed as the run's steps are (the averages restart after) */
    }
    return 0;
}

/* The timed steps' mean, the state put back: 0, or -1. */
static int time_steps(tg_run *r, int64_t *timed, double *step_s, tg_error *err)
{
    r->ts.drop_rng = *tg_graph_rng(r->g);
    tg_train_snapshot *snap = tg_train_snapshot_take(&r->m, r->opt, r->muon, &r->ts, err);
    if (!snap) return -1;
    double t0 = tg_run_clock();
    int rc = timing_steps(r, 0, BUDGET_WARM, err);
    double warm = (tg_run_clock() - t0) / BUDGET_WARM; /* how many to time, from the warm steps (rank 0's) */
    r->b->bcast(r->b->ctx, &warm, sizeof warm, 0);
    const double want = BUDGET_TIMING * r->c.time_budget / (warm > 1e-9 ? warm : 1e-9);
    *timed = want < BUDGET_MIN_TIMED ? BUDGET_MIN_TIMED : want > BUDGET_MAX_TIMED ? BUDGET_MAX_TIMED : (int64_t)want;
    t0 = tg_run_clock();
    rc = rc || timing_steps(r, BUDGET_WARM, *timed, err);
    *step_s = (tg_run_clock() - t0) / (double)*timed;
    const int back = rc ? 0 : tg_train_snapshot_restore(snap, &r->m, r->opt, r->muon, &r->ts);
    tg_train_snapshot_free(snap);
    if (rc) return -1;
    char tb[80];
    if (back)
        return tg_error_set(err, "%s: the state timed could not be put back", tg_run_label(&r->say, "time-budget", tb));
    if (r->ema && tg_ema_reset(r->ema, err))
        return -1; /* the averages start again as these weights (nothing without) */
    *tg_graph_rng(r->g) = r->ts.drop_rng;
    return 0;
}

bool tg_run_needs_plan(const tg_run *r) { return r && r->plan; }

int tg_run_plan_steps(tg_run *r, tg_run_plan *out, tg_error *err)
{
    if (!r) return tg_error_set(err, "run_plan_steps: NULL run");
    if (!r->plan) return 0;
    tg_run_eval_close(r);
    r->everywhere = false;
    tg_run_config *c = &r->c;
    char tb[80], ei[80], wu[80], lr[80];
    tg_run_label(&r->say, "time-budget", tb);
    if (!r->eval_timed) {
        r->everywhere = true;
        return tg_error_set(err,
                            "%s: evaluate the run once before its steps are planned (the plan counts what an "
                            "evaluation costs)",
                            tb);
    }
    int64_t timed = 0;
    double step_s = 0;
    if (time_steps(r, &timed, &step_s, err)) return -1;
    /* the chosen steps, and what they were chosen from, from rank 0 */
    double plan[4] = {tg_run_clock() - r->t_start, step_s, r->eval_s, r->save_s};
    r->b->bcast(r->b->ctx, plan, sizeof plan, 0);
    const tg_budget_costs costs = {.spent = plan[0], .step = plan[1], .eval = plan[2], .fixed = plan[3]};
    r->step_s = costs.step;
    r->eval_s = costs.eval;
    const int64_t n = tg_budget_steps(c->time_budget, BUDGET_MARGIN, &costs, c->eval_interval, c->steps);
    if (n < 1) {
        r->everywhere = true;
        return tg_error_set(err,
                            "%s %g: not one step fits (%.2f s spent before the first step, a step %.3f s, an "
                            "evaluation with its saves %.2f s, a %.0f%% margin); give a larger budget, or a "
                            "smaller %s",
                            tb, c->time_budget, costs.spent, costs.step, costs.eval, 100 * BUDGET_MARGIN,
                            tg_run_label(&r->say, "eval-iters", ei));
    }
    c->steps = c->decay_steps = n;
    tg_run_set_schedule(r);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)n);
    if (tg_run_kv_set(&r->meta, "train.steps", buf) || tg_run_kv_set(&r->meta, "train.decay_steps", buf) ||
        tg_run_kv_set(&r->meta, "train.budget_steps", buf))
        return tg_error_set(err, "out of memory");
    r->plan = false;
    if (out)
        *out = (tg_run_plan){.steps = n,
                             .timed = timed,
                             .spent = costs.spent,
                             .step_s = costs.step,
                             .eval_s = costs.eval,
                             .margin = BUDGET_MARGIN};
    if (c->warmup >= n)
        tg_run_notify(&r->say, TG_RUN_WARNING,
                      "%s %lld is not shorter than the %lld steps the budget holds: the "
                      "learning rate never reaches %s %g",
                      tg_run_label(&r->say, "warmup", wu), (long long)c->warmup, (long long)n,
                      tg_run_label(&r->say, "lr", lr), c->lr);
    return tg_run_save_last(r, err);
}

/* ---- what the run is ------------------------------------------------------------ */

int tg_run_eta(const tg_run *r, tg_eta_plan *out)
{
    if (!r || !out) return -1;
    *out = (tg_eta_plan){.steps = r->c.steps,
                         .stop_at = r->stop_at,
                         .eval_interval = r->c.eval_interval,
                         .step_s = r->ms_avg / 1e3,
                         .eval_s = r->eval_timed ? r->eval_s : -1,
                         .save_s = r->save_s};
    return 0;
}

int tg_run_describe(const tg_run *r, tg_run_info *out)
{
    if (!r || !out) return -1;
    *out = (tg_run_info){.config = &r->c,
                         .model = (tg_model *)&r->m,
                         .vocab = &r->v,
                         .data = &r->d,
                         .text = r->tokens ? NULL : &r->text,
                         .dir = r->dir,
                         .resumed = r->resumed,
                         .step = r->ts.step,
                         .steps = r->c.steps,
                         .rank = r->rank,
                         .ranks = r->ranks,
                         .muon_params = r->muon ? tg_muon_numel(r->muon) : 0,
                         .best_val = r->ts.best_val,
                         .best_step = r->best_step,
                         .best_weights = r->best_weights,
                         .elapsed = tg_run_clock() - r->t_start,
                         .probe_s = r->probe_s};
    tg_adamw_shard(r->opt, &out->shard_lo, &out->shard_hi);
    r->b->sync_stats(r->sync, &out->sync);
    return 0;
}

bool tg_run_failed_alone(const tg_run *r) { return r && r->ranks > 1 && !r->everywhere; }

void tg_run_abort(const tg_run *r, const char *msg)
{
    const tg_run_backend *b = r ? r->b : tg_run_local_backend();
    b->abort(b->ctx, msg);
    abort(); /* (a backend's abort never returns) */
}
