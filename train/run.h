/* tapegrad's training layer: a training run as a library object, for
 * every model family (nn/nn.h's tg_model: the GPT, the Llama, a family of
 * one's own).
 *
 *   settings   the run's config and the table of its settings
 *              (train/run_settings.h)
 *   the run    made from a config into a directory it keeps to itself, or
 *              resumed from the directory's last.safetensors; then one
 *              call per optimizer step (micro-batches, the gradients'
 *              sum across processes, clipping, AdamW, Muon, the weight
 *              averages), one per evaluation (best.safetensors, and
 *              last.safetensors with the whole state, written
 *              atomically), one per save, the time budget's plan, the
 *              metrics file. The loop is the caller's, as in nanoGPT's
 *              train.py: it may print, stop, change the learning rate or
 *              evaluate what it likes between steps. A run stopped at
 *              any step boundary (or killed) and resumed from its last
 *              save ends bit for bit as the uninterrupted one, on every
 *              kernel path and thread count; R processes follow one
 *              process with an R times larger batch.
 *   processes  what the run needs of them, as a table of functions
 *              (tg_run_backend): this process alone by default;
 *              distributed/dist.h's tg_dist_run_backend() over MPI
 *   data       the text or token files of a run's config, checked
 *              against what a checkpoint records
 *   the ETA    the time a run has left, its evaluations counted
 *
 * The library prints nothing: what a run has to say goes to the
 * caller's notice callback.
 *
 * Included by train/train.h. */
#ifndef TG_RUN_H
#define TG_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../core/safetensors.h"
#include "../core/tensor.h"
#include "../nn/nn.h"
#include "../optim/optim.h"
#include "run_settings.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- how a run is made and tells what it does ------------------------------- */

/* The processes a run trains on (below); NULL in tg_run_options: this one alone. */
typedef struct tg_run_backend tg_run_backend;

/* How tg_run_new and tg_run_resume go about it; every field's zero value
 * (or NULL for the struct) is the default. */
typedef struct tg_run_options {
    const tg_run_backend *backend; /* the processes (distributed/dist.h: tg_dist_run_backend()); NULL: one */
    const char *init; /* tg_run_new: start from these weights (the model's settings from them) */
    bool force; /* tg_run_new: replace the run the directory holds */
    int64_t stop_at; /* the step the caller stops at (0: none), for tg_run_should_stop and the ETA */
    double spent; /* seconds gone before the call, which a time budget counts */
    bool flag_names; /* messages name a setting as a flag ("--batch-size"), not "batch_size" */
    const char *program; /* the program's name in messages ("another tiny_gpt is training ..."); NULL: "run" */
    /* the run's notices (on the first process only); NULL: none */
    void (*notice)(void *ctx, tg_run_notice kind, const char *msg);
    /* before each batch of an evaluation's estimate (done of iters), on the first process; NULL: none */
    void (*progress)(void *ctx, int64_t step, bool val, int64_t done, int64_t iters);
    /* tg_run_resume: called with the checkpoint's config before it is checked, to change it (a command line
     * applies its flags here); 0, or -1 with a message that fails the resume. NULL: none */
    int (*configure)(void *ctx, tg_run_config *c, tg_error *err);
    void *ctx; /* passed to the three */
} tg_run_options;

/* ---- a run's data (train/run_data.c) ----------------------------------------- */

/* The text a run trains on: a file's bytes or the built-in corpus, with
 * what identifies it in the run's checkpoints. */
typedef struct tg_run_text {
    char *text; /* NUL-terminated, malloc'd */
    size_t len;
    double floor_nats; /* the built-in corpus's entropy floor in nats per character; -1 for a file */
    char path[4096]; /* the file's absolute path; "" for the corpus */
    uint64_t fnv; /* FNV-1a (64 bits) of the bytes */
} tg_run_text;

/* The text of c into t: the file c->data, or the built-in corpus of
 * c->corpus_chars characters (c->data NULL or ""). When rec (NULL: none)
 * records a text ("train.data", "train.data_bytes", "train.data_checksum"),
 * the one read must be it (same size and checksum) if must_match, else a
 * different one is a notice; read from another path, it is a notice
 * either way. Notices go to o's callback (o may be NULL). 0, or -1 with
 * a message (a file that cannot be read or is empty, another text; t is
 * then empty). */
