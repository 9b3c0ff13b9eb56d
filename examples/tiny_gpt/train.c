/* tiny_gpt train: the nanoGPT recipe (AdamW with nanoGPT's decay groups,
 * cosine schedule with warmup, global-norm clipping, gradient
 * accumulation) on the built-in corpus or any text file, as the loop of
 * nanoGPT's train.py over the library's run (train/run.h): flags to a
 * config, tg_run_new or tg_run_resume, then one tg_run_step per step and
 * a tg_run_evaluate when one is due, and the printing.
 *
 * On R processes (mpirun -np R tiny_gpt train, docs/distributed.md) every
 * rank runs the same loop on the same flags and data through
 * tg_dist_run_backend(); rank 0 alone prints and writes files. Ctrl-C or
 * SIGTERM stops the run at the next step boundary (on every rank at the
 * same step), saved, to be resumed.
 *
 * Steps are counted as the console shows them: step k is the k-th
 * optimizer step, and metrics.csv has one row per step. A resumed run
 * follows the uninterrupted one exactly: the same batches, dropout masks
 * and losses. */
#include "train.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../distributed/dist.h"
#include "tiny_gpt.h"

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

/* What the loop prints with. */
typedef struct cli {
    train_opts o;
    arg_spec specs[TRAIN_MAX_SPECS];
    int n_specs;
    bool tty, lead; /* stderr is a terminal; this is rank 0, which prints */
    const char *cr; /* "\r\033[K" on a terminal: the progress line is rewritten in place */
    tg_run *r;
    tg_run_info info;
} cli;

static void notice(void *ctx, tg_run_notice kind, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "tiny_gpt train: %s%s\n",
            kind == TG_RUN_NOTICE        ? "notice: "
                : kind == TG_RUN_WARNING ? "warning: "
                                         : "",
            msg);
}

static void progress(void *ctx, int64_t step, bool val, int64_t done, int64_t iters)
{
    (void)ctx;
    eval_progress(step, val, done, iters);
}

/* A resume: the flags given, over the checkpoint's settings. */
static int configure(void *ctx, tg_run_config *c, tg_error *err)
{
    cli *t = ctx;
    static const char *const first[] = {"dtype", "attn", NULL};
    return args_apply(t->specs, t->n_specs, c, first, err->msg, sizeof err->msg);
}

/* Redraws OUT/loss.png from OUT/metrics.csv. A picture that cannot be
 * written is a warning, not a reason to lose the run. */
static void plot_losses(const cli *t)
{
    char csv[4200], png[4200];
    snprintf(csv, sizeof csv, "%s/metrics.csv", t->o.out);
    snprintf(png, sizeof png, "%s/loss.png", t->o.out);
    tg_error e = {0};
    if (t->lead && tg_lossplot_write(csv, png, NULL, &e))
        fprintf(stderr, "tiny_gpt train: warning: %s (training goes on)\n", e.msg);
}

/* An evaluation's lines (rank 0), which `eval --ckpt` repeats, with the
 * corpus's floor beside them; then the picture. */
static void say_eval(cli *t, const tg_run_eval *ev)
{
    tg_run_describe(t->r, &t->info);
    const double floor = t->info.text ? t->info.text->floor_nats : -1;
    for (int k = 0; t->lead && k < ev->n; k++) {
        const tg_run_loss *l = &ev->loss[k];
        char line[256];
        tg_run_loss_format(l, line, sizeof line);
        fprintf(stderr, "%s%s", t->cr, line);
        if (floor >= 0 && t->info.vocab->kind == TG_VOCAB_TOKENIZER) /* the corpus's floor is per byte */
            fprintf(stderr, " (floor %.4f bits per byte, +%.4f)", tg_bits_per_byte(floor, 1),
                    l->val_bpb - tg_bits_per_byte(floor, 1));
        else if (floor >= 0) fprintf(stderr, " (floor %.4f, +%.4f)", floor, l->val - floor);
        fprintf(stderr, "\n");
    }
    plot_losses(t);
}

