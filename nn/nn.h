/* tapegrad nn: layers built only from ops, their parameters registered by
 * name in a tg_params store (nanoGPT's state_dict names for the GPT).
 *
 * Modules are plain structs of tensor pointers into the store; forward
 * functions take a graph and follow the op conventions (NULL in, NULL
 * out; the first error sticks on the graph; a NULL module is an error
 * "<layer>: the module is NULL", "gpt: the model is NULL"). Init
 * functions return 0, or -1 with a message in their tg_error *err
 * (core/error.h): a NULL module, store or name, a name that makes a
 * parameter's longer than TG_NN_NAME_MAX, bad sizes, duplicate names,
 * out of memory. */
#ifndef TG_NN_H
#define TG_NN_H

#include "../core/error.h"
#include "../core/export.h"
#include "../core/params.h"
#include "../core/rng.h"
#include "../core/safetensors.h"
#include "../ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest name, in bytes, an init function gives a parameter or a
 * submodule (<name>.<part>): a longer one is refused, never truncated. */
#define TG_NN_NAME_MAX 255

/* The seed that draws nothing: tg_model_init (for the built-in families)
 * given TG_NO_INIT builds the model with its
 * weights, embeddings and biases zero and its norms' weights 1, drawing no
 * random initialisation, for a caller that fills every parameter next
 * (from a file: tg_st_load_params). Drawing a normal number for every
 * weight took most of a checkpoint's loading. A family of one's own
 * receives the value like any seed. */
#define TG_NO_INIT UINT64_MAX

/* ---- Linear (nn/linear.c) --------------------------------------------- */

typedef struct tg_linear_mod {
    tg_tensor *weight;   /* (out, in), as PyTorch nn.Linear */
    tg_tensor *bias;     /* (out) or NULL */
} tg_linear_mod;

/* Registers <name>.weight (out, in) and, with bias, <name>.bias (out),
 * both zero-filled (initialise them next: tg_linear_init_uniform, or
 * tg_linear_init_normal as the GPT and the Llama do). Errors: in or out
 * < 1, a duplicate name, out of memory. */
TG_API int tg_linear_init(tg_linear_mod *l, tg_params *p, const char *name, int in, int out, bool bias, tg_error *err);
/* PyTorch's nn.Linear initialisation: every element of the weight, then
 * of the bias, uniform in [-1/sqrt(in), 1/sqrt(in)), drawn from r in flat
 * order. Nothing for a NULL l or r, or a module not initialised. */
TG_API void tg_linear_init_uniform(tg_linear_mod *l, tg_rng *r);
/* Fills the weight with normal(0, std) values drawn from r in flat order
 * and the bias with zeros (nanoGPT's and Llama's init). Nothing for a
 * NULL l or r. */
TG_API void tg_linear_init_normal(tg_linear_mod *l, tg_rng *r, double std);
TG_API tg_tensor *tg_linear_forward(tg_graph *g, const tg_linear_mod *l, tg_tensor *x);  /* (..., in) -> (..., out) */

/* ---- LayerNorm (nn/layernorm.c) --------------------------------------- */

typedef struct tg_layernorm_mod {
    tg_tensor *weight;   /* (C), filled with 1 */
    tg_tensor *bias;     /* (C) or NULL */
    double eps;          /* TG_LAYERNORM_EPS */
} tg_layernorm_mod;

/* Registers <name>.weight (C), filled with 1, and with bias <name>.bias
 * (C), zeros; eps is TG_LAYERNORM_EPS. Errors: C < 1, a duplicate name,
 * out of memory. */
TG_API int tg_layernorm_init(tg_layernorm_mod *l, tg_params *p, const char *name, int C, bool bias,
                             tg_error *err);
/* tg_layernorm with the module's weight, bias and eps: (..., C) -> (..., C). */
TG_API tg_tensor *tg_layernorm_forward(tg_graph *g, const tg_layernorm_mod *l, tg_tensor *x);

/* ---- RMSNorm (nn/rmsnorm.c) ------------------------------------------- */

typedef struct tg_rmsnorm_mod {
    tg_tensor *weight;   /* (C), filled with 1 */
    double eps;
} tg_rmsnorm_mod;

