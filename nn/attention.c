/* Multi-head attention, composed from ops (nothing here has its own
 * backward: the tape differentiates the composition).
 *
 *   x (B,Tq,C), kv (B,Tk,C) (= x for self-attention), H heads, dh = C / H
 *
 *   Q = x Wq^T + bq, K = kv Wk^T + bk, V = kv Wv^T + bv     (B,T,C) each
 *   split heads: reshape (B,T,H,dh), then transpose to (B,H,T,dh)
 *     (the C axis holds the heads one after another; reshaping straight
 *     to (B,H,T,dh) would cut across time and give wrong numbers)
 *   S = Q K^T / sqrt(dh)                 (B,H,Tq,Tk)   dh, not C
 *   A = softmax_j(S with blocked entries -inf)           rows sum to 1
 *   O = dropout(A) V                     (B,H,Tq,dh)
 *   merge: transpose to (B,Tq,H,dh), reshape (B,Tq,C)
 *   y = dropout(O Wo^T + bo)             (B,Tq,C)       Wo = c_proj
 *
 * Fused projection (nanoGPT, nn.MultiheadAttention.in_proj_weight):
 * c_attn.weight (3C, C) = [Wq; Wk; Wv] and c_attn.bias (3C) = [bq; bk; bv].
 * Self-attention applies it once and splits the (B,T,3C) result;
 * cross-attention slices rows [0,C) for Q and [C,3C) for K,V with tg_slice,
 * so gradients still reach c_attn through the slices.
 *
 * The mask: one bool tensor (true = blocked) built in the arena, of shape
 * (B|1, H|1, Tq, Tk), from
 *   causal       query i of this call sits at absolute position p + i,
 *                p = the cache length (0 without a cache); it may see
 *                key j iff j <= p + i (bottom-right alignment when Tk > Tq)
 *   key_padding  (B,Tk): blocks key j of batch row b everywhere
 *   mask         anything broadcastable to (B,H,Tq,Tk)
 * OR-ed together. A row with every key blocked is an error (tg_softmax).
 *
 * KV cache (self-attention): the cache keeps keys and values as the
 * projections make them, (B,max_len,C). The new k, v (B,Tq,C) are attended
 * together with the cached prefix (B,p,C), which enters the graph as a
 * constant: K = concat(prefix, k) along T, so gradients still reach the
 * new keys and values (both paths then split K and V like Q). After a
 * successful forward the new k, v are copied into the cache at [p, p+Tq)
 * and len becomes p + Tq.
 *
 * Grouped-query attention (n_kv_head = Hkv < H, G = H / Hkv): k and v are
 * (B,T,Ckv), Ckv = Hkv dh, and query head h reads kv head h / G. The
 * composed path stacks the G query heads of a group as one taller query,
 * (B,H,Tq,dh) viewed as (B,Hkv,G Tq,dh) (the G heads are consecutive), so
 * the scores (B,Hkv,G Tq,Tk) come from one batched matmul against K
 * (B,Hkv,Tk,dh) as it is, with no copy of K or V; the mask is built in that
 * layout, and O and the weights are viewed back as (B,H,Tq,.).
 *
 * QK norm (qk_norm_eps > 0): right after the projections each head's
 * q and k, (B,T,H,dh) views of (B,T,C), are RMS-normalised over dh with
 * no weight (tg_rmsnorm, w NULL), before RoPE and the scores, as
 * modded-nanogpt; the cache keeps normalised keys.
 *
 * RoPE (rope_theta > 0, self-attention): q and k are rotated by their
 * absolute positions p .. p + Tq - 1 right after the projections, so the
 * cache keeps rotated keys (as llama2.c's run.c does).
 *
 * The fused path: when nothing needs the (B,H,Tq,Tk) tensors (no weights
 * asked for, no explicit mask or key padding, no attention dropout in
 * effect) and m->composed is false (tg_mha_uses_fused), everything from the split to the
 * merge is one tg_attention on the (B,T,C) projections, heads side by
 * side in C (ops/attention.c): same numbers to rounding, memory O(T C)
 * instead of O(H Tq Tk); with a cache, q_pos = p gives the same
 * bottom-right alignment. Self-attention with one fused c_attn and no
 * cache goes further: tg_attention_qkv reads q, k and v in place from the
 * (B,T,3C) projection, so there is no split either. */
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"
#include "../core/op.h"
#include "nn_internal.h"