TG_API int tg_run_text_load(tg_run_text *t, const tg_run_config *c, const tg_st_file *rec, bool must_match,
                            const tg_run_options *o, tg_error *err);
/* Frees the text (t stays the caller's, empty). Accepts NULL. */
TG_API void tg_run_text_release(tg_run_text *t);
/* The token files of c (c->data_tokens, and c->val_tokens or the last
 * 10% of the first) read whole into d, every id below c->vocab_size (v's
 * size when 0), the windows c->block_size + 1 long, bytes per token from v. When rec
 * records the files ("train.data_tokens_id", ...), the ids read must be
 * those (count and checksum) if must_match, else a different file is a
 * notice. 0, or -1 with a message naming the file (d then empty). */
TG_API int tg_run_tokens_load(tg_dataset *d, const tg_vocab *v, const tg_run_config *c, const tg_st_file *rec,
                              bool must_match, const tg_run_options *o, tg_error *err);

/* ---- the time a run has left (train/run_eta.c) ------------------------------ */

/* A run's steps and what they were measured to cost. */
typedef struct tg_eta_plan {
    int64_t steps; /* the run's steps */
    int64_t stop_at; /* the step it stops at (0: none): it ends there when that comes before steps */
    int64_t eval_interval; /* an evaluation after every eval_interval-th step, and one after the last */
    double step_s; /* a step, in seconds */
    double eval_s; /* an evaluation with its saves; < 0 while none has been timed (a resume) */
    double save_s; /* the save a stop at stop_at makes */
} tg_eta_plan;

/* The evaluations a run at `step` (steps done) still makes: after each
 * step in (step, end] that eval_interval divides, end the step it ends
 * at (stop_at before steps, else steps), and after step `steps` when the
 * run gets there and eval_interval does not divide it. 0 for NULL. */
TG_API int64_t tg_eta_evals_left(const tg_eta_plan *p, int64_t step);
/* The seconds a run at `step` has left: its steps to the end at step_s,
 * its evaluations left at eval_s (0 while untimed), and a stop's save.
 * NAN for NULL. */
TG_API double tg_eta_seconds(const tg_eta_plan *p, int64_t step);
/* tg_eta_seconds as a progress line shows it ("45s", "3m07s", "2h05m"),
 * followed by " + N evaluations" while their cost is untimed, into buf.
 * 0, or -1 for a NULL argument or a buf too small (then truncated). */
TG_API int tg_eta_format(const tg_eta_plan *p, int64_t step, char *buf, size_t size);

/* ---- the processes (train/run_local.c; distributed/dist.h over MPI) -------------- */

/* A backend's state for the gradients of one run's parameters. */
typedef struct tg_run_sync tg_run_sync;

/* What the gradients' sum across processes has cost so far. */
typedef struct tg_run_sync_stats {
    int buckets; /* the buckets one step's gradients are summed in */
    int64_t bytes; /* gradient bytes one step sums */
    int64_t steps; /* sums done */
    double backward_s; /* the backward passes they overlapped, in total */
    double wait_s; /* the time spent after backward waiting for them (and for slower processes) */
} tg_run_sync_stats;

/* The processes of a run and the collectives it makes, every one called
 * by every process in the same order. A program on one process needs
 * none of this (tg_run_options.backend NULL); one on several gives
 * distributed/dist.h's tg_dist_run_backend(), or its own. */