/* The lines that open a run. */
static void say_start(cli *t)
{
    const tg_run_info *i = &t->info;
    const tg_run_config *c = i->config;
    const int64_t n = tg_params_numel(i->model->params);
    fprintf(stderr, "tiny_gpt: %lld parameters, vocab %d, %zu %s (%s), %s attention; %s\n", (long long)n,
            i->vocab->size, i->text ? i->text->len : i->data->n, i->text ? "characters" : "tokens",
            !i->text             ? "token files"
                : *i->text->path ? i->text->path
                                 : "built-in corpus",
            c->attn_composed ? "composed" : "fused", i->resumed ? "resuming" : "training");
    if (i->muon_params)
        fprintf(stderr,
                "tiny_gpt: Muon (lr %g, momentum %g) for the blocks' matrices, %lld parameters; AdamW for the "
                "other %lld\n",
                c->muon_lr, c->muon_momentum, (long long)i->muon_params, (long long)(n - i->muon_params));
    if (c->ema > 0)
        fprintf(stderr,
                "tiny_gpt: the weights averaged (decay %g): each evaluation is of the raw weights and of "
                "their averages (the ema weights), on the same windows; best.safetensors keeps the lower val "
                "loss of the two (its metadata 'weights' says whose), last.safetensors holds both\n",
                c->ema);
    if (i->ranks > 1) {
        const double es = (double)tg_dtype_size(c->dtype), mb = 2 * es * (double)n / 1e6;
        char of[64] = "";
        if (c->zero) snprintf(of, sizeof of, " (--zero 1: its shard of %.3g MB)", mb);
        const int th = tg_num_threads(), nb = i->sync.buckets;
        fprintf(stderr,
                "tiny_gpt: %d processes x %d thread%s; %lld sequences per step (%d x --batch-size %d x "
                "--grad-accum %d); gradients summed in %d bucket%s as backward runs; AdamW's moments %.3g MB "
                "per process%s\n",
                i->ranks, th, th == 1 ? "" : "s", (long long)i->ranks * c->batch_size * c->grad_accum, i->ranks,
                c->batch_size, c->grad_accum, nb, nb == 1 ? "" : "s",
                2 * es * (double)(i->shard_hi - i->shard_lo) / 1e6, of);
    }
    if (i->resumed)
        fprintf(stderr, "tiny_gpt: continuing at step %lld of %lld\n", (long long)i->step, (long long)i->steps);
    if (i->text && i->text->floor_nats >= 0)
        fprintf(stderr, "tiny_gpt: the corpus's entropy floor is %.4f nats/char\n", i->text->floor_nats);
}

/* The progress line, every --log-interval steps (every step on a terminal). */
static void say_step(cli *t, const tg_run_step_info *s)
{
    if (!t->lead || !(t->tty || s->step % t->info.config->log_interval == 0)) return;
    tg_eta_plan plan;
    char eta[64];
    tg_run_eta(t->r, &plan);
    tg_eta_format(&plan, s->step, eta, sizeof eta);
    fprintf(stderr, "%sstep %lld/%lld | loss %.4f | lr %.2e | %.1f ms/step | %.0f tok/s | ETA %s%s", t->cr,
            (long long)s->step, (long long)plan.steps, s->loss, s->lr, s->ms_avg, s->tokens_per_s, eta,
            t->tty ? "" : "\n");
}

/* The plan a time budget chose. */
static void say_plan(const cli *t, const tg_run_plan *p)
{
    if (t->lead)
        fprintf(stderr,
                "tiny_gpt: --time-budget %g s holds %lld steps: %.2f s spent before the first step (%lld "
                "steps timed), a step %.1f ms, an evaluation with its saves %.2f s, a %.0f%% margin\n",
                t->o.c.time_budget, (long long)p->steps, p->spent, (long long)p->timed, 1e3 * p->step_s, p->eval_s,
                100 * p->margin);
}

/* A stop before the run's end (a signal, --stop-at, a budget run late):
 * saved, to be resumed. Returns 128 + the signal, 0, or -1. */
