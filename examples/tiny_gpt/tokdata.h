/* tiny_gpt's token data: a run's vocabulary when it trains with a
 * tokenizer (--tokenizer) or on token files (--data-tokens, --val-tokens,
 * --vocab-size), and the token files' identity in its checkpoints, so
 * that a resumed run or `eval --ckpt` reads the same tokens. */
#ifndef TINY_GPT_TOKDATA_H
#define TINY_GPT_TOKDATA_H

#include "data.h"
#include "run.h"

/* The vocabulary of a run: a checkpoint's (from: --resume or --init, when
 * it records one; a --tokenizer given too must be the one it holds, else
 * an error naming the flag), else the --tokenizer file (tg_tok_load's
 * kinds; docs for a Llama), else TG_VOCAB_IDS of vocab_size for token files,
 * else llama2.c's bytes for a Llama, else the text's bytes. vocab_size
 * (0: not given) must be >= a tokenizer's ids. 0, or -1 with a message. */
int vocab_for_run(tg_vocab *v, const char *tokenizer, bool data_tokens, int vocab_size, bool llama,
                  const tg_st_file *from, const char *text, size_t len, char *err, size_t errlen);

/* True when a --tokenizer value asks for a tokenizer trained by the
 * run ("bpe:V") rather than read from a file. */
bool tokenizer_is_trained(const char *tokenizer);
/* "classes" or "spaces" (tg_bpe_words); -1 for anything else */
int bpe_words_parse(const char *name, tg_bpe_words *words);

/* --tokenizer bpe:V: a V-piece BPE tokenizer (tg_bpe_train) learned from
 * the train split of the text alone, its first 90% of bytes (nanoGPT's
 * split), into v (docs for a Llama). 0, or -1 with a message naming the
 * flag. */
int vocab_train_bpe(tg_vocab *v, const char *tokenizer, bool llama, const char *text, size_t len, char *err,
                    size_t errlen);

/* True when the run trains on token files: --data-tokens is given, or
 * rec (a checkpoint being continued or evaluated; may be NULL) records one. */
bool run_on_tokens(const char *data_tokens, const tg_st_file *rec);

/* The run's tokens from its token files (tg_tokfile_open, the format
 * recognised by its header, every id < V): train_flag, else the file rec
 * records; val_flag, else rec's (none: the train file is split 90/10).
 * Read whole into d (windows are drawn from it as from a text's). When
 * rec records the files, the tokens read must be those (count and
 * checksum) if must_match, else a different file is a notice; with meta,
 * their identity is added to it. Bytes per token as
 * dataset_bytes_per_token. 0, or -1 with a message naming the flag. */
int run_load_tokens(tg_dataset *d, const tg_vocab *v, int64_t V, const char *train_flag, const char *val_flag,
                    int block_size, const tg_st_file *rec, bool must_match, kv_list *meta, const char *cmd,
                    char *err, size_t errlen);

#endif
