/* tiny_gpt train: the nanoGPT recipe (AdamW with nanoGPT's decay groups,
 * cosine schedule with warmup, global-norm clipping, gradient
 * accumulation) on the built-in corpus or any text file.
 *
 * Stages, in the order cmd_train runs them:
 *   claim_out    OUT is locked; temporaries of a killed run are removed; a
 *                run already there is continued only with --resume
 *   start_from   --resume: every setting of the run from OUT/last.safetensors
 *                (run.c); --init: the model's shape from the weights
 *   load_data    the text (the recorded file, checked by size and checksum)
 *   build        vocabulary, model, optimizer, training state, batches
 *   train_loop   steps; every --eval-interval steps (and at the end)
 *                evaluate_and_save: train and val loss, the best weights
 *                in OUT/best.safetensors, the full state in OUT/last;
 *                with --time-budget, after step 0's, plan_steps times
 *                steps (undone) and fixes how many the budget holds
 *
 * On R processes (mpirun -np R tiny_gpt train, docs/distributed.md) every
 * rank runs every stage on the same flags and data; rank 0 alone claims
 * OUT, prints and writes files. Each rank draws every micro-batch's R x B
 * windows from the one data stream and trains on its own B rows; dist/
 * sums the gradients while backward runs (t->dg, on one process a no-op)
 * and --zero 1 shards AdamW's moments. Before training the ranks agree
 * that setup worked everywhere and that they run the same run
 * (ranks.h); an error on one rank during training ends the job.
 *
 * Steps are counted as the console shows them: step k is the k-th
 * optimizer step, and metrics.csv has one row per step (metrics.h). A
 * resumed run follows the uninterrupted one exactly: the same batches,
 * dropout masks and losses. */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "eta.h"
#include "files.h"
#include "lossplot.h"
#include "metrics.h"
#include "ranks.h"
#include "run.h"
#include "tiny_gpt.h"
#include "tokdata.h"

/* estimate_loss's progress line (an evaluation takes seconds: say so) and its sum over the ranks */
typedef struct eval_note {
    int64_t step;
    bool val;
    double shown;
} eval_note;

static void eval_progress(void *ctx, int64_t done, int64_t iters)
{
    eval_note *n = ctx;
    if (done && now_seconds() - n->shown < 0.1) return;
    n->shown = now_seconds();
    fprintf(stderr, "\r\033[Kstep %lld: estimating the %s loss, batch %lld of %lld", (long long)n->step,
            n->val ? "val" : "train", (long long)done + 1, (long long)iters);
}

static void eval_sum(void *ctx, double *x) { (void)ctx, tg_dist_allreduce_f64(x, 1, TG_DIST_SUM); }

double estimate_loss(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, int B, int A, int T, int64_t iters,
                     int64_t seed, int64_t step, int r, int R, bool progress, char *err, size_t errlen)
{
    eval_note note = {step, val, 0};
    const tg_eval_spec s = {.batch = B, .accum = A, .T = T, .iters = iters, .seed = (uint64_t)seed, .step = step,
                            .whole = iters == 0, .rank = r, .ranks = R, .sum = eval_sum,
                            .progress = progress ? eval_progress : NULL, .ctx = &note};
    const double loss = tg_eval_loss(g, m, d, val, &s, err, errlen);
    if (progress) fprintf(stderr, "\r\033[K");
    return loss;
}

/* ---- the run ------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

/* the files a run writes in OUT (temporaries "<name>.tmp.XXXXXX") */
static const char *const OUT_FILES[] = {"best.safetensors", "last.safetensors", "metrics.csv", "loss.png"};
#define N_OUT_FILES 4

typedef struct trainer {
    train_opts o;
    arg_spec specs[TRAIN_MAX_SPECS];
    int n_specs;
    tg_dtype dt;
    char path[N_OUT_FILES][4096];   /* OUT/ + OUT_FILES[i] */
    int lock_fd;
    bool made_out;                  /* this run made OUT: removed again if it fails before writing there */
    tg_st_file *from;               /* OUT/last.safetensors (--resume) or the --init weights */
    struct {                        /* --resume: the schedule the checkpoint records (known: all of it) */
        bool known;
        int64_t steps, decay_steps, warmup;
        double lr, min_lr;
    } was;
    run_text text;
    data_id id;
    tg_vocab v;
    tg_dataset d;
    tg_model m;
    tg_adamw *opt;
    tg_muon *muon;                  /* --optimizer muon: the blocks' matrices (AdamW leaves them), else NULL */
    tg_ema *ema;                    /* --ema: the weights' averages, else NULL */
    tg_dist_grads *dg;              /* the gradients' sums across processes (nothing to do on one) */
    int rank, ranks;                /* this process of the job's R; rank 0 prints and writes files */
    const char *say;                /* "train" on rank 0, NULL elsewhere: run.c's notices */
    bool everywhere;                /* the failure happened on every rank alike (no rank named) */
    double probe_s;                 /* the gradients' sum across processes, nothing overlapped */
    tg_graph *g;
    tg_train_state ts;
    tg_metrics *csv;
    kv_list meta;                   /* the run's settings, in every checkpoint */
    tg_lr_schedule sched;           /* --schedule over the run's steps (once they are known) */
    double t_start;                 /* when the command started: --time-budget counts from here */
    bool plan;                      /* --time-budget: the steps are still to be chosen */
    int64_t budget_left_at;         /* --time-budget resumed: where a resume gave other steps (budget_record), or -1 */
    double save_s;                  /* the last save_last's seconds */
    int64_t best_step;              /* what went into best.safetensors last in this process's run: its step */
    const char *best_weights;       /*   and with --ema whose weights ("ema" or "raw"), else NULL */
    double step_s, eval_s;          /* --time-budget: a step's cost as timed; the latest evaluation's (with its saves) */
    bool eval_timed;                /* eval_s was measured (a resume has none before its first evaluation) */
    int32_t *x, *y;
    char err[8192];
} trainer;

enum { BEST, LAST, METRICS, LOSS_PNG };

