/* tapegrad nn (internal): what every module's init shares, and the
 * built-in families' models that nn/model.c's table drives (nn.h: the
 * tg_model_* functions document what they do). */
#ifndef TG_NN_INTERNAL_H
#define TG_NN_INTERNAL_H

#include <string.h>

#include "nn.h"

/* Writes "<name>.<part>" into out (TG_NN_NAME_MAX + 1 bytes). 0, or -1
 * with "<who>: the name is N bytes, and '<name>.<part>' is over
 * TG_NN_NAME_MAX (255)" in err when it does not fit. */
int tg_nn_join(char *out, const char *name, const char *part, const char *who, tg_error *err);

/* Zero-fills a parameter (an init's zero_init_proj); nothing for NULL. */
static inline void tg_nn_zero(tg_tensor *t)
{
    if (t) memset(t->data, 0, (size_t)t->numel * tg_dtype_size(t->dtype));
}

/* ---- the GPT (nn/gpt.c) ---- */

/* The model of cfg in dtype dt (TG_F32 or TG_F64), initialised from seed
 * (TG_NO_INIT: nothing drawn). NULL with a message. */
tg_gpt *tg_gpt_new(const tg_gpt_config *cfg, tg_dtype dt, uint64_t seed, tg_error *err);
/* The parameter count of cfg in closed form, or -1 for a config
 * tg_gpt_new refuses or a count past TG_MAX_NUMEL. */
int64_t tg_gpt_num_params(const tg_gpt_config *cfg);
/* Frees the model, its store and its caches; accepts NULL. */
void tg_gpt_free(tg_gpt *m);
/* Every block's attention fused (false) or composed (true). */
void tg_gpt_set_attn_composed(tg_gpt *m, bool composed);
/* idx (B,T) -> logits (B,T,V); attn_weights NULL or n_layer slots. */
tg_tensor *tg_gpt_forward_ex(tg_graph *g, tg_gpt *m, tg_tensor *idx, tg_tensor **attn_weights);
/* The mean cross-entropy against targets (B,T). */
tg_tensor *tg_gpt_loss(tg_graph *g, tg_gpt *m, tg_tensor *idx, tg_tensor *targets);
/* n_layer caches of block_size positions for batch sequences. */
int tg_gpt_cache_enable(tg_gpt *m, int batch, tg_error *err);
/* Empties the caches; nothing when there are none. */
void tg_gpt_cache_clear(tg_gpt *m);

/* ---- the Llama (nn/llama.c), as the GPT ---- */

tg_llama *tg_llama_new(const tg_llama_config *cfg, tg_dtype dt, uint64_t seed, tg_error *err);
int64_t tg_llama_num_params(const tg_llama_config *cfg);
void tg_llama_free(tg_llama *m);
void tg_llama_set_attn_composed(tg_llama *m, bool composed);
tg_tensor *tg_llama_forward_ex(tg_graph *g, tg_llama *m, tg_tensor *idx, tg_tensor **attn_weights);
tg_tensor *tg_llama_loss(tg_graph *g, tg_llama *m, tg_tensor *idx, tg_tensor *targets);
int tg_llama_cache_enable(tg_llama *m, int batch, tg_error *err);
void tg_llama_cache_clear(tg_llama *m);

#endif
