/* formats/hf_tokenizer.c: a Hugging Face directory's tokenizer files,
 * read into a vocabulary and written from one. Not public. */
#ifndef TG_HF_TOKENIZER_INTERNAL_H
#define TG_HF_TOKENIZER_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats.h"

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
