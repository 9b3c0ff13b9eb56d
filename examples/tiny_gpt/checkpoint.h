/* tiny_gpt checkpoints: safetensors files written and read by the
 * library's tg_checkpoint_save / tg_checkpoint_load_model /
 * tg_checkpoint_load_train (train/train.h): the parameters under the
 * family's names (nanoGPT's for the GPT, llama2.c's model.py's for the
 * Llama), the config and vocabulary in __metadata__, the run's settings
 * (train/run.h) and, for training checkpoints, the whole training state. Here:
 * the file --ckpt names and the vocabulary a command takes for a model. */
#ifndef TINY_GPT_CHECKPOINT_H
#define TINY_GPT_CHECKPOINT_H

#include "../../tapegrad.h"

/* The checkpoint --ckpt names (the library's tg_run_checkpoint): path
 * itself when it is not a directory; for a run's directory (tiny_gpt
 * train's --out) its best.safetensors, else its last.safetensors,
 * written into buf, with a line on stderr ("tiny_gpt <cmd>: DIR is a
 * run's directory: reading DIR/best.safetensors ...") saying which was
 * chosen. NULL with a message when the directory holds neither. */
const char *ckpt_resolve(const char *path, const char *cmd, char *buf, size_t size, tg_error *err);

/* The vocabulary of model m loaded from f: the tokenizer in tok_file when
 * given (--tokenizer: a tokenizer file or a checkpoint holding one, for
 * weights that came without one; its size must be the model's, and a
 * tokenizer f holds must be the same), else a TG_VOCAB_BYTES vocabulary
 * of the bytes in vocab_file when given (weights from elsewhere), else
 * f's "vocab" metadata, else llama2.c's for a Llama; checked against the
 * model's vocab_size. 0, or -1 with a message. */
int checkpoint_model_vocab(const tg_st_file *f, const tg_model *m, const char *vocab_file, const char *tok_file,
                           tg_vocab *v, tg_error *err);

#endif
