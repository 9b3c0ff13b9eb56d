/* tapegrad nn (internal): what the language models (nn/gpt.c, nn/llama.c)
 * share: the checks of a batch of token ids, and their layers' KV caches.
 * Messages start with the model's name (`who`). */
#ifndef TG_LM_INTERNAL_H
#define TG_LM_INTERNAL_H

#include "nn.h"

/* idx must be i32 (B,T) with ids in [0, V), and T plus the positions
 * already cached (cache may be NULL) within block_size, the cache's batch
 * B. False after recording the error on g. */
bool tg_lm_check_idx(tg_graph *g, const char *who, const tg_tensor *idx, int V, int block_size,
                     const tg_kv_cache *cache);
/* targets must be i32 shaped like idx. False after recording the error. */
bool tg_lm_check_targets(tg_graph *g, const char *who, const tg_tensor *idx, const tg_tensor *targets);

/* n_layer empty caches of max_len positions for batch sequences, each
 * (batch, max_len, n_kv_head * head_dim); NULL with a message naming who. */
tg_kv_cache *tg_lm_caches_new(int n_layer, tg_dtype dt, int batch, int n_kv_head, int head_dim, int max_len,
                              const char *who, tg_error *err);
/* Frees the n_layer caches and the array; accepts NULL. */
void tg_lm_caches_free(tg_kv_cache *c, int n_layer);
/* Empties the n_layer caches (NULL: nothing to do). */
void tg_lm_caches_clear(tg_kv_cache *c, int n_layer);

/* A forward that failed after some layers ran: every cache (may be NULL)
 * goes back to the len0 positions it held, and the attention weights the
 * caller asked for (may be NULL) to NULL. Returns NULL, the forward's
 * result. */
tg_tensor *tg_lm_forward_failed(tg_kv_cache *c, tg_tensor **attn_weights, int n_layer, int len0);

#endif
