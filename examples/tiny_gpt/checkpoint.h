/* tiny_gpt checkpoints: safetensors files holding the model's parameters
 * under nanoGPT's names, the config and vocabulary in __metadata__, and,
 * for training checkpoints, the optimizer and random-stream state needed
 * to resume exactly. */
#ifndef TINY_GPT_CHECKPOINT_H
#define TINY_GPT_CHECKPOINT_H

#include "../../tapegrad.h"
#include "data.h"

/* What a training checkpoint adds to the weights. */
typedef struct train_state {
    int64_t step;              /* steps done */
    double best_val;           /* best val loss so far (inf if none) */
    tg_rng data_rng, drop_rng; /* batch sampling and dropout streams */
} train_state;

/* Writes the model (and, when opt/ts are given, the training state)
 * atomically. extra_meta: more key/value pairs (may be NULL, n 0). */
int checkpoint_save(const char *path, tg_gpt *m, const vocab *v, tg_adamw *opt, const train_state *ts,
                    const char *const *extra_meta, int n_extra, char *err, size_t errlen);

/* Reads the config (n_layer, n_head, n_embd, block_size, vocab_size, bias,
 * optional dropout) from a file's metadata. */
int checkpoint_config(const tg_st_file *f, tg_gpt_config *cfg, char *err, size_t errlen);

/* Builds the model described by f in dtype dt and loads its weights
 * (F32 or F64 in the file). dropout < 0 takes the file's (0 if absent).
 * lm_head.weight, if present, must equal transformer.wte.weight (the head
 * is tied). NULL with a message. */
tg_gpt *checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, char *err, size_t errlen);

/* The vocabulary stored in f ("vocab" metadata). */
int checkpoint_vocab(const tg_st_file *f, vocab *v, char *err, size_t errlen);

/* Restores optimizer moments and the training state saved by
 * checkpoint_save. */
int checkpoint_load_train(const tg_st_file *f, tg_gpt *m, tg_adamw *opt, train_state *ts, char *err,
                          size_t errlen);

#endif
