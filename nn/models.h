/* tapegrad nn: the language models, built from nn.h's layers: the GPT
 * (GPT-2 / nanoGPT), the Llama (llama2.c's model.py), and the one
 * interface every tool drives them through (tg_model, tg_model_family),
 * a program's own family included. Included by nn/nn.h. */
#ifndef TG_NN_MODELS_H
#define TG_NN_MODELS_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the options both language models share -----------------------------
 * The feed-forward of a GPT or Llama block, chosen in its config (0 is
 * the family's own: GELU for a GPT, SwiGLU for a Llama). */
typedef enum tg_ffn_kind {
    TG_FFN_DEFAULT, /* the family's: GELU (GPT), SwiGLU (Llama) */
    TG_FFN_GELU, /* c_fc, GELU (the config's gelu form), c_proj */
    TG_FFN_RELU2, /* c_fc, ReLU squared, c_proj (modded-nanogpt) */
    TG_FFN_SWIGLU /* w1, w3, SiLU gate, w2 */
} tg_ffn_kind;
/* "gelu", "relu2", "swiglu" (TG_FFN_DEFAULT: "default"); NULL for a kind
 * out of range. */
TG_API const char *tg_ffn_kind_name(tg_ffn_kind k);

/* ---- GPT (nn/gpt.c): GPT-2 / nanoGPT ----------------------------------
 * The model tg_model_init builds for arch "gpt" (its impl is a tg_gpt,
 * whose modules a program may read): the config checked (every size >= 1,
 * n_embd % n_head == 0, dropout in [0, 1)), the parameters registered in
 * nanoGPT's state_dict order and names (transformer.wte.weight,
 * transformer.wpe.weight, transformer.h.<i>.ln_1.weight,
 * ...attn.c_attn.weight, ..., transformer.ln_f.weight[, .bias]) and
 * initialised as nanoGPT: normal(0, 0.02) for weights and embeddings,
 * 0.02/sqrt(2 n_layer) for the residual projections (attn.c_proj,
 * mlp.c_proj), zero biases, LayerNorm weights 1. Its parameter count
 * (tg_model_num_params) is, in closed form, nanoGPT's get_num_params with
 * the position embedding counted: V C + block_size C + n_layer (12 C^2 +
 * 2 C) + C, plus 11 C per layer and C with biases. The forward takes T <=
 * block_size (with the cache on, cache len + T <= block_size) and ids in
 * [0, V); errors name "gpt". */

typedef struct tg_gpt_config {
    int n_layer, n_head, n_embd, block_size, vocab_size;
    bool bias;
    double dropout;
    bool attn_composed; /* every block's tg_mha_mod.composed (false: fused attention) */
    tg_gelu_mode gelu; /* the MLP's GELU: TG_GELU_ERF (nanoGPT; 0) or TG_GELU_TANH (GPT-2) */
    /* the speedrun options (docs/speedrun.md); zero is nanoGPT's model */
    tg_ffn_kind mlp; /* GELU (default) or ReLU squared, 4C wide; or SwiGLU, tg_llama_hidden_dim(C, 32) wide */
    bool qk_norm; /* RMSNorm (eps 1e-5, no weight) of each head's q and k before the scores */
    bool zero_init_proj; /* attn.c_proj and mlp.c_proj (w2) start at zero */
    bool untie_head; /* a separate lm_head.weight (V,C) instead of wte */
    double logit_softcap; /* > 0: logits = s tanh(logits / s); 0: none */
} tg_gpt_config;

typedef struct tg_gpt_block {
    tg_layernorm_mod ln_1, ln_2;
    tg_mha_mod attn;
    tg_mlp_mod mlp;
} tg_gpt_block;

typedef struct tg_gpt {
    tg_gpt_config cfg;
    tg_params *params; /* owned */
    tg_tensor *wte, *wpe; /* (V,C), (block_size,C) */
    tg_tensor *lm_head; /* (V,C): wte itself unless cfg.untie_head */
    tg_gpt_block *h; /* n_layer blocks */
    tg_layernorm_mod ln_f;
    tg_kv_cache *cache; /* n_layer caches while enabled, else NULL */
} tg_gpt;

/* ---- Llama (nn/llama.c): llama2.c's model.py ------------------------
 * The model tg_model_init builds for arch "llama" (its impl is a
 * tg_llama): the config checked (every size >= 1, n_embd = n_head x an
 * even head size, n_kv_head dividing n_head, rope_theta > 1, norm_eps in
 * (0, 1], dropout in [0, 1), known rope flags), the parameters registered
 * in model.py's state_dict order and names (tok_embeddings.weight,
 * layers.<i>.attention.wq.weight, ..., layers.<i>.feed_forward.w1.weight,
 * ..., layers.<i>.attention_norm.weight, layers.<i>.ffn_norm.weight,
 * norm.weight[, output.weight]) and initialised as model.py: normal(0,
 * 0.02), and 0.02/sqrt(2 n_layer) for w3 and wo; norm weights 1. Its
 * parameter count: V C (twice when not tied) + C + n_layer C (2 C + 2 Ckv
 * + 3 hidden + 2). Positions are the cache length + t (RoPE); errors name
 * "llama". */

typedef struct tg_llama_config {
    int n_layer, n_head, n_kv_head, n_embd; /* n_kv_head divides n_head */
    int hidden_dim; /* the SwiGLU width; tg_llama_hidden_dim gives llama2.c's default */
    int block_size, vocab_size;
    double rope_theta; /* 10000 in llama2.c */
    int rope_flags; /* TG_ROPE_INTERLEAVED (llama2.c, Meta) or TG_ROPE_HALVES (HF) */
    double norm_eps; /* 1e-5 */
    bool tied; /* output.weight is tok_embeddings.weight (llama2.c's default) */
    double dropout;
    bool attn_composed; /* every layer's tg_mha_mod.composed */
    /* the speedrun options (docs/speedrun.md); zero is llama2.c's model */
    tg_ffn_kind mlp; /* SwiGLU (default), or GELU or ReLU squared (c_fc, c_proj), hidden_dim wide */
    tg_gelu_mode gelu; /* mlp TG_FFN_GELU: its form */
    bool qk_norm; /* RMSNorm (eps norm_eps, no weight) of each head's q and k before RoPE */
    bool zero_init_proj; /* wo and w2 (c_proj) start at zero */
    double logit_softcap; /* > 0: logits = s tanh(logits / s); 0: none */
} tg_llama_config;

typedef struct tg_llama_block {
    tg_mha_mod attention; /* wq, wk, wv, wo; RoPE; n_kv_head */
    tg_mlp_mod feed_forward; /* w1, w2, w3 */
    tg_rmsnorm_mod attention_norm, ffn_norm;
} tg_llama_block;

typedef struct tg_llama {
    tg_llama_config cfg;
    tg_params *params; /* owned */
    tg_tensor *tok_embeddings; /* (V,C) */
    tg_tensor *output; /* (V,C); tok_embeddings itself when tied */
    tg_llama_block *layers; /* n_layer */
    tg_rmsnorm_mod norm;
    tg_kv_cache *cache; /* n_layer caches (n_kv_head heads) while enabled, else NULL */
} tg_llama;

/* llama2.c's default feed-forward width for a model of width dim:
 * multiple_of * ceil(int(2 * 4 dim / 3) / multiple_of) (768 for dim 288
 * and multiple_of 32). -1 for dim or multiple_of below 1 or too large. */
TG_API int tg_llama_hidden_dim(int dim, int multiple_of);

/* ---- Language models behind one interface (nn/model.c) ------------------
 * A family is a table of functions (tg_model_family) that builds a model
 * from a tg_model_config and runs it; every tool written against
 * tg_model (training, sampling, evaluation, checkpoints) then works on
 * any family. The GPT ("gpt") and the Llama ("llama") are built in; a
 * program adds its own with tg_model_register. A family's config is
 * written to and read from a checkpoint's __metadata__ under "arch" (the
 * family) and the family's own keys; a file without "arch" is a GPT. */

/* Every built-in family's settings in one struct; a family reads the
 * fields it has (a family of one's own may use any of them). */
typedef struct tg_model_config {
    const char *arch; /* the family: "gpt", "llama", or a registered one */
    int n_layer, n_head, n_embd, block_size, vocab_size;
    bool bias; /* gpt */
    int n_kv_head, hidden_dim; /* llama (hidden_dim: the SwiGLU width) */
    double rope_theta, norm_eps; /* llama */
    bool rope_halves; /* llama: Hugging Face's pairing instead of Meta's / llama2.c's */
    bool tied; /* llama: output head = token embedding (a GPT's is unless untie_head) */
    double dropout;
    tg_gelu_mode gelu; /* the GELU's form (a GPT's, or a Llama's with mlp TG_FFN_GELU) */
    /* the speedrun options (docs/speedrun.md), gpt and llama; zero is each family's model */
    tg_ffn_kind mlp; /* the feed-forward; TG_FFN_DEFAULT: the family's */
    bool qk_norm; /* RMSNorm of each head's q and k */
    bool zero_init_proj; /* the attention's and MLP's output projections start at zero */
    bool untie_head; /* a separate output head (for a Llama the same as tied = false) */
    double logit_softcap; /* > 0: logits = s tanh(logits / s) */
} tg_model_config;

/* One family. create, destroy, params, num_params, forward, loss,
 * set_composed and the three cache functions may be NULL (a family
 * without the composed path or without KV-cache decoding); so may
 * config_write and config_read together: the config is then n_layer,
 * n_embd, block_size and vocab_size, each stored as a decimal and read
 * back in [1, 2^24]. cache_shift (last, so a table written before it
 * leaves it NULL) may be NULL: a family whose positions are learned (the
 * GPT's wpe) cannot move cached positions, and generation past its
 * block_size recomputes the window instead (train/generate.h). */
typedef struct tg_model_family {
    const char *arch; /* its name, unique: [a-z0-9_], 1-31 bytes */
    const char *embedding; /* the token embedding's parameter name, (vocab_size, n_embd) */
    const char *position; /* the position embedding's, (block_size, n_embd), or NULL */
    const char *head; /* the name a file may give a tied output head, or NULL */
    void *(*create)(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err);
    void (*destroy)(void *impl);
    tg_params *(*params)(void *impl);
    int64_t (*num_params)(const tg_model_config *c); /* -1 for a config create refuses */
    tg_tensor *(*forward)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **attn_weights);
    tg_tensor *(*loss)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets);
    void (*set_composed)(void *impl, bool composed);
    int (*cache_enable)(void *impl, int batch, tg_error *err);
    void (*cache_clear)(void *impl);
    int (*cache_len)(const void *impl);
    int (*config_write)(const tg_model_config *c, tg_st_writer *w); /* the family's keys */
    int (*config_read)(const tg_st_file *f, tg_model_config *c, tg_error *err);
    /* tg_model_cache_shift: every layer's cache shifted (tg_kv_cache_shift) */
    int (*cache_shift)(void *impl, int n_keep, int n_discard, tg_error *err);
} tg_model_family;