static int failf(trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(trainer *t, const char *fmt, ...)
{
    char buf[sizeof t->err];   /* the arguments may include t->err itself */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(t->err, buf, sizeof buf);
    return -1;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* OUT is ours alone; a run already in it is continued only with --resume
 * and replaced only with --force. Of several processes rank 0 claims it
 * and writes there; the others only read the checkpoint of --resume. */
static int claim_out(trainer *t)
{
    train_opts *o = &t->o;
    if (o->resume && (o->init || o->force)) return failf(t, "--resume excludes %s", o->init ? "--init" : "--force");
    for (int i = 0; i < N_OUT_FILES; i++) snprintf(t->path[i], sizeof t->path[i], "%s/%s", o->out, OUT_FILES[i]);
    if (t->rank == 0 &&
        (t->lock_fd = outdir_claim(o->out, OUT_FILES, N_OUT_FILES, &t->made_out, t->err, sizeof t->err)) < 0)
        return -1;
    if (o->resume) {
        if (!exists(t->path[LAST]))
            return failf(t, "--resume: %s does not exist: there is no run to continue in %s%s", t->path[LAST], o->out,
                         t->rank ? " (every process reads it: OUT must be at the same path on every machine)" : "");
        return 0;
    }
    if (t->rank) return 0;
    if (!exists(t->path[LAST]) && !exists(t->path[BEST])) return 0;   /* no weights to lose */
    if (o->force) {
        for (int i = 0; i < N_OUT_FILES; i++) remove(t->path[i]);
        return 0;
    }
    char state[256] = "";
    tg_error e2 = {0};
    tg_st_file *f = tg_st_load(t->path[LAST], &e2);
    if (f && tg_st_meta(f, "train.step") && tg_st_meta(f, "train.steps")) {
        const char *s = tg_st_meta(f, "train.step"), *n = tg_st_meta(f, "train.steps");
        snprintf(state, sizeof state, " (at step %s of %s: %s)", s, n, !strcmp(s, n) ? "finished" : "resumable");
    }
    tg_st_free(f);
    return failf(t, "%s already holds a run%s; continue it with --resume (a larger --steps trains it longer), "
                    "or replace it with --force", o->out, state);
}

/* The schedule a resumed run had, for the notices of say_schedule. A
 * checkpoint of an older tiny_gpt, without train.decay_steps, decayed
 * over its --steps: that stays its --decay-steps unless one is given. */
static void recorded_schedule(trainer *t)
{
    const tg_st_file *f = t->from;
    const bool old = !tg_st_meta(f, "train.decay_steps");
    const char *lr = tg_st_meta(f, "train.lr"), *min_lr = tg_st_meta(f, "train.min_lr");
    tg_error e = {0};
    char *end1 = NULL, *end2 = NULL;
    t->was.known = lr && min_lr && !tg_st_meta_int(f, "train.steps", 1, INT64_MAX, &t->was.steps, &e) &&
                   !tg_st_meta_int(f, old ? "train.steps" : "train.decay_steps", 0, INT64_MAX,
                                        &t->was.decay_steps, &e) &&
                   !tg_st_meta_int(f, "train.warmup", 0, INT64_MAX, &t->was.warmup, &e) &&
                   (t->was.lr = strtod(lr, &end1), !*end1) && (t->was.min_lr = strtod(min_lr, &end2), !*end2);
    if (!t->was.known) return;   /* run_restore names what is malformed */
    if (!t->was.decay_steps) t->was.decay_steps = t->was.steps;
    if (old && !args_seen(t->specs, t->n_specs, "decay-steps")) t->o.decay_steps = t->was.steps;
}

/* --resume: the run's settings from its checkpoint; --init: the model's
 * shape from the weights. */
static int start_from(trainer *t)
{
    train_opts *o = &t->o;
    if (!o->resume && !o->init) return 0;
    const char *path = o->resume ? t->path[LAST] : o->init;
    tg_error e = {0};
    if (!(t->from = tg_st_load(path, &e))) return failf(t, "%s", e.msg);
    tg_model_config c;
    if (tg_model_config_read(t->from, &c, &e)) return failf(t, "%s: %s", path, e.msg);
    if (o->resume) recorded_schedule(t);
    unsigned roles = o->resume ? 1u << ROLE_MODEL | 1u << ROLE_RUN | 1u << ROLE_FREE : 1u << ROLE_MODEL;
    if (run_restore(t->specs, t->n_specs, roles, t->from, path, t->say, t->err, sizeof t->err)) return -1;
    /* f32 results are the same bits on one kernel path, to rounding across paths (core/cpu.h) */
    const char *isa = tg_st_meta(t->from, "train.isa"), *now = tg_isa_name(tg_isa_active());
    if (o->resume && isa && strcmp(isa, now) && t->say)
        fprintf(stderr, "tiny_gpt %s: notice: the run was made on the %s kernel path and continues on %s: the same run "
                        "to rounding, not bit for bit (TG_ISA=%s gives its bits, where the CPU has it)\n",
                t->say, isa, now, isa);
    return 0;
}

/* --mlp's value as a tg_ffn_kind (checked before: "default" otherwise). */
static tg_ffn_kind ffn_kind(const char *s)
{
    return !strcmp(s, "gelu") ? TG_FFN_GELU : !strcmp(s, "relu2") ? TG_FFN_RELU2
         : !strcmp(s, "swiglu") ? TG_FFN_SWIGLU : TG_FFN_DEFAULT;
}

/* The architecture options given with --init or --resume must be the
 * weights' (their keys are absent from a file without them, so
 * run_restore cannot see a difference): 0, or -1 naming the flag. */
static int check_options_against(trainer *t, const tg_model_config *c)
{
    const train_opts *o = &t->o;
    const bool llama = !strcmp(c->arch, "llama");
    const tg_ffn_kind fam = llama ? TG_FFN_SWIGLU : TG_FFN_GELU, want = ffn_kind(o->mlp);
    const tg_ffn_kind have = c->mlp == TG_FFN_DEFAULT ? fam : c->mlp;
    const char *from = o->resume ? t->path[LAST] : o->init;
    if (args_seen(t->specs, t->n_specs, "mlp") && (want == TG_FFN_DEFAULT ? fam : want) != have)
        return failf(t, "--mlp %s differs from %s's %s; the model's shape is fixed", o->mlp, from,
                     tg_ffn_kind_name(have));
    const struct { const char *flag; bool want, have; } sw[] = {
        {"qk-norm", o->qk_norm, c->qk_norm}, {"zero-init-proj", o->zero_init_proj, c->zero_init_proj},
        {"untie-head", o->untie_head, !c->tied}};
    for (int i = 0; i < 3; i++)
        if (args_seen(t->specs, t->n_specs, sw[i].flag) && sw[i].want != sw[i].have)
            return failf(t, "--%s is %s but %s's model was made %s it; the model's shape is fixed", sw[i].flag,
                         sw[i].want ? "on" : "off", from, sw[i].have ? "with" : "without");
    if (args_seen(t->specs, t->n_specs, "logit-softcap") && o->logit_softcap != c->logit_softcap)
        return failf(t, "--logit-softcap %g differs from %s's %g; the model's shape is fixed", o->logit_softcap, from,
                     c->logit_softcap);
    return 0;
}

/* A resumed --time-budget run's record of its plan, checked before it is
 * carried on: train.budget_steps, the steps the budget held (an integer
 * in [1, 1e12], --steps' range), are the run's train.steps until a
 * resume gives it other steps; that resume records the step it did so at
 * as train.budget_left_at (at most the budget's steps and the steps done
 * then), kept from then on (t->budget_left_at, -1 while the run keeps
 * the budget's steps). */
static int budget_record(trainer *t)
{
    const tg_st_file *f = t->from;
    const char *path = t->path[LAST];
    if (!tg_st_meta(f, "train.budget_steps"))
        return failf(t, "the run in %s stopped before --time-budget had chosen its steps: start it again with --force",
                     t->o.out);
    int64_t n, steps, step;
    tg_error e = {0};
    if (tg_st_meta_int(f, "train.budget_steps", 1, (int64_t)1e12, &n, &e) ||
        tg_st_meta_int(f, "train.steps", 1, INT64_MAX, &steps, &e) ||
        tg_st_meta_int(f, "train.step", 0, INT64_MAX, &step, &e))
        return failf(t, "%s: %s", path, e.msg);
    if (tg_st_meta(f, "train.budget_left_at")) {
        if (tg_st_meta_int(f, "train.budget_left_at", 0, n < step ? n : step, &t->budget_left_at, &e))
            return failf(t, "%s: %s (the step a resume gave the run other steps than the budget's, at most both)",
                         path, e.msg);
        return 0;
    }
    if (steps != n)
        return failf(t, "%s: checkpoint metadata 'train.budget_steps' = '%lld' is not the run's 'train.steps' %lld, "
                        "and no resume gave the run other steps (that would have recorded 'train.budget_left_at')",
                     path, (long long)n, (long long)steps);
    if (t->o.steps != n) t->budget_left_at = step;   /* this resume gives it other steps */
    return 0;
}

/* --time-budget: a new run chooses its steps once timed (t->plan); a
 * resumed one has them in its checkpoint (train.budget_steps, in
 * train.steps: run_restore), and keeps them unless given another --steps.
 * --steps given is a cap; the schedule ends where the steps do. */
static int budget_settings(trainer *t)
{
    train_opts *o = &t->o;
    if (!(o->time_budget > 0)) return 0;
    if (o->resume) return budget_record(t);
    if (args_seen(t->specs, t->n_specs, "decay-steps"))
        return failf(t, "--decay-steps goes without --time-budget: the schedule ends at the steps the budget holds");
    if (o->stop_at && !args_seen(t->specs, t->n_specs, "steps") && t->say)
        fprintf(stderr, "tiny_gpt train: notice: --stop-at %lld with --time-budget: the run stops there only if the "
                        "budget holds that many steps\n", (long long)o->stop_at);
    if (!args_seen(t->specs, t->n_specs, "steps")) o->steps = (int64_t)1e12;   /* no cap */
    o->decay_steps = 0;
    t->plan = true;
    return 0;
}

/* -1, the message in t->err about flag `name` ("--name: ...") naming the
 * config file's line when the value came from one (args_place). */
static int placed(trainer *t, const char *name)
{
    args_place(t->specs, t->n_specs, name, t->err, sizeof t->err);
    return -1;
}

/* The settings that are fixed now: dtype and attention path, and warnings. */
static int check_settings(trainer *t)
{
    train_opts *o = &t->o;
    if (parse_dtype(o->dtype, &t->dt, t->err, sizeof t->err)) return placed(t, "dtype");
    if (parse_attn(o->attn, &o->attn_composed, t->err, sizeof t->err)) return placed(t, "attn");
    if (parse_optimizer(o->optimizer, &o->muon, t->err, sizeof t->err)) return placed(t, "optimizer");
    if (!o->muon)
        for (int i = 0; i < 2; i++)
            if (args_seen(t->specs, t->n_specs, i ? "muon-momentum" : "muon-lr"))
                return failf(t, "--%s is a setting of --optimizer muon (this run's optimizer is %s)",
                             i ? "muon-momentum" : "muon-lr", o->optimizer);
    const bool llama = !strcmp(o->arch, "llama");
    if (!tg_model_family_find(o->arch))
        return failf(t, "--arch: '%s' is not one of %s", o->arch, tg_model_family_names()), placed(t, "arch");
    if (strcmp(o->rope, "interleaved") && strcmp(o->rope, "halves"))
        return failf(t, "--rope: '%s' is not interleaved or halves", o->rope), placed(t, "rope");
    if (strcmp(o->gelu, "erf") && strcmp(o->gelu, "tanh"))
        return failf(t, "--gelu: '%s' is not erf or tanh", o->gelu), placed(t, "gelu");
    if (strcmp(o->mlp, "default") && strcmp(o->mlp, "gelu") && strcmp(o->mlp, "relu2") && strcmp(o->mlp, "swiglu"))
        return failf(t, "--mlp: '%s' is not gelu, relu2 or swiglu", o->mlp), placed(t, "mlp");
    if (llama && !t->from && args_seen(t->specs, t->n_specs, "gelu") && strcmp(o->mlp, "gelu"))
        return failf(t, "--gelu is a setting of --arch gpt or --mlp gelu (the Llama's MLP is SwiGLU)");
    if (!llama && !t->from && args_seen(t->specs, t->n_specs, "gelu") && strcmp(o->mlp, "gelu") &&
        strcmp(o->mlp, "default"))
        return failf(t, "--gelu is a setting of --mlp gelu (this run's MLP is %s)", o->mlp);
    if (llama && args_seen(t->specs, t->n_specs, "tied") && args_seen(t->specs, t->n_specs, "untie-head") &&
        o->tied == o->untie_head)
        return failf(t, "--tied %s contradicts --untie-head %s (--untie-head is --tied false)", o->tied ? "true" : "false",
                     o->untie_head ? "true" : "false");
    if (o->logit_softcap && !(o->logit_softcap >= 1e-3))
        return failf(t, "--logit-softcap %g: give 0 (none) or a cap of at least 0.001", o->logit_softcap);
    static const char *const llama_only[] = {"n-kv-head", "hidden-dim", "multiple-of", "rope-theta", "rope", "norm-eps",
                                             "tied"};
    for (size_t i = 0; !llama && !t->from && i < sizeof llama_only / sizeof *llama_only; i++)
        if (args_seen(t->specs, t->n_specs, llama_only[i]))
            return failf(t, "--%s is a setting of --arch llama (this run is a %s)", llama_only[i], o->arch);
    if (llama && o->bias) return failf(t, "--bias true: the Llama has no biases");
    if (llama && o->n_kv_head && o->n_head % o->n_kv_head)
        return failf(t, "--n-kv-head %d must divide --n-head %d", o->n_kv_head, o->n_head);
    const bool tokens = run_on_tokens(o->data_tokens, o->resume ? t->from : NULL);
    if (o->data && tokens) return failf(t, "--data (a text) excludes --data-tokens (token files)%s",
                                        o->data_tokens ? "" : ": this run trains on token files");
    if (!tokens && (o->val_tokens || args_seen(t->specs, t->n_specs, "vocab-size")))
        return failf(t, "--%s goes with --data-tokens", o->val_tokens ? "val-tokens" : "vocab-size");
    if (o->resume && o->data_tokens && !tg_st_meta(t->from, "train.data_tokens"))
        return failf(t, "--data-tokens %s: the run in %s trains on a text, not on token files", o->data_tokens, o->out);
    if (strcmp(o->schedule, "cosine") && strcmp(o->schedule, "wsd"))
        return failf(t, "--schedule: '%s' is not cosine or wsd", o->schedule), placed(t, "schedule");
    if (strcmp(o->sampling, "random") && strcmp(o->sampling, "epochs"))
        return failf(t, "--sampling: '%s' is not random or epochs", o->sampling), placed(t, "sampling");
    o->epochs = !strcmp(o->sampling, "epochs");
    if (args_seen(t->specs, t->n_specs, "decay-frac") && strcmp(o->schedule, "wsd"))
        return failf(t, "--decay-frac is a setting of --schedule wsd (this run's schedule is %s)", o->schedule);
    if (budget_settings(t)) return -1;
    if (!o->decay_steps) o->decay_steps = o->steps;   /* recorded so: a longer resume keeps the run's cosine */
    if (o->warmup >= o->steps && t->say && !t->plan)
        fprintf(stderr, "tiny_gpt train: warning: --warmup %lld is not shorter than --steps %lld: the learning rate "
                        "never reaches --lr %g, and never decays\n", (long long)o->warmup, (long long)o->steps, o->lr);
    return 0;
}

/* The text: --data, else the recorded file (on resume), else the corpus.
 * A resumed run's text must be the one it was trained on. */
static int load_data(trainer *t)
{
    const train_opts *o = &t->o;
    if (run_on_tokens(o->data_tokens, o->resume ? t->from : NULL)) {   /* no text: build reads the tokens */
        t->text.floor_nats = -1;
        return 0;
    }
    return run_load_text(&t->text, &t->id, o->data, o->corpus_chars, o->resume ? t->from : NULL, t->path[LAST], true,
                         t->say, t->err, sizeof t->err);
}

/* The learning rate's schedule over the run's steps. */
static void set_schedule(trainer *t)
{
    const train_opts *o = &t->o;
    t->sched = (tg_lr_schedule){.shape = strcmp(o->schedule, "wsd") ? TG_LR_COSINE : TG_LR_WSD, .warmup = o->warmup,
                                .decay_steps = o->decay_steps, .lr = o->lr, .min_lr = o->min_lr,
                                .decay_frac = o->decay_frac};
}

/* Vocabulary, model, optimizer and the state a resumed run continues from. */
static int build(trainer *t)
{
    train_opts *o = &t->o;
    tg_error e = {0};
    const char *text = t->text.text;
    size_t len = t->text.len;
    const bool llama = !strcmp(o->arch, "llama");
    const bool tokens = run_on_tokens(o->data_tokens, o->resume ? t->from : NULL);
    /* the run's own vocabulary; else --tokenizer (bpe:V: trained now, on the
     * train split), token ids, llama2.c's bytes or the data's sorted bytes */
    const bool train_tok = tokenizer_is_trained(o->tokenizer);
    if (train_tok && tokens) return failf(t, "--tokenizer %s trains on a text: it excludes token files", o->tokenizer);
    if (train_tok && !(t->from && tg_st_meta(t->from, "vocab"))) {
        const double t0 = now_seconds();
        if (vocab_train_bpe(&t->v, o->tokenizer, llama, text, len, t->err, sizeof t->err)) return -1;
        if (t->say)
            fprintf(stderr, "tiny_gpt train: --tokenizer %s: trained %d ids on the text's first %zu bytes (the train "
                            "split) in %.2f s\n", o->tokenizer, (int)tg_tok_vocab_size(t->v.tok),
                    tg_text_train_bytes(text, len), now_seconds() - t0);
    } else if (vocab_for_run(&t->v, train_tok ? NULL : o->tokenizer, tokens, o->vocab_size, llama, t->from, text, len,
                             t->err, sizeof t->err)) {
        return -1;
    }
    if (train_tok && (t->v.kind != TG_VOCAB_TOKENIZER || tg_tok_kind_of(t->v.tok) != TG_TOK_BPE))
        return failf(t, "--tokenizer %s: the run in %s has no BPE tokenizer of its own to keep (a resumed run keeps its "
                        "vocabulary)", o->tokenizer, o->out);
    /* token files are checked whole (size, header, every id below the
     * model's vocabulary) before anything of the model's size exists: a
     * bad file is refused at once, not after gigabytes (issue 20) */
    if (tokens) {
        tg_model_config rc;
        int64_t V = t->v.size;
        if (t->from && !tg_model_config_read(t->from, &rc, NULL)) V = rc.vocab_size;
        if (run_load_tokens(&t->d, &t->v, V, o->data_tokens, o->val_tokens, o->block_size, o->resume ? t->from : NULL,
                            true, &t->meta, "train", t->err, sizeof t->err))
            return -1;
    }
    if (t->from) {
        if (tg_checkpoint_load_model(t->from, t->dt, o->dropout, &t->m, t->err, sizeof t->err) ||
            check_options_against(t, &t->m.config))
            return -1;
        if (t->v.size > t->m.config.vocab_size || (t->v.kind == TG_VOCAB_BYTES && t->v.size != t->m.config.vocab_size))
            return failf(t, "the weights have vocab_size %d but the vocabulary has %d %s", t->m.config.vocab_size,
                         t->v.size, t->v.kind == TG_VOCAB_BYTES ? "characters" : "ids");
    } else {
        tg_model_config c = {.arch = o->arch, .n_layer = o->n_layer, .n_head = o->n_head, .n_embd = o->n_embd,
                          .block_size = o->block_size, .vocab_size = t->v.size, .bias = o->bias,
                          .n_kv_head = o->n_kv_head ? o->n_kv_head : o->n_head,
                          .hidden_dim = o->hidden_dim ? o->hidden_dim : tg_llama_hidden_dim(o->n_embd, o->multiple_of),
                          .rope_theta = o->rope_theta, .norm_eps = o->norm_eps, .rope_halves = !strcmp(o->rope, "halves"),
                          .tied = o->tied && !o->untie_head, .dropout = o->dropout,
                          .gelu = strcmp(o->gelu, "tanh") ? TG_GELU_ERF : TG_GELU_TANH, .mlp = ffn_kind(o->mlp),
                          .qk_norm = o->qk_norm, .zero_init_proj = o->zero_init_proj,
                          .untie_head = o->untie_head || (llama && !o->tied), .logit_softcap = o->logit_softcap};
        /* a Llama with a feed-forward of one matrix each way is 4C wide unless --hidden-dim says (the
         * parameters of llama2.c's SwiGLU width) */
        if (llama && !o->hidden_dim && c.mlp != TG_FFN_DEFAULT && c.mlp != TG_FFN_SWIGLU) c.hidden_dim = 4 * o->n_embd;
        if (tg_model_init(&t->m, &c, t->dt, (uint64_t)o->seed, &e)) return failf(t, "%s", e.msg);
    }
    tg_model_set_composed(&t->m, o->attn_composed);
    /* the sums across processes, and AdamW for the range this rank updates:
     * everything, or with --zero 1 its shard */
    tg_dist_grads_config dc = {.bucket_bytes = (size_t)(o->bucket_mb * (1 << 20)), .shard = o->zero == 1};
    if (!(t->dg = tg_dist_grads_new(t->m.params, &dc, &e))) return failf(t, "%s", e.msg);
    int64_t lo, hi;
    tg_dist_grads_shard(t->dg, &lo, &hi);
    tg_adamw_config ac = {o->beta1, o->beta2, 1e-8, o->weight_decay};
    if (!(t->opt = tg_adamw_new_shard(t->m.params, &ac, lo, hi, &e))) return failf(t, "%s", e.msg);
    /* --optimizer muon: Muon for the blocks' matrices (their weight decay
     * --weight-decay's), AdamW for the rest */
    if (o->muon) {
        tg_muon_config mc = {o->muon_momentum, o->weight_decay};
        if (!(t->muon = tg_muon_new(t->m.params, &mc, &e))) return failf(t, "%s", e.msg);
        tg_muon_exclude(t->muon, t->opt, NULL);
    }
    /* --ema: the averages start as the weights (a new run's are set again
     * once every process holds rank 0's); a resume reads the run's */
    if (o->ema > 0 && !(t->ema = tg_ema_new(t->m.params, o->ema, &e))) return failf(t, "%s", e.msg);
    t->ts = (tg_train_state){.step = 0, .best_val = INFINITY};
    tg_rng_seed(&t->ts.data_rng, (uint64_t)o->seed, 1);
    tg_rng_seed(&t->ts.drop_rng, (uint64_t)o->seed, 4);
    if (o->resume) {
        if (tg_checkpoint_load_train(t->from, t->opt, t->muon, t->ema, &t->ts, INT64_MAX, t->err, sizeof t->err))
            return failf(t, "%s: %s", t->path[LAST], t->err);
        if (t->ts.step >= o->steps)
            return failf(t, "the run in %s %s at step %lld; give a --steps above %lld to train it longer", o->out,
                         t->ts.step == o->steps ? "finished" : "is already past --steps", (long long)t->ts.step,
                         (long long)t->ts.step);
    }
    if (!tokens && tg_dataset_from_text(&t->d, &t->v, text, len, o->block_size, t->err, sizeof t->err)) return -1;

    /* the global batch (processes x --batch-size x --grad-accum) is what a
     * resumed run must keep; its split may change. Resumed on another
     * number of processes without a new split, --batch-size follows. */
    const int R = t->ranks;
    int64_t global = (int64_t)R * o->batch_size * o->grad_accum;
    int64_t rec = global;
    if (t->from && o->resume && tg_st_meta(t->from, "train.global_batch") &&
        tg_st_meta_int(t->from, "train.global_batch", 1, INT64_MAX, &rec, &e))
        return failf(t, "%s", e.msg);
    const bool split_given = args_seen(t->specs, t->n_specs, "batch-size") || args_seen(t->specs, t->n_specs, "grad-accum");
    if (rec != global && !split_given && rec % ((int64_t)R * o->grad_accum) == 0 &&
        rec / ((int64_t)R * o->grad_accum) <= 1 << 16) {
        o->batch_size = (int)(rec / ((int64_t)R * o->grad_accum));
        global = rec;
        if (t->say)
            fprintf(stderr, "tiny_gpt train: notice: --batch-size %d on each of %d processes keeps the run's %lld "
                            "sequences per step\n", o->batch_size, R, (long long)rec);
    }
    if (rec != global) {
        char procs[48] = "";
        if (R > 1) snprintf(procs, sizeof procs, "%d processes x ", R);
        return failf(t, "%s--batch-size %d x --grad-accum %d = %lld sequences per step differs from the run's %lld; "
                        "a resumed run keeps its batch (it may split it differently)",
                     procs, o->batch_size, o->grad_accum, (long long)global, (long long)rec);
    }
    char gb[32], nr[16];
    snprintf(gb, sizeof gb, "%lld", (long long)global);
    snprintf(nr, sizeof nr, "%d", R);
    if (run_record(t->specs, t->n_specs, &t->meta) || (!tokens && data_id_record(&t->id, &t->meta)) ||
        kv_add(&t->meta, "train.global_batch", gb) || kv_add(&t->meta, "train.ranks", nr))
        return failf(t, "out of memory");
    const char *chosen = o->resume ? tg_st_meta(t->from, "train.budget_steps") : NULL;
    char left[32];
    snprintf(left, sizeof left, "%lld", (long long)t->budget_left_at);
    if ((chosen && kv_add(&t->meta, "train.budget_steps", chosen)) ||
        (chosen && t->budget_left_at >= 0 && kv_add(&t->meta, "train.budget_left_at", left)))
        return failf(t, "out of memory");
    set_schedule(t);

    t->g = tg_graph_new();
    t->x = malloc((size_t)o->batch_size * o->block_size * sizeof *t->x);
    t->y = malloc((size_t)o->batch_size * o->block_size * sizeof *t->y);
    if (!t->g || !t->x || !t->y) return failf(t, "out of memory");
    *tg_graph_rng(t->g) = t->ts.drop_rng;
    return 0;
}

/* ---- Muon on several processes ------------------------------------------ */

/* Without --zero every process holds the summed gradients and runs Muon
 * on every matrix (the same bits everywhere). With --zero 1 the work is
 * shared by whole matrices (a matrix is orthogonalised whole): the k-th
 * Muon matrix in store order is rank k % R's (tg_muon_owner), which
 * alone updates it and its momentum, then sends the updated weights to
 * every rank. */
static bool muon_sharded(const trainer *t) { return t->muon && t->o.zero == 1 && t->ranks > 1; }

/* --zero 1: the reduce-scatter left each rank the summed gradients of its
 * shard only; every Muon matrix's whole summed gradient into
 * tg_params_grad on every rank, each shard's part sent by the rank that
 * holds it (in store order, the same collectives on every rank). */
static void muon_gather_grads(trainer *t)
{
    tg_params *p = t->m.params;
    const size_t es = tg_dtype_size(t->dt);
    const int64_t n = tg_params_numel(p);
    int64_t lo, hi;
    tg_dist_grads_shard(t->dg, &lo, &hi);
    char *grad = tg_params_grad(p), *base = tg_params_data(p);
    memcpy(grad + (size_t)lo * es, tg_dist_grads_shard_grad(t->dg), (size_t)(hi - lo) * es);
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *w = tg_params_at(p, i);
        if (!tg_muon_updates(t->muon, w)) continue;
        const int64_t a = ((char *)w->data - base) / (int64_t)es, b = a + w->numel;
        for (int r = 0; r < t->ranks; r++) {
            int64_t rl, rh;
            tg_dist_shard_range(n, r, t->ranks, &rl, &rh);
            const int64_t x = a > rl ? a : rl, y = b < rh ? b : rh;
            if (x < y) tg_dist_bcast(grad + (size_t)x * es, (size_t)(y - x) * es, r);
        }
    }
}

/* --zero 1: each Muon matrix's weights (momentum false) or momentum
 * (true: for a checkpoint) from the rank that updated it, to every rank. */
static void muon_share(trainer *t, bool momentum)
{
    tg_params *p = t->m.params;
    const size_t es = tg_dtype_size(t->dt);
    char *mom = tg_muon_momentum(t->muon);
    int64_t at = 0;   /* the matrix's offset in the momentum */
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *w = tg_params_at(p, i);
        if (!tg_muon_updates(t->muon, w)) continue;
        const int owner = tg_muon_owner(t->muon, w, t->ranks);
        tg_dist_bcast(momentum ? mom + (size_t)at * es : (char *)w->data, (size_t)w->numel * es, owner);
        at += w->numel;
    }
}