struct tg_run_backend {
    void *ctx; /* passed to the functions without a sync */
    int rank, size; /* this process, of size */
    /* Every process calls it after the same stage with whether it failed
     * and its message (msg, len bytes). -1 when none failed; else the
     * lowest failing rank, whose message is then in msg on every process,
     * and *all whether every process failed. */
    int (*agree)(void *ctx, bool failed, char *msg, size_t len, bool *all);
    /* 0 when every process holds rank 0's n pairs (kv[2i] a name, kv[2i+1]
     * its value, in one order everywhere); else -1 on every process with
     * one message in msg naming the first rank that differs, the name and
     * both values. */
    int (*same)(void *ctx, const char *const *kv, int n, char *msg, size_t len);
    void (*sum)(void *ctx, double *x, int n); /* x[i]: the sum over the processes */
    void (*max)(void *ctx, int64_t *x, int n); /* x[i]: the maximum */
    void (*bcast)(void *ctx, void *buf, size_t bytes, int root); /* root's buf on every process */
    /* Ends every process of the job after writing msg and a newline to
     * stderr: for a failure on one process while others may wait in a
     * collective. Never returns. */
    void (*abort)(void *ctx, const char *msg);
    /* The gradients of the store p summed across the processes, in
     * buckets of about bucket_bytes while backward runs; shard: each
     * process keeps its shard's sum only (ZeRO stage 1). NULL with a
     * message. */
    tg_run_sync *(*sync_new)(void *ctx, tg_params *p, size_t bucket_bytes, bool shard, tg_error *err);
    void (*sync_free)(tg_run_sync *s);
    void (*sync_range)(const tg_run_sync *s, int64_t *lo, int64_t *hi); /* the elements this process updates */
    void *(*sync_grad)(tg_run_sync *s); /* their summed gradients */
    int (*sync_begin)(tg_run_sync *s, tg_graph *g); /* before the backward of a step's last micro-batch */
    int (*sync_end)(tg_run_sync *s); /* after it (also when it failed) */
    double (*sync_clip)(tg_run_sync *s, double max_norm); /* by the norm over every shard; returns the norm */
    int (*sync_gather_params)(tg_run_sync *s); /* every shard's updated weights everywhere */
    /* every process's part (its range) of a buffer into full on rank 0 (a checkpoint's moments) */
    int (*sync_gather_shard)(const tg_run_sync *s, const void *part, void *full);
    /* Muon under a shard: every Muon matrix's whole summed gradient into
     * the store's gradients everywhere; and each matrix's weights (or,
     * momentum true, its momentum) from the process that updates it
     * (tg_muon_owner) to every other */
    void (*sync_muon_grads)(tg_run_sync *s, const tg_muon *m);
    void (*sync_muon_share)(tg_run_sync *s, tg_muon *m, bool momentum);
    bool (*sync_params_agree)(tg_run_sync *s); /* every process holds the same weights */
    double (*sync_probe)(tg_run_sync *s, int reps); /* seconds per sum with nothing to overlap */
    void (*sync_stats)(const tg_run_sync *s, tg_run_sync_stats *out);
};

/* This process alone: every collective a copy or nothing. */
TG_API const tg_run_backend *tg_run_local_backend(void);

/* ---- the run (train/run_new.c, train/run_step.c) ------------------------------ */

typedef struct tg_run tg_run;

/* A new run of c in dir (made if missing; locked for this run while it
 * lives), with o's options (NULL: the defaults), on every process of o's
 * backend alike: dir's temporaries of a killed run are removed, a run
 * already in dir is replaced only with o->force, the settings checked,
 * the text (or token files) read, the vocabulary made (a BPE trained on
 * the train split for tokenizer "bpe:V"), the model built (from o->init's
 * weights, whose model settings it takes, when given), the optimizers
 * and the state seeded; every process must then hold rank 0's run
 * (settings, data, model, weights). Rank 0 alone writes into dir. NULL
 * with a message, the same on every process ("rank R: ..." when not all
 * failed); a dir it made is removed again. */
TG_API tg_run *tg_run_new(const char *dir, const tg_run_config *c, const tg_run_options *o, tg_error *err);
/* The run in dir continued from its last.safetensors: its config is c
 * (NULL: the checkpoint's; tg_run_config_load, a field or two changed,
 * continues it with those), which o->configure may change in turn. A
 * model or identity setting (tg_setting_role) that differs from the
 * checkpoint's is an error naming it and both values, a free one a
 * notice; the text and token files must be the ones recorded (found
 * anew by c->data when moved), the global batch (processes x batch_size
 * x grad_accum) the run's. NULL with a message, as tg_run_new. */
TG_API tg_run *tg_run_resume(const char *dir, const tg_run_config *c, const tg_run_options *o, tg_error *err);
/* Frees the run (writing the metrics row of a last step not yet
 * written) and unlocks its directory. Accepts NULL. */
TG_API void tg_run_free(tg_run *r);

/* What one optimizer step did. */
typedef struct tg_run_step_info {
    int64_t step; /* the steps done now */
    double loss; /* the mean over every micro-batch of every process */
    double lr; /* the learning rate it used */
    double ms, ms_avg; /* its time, and the moving average of the steps' (0.9 old + 0.1 new) */
    double tokens_per_s; /* the tokens of a step over ms_avg */
} tg_run_step_info;