/* ---- KV cache (the buffers: nn/kv_cache.c) ---------------------------- */

/* The cached positions [0, len) of buf as a constant arena tensor (B,len,C). */
static tg_tensor *cache_prefix(tg_graph *g, const tg_kv_cache *c, const void *buf)
{
    const int B = c->batch, len = c->len, C = c->n_head * c->head_dim;
    tg_tensor *t = tg_tensor_new(g, c->dtype, 3, (int[]){B, len, C}); /* (B,len,C) */
    if (!t) return NULL;
    const size_t es = tg_dtype_size(c->dtype), row = (size_t)len * C * es;
    for (int b = 0; b < B; b++)
        memcpy((char *)t->data + b * row, (const char *)buf + (size_t)b * c->max_len * C * es, row);
    return t;
}

/* Copies new (B,Tq,C) into buf at positions [len, len+Tq). */
static void cache_store(tg_kv_cache *c, void *buf, const tg_tensor *new)
{
    const int Tq = new->shape[1], C = c->n_head * c->head_dim;
    const size_t es = tg_dtype_size(c->dtype), row = (size_t)Tq * C * es;
    for (int b = 0; b < c->batch; b++)
        memcpy((char *)buf + ((size_t)b * c->max_len + c->len) * C * es, (const char *)new->data + b *row, row);
}

/* ---- init -------------------------------------------------------------- */

int tg_mha_init(tg_mha_mod *m, tg_params *p, const char *name, const tg_mha_config *c, tg_error *err)
{
    if (!m || !p || !name || !c)
        return tg_error_set(err, "mha_init: %s is NULL",
                            !m          ? "the module"
                                : !p    ? "params"
                                : !name ? "name"
                                        : "the config");
    memset(m, 0, sizeof *m);
    const int C = c->n_embd, H = c->n_head, Hkv = c->n_kv_head ? c->n_kv_head : c->n_head;
    if (C < 1 || H < 1 || C > (1 << 28))
        return tg_error_set(err, "mha '%s': n_embd and n_head must be >= 1 (n_embd <= 2^28), got %d and %d", name, C,
                            H);
    if (C % H) return tg_error_set(err, "mha '%s': n_embd %d is not divisible by n_head %d", name, C, H);
    if (Hkv < 1 || H % Hkv) return tg_error_set(err, "mha '%s': n_kv_head %d must divide n_head %d", name, Hkv, H);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return tg_error_set(err, "mha '%s': dropout must be in [0, 1), got %g", name, c->dropout);
    if (!(c->rope_theta == 0 || (c->rope_theta > 1 && isfinite(c->rope_theta))))
        return tg_error_set(err, "mha '%s': rope_theta must be 0 (no RoPE) or finite and > 1, got %g", name,
                            c->rope_theta);
    if (c->rope_theta && (C / H) % 2)
        return tg_error_set(err, "mha '%s': RoPE needs an even head size (got %d: n_embd %d / n_head %d)", name, C / H,
                            C, H);
    if (c->rope_theta && c->rope_flags != TG_ROPE_INTERLEAVED && c->rope_flags != TG_ROPE_HALVES)
        return tg_error_set(err, "mha '%s': unknown rope_flags %d (TG_ROPE_INTERLEAVED or TG_ROPE_HALVES)", name,
                            c->rope_flags);
    if (!(c->qk_norm_eps == 0 || (c->qk_norm_eps > 0 && c->qk_norm_eps <= 1)))
        return tg_error_set(err, "mha '%s': qk_norm_eps must be 0 (no QK norm) or in (0, 1], got %g", name,
                            c->qk_norm_eps);
    if (c->layout != TG_MHA_FUSED && c->layout != TG_MHA_SEPARATE && c->layout != TG_MHA_LLAMA)
        return tg_error_set(err, "mha '%s': unknown layout %d", name, (int)c->layout);
    const int Ckv = Hkv * (C / H);
    m->n_embd = C;
    m->n_head = H;
    m->n_kv_head = Hkv;
    m->fused = c->layout == TG_MHA_FUSED;
    m->rope_theta = c->rope_theta;
    m->rope_flags = c->rope_flags;
    m->qk_norm_eps = c->qk_norm_eps;
    m->attn_dropout = m->resid_dropout = c->dropout;
    char full[TG_NN_NAME_MAX + 1];
    if (m->fused) {
        if (tg_nn_join(full, name, "c_attn", "mha_init", err)) return -1;
        if (tg_linear_init(&m->c_attn, p, full, C, C + 2 * Ckv, c->bias, err)) return -1;
    } else {
        const bool llama = c->layout == TG_MHA_LLAMA;
        const char *const proj[] = {llama ? "wq" : "q_proj", llama ? "wk" : "k_proj", llama ? "wv" : "v_proj"};
        tg_linear_mod *mods[] = {&m->q_proj, &m->k_proj, &m->v_proj};
        for (int i = 0; i < 3; i++) {
            if (tg_nn_join(full, name, proj[i], "mha_init", err)) return -1;
            if (tg_linear_init(mods[i], p, full, C, i ? Ckv : C, c->bias, err)) return -1;
        }
    }
    if (tg_nn_join(full, name, c->layout == TG_MHA_LLAMA ? "wo" : "c_proj", "mha_init", err)) return -1;
    return tg_linear_init(&m->c_proj, p, full, C, C, c->bias, err);
}

