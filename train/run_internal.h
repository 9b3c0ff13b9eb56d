/* The run's files share these (train/run_*.c); not public. */
#ifndef TG_RUN_INTERNAL_H
#define TG_RUN_INTERNAL_H

#include <stdarg.h>

#include "run.h"

/* ---- run_settings.c ---- */

/* One value of any setting's kind (tg_run_setting_parse's dest). */
typedef union tg_run_value {
    int i;
    int64_t l;
    double d;
    const char *s;
    bool b;
} tg_run_value;
#define TG_RUN_SHOWN_BYTES 60
#define TG_RUN_SHOWN (4 * TG_RUN_SHOWN_BYTES + 4)
/* s as a message shows it: printable ASCII as it is, any other byte as
 * \xNN, at most TG_RUN_SHOWN_BYTES bytes and then "...". */
const char *tg_run_shown(const char *s, char buf[TG_RUN_SHOWN]);
/* Names equal with '_' and '-' taken as one character. */
bool tg_run_same_name(const char *a, const char *b);
/* s's place in the table, or -1. */
int tg_run_setting_index(const tg_run_setting *s);
/* The two values (as tg_run_setting_parse's dest) are the same. */
bool tg_run_setting_equal(const tg_run_setting *s, const void *a, const void *b);
/* A copy of s that c owns (freed by tg_run_config_release), or NULL. */
const char *tg_run_config_keep(tg_run_config *c, const char *s);
/* tg_run_config_set marked s given. */
bool tg_run_config_marked(const tg_run_config *c, const tg_run_setting *s);

/* ---- run_config.c ---- */

/* Key/value pairs for a checkpoint's metadata (malloc'd strings). */
typedef struct tg_run_kv {
    int n, cap;
    char **kv; /* kv[2i] key, kv[2i+1] value */
} tg_run_kv;
int tg_run_kv_add(tg_run_kv *l, const char *key, const char *value); /* 0, or -1 out of memory */
int tg_run_kv_set(tg_run_kv *l, const char *key, const char *value); /* replaced or added */
const char *tg_run_kv_get(const tg_run_kv *l, const char *key);
void tg_run_kv_free(tg_run_kv *l);

