/* tiny_gpt train's settings, shared with `eval --ckpt`, which rebuilds a
 * run's data split and loss estimate from what its checkpoint records. */
#ifndef TINY_GPT_TRAIN_H
#define TINY_GPT_TRAIN_H

#include "../../tapegrad.h"
#include "args.h"
#include "data.h"

typedef struct train_opts {
    const char *data, *out, *dtype, *init, *attn, *config, *arch, *rope, *gelu;
    const char *tokenizer, *data_tokens, *val_tokens;   /* tokdata.h */
    int vocab_size;                                     /* --data-tokens: the model's ids (0: not given) */
    int n_layer, n_head, n_embd, block_size, batch_size, grad_accum;
    int n_kv_head, hidden_dim, multiple_of;    /* llama */
    double rope_theta, norm_eps;               /* llama */
    bool tied;                                 /* llama */
    const char *mlp;                           /* default, gelu, relu2 or swiglu (issue 23's options) */
    bool qk_norm, zero_init_proj, untie_head;
    double logit_softcap;                      /* 0: none */
    int64_t steps, decay_steps, warmup, eval_interval, eval_iters, stop_at, log_interval;   /* decay_steps 0: steps */
    double lr, min_lr, weight_decay, beta1, beta2, grad_clip, dropout;
    const char *optimizer;                     /* adamw, or muon (Muon for the blocks' matrices) */
    double muon_lr, muon_momentum;
    bool muon;                                 /* --optimizer muon */
    bool epochs;                               /* --sampling epochs */
    double ema;                                /* --ema: the averages' decay (0: none) */
    bool full_val;                             /* --full-val: the val loss over the whole split */
    bool bias, resume, force, attn_composed;
    int64_t seed;
    int threads, corpus_chars;
    int zero, log_digits;      /* --zero 1: AdamW's moments sharded across processes */
    double bucket_mb;          /* gradient buckets summed across processes */
    double time_budget;        /* seconds for the whole run (0: none): the steps are chosen to fit */
    const char *schedule;      /* cosine or wsd (warmup-stable-decay) */
    const char *sampling;      /* random (each window's start drawn) or epochs (tg_dataset_epoch_rows) */
    double decay_frac;         /* wsd: the fraction of the steps the decay takes */
} train_opts;

#define TRAIN_MAX_SPECS 72

/* Fills o with the defaults (nanoGPT's small CPU recipe) and specs with
 * train's flags pointing into o; returns the number of flags. */
int train_specs(train_opts *o, arg_spec *specs);

/* Mean loss of m over `iters` batches of R x B x A windows of T tokens
 * of the train (val = false) or val split, in eval mode without grad,
 * each batch run as A micro-batches of R x B, of which this process (rank
 * r of R) runs rows [r B, (r + 1) B) and the sums are added across the R
 * processes (so that a run split into micro-batches or processes
 * estimates what the whole batch gives, to rounding). The windows come
 * from their own stream seeded by (seed, step), so an estimate never
 * disturbs training and the same step always sees the same windows. NAN
 * with the graph's message in err on failure (this process's: the others
 * are then waiting in the sum). With progress (a terminal: give it on
 * one process only) a line on stderr counts the batches while they run,
 * rewritten in place at most 10 times a second and cleared at the end.
 * iters 0: the split's loss itself, every window once (tg_eval_spec's
 * whole). */
double estimate_loss(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, int B, int A, int T, int64_t iters,
                     int64_t seed, int64_t step, int r, int R, bool progress, char *err, size_t errlen);


#endif
