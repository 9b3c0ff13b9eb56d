/* tiny_gpt checkpoints: safetensors files written and read by the
 * library's tg_checkpoint_save / tg_checkpoint_load_model /
 * tg_checkpoint_load_train (train/train.h): the parameters under the
 * family's names (nanoGPT's for the GPT, llama2.c's model.py's for the
 * Llama), the config and vocabulary in __metadata__, the run's settings
 * (run.h) and, for training checkpoints, the whole training state. Here:
 * the vocabulary a command takes for a model. */
#ifndef TINY_GPT_CHECKPOINT_H
#define TINY_GPT_CHECKPOINT_H

#include "../../tapegrad.h"
#include "data.h"

/* The vocabulary of model m loaded from f: a TG_VOCAB_BYTES vocabulary of
 * the bytes in vocab_file when given (weights from elsewhere), else f's
 * "vocab" metadata, else llama2.c's for a Llama; checked against the
 * model's vocab_size. 0, or -1 with a message. */
int checkpoint_model_vocab(const tg_st_file *f, const tg_model *m, const char *vocab_file, tg_vocab *v, char *err,
                           size_t errlen);

#endif
