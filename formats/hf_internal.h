/* What formats/hf.c (the model directory), formats/hf_tokenizer.c (its
 * tokenizer files) and formats/hf_files.c (reading them) share. Not
 * public. */
#ifndef TG_HF_INTERNAL_H
#define TG_HF_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats.h"

/* dir/name, in memory from tg_malloc (NULL when out of memory). */
char *tg_hf_path(const char *dir, const char *name);
/* Whether dir/name is there: 1 a regular file, 0 absent, -1 with a
 * message for anything else (a directory, a pipe, a device: "not a
 * regular file", which a reader must not take for absent). */
int tg_hf_stat(const char *dir, const char *name, tg_error *err);
/* The whole file dir/name, NUL-terminated, its length in *len: at most
 * 64 MiB; NULL with a message. Free with tg_free. */
char *tg_hf_read_small(const char *dir, const char *name, size_t *len, tg_error *err);
/* dir/name parsed as a JSON object; NULL with a message (also for a
 * byte-order mark before it or bytes but whitespace after it, which
 * Python's json refuses). last_wins: a key an object repeats has its last
 * value, as Python's json (transformers' reader of config.json) gives;
 * else the first (the readers refuse what they must not take twice). */
cJSON *tg_hf_read_json(const char *dir, const char *name, bool last_wins, tg_error *err);

/* The tokenizer files of dir (tokenizer.json, else vocab.json +
 * merges.txt) as a vocabulary for a model of the family llama or not,
 * whose config.json names bos_id and eos_id (-1: none). 0 with *found 0
 * when dir has none; 0 with *found 1 and v filled; -1 with a message
 * naming what tapegrad cannot represent. notice (may be NULL) gets what
 * differs from the tokenizers library, "" when nothing does. */
int tg_hf_tokenizer_read(const char *dir, bool llama, int32_t bos_id, int32_t eos_id, tg_vocab *v, int *found,
                         char *notice, size_t notice_len, tg_error *err);

/* tokenizer.json and tokenizer_config.json (*tok, *cfg) for vocabulary v
 * of a model of the family llama or not, whose block size is block_size,
 * and the BOS and EOS ids config.json names (-1: none). 0, or -1 with
 * the reason in why (no files: a vocabulary of bare ids, or one a
 * tokenizer.json cannot say). */
int tg_hf_tokenizer_write(const tg_vocab *v, bool llama, int block_size, cJSON **tok, cJSON **cfg, int32_t *bos,
                          int32_t *eos, char *why, size_t why_len);

#endif