/* ---- evaluation and checkpoints ----------------------------------------- */

/* Redraws OUT/loss.png. A picture that cannot be written is a warning,
 * not a reason to lose the run: the metrics and checkpoints still matter. */
static void plot_losses(trainer *t)
{
    char err[512];
    if (lossplot_write(t->path[METRICS], t->path[LOSS_PNG], err, sizeof err))
        fprintf(stderr, "tiny_gpt train: warning: %s (training goes on)\n", err);
}

/* Every process must hold the same weights (the same steps from the same
 * sums): at every checkpoint a checksum of them is compared. */
static int weights_agree(trainer *t, int64_t step)
{
    if (t->ranks == 1) return 0;
    const tg_params *p = t->m.params;
    double h = (double)(fnv1a64(tg_params_data(t->m.params), (size_t)tg_params_numel(p) * tg_dtype_size(t->dt)) >> 11);
    double lo = h, hi = h;
    tg_dist_allreduce_f64(&lo, 1, TG_DIST_MIN);
    tg_dist_allreduce_f64(&hi, 1, TG_DIST_MAX);
    if (lo == hi) return 0;
    t->everywhere = true;
    return failf(t, "at step %lld the processes' weights differ (their sums across processes did not agree)",
                 (long long)step);
}

/* OUT/last.safetensors: the whole state, on rank 0. With --zero 1 every
 * rank's shard of the moments is gathered there first (every rank calls
 * this). */