static int stop(cli *t, tg_run_stop why, int sig, tg_error *err)
{
    if (tg_run_save(t->r, err)) return -1;
    plot_losses(t);
    tg_run_describe(t->r, &t->info);
    const bool late = why == TG_RUN_STOP_LATE;
    if (t->lead && late)
        fprintf(stderr,
                "%stiny_gpt train: warning: --time-budget %g s ran out at step %lld of %lld (the machine became "
                "slower than when the steps were timed)\n",
                t->cr, t->info.config->time_budget, (long long)t->info.step, (long long)t->info.steps);
    if (t->lead)
        fprintf(stderr, "%sstopped at step %lld; continue with: tiny_gpt train --resume --out %s\n", t->cr,
                (long long)t->info.step, t->o.out);
    if (t->lead && late)
        fprintf(stderr, "tiny_gpt: the run took %.2f s of its --time-budget %g s\n", t->info.elapsed,
                t->info.config->time_budget);
    return why == TG_RUN_STOP_SIGNAL ? 128 + sig : 0;
}

/* The closing lines. */
static void say_end(cli *t, int64_t first, double loop_s, double last_val)
{
    tg_run_describe(t->r, &t->info);
    const tg_run_info *i = &t->info;
    if (!t->lead) return;
    char whose[96] = "";
    if (i->best_weights) /* --ema: which weights best.safetensors holds */
        snprintf(whose, sizeof whose, " (the %s weights of step %lld, in best.safetensors)", i->best_weights,
                 (long long)i->best_step);
    const int64_t done = i->step - first;
    fprintf(stderr, "tiny_gpt: %lld step%s in %.1f s; best val loss %.4f%s; checkpoints in %s/\n", (long long)done,
            done == 1 ? "" : "s", loop_s, i->best_val, whose, t->o.out);
    const double budget = i->config->time_budget;
    if (budget > 0 && !i->resumed)
        fprintf(stderr, "tiny_gpt: the run took %.2f s of its --time-budget %g s%s\n", i->elapsed, budget,
                i->elapsed > budget ? " (over: the machine was slower than when the steps were timed)" : "");
    if (i->ranks > 1 && i->sync.steps) /* what the gradients' sum across processes cost (bench/bench_dist times it) */
        fprintf(stderr,
                "tiny_gpt: %d processes: summing %.1f MB of gradients takes %.2f ms alone; a step waited %.2f "
                "ms after its backward (%.1f ms) for the sums and for slower processes\n",
                i->ranks, (double)i->sync.bytes / 1e6, 1e3 * i->probe_s, 1e3 * i->sync.wait_s / (double)i->sync.steps,
                1e3 * i->sync.backward_s / (double)i->sync.steps);
    printf("val loss %.4f\n", last_val);
}

/* The test suite's fault injection (tests/tiny_gpt_mpi.sh): with
 * TINY_GPT_FAULT=nan:K in its environment, this process alone sees a
 * loss of NaN at step K (its model's loss times NaN, through a copy of
 * the model's family). */
static const tg_model_family *fault_family;
static bool fault_now;
static tg_tensor *faulty_loss(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets)
{
    tg_tensor *loss = fault_family->loss(g, impl, idx, targets); /* () */
    tg_tensor *nan = fault_now && loss ? tg_tensor_new(g, loss->dtype, 0, NULL) : NULL;
    if (nan) tg_tensor_set(nan, 0, NAN);
    return nan ? tg_mul(g, loss, nan) : loss;
}

static int64_t fault_step(tg_model *m)
{
    static tg_model_family faulty;
    const char *v = getenv("TINY_GPT_FAULT");
    if (!v || strncmp(v, "nan:", 4)) return -1;
    fault_family = m->family;
    faulty = *m->family;
    faulty.loss = faulty_loss;
    m->family = &faulty;
    return strtoll(v + 4, NULL, 10);
}

/* The loop: steps, each evaluation due, until the run's end or a stop.
 * Returns 0, 128 + a signal, or -1 with the message. */
