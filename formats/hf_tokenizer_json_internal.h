/* formats/hf_tokenizer_json.c: the pieces of a tokenizer.json that
 * tapegrad writes (added tokens, normalizers, pre-tokenizers, templates,
 * the file around them) and the merges of a tokenizer in the order the
 * tokenizers library must apply them. Not public. */
#ifndef TG_HF_TOKENIZER_JSON_INTERNAL_H
#define TG_HF_TOKENIZER_JSON_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../text/text_internal.h"

/* Every pair (a, b) -> c of t, in the order the tokenizers library must
 * merge them: by c's rank (tapegrad's rule), then the merge t learned for
 * c first (TG_TOK_BPE), then by the left piece's length. */
typedef struct hf_pair {
    int32_t rank, learned, a, b, c;
    int64_t left;
} hf_pair;

/* An added_tokens entry: id, its content, special. */
cJSON *tg_hf_tok_added_token(int32_t id, const char *content);
/* {"type": type}. */
cJSON *tg_hf_tok_typed(const char *type);
/* A Prepend(s) normalizer. */
cJSON *tg_hf_tok_prepend(const char *s);
/* A Replace(from, to) normalizer or decoder step. */
cJSON *tg_hf_tok_replace(const char *from, const char *to);
/* The decoder step that drops the one space a Prepend normalizer put
 * before the text (transformers' Llama decoders end with it). */
cJSON *tg_hf_tok_strip_prefix_space(void);
/* A Sequence of the steps a .. d that are not NULL, under key ("normalizers", "decoders", ...). */
cJSON *tg_hf_tok_sequence(const char *key, cJSON *a, cJSON *b, cJSON *c, cJSON *d);
/* transformers' template for a BOS before the text (and before each of a pair). */
cJSON *tg_hf_tok_bos_template(const char *bos, int32_t id);
/* A ByteLevel step, with GPT-2's regex or without. */
cJSON *tg_hf_tok_byte_level(bool regex);
/* The whole file around a BPE model of vocab and merges. */
cJSON *tg_hf_tok_tokenizer_file(cJSON *added, cJSON *norm, cJSON *pre, cJSON *post, cJSON *dec, cJSON *vocab,
                                cJSON *merges, const char *unk, bool byte_fallback);
/* Every pair of t in that order, *count of them (tg_malloc'd), or NULL. */
hf_pair *tg_hf_tok_all_pairs(const tg_tokenizer *t, size_t *count);
/* The merges of pairs[0..n) into list: as pairs when any piece holds a space. */
bool tg_hf_tok_add_merges(cJSON *list, const hf_pair *pairs, size_t n, char *const *names);
/* The n bytes at p are UTF-8 (what a JSON string can hold). */
bool tg_hf_tok_valid_utf8(const unsigned char *p, size_t n);

#endif