static int save_last(trainer *t, int64_t step)
{
    t->ts.step = step;
    t->ts.drop_rng = *tg_graph_rng(t->g);
    if (weights_agree(t, step)) return -1;
    if (muon_sharded(t)) muon_share(t, true);   /* every matrix's momentum, from its owner */
    const size_t bytes = (size_t)tg_params_numel(t->m.params) * tg_dtype_size(t->dt);
    void *m = NULL, *v = NULL;
    int64_t lo, hi;
    tg_adamw_shard(t->opt, &lo, &hi);
    if (hi - lo != tg_params_numel(t->m.params)) {   /* sharded: the moments of every rank, on rank 0 */
        if (t->rank == 0 && (!(m = malloc(bytes)) || !(v = malloc(bytes)))) {
            free(m);
            return failf(t, "out of memory for the optimizer's moments (%zu bytes twice) of the checkpoint", bytes);
        }
        tg_dist_grads_gather_shard(t->dg, tg_adamw_m(t->opt), m);
        tg_dist_grads_gather_shard(t->dg, tg_adamw_v(t->opt), v);
    }
    int rc = t->ema && kv_set(&t->meta, "weights", "raw") ? failf(t, "out of memory") : 0;   /* ema.values beside */
    const double t0 = now_seconds();
    if (!rc && t->rank == 0) {
        rc = tg_checkpoint_save(t->path[LAST], &t->m, &t->v, t->opt, m, v, t->muon, t->ema, &t->ts,
                                (const char *const *)t->meta.kv, t->meta.n, t->err, sizeof t->err);
    }
    free(m);
    free(v);
    t->save_s = now_seconds() - t0;
    return rc;
}