/* Registers <name>.weight (C), filled with 1. Errors: NULL arguments, C <
 * 1, eps outside (0, 1], a duplicate name, out of memory. */
TG_API int tg_rmsnorm_init(tg_rmsnorm_mod *l, tg_params *p, const char *name, int C, double eps, tg_error *err);
/* tg_rmsnorm with the module's weight and eps: (..., C) -> (..., C). */
TG_API tg_tensor *tg_rmsnorm_forward(tg_graph *g, const tg_rmsnorm_mod *l, tg_tensor *x);

/* ---- MLP (nn/mlp.c): the transformer's feed-forward ---------------------
 *
 *   TG_MLP_GELU       y = dropout(c_proj(gelu(c_fc x)))      nanoGPT (exact erf GELU)
 *   TG_MLP_GELU_TANH  the same with GELU's tanh form           GPT-2, llama.cpp's gpt2
 *   TG_MLP_SWIGLU     y = dropout(w2(silu(w1 x) * w3 x))     Llama
 *   TG_MLP_RELU2      y = dropout(c_proj(relu(c_fc x)^2))    modded-nanogpt */

typedef enum tg_mlp_kind {
    TG_MLP_GELU,     /* c_fc (hidden, C), exact erf GELU, c_proj (C, hidden) */
    TG_MLP_SWIGLU,   /* w1 and w3 (hidden, C), SiLU gate, w2 (C, hidden) */
    TG_MLP_GELU_TANH, /* as TG_MLP_GELU with tanh-approximated GELU (TG_GELU_TANH) */
    TG_MLP_RELU2      /* as TG_MLP_GELU with ReLU squared (tg_relu2) */
} tg_mlp_kind;

typedef struct tg_mlp_mod {
    tg_mlp_kind kind;
    tg_linear_mod up;     /* (hidden, C): c_fc, or w1 */
    tg_linear_mod gate;   /* (hidden, C): w3 (SwiGLU only; else no tensors) */
    tg_linear_mod down;   /* (C, hidden): c_proj, or w2 */
    double dropout;       /* after the down projection */
} tg_mlp_mod;

/* What an MLP has besides its sizes; the zero value (or a NULL pointer)
 * is a GELU MLP without biases or dropout. */
typedef struct tg_mlp_options {
    tg_mlp_kind kind;     /* TG_MLP_GELU (0) unless set */
    bool bias;            /* biases on the projections */
    double dropout;       /* after the down projection, in [0, 1) */
} tg_mlp_options;

/* Registers the linears of a C -> hidden -> C feed-forward under the
 * names of the kind's family: <name>.c_fc, <name>.c_proj (GELU, ReLU
 * squared), or <name>.w1, <name>.w2, <name>.w3 (SwiGLU, in that order, as
 * llama2.c's model.py), zero-filled, with biases when o->bias. o may be
 * NULL (the defaults). Errors: C or hidden outside [1, 2^28], an unknown
 * kind, dropout outside [0, 1), a duplicate name, out of memory. */
TG_API int tg_mlp_init(tg_mlp_mod *m, tg_params *p, const char *name, int C, int hidden, const tg_mlp_options *o,
                       tg_error *err);
/* Normal(0, std) weights for the up (and gate) projection, normal(0,
 * down_std) for the down one, zero biases, drawn from r in registration
 * order (nanoGPT scales c_proj; Llama's model.py scales w3 instead: pass
 * its std as gate_std). Nothing for a NULL m or r. */
TG_API void tg_mlp_init_normal(tg_mlp_mod *m, tg_rng *r, double std, double gate_std, double down_std);
TG_API tg_tensor *tg_mlp_forward(tg_graph *g, const tg_mlp_mod *m, tg_tensor *x);  /* (B,T,C) -> (B,T,C) */