static int train_loop(cli *t, tg_error *err)
{
    tg_run *r = t->r;
    tg_run_eval ev = {0};
    double last_val = NAN;
    const double t0 = now_seconds();
    const int64_t first = t->info.step, fault = fault_step(t->info.model);
    if (tg_run_eval_due(r)) { /* a new run: step 0's evaluation, then a time budget's plan */
        tg_run_plan plan;
        if (tg_run_evaluate(r, &ev, err)) return -1;
        say_eval(t, &ev);
        last_val = ev.loss[ev.n - 1].val;
        if (tg_run_needs_plan(r)) {
            if (tg_run_plan_steps(r, &plan, err)) return -1;
            say_plan(t, &plan);
        }
    }
    for (;;) {
        int sig = interrupted;
        const tg_run_stop why = tg_run_should_stop(r, &sig);
        if (why == TG_RUN_DONE) break;
        if (why != TG_RUN_GO) return stop(t, why, sig, err);
        tg_run_step_info s;
        fault_now = tg_run_describe(r, &t->info) == 0 && t->info.step + 1 == fault;
        if (tg_run_step(r, tg_run_lr(r), &s, err)) return -1;
        say_step(t, &s);
        if (!tg_run_eval_due(r)) continue;
        if (tg_run_evaluate(r, &ev, err)) return -1;
        say_eval(t, &ev);
        last_val = ev.loss[ev.n - 1].val;
    }
    say_end(t, first, now_seconds() - t0, last_val);
    return 0;
}

int cmd_train(int argc, char **argv)
{
    const double t_start = now_seconds();
    cli *t = calloc(1, sizeof *t);
    if (!t) return 1;
    t->n_specs = train_specs(&t->o, t->specs);
    train_opts *o = &t->o;
    int rc = command_setup("train", "[flags]", t->specs, t->n_specs, argc, argv, NULL, NULL, NULL, NULL, &o->threads);
    if (rc >= 0) goto done;
    const tg_run_backend *b = tg_dist_run_backend();
    t->lead = b->rank == 0;
    t->tty = isatty(STDERR_FILENO);
    t->cr = t->tty ? "\r\033[K" : "";
    if (o->stop_at && o->c.time_budget > 0 && !o->resume && !args_seen(t->specs, t->n_specs, "steps") && t->lead)
        fprintf(stderr,
                "tiny_gpt train: notice: --stop-at %lld with --time-budget: the run stops there only if the "
                "budget holds that many steps\n",
                (long long)o->stop_at);
    const tg_run_options ro = {.backend = b,
                               .init = o->init,
                               .force = o->force,
                               .stop_at = o->stop_at,
                               .spent = now_seconds() - t_start,
                               .flag_names = true,
                               .program = "tiny_gpt",
                               .notice = notice,
                               .progress = t->tty ? progress : NULL,
                               .configure = configure,
                               .ctx = t};
    tg_error err = {0};
    t->r = o->resume ? tg_run_resume(o->out, NULL, &ro, &err) : tg_run_new(o->out, &o->c, &ro, &err);
    rc = 1;
    if (!t->r) {
        args_place(t->specs, t->n_specs, "arch", err.msg, sizeof err.msg); /* a value from a config file: its line */
        if (t->lead) fprintf(stderr, "tiny_gpt train: %s\n", err.msg);
        goto done;
    }
    tg_run_describe(t->r, &t->info);
    if (t->lead) say_start(t);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = train_loop(t, &err);
    if (rc < 0) {
        if (tg_run_failed_alone(t->r)) { /* the others may wait in a collective */
            char msg[TG_ERROR_SIZE + 64];
            snprintf(msg, sizeof msg, "tiny_gpt train: rank %d: %s", b->rank, err.msg);
            tg_run_abort(t->r, msg);
        }
        if (t->lead) fprintf(stderr, "%stiny_gpt train: %s\n", t->cr, err.msg);
        rc = 1;
    }
done:
    tg_run_free(t->r);
    tg_run_config_release(&o->c);
    free(t);
    return rc;
}