/* Train and val loss of the weights in the store at `step` into row. */
static int measure(trainer *t, int64_t step, metrics_row *row, bool tty)
{
    const train_opts *o = &t->o;
    const int B = o->batch_size, A = o->grad_accum, T = o->block_size, r = t->rank, R = t->ranks;
    const bool show = tty && t->rank == 0;
    row->train = estimate_loss(t->g, &t->m, &t->d, false, B, A, T, o->eval_iters, o->seed, step, r, R, show, t->err,
                               sizeof t->err);
    const int64_t val_iters = o->full_val ? 0 : o->eval_iters;   /* 0: the whole split */
    row->val = isnan(row->train) ? NAN
                                 : estimate_loss(t->g, &t->m, &t->d, true, B, A, T, val_iters, o->seed, step, r, R,
                                                 show, t->err, sizeof t->err);
    if (isnan(row->train) || isnan(row->val)) return -1;   /* estimate_loss's message (its graph is reset) */
    if (!isfinite(row->train) || !isfinite(row->val)) {
        t->everywhere = true;   /* a sum across processes: the same everywhere */
        return failf(t, "the loss is not finite at step %lld", (long long)step);
    }
    row->train_bpb = tg_bits_per_byte(row->train, t->d.bytes_per_token[0]);
    row->val_bpb = tg_bits_per_byte(row->val, t->d.bytes_per_token[1]);
    return 0;
}

/* The evaluation's line (rank 0), which `eval --ckpt` repeats, and the
 * corpus's floor beside it. */
static void say_eval(const trainer *t, const metrics_row *row, const char *weights, bool tty)
{
    if (t->rank) return;
    char line[256];
    metrics_eval_line(row, weights, line, sizeof line);
    fprintf(stderr, "%s%s", tty ? "\r\033[K" : "", line);
    if (t->text.floor_nats >= 0 && t->v.kind == TG_VOCAB_TOKENIZER)   /* the corpus's floor is per byte */
        fprintf(stderr, " (floor %.4f bits per byte, +%.4f)", tg_bits_per_byte(t->text.floor_nats, 1),
                row->val_bpb - tg_bits_per_byte(t->text.floor_nats, 1));
    else if (t->text.floor_nats >= 0)
        fprintf(stderr, " (floor %.4f, +%.4f)", t->text.floor_nats, row->val - t->text.floor_nats);
    fprintf(stderr, "\n");
}

/* The weights in the store, evaluated at `step` to val loss `val`, into
 * OUT/best.safetensors when no evaluation before was lower, with the
 * run's settings, the step and (an --ema run's) which weights they are. */
static int keep_best(trainer *t, int64_t step, double val, const char *weights)
{
    if (!(val < t->ts.best_val)) return 0;
    t->ts.best_val = val;
    t->best_step = step;
    t->best_weights = weights;
    if (weights && kv_set(&t->meta, "weights", weights)) return failf(t, "out of memory");
    tg_train_state at = {.step = step};
    if (t->rank == 0 && tg_checkpoint_save(t->path[BEST], &t->m, &t->v, NULL, NULL, NULL, NULL, NULL, &at,
                                           (const char *const *)t->meta.kv, t->meta.n, t->err, sizeof t->err))
        return -1;
    return 0;
}

/* An evaluation at `step`: its losses into row and metrics.csv, its line,
 * the best weights, the state. With --ema both the weights trained (raw)
 * and their averages (ema) are evaluated, on the same windows, each line
 * saying which; row and metrics.csv take the averages', and the lower of
 * the two val losses is the one that competes for best.safetensors,
 * which records whose weights it holds. */
static int evaluate_and_save(trainer *t, int64_t step, metrics_row *row, bool tty)
{
    if (!t->ema) {
        if (measure(t, step, row, tty)) return -1;
        say_eval(t, row, NULL, tty);
        if (keep_best(t, step, row->val, NULL)) return -1;
    } else {
        metrics_row raw = *row;
        if (measure(t, step, &raw, tty)) return -1;
        say_eval(t, &raw, "raw", tty);
        tg_ema_swap(t->ema, NULL);   /* the averages in the store, the weights beside them */
        int rc = measure(t, step, row, tty);
        const bool averages = !rc && row->val <= raw.val;
        if (!rc) say_eval(t, row, "ema", tty);
        if (averages) rc = keep_best(t, step, row->val, "ema");
        tg_ema_swap(t->ema, NULL);
        if (rc || (!averages && keep_best(t, step, raw.val, "raw"))) return -1;
    }
    if (t->rank == 0) {
        metrics_write(t->csv, row);
        plot_losses(t);
    }
    return save_last(t, step);
}

/* ---- training ------------------------------------------------------------ */

/* One optimizer step: --grad-accum micro-batches of this rank's rows,
 * each backward seeded with 1 / (processes x grad_accum), so that summed
 * across the processes (t->dg, while the last micro-batch's backward
 * runs) the gradients are the mean over the whole global batch; clipping
 * by the global norm; AdamW on the range this rank updates (everything,
 * or with --zero 1 its shard, gathered into every rank's weights after).
 * Returns the step's loss (the mean over every micro-batch of every
 * rank), or NAN with the message. */