/* ---- Multi-head attention (nn/attention.c) ----------------------------
 *
 * Q = x Wq^T, K = kv Wk^T, V = kv Wv^T (kv = x for self-attention), each
 * (B,T,C) reshaped to (B,T,H,dh) and transposed to (B,H,T,dh);
 * S = Q K^T / sqrt(dh) (B,H,Tq,Tk); blocked entries -inf; A = softmax(S);
 * O = A V; transposed back to (B,Tq,H,dh), reshaped to (B,Tq,C), projected
 * by W_O (c_proj). Fused: one c_attn (3C, C) = [Wq; Wk; Wv] (nanoGPT, and
 * nn.MultiheadAttention's in_proj_weight).
 *
 * Grouped-query attention: with n_kv_head < n_head, K and V have n_kv_head
 * heads (Wk, Wv are (n_kv_head dh, C)) and the G = n_head / n_kv_head
 * consecutive query heads h = k G .. k G + G - 1 all read kv head k = h / G
 * (llama2.c's convention); no copy of K or V is made. n_kv_head = 1 is
 * multi-query attention. Rotary embedding (rope_theta > 0) turns q and k
 * by their absolute positions before the scores (ops' tg_rope). */

typedef struct tg_kv_cache {
    int batch, n_head, head_dim, max_len;
    int len;              /* positions cached so far */
    tg_dtype dtype;
    void *k, *v;          /* (batch, max_len, n_head * head_dim), malloc'd: keys and values
                             as the projections make them, heads side by side */
} tg_kv_cache;

/* Allocates zeroed key and value buffers (batch, max_len, n_head *
 * head_dim) of dtype dt, with len 0 (n_head: the attention's kv heads). Returns 0, or -1 with a message in
 * err (c zeroed, nothing allocated) when c is NULL, dt is not f32/f64, a
 * size is < 1, the buffers would hold more than 2^40 elements (a tensor's
 * limit) or n_head * head_dim exceeds INT_MAX, or out of memory. */
TG_API int tg_kv_cache_init(tg_kv_cache *c, tg_dtype dt, int batch, int n_head, int head_dim, int max_len,
                            tg_error *err);
/* Forgets the cached positions, to start a new sequence; keeps the
 * memory. Nothing for a NULL c. */
TG_API void tg_kv_cache_clear(tg_kv_cache *c);    /* len = 0 */
/* Frees the buffers and zeroes c (the struct stays the caller's); accepts
 * NULL and a zeroed c. */
TG_API void tg_kv_cache_release(tg_kv_cache *c);
/* The context shift of a cache that is full (llama.cpp's): drops cached
 * positions [n_keep, n_keep + n_discard) of every sequence, moves the
 * later ones back by n_discard (len shrinks by n_discard), and, with
 * rope_theta > 1, turns each moved key back by the shift with the
 * layer's RoPE (rope_flags: TG_ROPE_INTERLEAVED or TG_ROPE_HALVES, as the
 * layer's tg_mha_mod), R(p - d) = R(-d) R(p): a key then equals, to the
 * dtype's rounding, the key a fresh forward makes for its token at the
 * new position, when the key depends on the token alone (a first layer;
 * deeper layers' keys keep the context they were made in, as
 * llama.cpp's). The angle is the difference of the two positions' angles
 * as tg_rope computes them, applied in double. rope_theta 0: keys and
 * values move only (keys without positions in them). Allocates nothing.
 * 0, or -1 with a message (c unchanged): a NULL or uninitialised c,
 * n_keep < 0, n_discard < 1, n_keep + n_discard over len, rope_theta
 * neither 0 nor finite and > 1, an odd head size or unknown flags with
 * RoPE. */
TG_API int tg_kv_cache_shift(tg_kv_cache *c, int n_keep, int n_discard, double rope_theta, int rope_flags,
                             tg_error *err);

/* Names and shapes of the projections. */
typedef enum tg_mha_layout {
    TG_MHA_FUSED,      /* <name>.c_attn (C + 2 Ckv, C) = [Wq; Wk; Wv], <name>.c_proj: nanoGPT */
    TG_MHA_SEPARATE,   /* <name>.q_proj, .k_proj, .v_proj, .c_proj */
    TG_MHA_LLAMA       /* <name>.wq, .wk, .wv, .wo, no biases: llama2.c's model.py */
} tg_mha_layout;