/* Where the run's notices go, and how its messages name a setting. */
typedef struct tg_run_say {
    void (*fn)(void *ctx, tg_run_notice kind, const char *msg); /* NULL: nowhere */
    void *ctx;
    bool flags; /* "--batch-size" rather than "batch_size" */
} tg_run_say;
void tg_run_notify(const tg_run_say *say, tg_run_notice kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* s's name in a message: "--batch-size" or "batch_size", into buf. */
const char *tg_run_label(const tg_run_say *say, const char *name, char buf[80]);

/* s's checkpoint key: the model config's for TG_SETTING_MODEL ("n_layer"),
 * else "train.<name>" ('-' written '_'). */
void tg_run_key(const tg_run_setting *s, char *buf, size_t size);
/* *dst a copy of src owning copies of its strings; 0, or -1 out of memory. */
int tg_run_config_copy(tg_run_config *dst, const tg_run_config *src);
/* The value of s in c. */
static inline void *tg_run_field(const tg_run_config *c, const tg_run_setting *s) { return (char *)c + s->offset; }
/* s counts as given in c: set by name, or different from its value in base. */
bool tg_run_given(const tg_run_config *c, const tg_run_config *base, const char *name);
/* Every TG_SETTING_RUN and _FREE setting's value as "train.<name>". */
int tg_run_config_record(const tg_run_config *c, tg_run_kv *l);
/* c against the checkpoint f (named `from`) that records its run:
 *   model_only false (a resume): every recorded setting but the model's
 *     absent keys (another family's) must be c's; a TG_SETTING_FREE one
 *     that is not is a notice (c's wins), another an error naming both;
 *     a setting f does not record is a notice (c's is used);
 *   model_only true (new weights): a model setting f records is taken
 *     into c unless given (tg_run_given against the defaults), and one
 *     given with another value is an error.
 * A recorded value that does not parse is an error naming the key. 0, or
 * -1 with the message. */
int tg_run_config_against(tg_run_config *c, const tg_st_file *f, const char *from, bool model_only,
                          const tg_run_say *say, tg_error *err);

/* ---- run_eta.c ---- */

/* Seconds on a monotonic clock. */
double tg_run_clock(void);

/* ---- run_vocab.c ---- */

/* True when a tokenizer setting asks for one trained by the run ("bpe:V"). */
bool tg_run_trains_tokenizer(const char *tokenizer);
/* The vocabulary of a run (tokens: it trains on token files): the
 * checkpoint's (from: a resume's or --init's, when it records one; a
 * tokenizer given too must be the one it holds), else a BPE trained now
 * on the train split of t (c->tokenizer "bpe:V"), else the tokenizer
 * file, else ids of c->vocab_size for token files, else llama2.c's bytes
 * for a Llama, else t's bytes. 0, or -1 with a message. */
int tg_run_vocab(tg_vocab *v, const tg_run_config *c, bool tokens, const tg_st_file *from, const char *out_dir,
                 const tg_run_text *t, const tg_run_say *say, tg_error *err);

/* ---- run_data.c ---- */

/* FNV-1a, 64 bits, of n bytes: the checksums a run records and compares. */
uint64_t tg_run_fnv1a64(const void *p, size_t n);
/* The notices and names of o (NULL: none, fields' names). */
void tg_run_say_from(tg_run_say *say, const tg_run_options *o);
/* tg_run_text_load, the record f's path named `from` in its messages. */
int tg_run_text_read(tg_run_text *t, const tg_run_config *c, const tg_st_file *rec, const char *from, bool must_match,
                     const tg_run_say *say, tg_error *err);
/* The text's identity as train.data, train.data_bytes, train.data_checksum. */
int tg_run_text_record(const tg_run_text *t, tg_run_kv *l);
/* tg_run_tokens_load; with meta, each file's path and identity added to
 * it ("train.data_tokens", "train.data_tokens_id", ...) and a line said. */
int tg_run_tokens_read(tg_dataset *d, const tg_vocab *v, int vocab_size, const tg_run_config *c, const tg_st_file *rec,
                       bool must_match, tg_run_kv *meta, const tg_run_say *say, tg_error *err);

/* ---- run_out.c ---- */

/* The files a run writes in its directory (temporaries "<name>.tmp.*"). */
enum { TG_RUN_BEST, TG_RUN_LAST, TG_RUN_METRICS, TG_RUN_LOSS_PNG, TG_RUN_N_FILES };
extern const char *const TG_RUN_FILES[TG_RUN_N_FILES];
/* Makes dir if missing (*made: this call made it) and locks it for this
 * process (flock, held until the descriptor closes or the process ends),
 * so a second run into it is refused; then removes the temporaries a
 * killed run left of the run's files (the lock makes sure no other
 * process is writing them). The descriptor, or -1 with a message (a dir
 * this call made is removed again). */
int tg_run_lock(const char *dir, bool *made, const char *program, const tg_run_say *say, tg_error *err);

/* One row of metrics.csv: the step's batch loss, learning rate and speed
 * (NAN at step 0), and an evaluation's losses (NAN without one). */
typedef struct tg_run_row {
    int64_t step;
    double loss, lr, ms, tokens_per_s;
    double train, val, train_bpb, val_bpb;
} tg_run_row;
/* metrics.csv's columns (step,loss,lr,ms_per_step,tokens_per_s,
 * train_loss,val_loss,train_bpb,val_bpb), the losses with 6 decimals or
 * `digits` significant digits; a resumed run keeps the rows up to
 * resume_step (tg_metrics_open), the rows it could not keep a notice. */
tg_metrics *tg_run_metrics_open(const char *path, int64_t resume_step, int digits, const tg_run_say *say,
                                tg_error *err);
int tg_run_metrics_write(tg_metrics *m, const tg_run_row *r);

/* ---- the run itself (run_new.c, run_build.c, run_check.c, run_step.c) ---- */

struct tg_run {
    tg_run_config c; /* the settings, as checked (its strings its own) */
    tg_run_say say; /* rank 0's notices; nothing elsewhere */
    const tg_run_backend *b;
    const char *program;
    int64_t stop_at;
    void (*progress)(void *ctx, int64_t step, bool val, int64_t done, int64_t iters);
    void *ctx;
    int rank, ranks;
    char dir[4096];
    char path[TG_RUN_N_FILES][4200]; /* dir/ + TG_RUN_FILES[i] */
    int lock_fd; /* rank 0's lock of dir, or -1 */
    bool made_dir; /* this run made dir: removed again if it fails before writing there */
    bool resumed;
    const char *init; /* tg_run_new from these weights (the caller's string, during setup) */
    tg_st_file *from; /* during setup: last.safetensors (a resume) or the init weights */
    tg_run_config base; /* what decides whether a setting was given: the defaults, or a resume's record */
    struct { /* a resume: the schedule the checkpoint records (known: all of it) */
        bool known;
        int64_t steps, decay_steps, warmup;
        double lr, min_lr;
    } was;
    bool tokens; /* token files, not a text */
    tg_run_text text;
    tg_vocab v;
    tg_dataset d;
    tg_model m;
    tg_adamw *opt;
    tg_muon *muon; /* Muon for the blocks' matrices (AdamW leaves them), else NULL */
    tg_ema *ema; /* the weights' averages, else NULL */
    tg_run_sync *sync;
    bool everywhere; /* the last failure happened on every process alike */
    double probe_s;
    tg_graph *g;
    tg_train_state ts;
    tg_metrics *csv;
    tg_run_kv meta; /* the run's settings, in every checkpoint */
    tg_lr_schedule sched;
    double t_start; /* a time budget counts from here (tg_run_options.spent before it) */
    bool plan; /* a time budget's steps are still to be chosen */
    int64_t budget_left_at; /* a resumed budget run: where a resume gave other steps, or -1 */
    double save_s; /* the last save's seconds */
    int64_t best_step; /* what went into best.safetensors last in this process's run, or -1 */
    const char *best_weights; /*   and whose weights ("ema" or "raw"), else NULL */
    double step_s, eval_s; /* a step's cost as the plan timed it; the latest evaluation's (with its saves) */
    bool eval_timed;
    double eval_t0; /* when the latest evaluation began, until the next call closes it (else 0) */
    double ms_avg; /* the steps' moving average, in ms (0 before the first) */
    int64_t first_step; /* the step this process's run started at */
    bool evaluated; /* an evaluation ran at the current step */
    bool pending; /* row is the last step's, not yet written (an evaluation may add to it) */
    tg_run_row row;
    int32_t *x, *y;
};

/* -1, the message (a printf format) in err; err may be among the arguments. */
int tg_run_fail(tg_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* c's model settings as the tg_model_config a new model is built from. */
tg_model_config tg_run_model_config(const tg_run_config *c, int vocab_size);
/* The learning rate's schedule over the run's steps. */
void tg_run_set_schedule(tg_run *r);

/* run_check.c: the settings that are fixed now (a run's shape, words,
 * what goes with what), the time budget's; warnings. */
int tg_run_check(tg_run *r, tg_error *err);
/* run_check.c: the model settings given against the weights' config
 * (keys absent from a file without them): 0, or -1 naming the setting. */
int tg_run_check_against_weights(tg_run *r, const tg_model_config *c, tg_error *err);
/* run_build.c: vocabulary, model, optimizers, state, batches, metadata. */
int tg_run_build(tg_run *r, tg_error *err);

/* run_eval.c: an evaluation's cost runs from tg_run_evaluate to the next
 * call on the run (tg_run_step, _should_stop, _save, _plan_steps), so
 * that what the program does after it (its lines, a picture drawn from
 * metrics.csv) is counted where the ETA and the budget price the next. */
void tg_run_eval_close(tg_run *r);
/* run_eval.c: the whole state into last.safetensors (every process calls it). */
int tg_run_save_last(tg_run *r, tg_error *err);

#endif