void tg_mha_init_normal(tg_mha_mod *m, tg_rng *r, double std, double out_std)
{
    if (!m || !r) return;
    if (m->fused) tg_linear_init_normal(&m->c_attn, r, std);
    else {
        tg_linear_init_normal(&m->q_proj, r, std);
        tg_linear_init_normal(&m->k_proj, r, std);
        tg_linear_init_normal(&m->v_proj, r, std);
    }
    tg_linear_init_normal(&m->c_proj, r, out_std);
}

/* ---- forward ----------------------------------------------------------- */

/* (B,T,C) -> (B,T,H,dh) -> (B,H,T,dh) */
static tg_tensor *split_heads(tg_graph *g, tg_tensor *t, int H)
{
    if (!t) return NULL;
    const int B = t->shape[0], T = t->shape[1], dh = t->shape[2] / H;
    tg_tensor *r = tg_reshape(g, t, 4, (int[]){B, T, H, dh}); /* (B,T,H,dh) */
    return tg_transpose(g, r, 1, 2); /* (B,H,T,dh) */
}

/* Each head's dh values of t (B,T,H dh) RMS-normalised, no weight: (B,T,H dh). */
static tg_tensor *head_rmsnorm(tg_graph *g, tg_tensor *t, int H, double eps)
{
    if (!t) return NULL;
    const int B = t->shape[0], T = t->shape[1], C = t->shape[2];
    tg_tensor *r = tg_rmsnorm(g, tg_reshape(g, t, 4, (int[]){B, T, H, C / H}), NULL, eps); /* (B,T,H,dh) */
    return tg_reshape(g, r, 3, (int[]){B, T, C}); /* (B,T,C) */
}

/* Checks a (B,T,C) float input; false after recording an error. */
static bool check_seq(tg_graph *g, const char *what, const tg_tensor *t, const tg_tensor *x, int C)
{
    const bool bad_type = !tg_dtype_is_float(t->dtype) || t->dtype != x->dtype;
    if (!bad_type && t->ndim == 3 && t->shape[2] == C && t->shape[0] == x->shape[0]) return true;
    char s[64], sx[64]; /* the shapes, written only for the message */
    tg_shape_str(t, s, sizeof s);
    tg_shape_str(x, sx, sizeof sx);
    if (bad_type)
        tg_fail(g, "mha: %s must be f32 or f64%s, got %s %s (x %s %s)", what, t == x ? "" : " like x",
                tg_dtype_name(t->dtype), s, tg_dtype_name(x->dtype), sx);
    else if (t->ndim != 3 || t->shape[2] != C || t->shape[0] != x->shape[0])
        tg_fail(g, "mha: %s must be (B,T,C) with C = n_embd = %d and x's B, got %s %s (x %s %s)", what, C,
                tg_dtype_name(t->dtype), s, tg_dtype_name(x->dtype), sx);
    else return true;
    return false;
}

/* The one bool mask combining causal (query i at position p + i), key
 * padding and the explicit mask (broadcast over (B,H,Tq,Tk)), laid out for
 * the grouped scores: (B|1, H/G|1, G Tq, Tk), row r of kv head k holding
 * query head k G + r / Tq at query r % Tq (G = 1: the (B|1,H|1,Tq,Tk)
 * mask). NULL with no error when nothing is blocked by construction. */