/* The learning rate the run's schedule gives the next step (0 for NULL). */
TG_API double tg_run_lr(const tg_run *r);
/* One optimizer step at learning rate lr (Muon's scaled alike, by
 * muon_lr / lr): grad_accum micro-batches of this process's rows of
 * each batch, the gradients summed across the processes while the last
 * backward runs, clipped by their global norm, AdamW on this process's
 * range (Muon on its matrices), the averages updated; its row of
 * metrics.csv written (by the evaluation when one is due). A time-budget
 * run plans its steps first (tg_run_plan_steps). Every process calls it. 0, or
 * -1 with a message (a loss or gradient norm not finite, a graph's
 * error): then see tg_run_failed_alone. */
TG_API int tg_run_step(tg_run *r, double lr, tg_run_step_info *out, tg_error *err);

/* An evaluation's losses: of the weights trained, or of an averaging
 * run's raw weights or averages. */
typedef struct tg_run_loss {
    int64_t step;
    const char *weights; /* "raw" or "ema" when the run averages its weights, else NULL */
    double train, val; /* nats per token */
    double train_bpb, val_bpb; /* bits per byte; NAN without bytes per token (token ids alone) */
} tg_run_loss;
/* What tg_run_evaluate measured. */
typedef struct tg_run_eval {
    int n; /* losses: 1, or 2 (raw, then ema) */
    tg_run_loss loss[2];
    bool best; /* best.safetensors now holds these weights (or the lower of the two) */
    double seconds; /* the evaluation with its saves (the ETA and a budget count, for the next ones, up to
                            * the program's next call on the run: its printing and pictures too) */
} tg_run_eval;

/* True when the step just done calls for an evaluation: every
 * eval_interval steps, the last step, and step 0 of a new run. */
TG_API bool tg_run_eval_due(const tg_run *r);
/* The train and val loss of the weights at the current step (eval_iters
 * batches of the run's size each, the windows drawn from (seed, step):
 * the same for every evaluation of that step; the val loss over the
 * whole split with full_val), and with averages of those too, on the
 * same windows; metrics.csv's row; best.safetensors when the val loss is
 * the lowest yet (of the two: its metadata "weights" says whose);
 * last.safetensors with the whole state. Every process calls it. 0, or
 * -1 with a message. */
TG_API int tg_run_evaluate(tg_run *r, tg_run_eval *out, tg_error *err);
/* How a run of config c estimates a loss (tg_eval_loss) at `step`, as
 * tg_run_evaluate does: its batch, accumulation and block size, iters
 * batches (0: every window of the split once), windows drawn from its
 * seed and the step; one process (rank 0 of 1), no sum and no progress
 * (a program on several processes, or with a progress line, sets them).
 * A zeroed spec (which tg_eval_loss refuses) for a NULL c. */
TG_API tg_eval_spec tg_run_eval_spec(const tg_run_config *c, int64_t iters, int64_t step);
/* An evaluation's line as tiny_gpt prints it: "step N: train loss X, val
 * loss Y (Z bits per byte)", then " of the ema weights" or " of the raw
 * weights" for an averaging run's. 0, or -1 (NULL, a buf too small). */
TG_API int tg_run_loss_format(const tg_run_loss *l, char *buf, size_t size);
/* last.safetensors: the whole state at the current step, written
 * atomically (a stop's save). Every process calls it. 0, or -1 with a
 * message. */
TG_API int tg_run_save(tg_run *r, tg_error *err);

/* What the time budget's plan chose, and from what. */
typedef struct tg_run_plan {
    int64_t steps; /* the steps the budget holds */
    int64_t timed; /* the steps timed (on a copy of the state, undone) */
    double spent; /* seconds gone before the first step */
    double step_s; /* a step */
    double eval_s; /* an evaluation with its saves */
    double margin; /* the budget's share left unused */
} tg_run_plan;

/* True for a new time-budget run whose steps are still to be chosen. */
TG_API bool tg_run_needs_plan(const tg_run *r);
/* Chooses a time-budget run's steps, once, after its step-0 evaluation
 * (whose cost it counts): some steps are timed on a copy of the state and
 * undone, so the run is the run that many steps would be; the count is
 * recorded (train.steps, train.budget_steps) in last.safetensors at once.
 * Every process calls it; rank 0's times decide. 0 (nothing to do for a
 * run without a budget or planned already), or -1 with a message (not
 * one step fits; no evaluation timed yet). */
