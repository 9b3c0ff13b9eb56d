/* tapegrad's training layer: the sampler, the next id from a row of
 * logits: greedy, or a draw with temperature, top-k and top-p from a
 * seeded stream. Included by train/generate.h, whose generation takes one. */
#ifndef TG_SAMPLER_H
#define TG_SAMPLER_H

#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From a row of logits l (V of them, as doubles):
 *   temperature 0: the first of the largest logits (greedy; top_k and
 *     top_p then do nothing, and nothing is drawn);
 *   else p_j = exp(l_j / temperature - max_l / temperature), with
 *     top_k > 0: p_j = 0 for every l_j below the top_k-th largest logit
 *       (ties at the cut-off all kept);
 *     0 < top_p < 1: the ids ordered by p, most likely first (a tie: the
 *       lower id first); the shortest prefix of that order whose p sum to
 *       at least top_p times the sum of all p is kept, every other p set
 *       to 0 (nucleus sampling), which renormalises the rest;
 *   then u = uniform [0, 1) x sum p (one tg_rng_uniform draw), and the
 *   ids are walked in order, u -= p_j after each, to the first j with
 *   u < p_j (the largest logit's id if rounding passes the end). */
typedef struct tg_sampler_options {
    double temperature; /* >= 0, finite; 0: greedy */
    int top_k; /* >= 0; 0: every id */
    double top_p; /* in [0, 1]; 0 or 1: every id */
    uint64_t seed; /* the draws' stream: tg_rng_seed(seed, 5) */
} tg_sampler_options;

typedef struct tg_sampler tg_sampler;

/* A sampler for logits of vocab_size ids with the options o (NULL: the
 * zero value, greedy), its stream seeded. It keeps its stream across
 * calls, so the ids of several generations in a row follow from the
 * seed. NULL with a message: vocab_size < 1, an option out of range, out
 * of memory. */
TG_API tg_sampler *tg_sampler_new(const tg_sampler_options *o, int vocab_size, tg_error *err);
/* Frees s; accepts NULL. */
TG_API void tg_sampler_free(tg_sampler *s);
/* The id picked from row `row` of logits, a live f32 or f64 tensor whose
 * last dimension is the sampler's vocab_size (rows: the others, flat; a
 * language model's (1,T,V) has T). Allocates nothing. -1 with a message:
 * a NULL s or logits, another dtype or last dimension, row out of range,
 * a logit that is NaN or +inf, or every logit -inf. */
TG_API int32_t tg_sampler_pick(tg_sampler *s, const tg_tensor *logits, int64_t row, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