typedef struct tg_mha_config {
    int n_embd, n_head;
    int n_kv_head;        /* heads of K and V, dividing n_head; 0 means n_head */
    tg_mha_layout layout;
    bool bias;
    double dropout;       /* on the attention weights and on the output, in [0, 1) */
    double rope_theta;    /* > 1: rotary embedding of q and k (self-attention); 0: none */
    int rope_flags;       /* TG_ROPE_INTERLEAVED (Meta, llama2.c) or TG_ROPE_HALVES (HF) */
    double qk_norm_eps;   /* > 0: RMSNorm (no weight, this eps) of each head's q and k after the
                             projections, before RoPE and the scores (modded-nanogpt's QK norm); 0: none */
} tg_mha_config;

typedef struct tg_mha_mod {
    int n_embd, n_head, n_kv_head;
    bool fused;                              /* layout TG_MHA_FUSED */
    /* false (the default): the fused attention op (tg_attention, no
     * (Tq,Tk) tensor kept) whenever nothing needs those tensors: no
     * weights asked for, no mask or key padding, no attention dropout in
     * effect; else the composed path. true: always the composed path (the
     * teaching path: split heads, softmax, merge). Same numbers to rounding.
     * tg_mha_uses_fused says which path a call will take. */
    bool composed;
    double rope_theta;                       /* 0: no rotary embedding */
    int rope_flags;
    double qk_norm_eps;                      /* > 0: each head's q and k RMS-normalised (no weight) */
    tg_linear_mod c_attn;                    /* fused: (C + 2 Ckv, C) */
    tg_linear_mod q_proj, k_proj, v_proj;    /* separate or llama: (C, C), (Ckv, C), (Ckv, C) */
    tg_linear_mod c_proj;                    /* W_O: (C, C); llama's wo */
    double attn_dropout, resid_dropout;
} tg_mha_mod;

/* Registers the projections of config c under name (tg_mha_layout; Ckv =
 * n_kv_head * dh, dh = n_embd / n_head), biases only with c->bias, all
 * zero-filled. Ordinary multi-head attention is {.n_embd, .n_head} and
 * the rest zero: <name>.c_attn (3C, C) fused, then <name>.c_proj (C, C).
 * Errors: NULL arguments, n_embd or n_head < 1, n_embd not divisible by
 * n_head, n_kv_head not dividing n_head, dropout out of range, rope_theta
 * neither 0 nor > 1, an odd head size with RoPE, qk_norm_eps neither 0
 * nor in (0, 1], an unknown layout or rope flags, a duplicate name, out
 * of memory. */
TG_API int tg_mha_init(tg_mha_mod *m, tg_params *p, const char *name, const tg_mha_config *c, tg_error *err);
/* Normal(0, std) weights for the q, k and v projections (c_attn, or
 * q_proj, k_proj, v_proj; wq, wk, wv), normal(0, out_std) for the output
 * projection (c_proj, wo), zero biases, drawn from r in registration
 * order. Nothing for a NULL m or r. */
TG_API void tg_mha_init_normal(tg_mha_mod *m, tg_rng *r, double std, double out_std);

typedef struct tg_attn_args {
    bool causal;              /* query at absolute position p may see key j iff j <= p;
                                 query i sits at cache->len + i with a cache, else at i
                                 (also for cross-attention: upper-left there) */
    tg_tensor *key_padding;   /* (B,Tk) TG_BOOL, true = padding (blocked), or NULL */
    tg_tensor *mask;          /* TG_BOOL broadcastable to (B,H,Tq,Tk), true = blocked, or NULL (H:
                                 the query heads) */
    tg_tensor **weights;      /* if set, receives the attention weights (B,H,Tq,Tk): the
                                 softmax probabilities before attention dropout (rows sum
                                 to 1); NULL when the forward fails */
    tg_kv_cache *cache;       /* self-attention only: new keys/values are appended, and
                                 queries sit at positions cache->len .. cache->len+Tq-1
                                 (bottom-right causal alignment) */
} tg_attn_args;

/* x (B,Tq,C); kv (B,Tk,C) for cross-attention, or NULL for self-attention.
 * args may be NULL (no mask). Returns (B,Tq,C). The cache's len grows by
 * Tq only when the forward succeeds; a full cache is an error. Other
 * errors (NULL, message on g): x or kv not float (B,T,C) with C = n_embd
 * and one dtype and batch; a cache with kv, or of another dtype, batch or
 * head size; a key_padding or mask of the wrong dtype or shape; a query
 * row with every key blocked; an x, kv, key_padding or mask (inputs 0 to
 * 3 in the message) made before the last reset of its graph. */