static double train_step(trainer *t, int64_t step, double lr)
{
    const train_opts *o = &t->o;
    const int B = o->batch_size, T = o->block_size, A = o->grad_accum, R = t->ranks;
    const double inv = 1.0 / ((double)A * R);
    const float inv_f = (float)inv;
    const void *seed = t->dt == TG_F32 ? (const void *)&inv_f : (const void *)&inv;
    double sum = 0;
    for (int k = 0; k < A; k++) {
        if (o->epochs)
            tg_dataset_epoch_rows(&t->d, false, (uint64_t)o->seed, t->ts.windows, R * B, t->rank * B, B, T, t->x, t->y);
        else
            tg_dataset_rows(&t->d, false, R * B, t->rank * B, B, T, &t->ts.data_rng, t->x, t->y);
        t->ts.windows += R * B;
        tg_tensor *xt = tg_tensor_from(t->g, TG_I32, 2, (int[]){B, T}, t->x);   /* (B,T) */
        tg_tensor *yt = tg_tensor_from(t->g, TG_I32, 2, (int[]){B, T}, t->y);   /* (B,T) */
        tg_tensor *loss = tg_model_loss(t->g, &t->m, xt, yt);                      /* () */
        const bool last = k == A - 1;   /* earlier micro-batches only accumulate */
        if (last) tg_dist_grads_begin(t->dg, t->g);
        int rc = tg_graph_backward_seeded(t->g, loss, seed);
        if (last) tg_dist_grads_end(t->dg);
        if (rc != 0) {
            failf(t, "step %lld: %s", (long long)step, tg_graph_error(t->g));
            return NAN;
        }
        double lv = ranks_fault_nan(step) ? NAN : tg_tensor_item(loss);
        tg_graph_reset(t->g);
        if (!isfinite(lv)) {
            failf(t, "step %lld: the loss is %g", (long long)step, lv);
            return NAN;
        }
        sum += lv;
    }
    tg_dist_allreduce_f64(&sum, 1, TG_DIST_SUM);
    if (o->grad_clip > 0) {
        double norm = tg_dist_grads_clip(t->dg, o->grad_clip);
        if (!isfinite(norm)) {
            t->everywhere = true;   /* the norm of the summed gradients: the same on every rank */
            failf(t, "step %lld: the gradient norm is %g", (long long)step, norm);
            return NAN;
        }
    }
    if (muon_sharded(t)) muon_gather_grads(t);
    tg_adamw_step_grad(t->opt, lr, tg_dist_grads_shard_grad(t->dg), NULL);
    tg_dist_grads_gather_params(t->dg);   /* (Muon's matrices: AdamW left them, the same everywhere) */
    if (t->muon) {   /* its learning rate follows the same schedule, scaled to --muon-lr */
        const double mlr = o->lr > 0 ? lr * (o->muon_lr / o->lr) : o->muon_lr;
        if (muon_sharded(t)) {
            tg_muon_step_part(t->muon, mlr, t->rank, t->ranks, NULL);
            muon_share(t, false);
        } else {
            tg_muon_step(t->muon, mlr, NULL);
        }
    }
    tg_params_zero_grad(t->m.params);
    return sum / ((double)A * R);
}

/* A signal on any process (mpirun passes Ctrl-C on as SIGTERM to every
 * one, not at the same instant): every rank stops at the same step. */
static int stop_signal(bool late, bool *all_late)
{
    int64_t v[2] = {interrupted, late};   /* late: rank 0's clock, for every rank */
    tg_dist_allreduce_i64(v, 2, TG_DIST_MAX);
    *all_late = v[1] != 0;
    return (int)v[0];
}

/* the share of the budget the chosen steps leave unused (plan_steps) */
#define BUDGET_MARGIN 0.1

/* --time-budget is a deadline: when the machine has slowed since the
 * steps were timed so that the next step and what follows it (an
 * evaluation, or the save of a stop) would end past the budget, the run
 * stops as if interrupted, resumable; its steps so far are the chosen
 * run's. (Rank 0's clock decides.) A step costs what the recent steps
 * took (their moving average), an evaluation with its saves what the
 * latest one took (t->eval_s, timed again at each), and what follows
 * half as much again, up to half the margin: on a machine whose speed
 * moves, one evaluation is no measure of the next (a throttled run under
 * a sanitizer ended 0.16 s past 8 s, its last evaluation slower than the
 * one before), and with at most half the margin a run on a steady
 * machine never stops for it. */
static bool out_of_time(const trainer *t, int64_t step, double ema_ms)
{
    const train_opts *o = &t->o;
    if (!(o->time_budget > 0) || o->resume || t->rank) return false;
    const double step_s = ema_ms > 0 ? ema_ms / 1e3 : t->step_s;
    const bool last = step + 1 == o->steps, evaluates = (step + 1) % o->eval_interval == 0 || last;
    /* then, but for the last step (the run ends with its evaluation), room to stop at the next check: a
     * stop's save and picture, at most what an evaluation with its saves takes */
    const double after = step_s + (evaluates ? t->eval_s : 0) + (last ? 0 : t->eval_s);
    const double slack = fmin(0.5 * after, 0.5 * BUDGET_MARGIN * o->time_budget);
    return now_seconds() - t->t_start + after + slack > o->time_budget;
}

/* On several processes, what the gradients' sum across them cost: the
 * probe timed it alone at the start; after its backward a step waited
 * for what backward did not hide, and for slower processes. (bench/
 * bench_dist times the overlap itself: buckets against one at the end.) */
static void report_overlap(const trainer *t)
{
    tg_dist_stats s;
    tg_dist_grads_stats(t->dg, &s);
    if (t->ranks == 1 || !s.steps) return;
    fprintf(stderr, "tiny_gpt: %d processes: summing %.1f MB of gradients takes %.2f ms alone; a step waited %.2f ms "
                    "after its backward (%.1f ms) for the sums and for slower processes\n",
            t->ranks, (double)s.bytes / 1e6, 1e3 * t->probe_s, 1e3 * s.wait_s / (double)s.steps,
            1e3 * s.backward_s / (double)s.steps);
}

/* --time-budget: the steps the budget holds, fixed once and for all
 * before the first step. The step-0 evaluation with its saves was timed
 * (eval_s). Steps are timed on a snapshot of the state and undone, so the
 * run is the same run as `--steps N` would be: BUDGET_WARM untimed, then
 * as many as take about BUDGET_TIMING of the budget (at least
 * BUDGET_MIN_TIMED, at most BUDGET_MAX_TIMED), their mean the step's
 * cost: on a shared machine a longer look sees the load a few steps
 * miss. Rank 0 decides and tells the others (each count too: the steps
 * sum across processes). The count is recorded (train.steps,
 * train.budget_steps) in OUT/last.safetensors at once: a resume continues
 * the same steps and schedule. */
#define BUDGET_WARM 2
#define BUDGET_MIN_TIMED 5
#define BUDGET_MAX_TIMED 200
#define BUDGET_TIMING 0.02

/* n steps from step `first` on, for their time alone: 0, or -1 (the message). */
static int timing_steps(trainer *t, int64_t first, int64_t n)
{
    for (int64_t k = first; k < first + n; k++) {
        if (isnan(train_step(t, k + 1, tg_lr_at(&t->sched, k)))) return -1;
        tg_ema_update(t->ema, NULL);   /* timed as the run's steps are (the averages restart after) */
    }
    return 0;
}

