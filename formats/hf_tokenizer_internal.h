/* formats/hf_tokenizer_read.c and hf_tokenizer_write.c: the tokenizer
 * files of a Hugging Face model directory (tokenizer.json,
 * or GPT-2's vocab.json + merges.txt) to and from tapegrad's tokenizers.
 *
 * tokenizer.json is the tokenizers library's pipeline: added tokens
 * (matched in the text first), a normalizer, a pre-tokenizer (cuts the
 * text into words), the model (here always BPE: each word's characters,
 * or with byte_fallback the "<0xXX>" pieces of a character not in the
 * vocabulary, then merging the listed pair that comes first in the merges
 * list, again and again), a post-processor (BOS), a decoder. Each of
 * tapegrad's tokenizers is one such pipeline:
 *
 *   GPT-2's tiktoken ranks   ByteLevel with GPT-2's regex (transformers' GPT-2 file)
 *   tapegrad's BPE           Split at tapegrad's word starts, then ByteLevel
 *                            without a regex (bytes as GPT-2's stand-ins); a
 *                            Llama's: Prepend(' ') and a BOS template
 *   TG_TOK_SPM               no pre-tokenizer, Prepend / Replace(' ', U+2581)
 *                            as its options say, byte_fallback (as transformers
 *                            writes a Llama's); a Llama's with a BOS template
 *   llama2.c's bytes         byte_fallback over <unk> <s> </s> and "<0xXX>",
 *                            Prepend(' '), BOS
 *   a byte vocabulary        ByteLevel without a regex, no merges
 *
 * The merges. tapegrad merges the adjacent pair whose concatenation is the
 * piece of best rank (BPE and tiktoken: the lowest id; TG_TOK_SPM: the
 * highest score), over every way a piece splits into two pieces; the
 * library merges the listed pair that comes first. So the merges written
 * are every split of every piece into two pieces, in the order of their
 * piece's rank, and a file is read only when its merges are that (every
 * split listed, each piece's merges together, in rank order); scores
 * tokenizer.json does not hold come back as -k, k the place of a piece's
 * first merge. The one choice left is the order of one piece's own
 * splits, which matters only when two of them are candidates at once
 * (docs/formats.md).
 * Not public. */
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
