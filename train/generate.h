/* tapegrad's training layer: text from a model and a text's score, for
 * every model family (nn/nn.h's tg_model: the GPT, the Llama, a family of
 * one's own).
 *
 *   the sampler   the next id from a row of logits (train/sampler.h)
 *   prompts       a text as the ids a model continues (a Llama's BOS, the
 *                 dummy " " of llama2.c, a tokenizer's encoding)
 *   generation    the prompt through the model once, then one id at a
 *                 time through the KV cache, each id's bytes handed to a
 *                 callback as they come; past the block size a RoPE model
 *                 shifts its cache, a GPT runs its window again
 *   scoring       the mean nll of a text in windows of block_size
 *
 * Included by train/train.h. */
#ifndef TG_GENERATE_H
#define TG_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../nn/nn.h"
#include "sampler.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- prompts (train/generate.c) -------------------------------------------- */

/* The ids of a text as a model of vocabulary v (vocab_size ids) reads it,
 * the way tiny_gpt sample reads a prompt and llama2.c's run.c encodes one:
 *   TG_VOCAB_BYTES      one id per byte
 *   TG_VOCAB_LLAMA2C    BOS, then for a text that is not empty the id of
 *                       " " (the dummy prefix) and one id per byte
 *   TG_VOCAB_TOKENIZER  the tokenizer's encoding of the text; with docs
 *                       (a Llama's), BOS first and the text encoded after
 *                       a " " (tg_vocab_space_before_text; a tokenizer with
 *                       its own rule adds it itself)
 *   TG_VOCAB_IDS        the text is ids in decimal separated by spaces,
 *                       tabs or newlines, each below vocab_size
 * Their count, with *ids allocated (tg_malloc, even for a count of 0;
 * free with tg_free), or -1 with a message (*ids NULL): a byte outside
 * a byte vocabulary ("the text's character 'Q' (byte 81, offset 4) is not
 * in the vocabulary"), a bad id, the tokenizer's error, NULL arguments,
 * out of memory. */
TG_API int64_t tg_prompt_ids(const tg_vocab *v, int vocab_size, const char *text, size_t len, int32_t **ids,
                             tg_error *err);

/* ---- generation (train/generate.c) ----------------------------------------- */

/* One generated id, as tg_generate hands it to its callback. */
typedef struct tg_generated {
    int32_t id; /* the id; -1 for the last call, which only passes held bytes */
    const char *bytes; /* what to show for it (not NUL-terminated), len bytes */
    size_t len;
    bool ends; /* the id ends a text: generation stops after it */
} tg_generated;

/* Called for each id as it is made; false stops generation there. */
typedef bool (*tg_generate_fn)(void *ctx, const tg_generated *t);

typedef struct tg_generate_options {
    /* the next id from the logits; NULL: greedy */
    tg_sampler *sampler;
    /* how ids become bytes and which ids end a text; NULL: no bytes, no end.
     *   TG_VOCAB_BYTES, TG_VOCAB_LLAMA2C  the id's bytes (tg_vocab_decode);
     *     llama2.c's BOS ends a text, and a " " right after BOS is not shown
     *     (run.c's rules)
     *   TG_VOCAB_TOKENIZER  the streaming decoder's bytes (tg_tok_stream:
     *     a UTF-8 character split across ids comes whole, with the id that
     *     completes it; what is held at the end comes in one last call, id
     *     -1); the tokenizer's BOS and EOS end a text; with docs, a " "
     *     right after BOS is not shown
     *   TG_VOCAB_IDS  " <id>" in decimal */
    const tg_vocab *vocab;
    tg_generate_fn on_token; /* NULL: none (the count is the result) */
    void *ctx; /* on_token's */
    /* positions a context shift keeps at the start (< block_size); 0: the
     * first one when the prompt starts with the vocabulary's BOS (as
     * llama.cpp keeps the BOS), else none */
    int n_keep;
} tg_generate_options;

/* Continues prompt[0..n_prompt) (n_prompt >= 1) by at most max_tokens
 * ids, stopping early at an id that ends a text (counted, passed to
 * on_token with ends set) or when on_token returns false. In eval mode,
 * without grad, on a graph of its own. The prompt runs through the model
 * once (a prompt past block_size: its first n_keep ids and its last
 * block_size - n_keep), then each id alone through the KV cache
 * (tg_model_cache_enable for one sequence: the caches are replaced, and
 * left enabled holding the last context). When the context would pass
 * block_size:
 *   a family with cache_shift (RoPE: the Llama) shifts the cache as
 *     llama.cpp's context shift does: of the n positions cached, n_keep
 *     stay, d = (n - n_keep) / 2 (at least 1) after them are dropped, and
 *     the rest move back by d, their keys re-rotated (tg_model_cache_shift);
 *     decoding goes on with no window run again;
 *   a family without (learned positions: the GPT) runs the window again,
 *     its first n_keep ids and its last block_size - n_keep from position
 *     0, for every id (nanoGPT's generate, with a cache);
 *   a family without a KV cache runs its whole window for every id.
 * Decoding allocates nothing per id. The count of ids made, or -1 with
 * a message: NULL m or prompt, n_prompt < 1, max_tokens < 0, an id of the
 * prompt outside [0, vocab_size), a tokenizer vocabulary without its
 * tokenizer, n_keep outside [0, block_size), a sampler of another size
 * (tg_sampler_pick's message), the forward's error. */
TG_API int64_t tg_generate(tg_model *m, const int32_t *prompt, int64_t n_prompt, int64_t max_tokens,
                           const tg_generate_options *o, tg_error *err);

/* ---- scoring (train/generate.c) -------------------------------------------- */

/* The mean nll, in nats per predicted id, of ids[0..n) (n >= 2) under m:
 * consecutive windows of block_size predictions, window k reading ids
 * [k T, k T + N) and predicting [k T + 1, k T + N + 1) (T = block_size,
 * N = T or what is left), so every id after the first is predicted once,
 * from the start of its window; at most max_windows of them (0: every
 * one). perplexity = exp(nll). With one window, exactly the loss
 * tg_model_loss gives. In eval mode without grad, on a graph of its own;
 * a model with its caches enabled has them emptied before each window.
 * The predictions made go to *predictions (may be NULL). NAN with a
 * message: NULL m or ids, n < 2, max_windows < 0, the forward's error
 * (an id outside the vocabulary). */
TG_API double tg_text_nll(tg_model *m, const int32_t *ids, int64_t n, int64_t max_windows, int64_t *predictions,
                          tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