static tg_tensor *build_mask(tg_graph *g, const tg_attn_args *a, int B, int H, int G, int Tq, int Tk, int p)
{
    const tg_tensor *kp = a->key_padding, *em = a->mask;
    if (!a->causal && !kp && !em) return NULL;
    const int full[4] = {B, H, Tq, Tk};
    int64_t es[TG_MAX_DIMS] = {0}; /* the explicit mask's strides over full; 0 = broadcast */
    if (em) tg_broadcast_to(em, 4, full, es); /* checked by the caller */
    const int md[4] = {kp || es[0] ? B : 1, es[1] ? H / G : 1, G * Tq, Tk};
    tg_tensor *mask = tg_tensor_new(g, TG_BOOL, 4, md); /* (B|1,H/G|1,G Tq,Tk) */
    if (!mask) return NULL;
    uint8_t *m = mask->data;
    const uint8_t *kpd = kp ? kp->data : NULL, *emd = em ? em->data : NULL;
    for (int b = 0; b < md[0]; b++)
        for (int hk = 0; hk < md[1]; hk++)
            for (int r = 0; r < md[2]; r++)
                for (int j = 0; j < Tk; j++) {
                    const int i = r % Tq, h = hk * G + r / Tq;
                    bool blocked = (a->causal && j > p + i) || (kpd && kpd[(int64_t)b * Tk + j]) ||
                        (emd && emd[b * es[0] + h * es[1] + i * es[2] + j * es[3]]);
                    *m++ = blocked;
                }
    return mask;
}

/* The output projection of the merged heads O (B,T,C), then dropout. */
static tg_tensor *output_projection(tg_graph *g, const tg_mha_mod *m, tg_tensor *O)
{
    return tg_dropout(g, tg_linear_forward(g, &m->c_proj, O), m->resid_dropout);
}

/* The one place the choice is made: tg_mha_forward asks this too. */
bool tg_mha_uses_fused(const tg_graph *g, const tg_mha_mod *m, const tg_attn_args *args)
{
    if (!m) return false; /* tg_mha_forward fails: no path */
    const bool attn_drop = m->attn_dropout > 0 && tg_graph_training(g) && tg_graph_grad_enabled(g);
    const bool needs_tensors = args && (args->weights || args->key_padding || args->mask);
    return !m->composed && !needs_tensors && !attn_drop;
}