TG_API int tg_run_plan_steps(tg_run *r, tg_run_plan *out, tg_error *err);

/* Why a run stops before its next step. */
typedef enum tg_run_stop {
    TG_RUN_GO, /* it goes on */
    TG_RUN_DONE, /* its steps are done */
    TG_RUN_STOP_AT, /* tg_run_options.stop_at reached */
    TG_RUN_STOP_SIGNAL, /* a process was given a signal */
    TG_RUN_STOP_LATE /* the time budget would run out during what follows (the machine slowed) */
} tg_run_stop;

/* Before each step, on every process: whether to stop, agreed across the
 * processes (the first process's clock decides lateness). *signal is
 * this process's pending signal (0: none) and receives the one agreed
 * (the largest). A stop but TG_RUN_DONE leaves the run to be saved
 * (tg_run_save) and resumed. TG_RUN_GO for NULL. */
TG_API tg_run_stop tg_run_should_stop(tg_run *r, int *signal);

/* The run's plan as the ETA counts it (tg_eta_seconds, tg_eta_format):
 * its steps, stop, evaluations and what they cost so far. 0, or -1 for
 * a NULL argument. */
TG_API int tg_run_eta(const tg_run *r, tg_eta_plan *out);

/* What a run is, for a program to print. */
typedef struct tg_run_info {
    const tg_run_config *config; /* the run's, as checked (e.g. decay_steps filled in) */
    tg_model *model;
    const tg_vocab *vocab;
    const tg_dataset *data;
    const tg_run_text *text; /* NULL for token files */
    const char *dir;
    bool resumed; /* made by tg_run_resume */
    int64_t step, steps; /* done, and in all (a time budget's, once planned) */
    int rank, ranks;
    int64_t muon_params; /* the parameters Muon updates (0 without) */
    int64_t shard_lo, shard_hi; /* the elements this process's AdamW updates */
    double best_val; /* the lowest val loss yet (INFINITY before any) */
    int64_t best_step; /* the step of best.safetensors' weights in this process's run (-1: none yet) */
    const char *best_weights; /* "raw" or "ema" (an averaging run), else NULL */
    double elapsed; /* seconds since the run began, tg_run_options.spent included */
    double probe_s; /* a sum across the processes with nothing to overlap, timed at the start */
    tg_run_sync_stats sync;
} tg_run_info;

/* r's description into *out. 0, or -1 for a NULL argument. */
TG_API int tg_run_describe(const tg_run *r, tg_run_info *out);
/* True when the failure of the last call happened on this process
 * alone: the others may be waiting in a collective, so the program ends
 * the job (tg_run_abort). False on one process and for NULL. */
TG_API bool tg_run_failed_alone(const tg_run *r);
/* Ends every process of the run's job with msg (the backend's abort).
 * Never returns. */
TG_API void tg_run_abort(const tg_run *r, const char *msg) __attribute__((noreturn));

/* The columns of a run's metrics.csv: one row per step, numbered as the
 * steps are counted. Row 0 is the model before training (an evaluation
 * only); row k the k-th optimizer step: its batch loss, learning rate
 * and speed, and, when an evaluation ran after it, the estimated train
 * and val losses (nats per token) and both in bits per byte (of an
 * averaging run: the averages'). Empty fields are not measured at that
 * step. A resumed run keeps the rows up to the step it resumes at. */
#define TG_RUN_METRICS_HEADER "step,loss,lr,ms_per_step,tokens_per_s,train_loss,val_loss,train_bpb,val_bpb"

/* Which checkpoint a path names (tg_run_checkpoint). */
typedef enum tg_run_file { TG_RUN_FILE_GIVEN, TG_RUN_FILE_BEST, TG_RUN_FILE_LAST } tg_run_file;
/* The checkpoint path names: path itself when it is not a directory;
 * for a run's directory its best.safetensors, else its last.safetensors,
 * written into buf (size bytes), *which (may be NULL) saying which. NULL
 * with a message for a directory that holds neither or NULL arguments. */
TG_API const char *tg_run_checkpoint(const char *path, char *buf, size_t size, tg_run_file *which, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