static int plan_steps(trainer *t, double eval_s)
{
    train_opts *o = &t->o;
    t->ts.drop_rng = *tg_graph_rng(t->g);
    tg_train_snapshot *snap = tg_train_snapshot_take(&t->m, t->opt, t->muon, &t->ts, t->err, sizeof t->err);
    if (!snap) return -1;
    double t0 = now_seconds();
    if (timing_steps(t, 0, BUDGET_WARM)) {
        tg_train_snapshot_free(snap);
        return -1;
    }
    double warm = (now_seconds() - t0) / BUDGET_WARM;   /* how many to time, from the warm steps (rank 0's) */
    tg_dist_bcast(&warm, sizeof warm, 0);
    const double want = BUDGET_TIMING * o->time_budget / (warm > 1e-9 ? warm : 1e-9);
    const int64_t timed = want < BUDGET_MIN_TIMED   ? BUDGET_MIN_TIMED
                          : want > BUDGET_MAX_TIMED ? BUDGET_MAX_TIMED
                                                    : (int64_t)want;
    t0 = now_seconds();
    if (timing_steps(t, BUDGET_WARM, timed)) {
        tg_train_snapshot_free(snap);
        return -1;
    }
    const double step_s = (now_seconds() - t0) / (double)timed;
    const int rc = tg_train_snapshot_restore(snap, &t->m, t->opt, t->muon, &t->ts);
    tg_train_snapshot_free(snap);
    if (rc) return failf(t, "--time-budget: the state timed could not be put back");
    tg_ema_reset(t->ema, NULL);   /* --ema: the averages start again as these weights (no-op without) */
    *tg_graph_rng(t->g) = t->ts.drop_rng;
    /* the chosen steps, and what they were chosen from, from rank 0 */
    double plan[4] = {now_seconds() - t->t_start, step_s, eval_s, t->save_s};
    tg_dist_bcast(plan, sizeof plan, 0);
    const tg_budget_costs c = {.spent = plan[0], .step = plan[1], .eval = plan[2], .fixed = plan[3]};
    t->step_s = c.step;
    t->eval_s = c.eval;
    const int64_t n = tg_budget_steps(o->time_budget, BUDGET_MARGIN, &c, o->eval_interval, o->steps);
    if (n < 1) {
        t->everywhere = true;
        return failf(t, "--time-budget %g: not one step fits (%.2f s spent before the first step, a step %.3f s, an "
                        "evaluation with its saves %.2f s, a %.0f%% margin); give a larger budget, or a smaller "
                        "--eval-iters", o->time_budget, c.spent, c.step, c.eval, 100 * BUDGET_MARGIN);
    }
    o->steps = o->decay_steps = n;
    set_schedule(t);
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)n);
    if (kv_set(&t->meta, "train.steps", buf) || kv_set(&t->meta, "train.decay_steps", buf) ||
        kv_set(&t->meta, "train.budget_steps", buf))
        return failf(t, "out of memory");
    if (t->say)
        fprintf(stderr, "tiny_gpt: --time-budget %g s holds %lld steps: %.2f s spent before the first step (%lld steps "
                        "timed), a step %.1f ms, an evaluation with its saves %.2f s, a %.0f%% margin\n",
                o->time_budget, (long long)n, c.spent, (long long)timed, 1e3 * c.step, c.eval, 100 * BUDGET_MARGIN);
    if (o->warmup >= n && t->say)
        fprintf(stderr, "tiny_gpt train: warning: --warmup %lld is not shorter than the %lld steps the budget holds: "
                        "the learning rate never reaches --lr %g\n", (long long)o->warmup, (long long)n, o->lr);
    return save_last(t, 0);
}

/* Returns 0 (done), 130/143 (stopped by a signal) or -1 (error). */
static int train_loop(trainer *t)
{
    const train_opts *o = &t->o;
    const bool tty = isatty(STDERR_FILENO);
    const int64_t first = t->ts.step;
    const bool lead = t->rank == 0;   /* prints and writes files */
    const double tokens = (double)t->ranks * o->batch_size * o->grad_accum * o->block_size;
    double ema_ms = 0, t_start = now_seconds(), last_val = NAN;
    if (!o->resume) {   /* a resumed run evaluated the step it starts at */
        tg_ema_reset(t->ema, NULL);   /* --ema: the averages start as the weights every process now holds (rank 0's) */
        metrics_row row = metrics_empty(0);
        const double e0 = now_seconds();
        if (evaluate_and_save(t, 0, &row, tty)) return -1;
        last_val = row.val;
        t->eval_s = now_seconds() - e0;   /* the ETA's (and the budget's) cost of an evaluation */
        t->eval_timed = true;
        if (t->plan && plan_steps(t, t->eval_s)) return -1;
    }
    for (int64_t step = first; step < o->steps;) {
        bool late;
        const int sig = stop_signal(out_of_time(t, step, ema_ms), &late);
        if (sig || late || (o->stop_at && step >= o->stop_at)) {
            if (save_last(t, step)) return -1;
            if (lead) {
                plot_losses(t);
                if (late && !sig)
                    fprintf(stderr, "%stiny_gpt train: warning: --time-budget %g s ran out at step %lld of %lld (the "
                                    "machine became slower than when the steps were timed)\n",
                            tty ? "\r\033[K" : "", o->time_budget, (long long)step, (long long)o->steps);
                fprintf(stderr, "%sstopped at step %lld; continue with: tiny_gpt train --resume --out %s\n",
                        tty ? "\r\033[K" : "", (long long)step, o->out);
                if (late && !sig)
                    fprintf(stderr, "tiny_gpt: the run took %.2f s of its --time-budget %g s\n",
                            now_seconds() - t->t_start, o->time_budget);
            }
            return sig ? 128 + sig : 0;
        }
        double t0 = now_seconds(), lr = tg_lr_at(&t->sched, step);
        double loss = train_step(t, step + 1, lr);
        if (isnan(loss)) return -1;
        tg_ema_update(t->ema, NULL);
        step++;
        double ms = 1e3 * (now_seconds() - t0);
        ema_ms = step == first + 1 ? ms : 0.9 * ema_ms + 0.1 * ms;
        metrics_row row = metrics_empty(step);
        row.loss = loss;
        row.lr = lr;
        row.ms = ms;
        row.tokens_per_s = tokens / (ema_ms / 1e3);
        if (lead && (tty || step % o->log_interval == 0)) {
            char eta[64];
            const eta_plan plan = {.steps = o->steps, .stop_at = o->stop_at, .eval_interval = o->eval_interval,
                                   .step_s = ema_ms / 1e3, .eval_s = t->eval_timed ? t->eval_s : -1,
                                   .save_s = t->save_s};
            eta_format(&plan, step, eta, sizeof eta);
            fprintf(stderr, "%sstep %lld/%lld | loss %.4f | lr %.2e | %.1f ms/step | %.0f tok/s | ETA %s%s",
                    tty ? "\r\033[K" : "", (long long)step, (long long)o->steps, loss, lr, ema_ms, row.tokens_per_s,
                    eta, tty ? "" : "\n");
        }
        if (step % o->eval_interval == 0 || step == o->steps) {
            const double e0 = now_seconds();
            if (evaluate_and_save(t, step, &row, tty)) return -1;
            t->eval_s = now_seconds() - e0;   /* what the next one is expected to cost (the ETA, --time-budget) */
            t->eval_timed = true;
            last_val = row.val;
        } else if (lead) {
            metrics_write(t->csv, &row);
        }
    }
    if (!lead) return 0;
    char whose[96] = "";
    if (t->best_weights)   /* --ema: which weights best.safetensors holds */
        snprintf(whose, sizeof whose, " (the %s weights of step %lld, in best.safetensors)", t->best_weights,
                 (long long)t->best_step);
    fprintf(stderr, "tiny_gpt: %lld step%s in %.1f s; best val loss %.4f%s; checkpoints in %s/\n",
            (long long)(o->steps - first), o->steps - first == 1 ? "" : "s", now_seconds() - t_start, t->ts.best_val,
            whose, o->out);
    if (o->time_budget > 0 && !o->resume) {
        const double total = now_seconds() - t->t_start;
        fprintf(stderr, "tiny_gpt: the run took %.2f s of its --time-budget %g s%s\n", total, o->time_budget,
                total > o->time_budget ? " (over: the machine was slower than when the steps were timed)" : "");
    }
    report_overlap(t);
    printf("val loss %.4f\n", last_val);
    return 0;
}

/* What every process must share with rank 0 (ranks_check_same): what
 * the data is (a text or token files: their recorded keys differ, so it
 * is compared first), the run's recorded settings (the text by size and
 * checksum; its path may differ), the model, the vocabulary, the
 * parameters' count, resumed the checkpoint's state, and what decides the
 * order of the collectives (the buckets, --stop-at); then the weights. A
 * new run takes rank 0's initial weights, as DDP does (machines whose
 * libm rounds differently draw other ones), but only once the ranks are
 * known to hold models of one shape: a broadcast into a smaller model
 * would overrun it (issue 20). */