/* A model of some family: what tg_model_init fills in (the struct is the
 * caller's; tg_model_release frees what it holds). */
typedef struct tg_model {
    const tg_model_family *family;
    tg_model_config config; /* config.arch is the family's name */
    void *impl; /* the family's model: tg_gpt *, tg_llama *, ... */
    tg_params *params; /* the family model's store */
} tg_model;

#define TG_MODEL_MAX_FAMILIES 16 /* the built-in ones included */
/* Adds a family to the process's table (not thread-safe: register at
 * start). f must outlive its use. 0, or -1 with a message: a required
 * function missing, a bad or taken name, the table full. */
TG_API int tg_model_register(const tg_model_family *f, tg_error *err);
/* The family called arch, or NULL. */
TG_API const tg_model_family *tg_model_family_find(const char *arch);
/* The families' names, "gpt, llama, ...", for messages. */
TG_API const char *tg_model_family_names(void);

/* Builds a new model of c's family in dtype dt (TG_F32 or TG_F64),
 * initialised from seed (TG_NO_INIT: the built-in families draw nothing,
 * for weights loaded next), into *m. 0, or -1 with a message (an unknown
 * family, or the family's). m is zeroed on failure. */
TG_API int tg_model_init(tg_model *m, const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err);
/* Frees what m holds (its model, store and caches) and zeroes it; accepts
 * a zeroed m or NULL. */