TG_API tg_tensor *tg_mha_forward(tg_graph *g, const tg_mha_mod *m, tg_tensor *x, tg_tensor *kv,
                                 const tg_attn_args *args);

/* Which path tg_mha_forward(g, m, ..., args) takes, decided by the same
 * rule it uses: true for the fused op (tg_attention_qkv for self-attention
 * with the fused c_attn and no cache, else tg_attention; one "attention"
 * node on the tape), false for the composed steps (split heads, masked
 * softmax, merge). False when m->composed is set, when args asks for the
 * weights or passes a mask or key padding (causal alone does not count),
 * or when attention dropout is in effect (m->attn_dropout > 0 on a graph
 * in training mode with grad on). args may be NULL (no mask). False for
 * a NULL m (the forward fails). */
TG_API bool tg_mha_uses_fused(const tg_graph *g, const tg_mha_mod *m, const tg_attn_args *args);

/* ---- the options both language models share -----------------------------
 * The feed-forward of a GPT or Llama block, chosen in its config (0 is
 * the family's own: GELU for a GPT, SwiGLU for a Llama). */
typedef enum tg_ffn_kind {
    TG_FFN_DEFAULT,   /* the family's: GELU (GPT), SwiGLU (Llama) */
    TG_FFN_GELU,      /* c_fc, GELU (the config's gelu form), c_proj */
    TG_FFN_RELU2,     /* c_fc, ReLU squared, c_proj (modded-nanogpt) */
    TG_FFN_SWIGLU     /* w1, w3, SiLU gate, w2 */
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
    bool attn_composed;   /* every block's tg_mha_mod.composed (false: fused attention) */
    tg_gelu_mode gelu;    /* the MLP's GELU: TG_GELU_ERF (nanoGPT; 0) or TG_GELU_TANH (GPT-2) */
    /* the speedrun options (docs/speedrun.md); zero is nanoGPT's model */
    tg_ffn_kind mlp;      /* GELU (default) or ReLU squared, 4C wide; or SwiGLU, tg_llama_hidden_dim(C, 32) wide */
    bool qk_norm;         /* RMSNorm (eps 1e-5, no weight) of each head's q and k before the scores */
    bool zero_init_proj;  /* attn.c_proj and mlp.c_proj (w2) start at zero */
    bool untie_head;      /* a separate lm_head.weight (V,C) instead of wte */
    double logit_softcap; /* > 0: logits = s tanh(logits / s); 0: none */
} tg_gpt_config;

typedef struct tg_gpt_block {
    tg_layernorm_mod ln_1, ln_2;
    tg_mha_mod attn;
    tg_mlp_mod mlp;
} tg_gpt_block;

typedef struct tg_gpt {
    tg_gpt_config cfg;
    tg_params *params;        /* owned */
    tg_tensor *wte, *wpe;     /* (V,C), (block_size,C) */
    tg_tensor *lm_head;       /* (V,C): wte itself unless cfg.untie_head */
    tg_gpt_block *h;          /* n_layer blocks */
    tg_layernorm_mod ln_f;
    tg_kv_cache *cache;       /* n_layer caches while enabled, else NULL */
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
    int n_layer, n_head, n_kv_head, n_embd;   /* n_kv_head divides n_head */
    int hidden_dim;        /* the SwiGLU width; tg_llama_hidden_dim gives llama2.c's default */
    int block_size, vocab_size;
    double rope_theta;     /* 10000 in llama2.c */
    int rope_flags;        /* TG_ROPE_INTERLEAVED (llama2.c, Meta) or TG_ROPE_HALVES (HF) */
    double norm_eps;       /* 1e-5 */
    bool tied;             /* output.weight is tok_embeddings.weight (llama2.c's default) */
    double dropout;
    bool attn_composed;    /* every layer's tg_mha_mod.composed */
    /* the speedrun options (docs/speedrun.md); zero is llama2.c's model */
    tg_ffn_kind mlp;       /* SwiGLU (default), or GELU or ReLU squared (c_fc, c_proj), hidden_dim wide */
    tg_gelu_mode gelu;     /* mlp TG_FFN_GELU: its form */
    bool qk_norm;          /* RMSNorm (eps norm_eps, no weight) of each head's q and k before RoPE */
    bool zero_init_proj;   /* wo and w2 (c_proj) start at zero */
    double logit_softcap;  /* > 0: logits = s tanh(logits / s); 0: none */
} tg_llama_config;

