/* formats/hf_tokenizer_parts.c: the parts of tokenizer.json around its
 * model, read (the normalizer's and pre-tokenizer's text rule, the BOS
 * template, the vocabulary, the added tokens, the merges) and compared
 * with a tapegrad tokenizer's own merges. Not public. */
#ifndef TG_HF_TOKENIZER_PARTS_INTERNAL_H
#define TG_HF_TOKENIZER_PARTS_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/error.h"
#include "../text/text_internal.h"

#define U2581 "\xe2\x96\x81"
/* The Split that cuts tapegrad's BPE words (a run of newlines; an optional
 * space and what follows up to a space or newline; a space alone). */
#define BPE_WORDS "\n+| ?[^ \n]+| "

typedef struct str_ix {
    char *key;
    int value;
} str_ix; /* stb_ds string map */

/* What the normalizer and a Metaspace pre-tokenizer do before the model:
 * prepend 0 nothing, ' ' or U+2581 (before a text that is not empty);
 * spaces as U+2581 or not. The forms taken: null, Prepend(p),
 * Replace(" ", U+2581), a Sequence of Prepend then Replace (transformers'
 * Llama), and the pre-tokenizer Metaspace without splitting. */
typedef struct hf_text_rule {
    char prepend; /* 0, ' ', or 'u' for U+2581 */
    bool u2581; /* spaces become U+2581 */
    bool metaspace; /* Metaspace's prepend (not before a text that starts with a space) */
} hf_text_rule;

/* o's "type" string, or "" (also for a NULL o). */
const char *tg_hf_tok_type_of(const cJSON *o);
/* o[key] is the string want. */
bool tg_hf_tok_str_is(const cJSON *o, const char *key, const char *want);
/* The rule of the normalizer norm and the pre-tokenizer pre into r; -1
 * with a message for a form not taken. */
int tg_hf_tok_text_rule(const cJSON *norm, const cJSON *pre, hf_text_rule *r, tg_error *err);
/* The BOS the post-processor puts before a text: -1 for none (no
 * post-processor, GPT-2's ByteLevel one, or a template of the text alone),
 * or its id; a template adding anything else is refused. */
int tg_hf_tok_template_bos(const cJSON *post, str_ix *vocab, int32_t *bos, tg_error *err);
/* The model's vocabulary: string -> id, ids 0..n-1 each once; into *map
 * and names[id] (pointers into the JSON). */
int tg_hf_tok_read_vocab(const cJSON *model, int32_t max, str_ix **map, const char ***names, int32_t *n, tg_error *err);
/* The added tokens: each must be a vocabulary entry and special (matched
 * in the text before the model, as tapegrad never does for an ordinary
 * piece). special[id] set for each. */
int tg_hf_tok_read_added(const cJSON *added, str_ix *map, uint8_t *special, tg_error *err);
/* The id of s in the vocabulary, or -1. */
int32_t tg_hf_tok_vocab_id(str_ix *map, const char *s);
/* Each merge's pieces (a, b) and what it makes, c = a b: into mc[3 k]. */
int tg_hf_tok_read_merges(const cJSON *model, str_ix *map, int32_t **mc, int32_t *m, tg_error *err);
/* The tapegrad rule (merge the pair whose piece ranks first, over every
 * split of each piece) is the tokenizers library's (merge the listed pair
 * that comes first) when the merges listed are every split of the pieces
 * they make into two text pieces, and each piece's merges are together
 * in the list, in the order of rank(piece). t's pairs are those splits. */
int tg_hf_tok_same_merges(const tg_tokenizer *t, const int32_t *mc, int32_t m, const char *const *names, bool by_id,
                          tg_error *err);

#endif