TG_API void tg_model_release(tg_model *m);
/* The parameter count c implies (without allocating), or -1 for a config
 * the family refuses (or a count past TG_MAX_NUMEL, 2^40, the store's
 * limit): a file that claims a config can be checked against it before a
 * model is built. */
TG_API int64_t tg_model_num_params(const tg_model_config *c);
/* idx (B,T) i32 -> logits (B,T,V). attn_weights is NULL or an array of
 * n_layer slots, for inspection: slot i receives layer i's (B,H,T,Tk)
 * softmax probabilities before attention dropout (Tk = cache len + T;
 * rows sum to 1, blocked future keys are 0), arena tensors on g; a
 * built-in family makes every slot NULL when the forward fails. */
TG_API tg_tensor *tg_model_forward(tg_graph *g, tg_model *m, tg_tensor *idx, tg_tensor **attn_weights);
/* Mean cross-entropy against targets (B,T) i32 (-1 ignored): a scalar.
 * Errors: the forward's and tg_cross_entropy's, and targets that are not
 * i32 shaped like idx. */
TG_API tg_tensor *tg_model_loss(tg_graph *g, tg_model *m, tg_tensor *idx, tg_tensor *targets);
/* The composed attention path (true) or fused (false); -1 when the family
 * has only one. */
TG_API int tg_model_set_composed(tg_model *m, bool composed);
/* KV caches for incremental decoding: while enabled, the forward appends
 * the new positions to every layer's cache and attends over all of them.
 * Enabling makes empty caches of block_size positions for `batch`
 * sequences (replacing any earlier ones). 0, or -1 with a message: the
 * family cannot decode with a cache, batch < 1, caches too large
 * (tg_kv_cache_init), out of memory. */
