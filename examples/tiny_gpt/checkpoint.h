/* tiny_gpt checkpoints: safetensors files holding the model's parameters
 * under its family's names (nanoGPT's for the GPT, llama2.c's model.py's
 * for the Llama), the config ("arch" and the family's keys, model.h) and
 * vocabulary in __metadata__, and,
 * for training checkpoints, the optimizer and random-stream state needed
 * to resume exactly. */
#ifndef TINY_GPT_CHECKPOINT_H
#define TINY_GPT_CHECKPOINT_H

#include "../../tapegrad.h"
#include "data.h"
#include "model.h"

/* What a training checkpoint adds to the weights. */
typedef struct train_state {
    int64_t step;              /* steps done */
    double best_val;           /* best val loss so far (inf if none) */
    tg_rng data_rng, drop_rng; /* batch sampling and dropout streams */
} train_state;

/* Writes the model atomically, with ts->step as train.step when ts is
 * given (the step the weights are from), and the whole training state
 * when opt and ts are given (a checkpoint --resume can continue).
 * extra_meta: more key/value pairs (may be NULL, n 0). */
int checkpoint_save(const char *path, const model *m, const vocab *v, tg_adamw *opt, const train_state *ts,
                    const char *const *extra_meta, int n_extra, char *err, size_t errlen);

/* The metadata value of key as an integer in [lo, hi]: the whole string,
 * digits with an optional '-'. 0, or -1 with a message naming the key. */
int checkpoint_meta_i64(const tg_st_file *f, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
                        size_t errlen);

/* Reads the config from a file's metadata (model_config_read): "arch"
 * picks the family (a file without it is a GPT); every number must be
 * whole text and in range. */
int checkpoint_config(const tg_st_file *f, model_config *cfg, char *err, size_t errlen);

/* Builds the model described by f in dtype dt into m and loads its
 * weights (F32 or F64 in the file). dropout < 0 takes the file's (0 if
 * absent). Before anything is allocated the config is checked against the
 * file's tensors (the embeddings' shapes, and at least as many float
 * values as the config's parameter count), so a crafted file is refused
 * in time proportional to its size. Every weight must be finite. A tied
 * head the file carries anyway (lm_head.weight, or a tied Llama's
 * output.weight) must equal the embedding. 0, or -1 with a message. */
int checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, model *m, char *err, size_t errlen);

/* The vocabulary of model m loaded from f: a VOCAB_CHARS vocabulary of
 * the bytes in vocab_file when given (weights from elsewhere), else f's
 * "vocab" metadata, else llama2.c's for a Llama; checked against the
 * model's vocab_size. 0, or -1 with a message. */
int checkpoint_model_vocab(const tg_st_file *f, const model *m, const char *vocab_file, vocab *v, char *err,
                           size_t errlen);

/* The vocabulary stored in f ("vocab" metadata). */
int checkpoint_vocab(const tg_st_file *f, vocab *v, char *err, size_t errlen);

/* Restores optimizer moments and the training state saved by
 * checkpoint_save, validated: train.step in [0, max_step], optimizer.steps
 * equal to it, best_val a number >= 0 or inf, the random streams in
 * their exact form, the moments finite (v >= 0). 0, or -1 with a message
 * (the optimizer may then hold part of the file's state). */
int checkpoint_load_train(const tg_st_file *f, const model *m, tg_adamw *opt, train_state *ts, int64_t max_step,
                          char *err, size_t errlen);

#endif
