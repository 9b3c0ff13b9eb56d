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
 * out of memory. The language models made of these layers, and the
 * interface that drives any of them, are in nn/models.h (included at the
 * end). */
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
    tg_tensor *weight; /* (out, in), as PyTorch nn.Linear */
    tg_tensor *bias; /* (out) or NULL */
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
TG_API tg_tensor *tg_linear_forward(tg_graph *g, const tg_linear_mod *l, tg_tensor *x); /* (..., in) -> (..., out) */

/* ---- LayerNorm (nn/layernorm.c) --------------------------------------- */

typedef struct tg_layernorm_mod {
    tg_tensor *weight; /* (C), filled with 1 */
    tg_tensor *bias; /* (C) or NULL */
    double eps; /* TG_LAYERNORM_EPS */
} tg_layernorm_mod;

/* Registers <name>.weight (C), filled with 1, and with bias <name>.bias
 * (C), zeros; eps is TG_LAYERNORM_EPS. Errors: C < 1, a duplicate name,
 * out of memory. */
TG_API int tg_layernorm_init(tg_layernorm_mod *l, tg_params *p, const char *name, int C, bool bias, tg_error *err);
/* tg_layernorm with the module's weight, bias and eps: (..., C) -> (..., C). */
TG_API tg_tensor *tg_layernorm_forward(tg_graph *g, const tg_layernorm_mod *l, tg_tensor *x);

/* ---- RMSNorm (nn/rmsnorm.c) ------------------------------------------- */

typedef struct tg_rmsnorm_mod {
    tg_tensor *weight; /* (C), filled with 1 */
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
    TG_MLP_GELU, /* c_fc (hidden, C), exact erf GELU, c_proj (C, hidden) */
    TG_MLP_SWIGLU, /* w1 and w3 (hidden, C), SiLU gate, w2 (C, hidden) */
    TG_MLP_GELU_TANH, /* as TG_MLP_GELU with tanh-approximated GELU (TG_GELU_TANH) */
    TG_MLP_RELU2 /* as TG_MLP_GELU with ReLU squared (tg_relu2) */
} tg_mlp_kind;

typedef struct tg_mlp_mod {
    tg_mlp_kind kind;
    tg_linear_mod up; /* (hidden, C): c_fc, or w1 */
    tg_linear_mod gate; /* (hidden, C): w3 (SwiGLU only; else no tensors) */
    tg_linear_mod down; /* (C, hidden): c_proj, or w2 */
    double dropout; /* after the down projection */
} tg_mlp_mod;

/* What an MLP has besides its sizes; the zero value (or a NULL pointer)
 * is a GELU MLP without biases or dropout. */
typedef struct tg_mlp_options {
    tg_mlp_kind kind; /* TG_MLP_GELU (0) unless set */
    bool bias; /* biases on the projections */
    double dropout; /* after the down projection, in [0, 1) */
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
TG_API tg_tensor *tg_mlp_forward(tg_graph *g, const tg_mlp_mod *m, tg_tensor *x); /* (B,T,C) -> (B,T,C) */

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
    int len; /* positions cached so far */
    tg_dtype dtype;
    void *k, *v; /* (batch, max_len, n_head * head_dim), malloc'd: keys and values
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
TG_API void tg_kv_cache_clear(tg_kv_cache *c); /* len = 0 */
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
    TG_MHA_FUSED, /* <name>.c_attn (C + 2 Ckv, C) = [Wq; Wk; Wv], <name>.c_proj: nanoGPT */
    TG_MHA_SEPARATE, /* <name>.q_proj, .k_proj, .v_proj, .c_proj */
    TG_MHA_LLAMA /* <name>.wq, .wk, .wv, .wo, no biases: llama2.c's model.py */
} tg_mha_layout;

typedef struct tg_mha_config {
    int n_embd, n_head;
    int n_kv_head; /* heads of K and V, dividing n_head; 0 means n_head */
    tg_mha_layout layout;
    bool bias;
    double dropout; /* on the attention weights and on the output, in [0, 1) */
    double rope_theta; /* > 1: rotary embedding of q and k (self-attention); 0: none */
    int rope_flags; /* TG_ROPE_INTERLEAVED (Meta, llama2.c) or TG_ROPE_HALVES (HF) */
    double qk_norm_eps; /* > 0: RMSNorm (no weight, this eps) of each head's q and k after the
                             projections, before RoPE and the scores (modded-nanogpt's QK norm); 0: none */
} tg_mha_config;

typedef struct tg_mha_mod {
    int n_embd, n_head, n_kv_head;
    bool fused; /* layout TG_MHA_FUSED */
    /* false (the default): the fused attention op (tg_attention, no
     * (Tq,Tk) tensor kept) whenever nothing needs those tensors: no
     * weights asked for, no mask or key padding, no attention dropout in
     * effect; else the composed path. true: always the composed path (the
     * teaching path: split heads, softmax, merge). Same numbers to rounding.
     * tg_mha_uses_fused says which path a call will take. */
    bool composed;
    double rope_theta; /* 0: no rotary embedding */
    int rope_flags;
    double qk_norm_eps; /* > 0: each head's q and k RMS-normalised (no weight) */
    tg_linear_mod c_attn; /* fused: (C + 2 Ckv, C) */
    tg_linear_mod q_proj, k_proj, v_proj; /* separate or llama: (C, C), (Ckv, C), (Ckv, C) */
    tg_linear_mod c_proj; /* W_O: (C, C); llama's wo */
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
    bool causal; /* query at absolute position p may see key j iff j <= p;
                                 query i sits at cache->len + i with a cache, else at i
                                 (also for cross-attention: upper-left there) */
    tg_tensor *key_padding; /* (B,Tk) TG_BOOL, true = padding (blocked), or NULL */
    tg_tensor *mask; /* TG_BOOL broadcastable to (B,H,Tq,Tk), true = blocked, or NULL (H:
                                 the query heads) */
    tg_tensor **weights; /* if set, receives the attention weights (B,H,Tq,Tk): the
                                 softmax probabilities before attention dropout (rows sum
                                 to 1); NULL when the forward fails */
    tg_kv_cache *cache; /* self-attention only: new keys/values are appended, and
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

#ifdef __cplusplus
}
#endif

/* the language models: the GPT, the Llama, the model interface */
#include "models.h"

#endif