typedef struct tg_llama_block {
    tg_mha_mod attention;                     /* wq, wk, wv, wo; RoPE; n_kv_head */
    tg_mlp_mod feed_forward;                  /* w1, w2, w3 */
    tg_rmsnorm_mod attention_norm, ffn_norm;
} tg_llama_block;

typedef struct tg_llama {
    tg_llama_config cfg;
    tg_params *params;          /* owned */
    tg_tensor *tok_embeddings;  /* (V,C) */
    tg_tensor *output;          /* (V,C); tok_embeddings itself when tied */
    tg_llama_block *layers;     /* n_layer */
    tg_rmsnorm_mod norm;
    tg_kv_cache *cache;         /* n_layer caches (n_kv_head heads) while enabled, else NULL */
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
    const char *arch;               /* the family: "gpt", "llama", or a registered one */
    int n_layer, n_head, n_embd, block_size, vocab_size;
    bool bias;                      /* gpt */
    int n_kv_head, hidden_dim;      /* llama (hidden_dim: the SwiGLU width) */
    double rope_theta, norm_eps;    /* llama */
    bool rope_halves;               /* llama: Hugging Face's pairing instead of Meta's / llama2.c's */
    bool tied;                      /* llama: output head = token embedding (a GPT's is unless untie_head) */
    double dropout;
    tg_gelu_mode gelu;              /* the GELU's form (a GPT's, or a Llama's with mlp TG_FFN_GELU) */
    /* the speedrun options (docs/speedrun.md), gpt and llama; zero is each family's model */
    tg_ffn_kind mlp;                /* the feed-forward; TG_FFN_DEFAULT: the family's */
    bool qk_norm;                   /* RMSNorm of each head's q and k */
    bool zero_init_proj;            /* the attention's and MLP's output projections start at zero */
    bool untie_head;                /* a separate output head (for a Llama the same as tied = false) */
    double logit_softcap;           /* > 0: logits = s tanh(logits / s) */
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
    const char *arch;        /* its name, unique: [a-z0-9_], 1-31 bytes */
    const char *embedding;   /* the token embedding's parameter name, (vocab_size, n_embd) */
    const char *position;    /* the position embedding's, (block_size, n_embd), or NULL */
    const char *head;        /* the name a file may give a tied output head, or NULL */
    void *(*create)(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err);
    void (*destroy)(void *impl);
    tg_params *(*params)(void *impl);
    int64_t (*num_params)(const tg_model_config *c);   /* -1 for a config create refuses */
    tg_tensor *(*forward)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **attn_weights);
    tg_tensor *(*loss)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets);
    void (*set_composed)(void *impl, bool composed);
    int (*cache_enable)(void *impl, int batch, tg_error *err);
    void (*cache_clear)(void *impl);
    int (*cache_len)(const void *impl);
    int (*config_write)(const tg_model_config *c, tg_st_writer *w);   /* the family's keys */
    int (*config_read)(const tg_st_file *f, tg_model_config *c, tg_error *err);
    /* tg_model_cache_shift: every layer's cache shifted (tg_kv_cache_shift) */
    int (*cache_shift)(void *impl, int n_keep, int n_discard, tg_error *err);
} tg_model_family;

/* A model of some family: what tg_model_init fills in (the struct is the
 * caller's; tg_model_release frees what it holds). */
typedef struct tg_model {
    const tg_model_family *family;
    tg_model_config config;   /* config.arch is the family's name */
    void *impl;               /* the family's model: tg_gpt *, tg_llama *, ... */
    tg_params *params;        /* the family model's store */
} tg_model;

#define TG_MODEL_MAX_FAMILIES 16   /* the built-in ones included */
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