static int same_run(trainer *t)
{
    if (t->ranks == 1) return 0;
    const train_opts *o = &t->o;
    tg_params *p = t->m.params;
    const size_t bytes = (size_t)tg_params_numel(p) * tg_dtype_size(t->dt);
    kv_list f = {0};
    char buf[1200];
    int rc = kv_add(&f, "the data", t->text.text ? "a text (--data or the built-in corpus)" : "token files (--data-tokens)");
    for (int i = 0; i < t->meta.n; i++) {   /* not the data's paths: machines may mount it elsewhere */
        const char *k = t->meta.kv[2 * i];
        if (strcmp(k, "train.data") && strcmp(k, "train.data_tokens") && strcmp(k, "train.val_tokens"))
            rc |= kv_add(&f, k, t->meta.kv[2 * i + 1]);
    }
    rc |= config_fields(&t->m.config, &f);
    tg_vocab_to_string(&t->v, buf, sizeof buf);
    rc |= kv_add(&f, "vocab", buf);
    snprintf(buf, sizeof buf, "%zu, checksum %016llx", t->d.n,   /* a tokenizer's, or a token file's */
             (unsigned long long)fnv1a64(t->d.tokens, t->d.n * sizeof *t->d.tokens));
    rc |= kv_add(&f, "tokens", buf);
    const int nb = tg_dist_grads_bucket_count(t->dg);
    snprintf(buf, sizeof buf, "%lld elements (%zu bytes) in %d bucket%s", (long long)tg_params_numel(p), bytes, nb,
             nb == 1 ? "" : "s");
    rc |= kv_add(&f, "parameters", buf);
    snprintf(buf, sizeof buf, "%s", o->resume ? "--resume" : o->init ? "--init" : "a new run");
    rc |= kv_add(&f, "start", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)o->stop_at);
    rc |= kv_add(&f, "train.stop_at", buf);
    if (o->resume) {
        const tg_st_tensor *m = tg_st_find(t->from, "optimizer.m"), *v = tg_st_find(t->from, "optimizer.v");
        snprintf(buf, sizeof buf, "step %lld, moments %016llx %016llx, data stream %016llx %016llx",
                 (long long)t->ts.step, (unsigned long long)fnv1a64(m->data, m->nbytes),
                 (unsigned long long)fnv1a64(v->data, v->nbytes), (unsigned long long)t->ts.data_rng.state,
                 (unsigned long long)t->ts.data_rng.inc);
        rc |= kv_add(&f, "checkpoint", buf);
    }
    if (rc) ranks_abort("train", "out of memory");
    rc = ranks_check_same(&f, t->err, sizeof t->err);
    kv_free(&f);
    if (rc) return rc;   /* on every rank alike: nothing was broadcast */
    /* the same shapes everywhere (the dtype is among the settings): the weights */
    if (!t->from) tg_dist_bcast(tg_params_data(p), bytes, 0);
    kv_list w = {0};
    snprintf(buf, sizeof buf, "checksum %016llx", (unsigned long long)fnv1a64(tg_params_data(p), bytes));
    if (kv_add(&w, "weights", buf)) ranks_abort("train", "out of memory");
    rc = ranks_check_same(&w, t->err, sizeof t->err);
    kv_free(&w);
    return rc;
}

/* On resume, what the schedule does from here: a longer --steps does not
 * stretch the cosine, whose end is the run's --decay-steps (the steps
 * after it train at --min-lr); and schedule flags given anew change the
 * learning rate from the next step on. */
static void say_schedule(const trainer *t)
{
    const train_opts *o = &t->o;
    const int64_t s = t->ts.step, from = (s > o->decay_steps ? s : o->decay_steps) + 1;
    if (!t->was.known) return;
    if (o->steps > t->was.steps && o->steps > o->decay_steps && !args_seen(t->specs, t->n_specs, "decay-steps")) {
        char range[80];
        if (from < o->steps)
            snprintf(range, sizeof range, "steps %lld to %lld train", (long long)from, (long long)o->steps);
        else snprintf(range, sizeof range, "step %lld trains", (long long)from);
        fprintf(stderr, "tiny_gpt train: notice: the cosine schedule ends at the run's --decay-steps %lld, so %s at "
                        "--min-lr %g; give --decay-steps %lld to decay over the longer run instead\n",
                (long long)o->decay_steps, range, o->min_lr, (long long)o->steps);
    }
    tg_lr_schedule was = t->sched;   /* (a --schedule or --decay-frac given anew has its own notice) */
    was.warmup = t->was.warmup, was.decay_steps = t->was.decay_steps, was.lr = t->was.lr, was.min_lr = t->was.min_lr;
    const double now = tg_lr_at(&t->sched, s), then = tg_lr_at(&was, s);
    if (now != then)
        fprintf(stderr, "tiny_gpt train: notice: the schedule changed: step %lld trains at learning rate %.4g, where "
                        "the run's schedule gave %.4g\n", (long long)s + 1, now, then);
}

/* The lines that open a run. */
static void say_start(trainer *t)
{
    const train_opts *o = &t->o;
    fprintf(stderr, "tiny_gpt: %lld parameters, vocab %d, %zu %s (%s), %s attention; %s\n",
            (long long)tg_params_numel(t->m.params), t->v.size, t->text.text ? t->text.len : t->d.n,
            t->text.text ? "characters" : "tokens",
            !t->text.text ? "token files" : *t->id.path ? t->id.path : "built-in corpus",
            o->attn_composed ? "composed" : "fused", o->resume ? "resuming" : "training");
    if (t->muon)
        fprintf(stderr, "tiny_gpt: Muon (lr %g, momentum %g) for the blocks' matrices, %lld parameters; AdamW for the "
                        "other %lld\n", o->muon_lr, o->muon_momentum, (long long)tg_muon_numel(t->muon),
                (long long)(tg_params_numel(t->m.params) - tg_muon_numel(t->muon)));
    if (t->ema)
        fprintf(stderr, "tiny_gpt: the weights averaged (decay %g): each evaluation is of the raw weights and of "
                        "their averages (the ema weights), on the same windows; best.safetensors keeps the lower val "
                        "loss of the two (its metadata 'weights' says whose), last.safetensors holds both\n", o->ema);
    if (t->ranks > 1) {
        int64_t lo, hi;
        tg_adamw_shard(t->opt, &lo, &hi);
        const double es = (double)tg_dtype_size(t->dt), mb = 2 * es * (double)tg_params_numel(t->m.params) / 1e6;
        char of[64] = "";
        if (o->zero) snprintf(of, sizeof of, " (--zero 1: its shard of %.3g MB)", mb);
        const int th = tg_num_threads(), nb = tg_dist_grads_bucket_count(t->dg);
        fprintf(stderr, "tiny_gpt: %d processes x %d thread%s; %lld sequences per step (%d x --batch-size %d x "
                        "--grad-accum %d); gradients summed in %d bucket%s as backward runs; AdamW's moments %.3g MB "
                        "per process%s\n",
                t->ranks, th, th == 1 ? "" : "s", (long long)t->ranks * o->batch_size * o->grad_accum, t->ranks,
                o->batch_size, o->grad_accum, nb, nb == 1 ? "" : "s", 2 * es * (double)(hi - lo) / 1e6, of);
    } else if (o->zero) {
        fprintf(stderr, "tiny_gpt train: notice: --zero 1 on one process: there is nothing to shard\n");
    }
    if (o->resume) {
        fprintf(stderr, "tiny_gpt: continuing at step %lld of %lld\n", (long long)t->ts.step, (long long)o->steps);
        say_schedule(t);
    }
    if (t->text.floor_nats >= 0)
        fprintf(stderr, "tiny_gpt: the corpus's entropy floor is %.4f nats/char\n", t->text.floor_nats);
}

int cmd_train(int argc, char **argv)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t) return 1;
    t->t_start = now_seconds();
    t->lock_fd = -1;
    t->budget_left_at = -1;
    t->rank = tg_dist_rank();
    t->ranks = tg_dist_size();
    t->say = t->rank ? NULL : "train";
    t->n_specs = train_specs(&t->o, t->specs);
    train_opts *o = &t->o;
    tg_dtype dt;
    int rc = command_setup("train", "[flags]", t->specs, t->n_specs, argc, argv, &o->dtype, &dt, &o->attn,
                           &o->attn_composed, &o->threads);
    if (rc >= 0) {
        free(t);
        return rc;
    }
    /* every rank runs every stage; then they agree that all succeeded and
     * that they run the same run, before rank 0 writes anything */
    rc = 1;
    bool failed = claim_out(t) || start_from(t) || check_settings(t) || load_data(t) || build(t);
    if (ranks_agree("train", failed, t->err)) goto done;
    if (same_run(t)) {
        if (t->rank == 0) fprintf(stderr, "tiny_gpt train: %s\n", t->err);
        goto done;
    }
    failed = t->rank == 0 && !(t->csv = metrics_open(t->path[METRICS], o->resume ? t->ts.step : -1, o->log_digits,
                                                     t->err, sizeof t->err));
    if (ranks_agree("train", failed, t->err)) goto done;
    t->probe_s = tg_dist_grads_probe(t->dg, 3);   /* (the gradients are still zero) */
    if (t->rank == 0) say_start(t);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = train_loop(t);
    if (rc < 0) {
        if (t->ranks > 1 && !t->everywhere) ranks_abort("train", t->err);   /* the others may wait in a collective */
        if (t->rank == 0) fprintf(stderr, "%stiny_gpt train: %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", t->err);
        rc = 1;
    }
done:
    tg_metrics_close(t->csv);
    if (t->lock_fd >= 0) close(t->lock_fd);
    if (rc && t->made_out) rmdir(o->out);   /* only while still empty: a failed run leaves no empty OUT behind */
    free(t->x);
    free(t->y);
    tg_graph_free(t->g);
    tg_ema_free(t->ema);
    tg_muon_free(t->muon);
    tg_adamw_free(t->opt);
    tg_dist_grads_free(t->dg);
    tg_model_release(&t->m);
    tg_st_free(t->from);
    tg_dataset_free(&t->d);
    tg_vocab_free(&t->v);
    run_text_free(&t->text);
    kv_free(&t->meta);
    free(t);
    return rc;
}