tg_tensor *tg_mha_forward(tg_graph *g, const tg_mha_mod *m, tg_tensor *x, tg_tensor *kv, const tg_attn_args *args)
{
    static const tg_attn_args none = {0};
    if (!args) args = &none;
    if (args->weights) *args->weights = NULL;
    if (!m) return tg_fail(g, "mha: the module is NULL");
    tg_tensor *in[4] = {x, kv, args->key_padding, args->mask}; /* 2, 3: read here, before any op */
    if (!tg_op_begin(g, "mha", kv ? 2 : 1, in) || !tg_op_check_live(g, "mha", 4, in)) return NULL;

    /* ---- checks: every caller mistake is a message, never an assert */
    const int C = m->n_embd, H = m->n_head, Hkv = m->n_kv_head ? m->n_kv_head : H;
    if (C < 1 || H < 1 || C % H) return tg_fail(g, "mha: n_embd %d is not divisible by n_head %d", C, H);
    if (Hkv < 1 || H % Hkv) return tg_fail(g, "mha: n_kv_head %d does not divide n_head %d", Hkv, H);
    const int dh = C / H, G = H / Hkv, Ckv = Hkv * dh;
    if (!check_seq(g, "x", x, x, C) || (kv && !check_seq(g, "kv", kv, x, C))) return NULL;
    const int B = x->shape[0], Tq = x->shape[1];
    tg_kv_cache *cache = args->cache;
    char s[64], sx[64]; /* x's shape, written only for a message (not per call: decoding calls this per token) */
    if (m->rope_theta && kv)
        return tg_fail(g, "mha: rotary embedding works with self-attention only, but kv was given (x %s)",
                       tg_shape_str(x, sx, sizeof sx));
    if (cache) {
        if (kv)
            return tg_fail(g, "mha: a KV cache works with self-attention only, but kv was given (x %s)",
                           tg_shape_str(x, sx, sizeof sx));
        if (cache->dtype != x->dtype || cache->batch != B || cache->n_head != Hkv || cache->head_dim != dh)
            return tg_fail(g,
                           "mha: KV cache (%s, batch %d, n_head %d, head_dim %d) does not fit x %s %s "
                           "(n_kv_head %d, head_dim %d)",
                           tg_dtype_name(cache->dtype), cache->batch, cache->n_head, cache->head_dim,
                           tg_dtype_name(x->dtype), tg_shape_str(x, sx, sizeof sx), Hkv, dh);
        if (cache->len < 0 || cache->len > cache->max_len)
            return tg_fail(g, "mha: KV cache length %d is outside [0, max_len %d] (x %s)", cache->len, cache->max_len,
                           tg_shape_str(x, sx, sizeof sx));
        if (Tq > cache->max_len - cache->len)
            return tg_fail(g, "mha: KV cache overflow: %d cached + %d new positions (x %s) exceed max_len %d",
                           cache->len, Tq, tg_shape_str(x, sx, sizeof sx), cache->max_len);
    }
    const int p = cache ? cache->len : 0; /* absolute position of query 0 */
    const int Tk = kv ? kv->shape[1] : p + Tq;
    const tg_tensor *kp = args->key_padding, *em = args->mask;
    if (kp && (kp->dtype != TG_BOOL || kp->ndim != 2 || kp->shape[0] != B || kp->shape[1] != Tk))
        return tg_fail(g, "mha: key_padding must be bool (B,Tk) = (%d,%d), got %s %s", B, Tk, tg_dtype_name(kp->dtype),
                       tg_shape_str(kp, s, sizeof s));
    int64_t es[TG_MAX_DIMS];
    if (em && (em->dtype != TG_BOOL || !tg_broadcast_to(em, 4, (int[]){B, H, Tq, Tk}, es)))
        return tg_fail(g, "mha: mask must be bool and broadcast to (B,H,Tq,Tk) = (%d,%d,%d,%d), got %s %s", B, H, Tq,
                       Tk, tg_dtype_name(em->dtype), tg_shape_str(em, s, sizeof s));

    const bool use_op = tg_mha_uses_fused(g, m, args);
    if (use_op && m->fused && !kv && !cache && !m->rope_theta && !m->qk_norm_eps) {
        /* ---- self-attention without a cache: one projection, one fused op
         * reading q, k and v in place from it */
        tg_tensor *qkv = tg_linear_forward(g, &m->c_attn, x); /* (B,T,C+2Ckv) */
        tg_tensor *O = tg_attention_qkv(g, qkv, H, Hkv, args->causal ? TG_ATTN_CAUSAL : 0); /* (B,T,C) */
        tg_tensor *y = output_projection(g, m, O); /* (B,T,C) */
        return !y || tg_graph_error(g) ? NULL : y;
    }

    /* ---- projections: q (B,Tq,C), k and v (B,T,Ckv) */
    tg_tensor *src = kv ? kv : x; /* (B,Tk',C) */
    tg_tensor *q, *k, *v;
    if (m->fused && !kv) {
        tg_tensor *qkv = tg_linear_forward(g, &m->c_attn, x); /* (B,Tq,C+2Ckv) */
        tg_tensor *parts[3];
        tg_split(g, qkv, 2, 3, (int[]){C, Ckv, Ckv}, parts);
        q = parts[0], k = parts[1], v = parts[2];
    } else if (m->fused) {
        tg_tensor *w = m->c_attn.weight, *b = m->c_attn.bias; /* (C+2Ckv,C), (C+2Ckv) */
        tg_tensor *wq = tg_slice(g, w, 0, 0, C), *wkv = tg_slice(g, w, 0, C, C + 2 * Ckv); /* (C,C), (2Ckv,C) */
        tg_tensor *bq = b ? tg_slice(g, b, 0, 0, C) : NULL, *bkv = b ? tg_slice(g, b, 0, C, C + 2 * Ckv) : NULL;
        q = tg_linear(g, x, wq, bq); /* (B,Tq,C) */
        tg_tensor *kvp = tg_linear(g, src, wkv, bkv); /* (B,Tk,2Ckv) */
        tg_tensor *parts[2];
        tg_split(g, kvp, 2, 2, (int[]){Ckv, Ckv}, parts);
        k = parts[0], v = parts[1];
    } else {
        q = tg_linear_forward(g, &m->q_proj, x); /* (B,Tq,C) */
        k = tg_linear_forward(g, &m->k_proj, src); /* (B,Tk,Ckv) */
        v = tg_linear_forward(g, &m->v_proj, src); /* (B,Tk,Ckv) */
    }
    if (m->qk_norm_eps) { /* each head's q and k to RMS 1 */
        q = head_rmsnorm(g, q, H, m->qk_norm_eps); /* (B,Tq,C) */
        k = head_rmsnorm(g, k, Hkv, m->qk_norm_eps); /* (B,Tk,Ckv) */
    }
    if (m->rope_theta) { /* q and k turned by their positions p .. p + Tq - 1 */
        q = tg_rope(g, q, dh, H, p, m->rope_theta, m->rope_flags); /* (B,Tq,C) */
        k = tg_rope(g, k, dh, Hkv, p, m->rope_theta, m->rope_flags); /* (B,Tq,Ckv) */
    }
    /* ---- keys and values: the new ones after the cached prefix, (B,Tk,Ckv).
     * Decoding one sequence without grad (sampling), the new ones go into
     * the cache first and K, V are views of its first p + Tq rows: no copy
     * of the prefix per token (rows past len are ignored if this fails). */
    tg_tensor *K = k, *V = v;
    const bool in_place = cache && B == 1 && !tg_needs_grad(g, k) && !tg_needs_grad(g, v) && !tg_graph_error(g);
    if (in_place) {
        cache_store(cache, cache->k, k);
        cache_store(cache, cache->v, v);
        K = tg_tensor_wrap(g, cache->dtype, 3, (int[]){1, p + Tq, Ckv}, cache->k); /* (1,Tk,Ckv) */
        V = tg_tensor_wrap(g, cache->dtype, 3, (int[]){1, p + Tq, Ckv}, cache->v); /* (1,Tk,Ckv) */
    } else if (cache && p > 0 && !tg_graph_error(g)) {
        K = tg_concat(g, 2, (tg_tensor *[]){cache_prefix(g, cache, cache->k), k}, 1);
        V = tg_concat(g, 2, (tg_tensor *[]){cache_prefix(g, cache, cache->v), v}, 1);
    }
    tg_tensor *O, *A = NULL; /* (B,Tq,C), (B,H,Tq,Tk) */
    if (use_op) {
        /* ---- one fused op on the (B,T,C) projections */
        O = tg_attention(g, q, K, V, H, args->causal ? TG_ATTN_CAUSAL : 0, p); /* (B,Tq,C) */
    } else {
        q = split_heads(g, q, H); /* (B,H,Tq,dh) */
        K = split_heads(g, K, Hkv); /* (B,Hkv,Tk,dh) */
        V = split_heads(g, V, Hkv); /* (B,Hkv,Tk,dh) */
        /* grouped query heads: the G heads that share kv head k are stacked
         * as one taller query, rows g Tq + t (a view: they are consecutive) */
        if (G > 1) q = tg_reshape(g, q, 4, (int[]){B, Hkv, G * Tq, dh}); /* (B,Hkv,G Tq,dh) */

        /* ---- scores, mask, softmax, weighted sum of values */
        tg_tensor *S = tg_matmul(g, q, tg_transpose(g, K, 2, 3)); /* (B,Hkv,G Tq,Tk) */
        S = tg_scale(g, S, 1.0 / sqrt((double)dh)); /* (B,Hkv,G Tq,Tk) */
        tg_tensor *mask = tg_graph_error(g) ? NULL : build_mask(g, args, B, H, G, Tq, Tk, p);
        A = tg_softmax(g, S, mask); /* (B,Hkv,G Tq,Tk) */
        O = tg_matmul(g, tg_dropout(g, A, m->attn_dropout), V); /* (B,Hkv,G Tq,dh) */
        if (G > 1) { /* back to one row block per head */
            O = tg_reshape(g, O, 4, (int[]){B, H, Tq, dh}); /* (B,H,Tq,dh) */
            A = tg_reshape(g, A, 4, (int[]){B, H, Tq, Tk}); /* (B,H,Tq,Tk) */
        }

        /* ---- merge heads */
        O = tg_transpose(g, O, 1, 2); /* (B,Tq,H,dh) */
        O = tg_reshape(g, O, 3, (int[]){B, Tq, C}); /* (B,Tq,C) */
    }

    tg_tensor *y = output_projection(g, m, O); /* (B,Tq,C) */
    if (!y || tg_graph_error(g)) return NULL;

    if (cache) {
        if (!in_place) {
            cache_store(cache, cache->k, k);
            cache_store(cache, cache->v, v);
        }
        cache->len += Tq;
    }
    if (args->weights) *args->weights = A;
    return y;
}