TG_API int tg_model_cache_enable(tg_model *m, int batch, tg_error *err);
/* Empties the caches; nothing when there are none. */
TG_API void tg_model_cache_clear(tg_model *m);
/* Positions held in the caches (0 when disabled or for NULL). */
TG_API int tg_model_cache_len(const tg_model *m);
/* The context shift of every layer's cache (tg_kv_cache_shift with the
 * layer's RoPE): positions [n_keep, n_keep + n_discard) dropped, the
 * later ones moved back and their keys re-rotated, so decoding goes on
 * with n_discard positions free. The Llama has it; a GPT does not (its
 * positions are learned). 0, or -1 with a message (the caches unchanged):
 * a NULL or empty m, a family without cache_shift, caches not enabled,
 * or tg_kv_cache_shift's. */
TG_API int tg_model_cache_shift(tg_model *m, int n_keep, int n_discard, tg_error *err);

/* Adds "arch" and the family's keys to a writer's metadata. 0, or -1 (an
 * unknown family, or the writer's error). */
TG_API int tg_model_config_write(const tg_model_config *c, tg_st_writer *w);
/* Reads a file's config: "arch" (absent: gpt) picks the family, which
 * reads its keys (every number whole text and in range). c->arch then
 * points at the family's name. 0, or -1 with a message naming the key. */
TG_API int tg_model_config_read(const tg_st_file *f, tg_model_config *c, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
