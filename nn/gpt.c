/* GPT-2 / nanoGPT, composed from the modules in this folder.
 *
 *   idx (B,T) i32, positions pos_t = p + t (p = the KV cache length, 0
 *   without a cache)
 *   x = dropout(wte[idx] + wpe[pos])                         (B,T,C)
 *   per block:  x = x + attn(ln_1(x))   (causal self-attention)
 *               x = x + mlp(ln_2(x))
 *   logits = ln_f(x) wte^T                                   (B,T,V)
 *   The MLP's GELU is the exact erf form (nanoGPT), or GPT-2's tanh form
 *   with cfg.gelu TG_GELU_TANH.
 *
 * The LM head is tied to the token embedding: the same (V,C) tensor is
 * read by the embedding and by tg_linear, so its gradient is the sum of
 * both contributions (the tape adds).
 *
 * The speedrun options (docs/speedrun.md; all off is nanoGPT's model, bit for bit):
 *   mlp        TG_FFN_RELU2: relu(c_fc x)^2 in place of the GELU, 4C wide;
 *              TG_FFN_SWIGLU: mlp.w1, w2, w3 (Llama's), tg_llama_hidden_dim(C, 32) wide
 *   qk_norm    each head's q and k RMS-normalised (eps 1e-5, LayerNorm's, no weight)
 *   zero_init_proj  attn.c_proj and mlp.c_proj (w2) drawn, then zeroed
 *              (the stream of every other parameter is unchanged)
 *   untie_head lm_head.weight (V,C), registered last, normal(0, 0.02)
 *   logit_softcap s > 0: logits = s tanh(logits / s)
 *
 * Parameters, in nanoGPT's state_dict order and names:
 *   transformer.wte.weight (V,C), transformer.wpe.weight (block_size,C),
 *   per block i: transformer.h.<i>.ln_1.weight[, .bias],
 *     .attn.c_attn.weight (3C,C)[, .bias], .attn.c_proj.weight (C,C)[, .bias],
 *     .ln_2.weight[, .bias], .mlp.c_fc.weight (4C,C)[, .bias],
 *     .mlp.c_proj.weight (C,4C)[, .bias],
 *   transformer.ln_f.weight[, .bias].
 * Init (nanoGPT): every linear weight and both embeddings normal(0, 0.02),
 * the residual projections (attn.c_proj, mlp.c_proj) normal(0,
 * 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm weights 1; the normals are
 * drawn from one tg_rng seeded with `seed`, parameter by parameter in the
 * order above. */
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/op.h"
#include "../core/params_internal.h"
#include "../core/rng.h"
#include "lm_internal.h"
#include "nn_internal.h"

/* The MLP's width: 4C, or llama2.c's SwiGLU width (multiple of 32) for SwiGLU. */
static int gpt_hidden(const tg_gpt_config *c)
{
    return c->mlp == TG_FFN_SWIGLU ? tg_llama_hidden_dim(c->n_embd, 32) : 4 * c->n_embd;
}

static tg_gpt *fail_new(tg_gpt *m, tg_error *err, const char *msg)
{
    if (msg) tg_error_set(err, "%s", msg);
    tg_gpt_free(m);
    return NULL;
}

tg_gpt *tg_gpt_new(const tg_gpt_config *cfg, tg_dtype dt, uint64_t seed, tg_error *err)
{
    if (!cfg) {
        tg_error_set(err, "gpt: the config is NULL");
        return NULL;
    }
    const tg_gpt_config c = *cfg;
    if (c.n_layer < 1 || c.n_head < 1 || c.n_embd < 1 || c.block_size < 1 || c.vocab_size < 1) {
        tg_error_set(err,
                     "gpt: every size must be >= 1: n_layer %d, n_head %d, n_embd %d, block_size %d, "
                     "vocab_size %d",
                     c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size);
        return NULL;
    }
    if (c.n_embd % c.n_head) {
        tg_error_set(err, "gpt: n_embd %d is not divisible by n_head %d", c.n_embd, c.n_head);
        return NULL;
    }
    if (!(c.dropout >= 0 && c.dropout < 1)) {
        tg_error_set(err, "gpt: dropout must be in [0, 1), got %g", c.dropout);
        return NULL;
    }
    if (c.gelu != TG_GELU_ERF && c.gelu != TG_GELU_TANH) {
        tg_error_set(err, "gpt: unknown gelu %d (TG_GELU_ERF or TG_GELU_TANH)", (int)c.gelu);
        return NULL;
    }
    if (!tg_ffn_kind_name(c.mlp)) {
        tg_error_set(err, "gpt: unknown mlp %d (TG_FFN_GELU, TG_FFN_RELU2 or TG_FFN_SWIGLU)", (int)c.mlp);
        return NULL;
    }
    if (!(c.logit_softcap >= 0 && isfinite(c.logit_softcap))) {
        tg_error_set(err, "gpt: logit_softcap must be 0 (none) or finite and > 0, got %g", c.logit_softcap);
        return NULL;
    }
    if (!tg_dtype_is_float(dt)) {
        tg_error_set(err, "gpt: dtype must be f32 or f64, got %s", tg_dtype_name(dt));
        return NULL;
    }
    tg_gpt *m = tg_calloc(1, sizeof *m);
    if (!m) return fail_new(m, err, "gpt: out of memory");
    m->cfg = c;
    m->params = tg_params_new(dt, err);
    if (!m->params) return fail_new(m, err, NULL);
    tg_params_reserve(m->params, tg_gpt_num_params(&c)); /* its buffers allocated once */
    m->h = tg_calloc((size_t)c.n_layer, sizeof *m->h);
    if (!m->h) return fail_new(m, err, "gpt: out of memory");

    /* nanoGPT's init, module by module as they are registered: normal(0,
     * 0.02) for the embeddings and weights, 0.02 / sqrt(2 n_layer) for the
     * residual projections (attn.c_proj, mlp.c_proj), zero biases,
     * LayerNorm weights 1; one stream seeded with `seed`, or none drawn
     * for TG_NO_INIT (the weights come from a file next) */
    const bool draw = seed != TG_NO_INIT;
    tg_rng rng;
    tg_rng_seed(&rng, seed, 0);
    const double std = 0.02, proj_std = 0.02 / sqrt(2.0 * c.n_layer);
    const int C = c.n_embd;
    tg_params *p = m->params;
    if (!(m->wte = tg_params_add(p, "transformer.wte.weight", 2, (int[]){c.vocab_size, C}, err))) /* (V,C) */
        return fail_new(m, err, NULL);
    if (draw) tg_rng_fill_normal(&rng, m->wte, 0.0, std);
    if (!(m->wpe = tg_params_add(p, "transformer.wpe.weight", 2, (int[]){c.block_size, C}, err))) /* (bs,C) */
        return fail_new(m, err, NULL);
    if (draw) tg_rng_fill_normal(&rng, m->wpe, 0.0, std);
    const tg_mha_config ac = {.n_embd = C,
                              .n_head = c.n_head,
                              .layout = TG_MHA_FUSED,
                              .bias = c.bias,
                              .dropout = c.dropout,
                              .qk_norm_eps = c.qk_norm ? TG_LAYERNORM_EPS : 0};
    const tg_mlp_kind kind = c.mlp == TG_FFN_SWIGLU ? TG_MLP_SWIGLU
        : c.mlp == TG_FFN_RELU2                     ? TG_MLP_RELU2
        : c.gelu == TG_GELU_TANH                    ? TG_MLP_GELU_TANH
                                                    : TG_MLP_GELU;
    char name[128];
    for (int i = 0; i < c.n_layer; i++) {
        tg_gpt_block *b = &m->h[i];
        snprintf(name, sizeof name, "transformer.h.%d.ln_1", i);
        if (tg_layernorm_init(&b->ln_1, p, name, C, c.bias, err)) return fail_new(m, err, NULL);
        snprintf(name, sizeof name, "transformer.h.%d.attn", i);
        if (tg_mha_init(&b->attn, p, name, &ac, err)) return fail_new(m, err, NULL);
        if (draw) tg_mha_init_normal(&b->attn, &rng, std, proj_std);
        b->attn.composed = c.attn_composed;
        snprintf(name, sizeof name, "transformer.h.%d.ln_2", i);
        if (tg_layernorm_init(&b->ln_2, p, name, C, c.bias, err)) return fail_new(m, err, NULL);
        snprintf(name, sizeof name, "transformer.h.%d.mlp", i);
        const tg_mlp_options mo = {.kind = kind, .bias = c.bias, .dropout = c.dropout};
        if (tg_mlp_init(&b->mlp, p, name, C, gpt_hidden(&c), &mo, err)) return fail_new(m, err, NULL);
        if (draw) tg_mlp_init_normal(&b->mlp, &rng, std, std, proj_std);
        if (draw && c.zero_init_proj) {
            tg_nn_zero(b->attn.c_proj.weight);
            tg_nn_zero(b->mlp.down.weight);
        }
    }
    if (tg_layernorm_init(&m->ln_f, p, "transformer.ln_f", C, c.bias, err)) return fail_new(m, err, NULL);
    m->lm_head = m->wte;
    if (c.untie_head) {
        if (!(m->lm_head = tg_params_add(p, "lm_head.weight", 2, (int[]){c.vocab_size, C}, err))) /* (V,C) */
            return fail_new(m, err, NULL);
        if (draw) tg_rng_fill_normal(&rng, m->lm_head, 0.0, std);
    }
    return m;
}

int64_t tg_gpt_num_params(const tg_gpt_config *cfg)
{
    if (!cfg) return -1;
    const tg_gpt_config c = *cfg;
    if (c.n_layer < 1 || c.n_head < 1 || c.n_embd < 1 || c.block_size < 1 || c.vocab_size < 1 || c.n_embd % c.n_head)
        return -1;
    /* what the modules refuse (an MLP past 2^28 wide, a tensor or store past TG_MAX_NUMEL) counts as refused too:
     * tg_gpt_new reserves this count before its modules look at the config */
    if (c.n_embd > (1 << 26) || (int64_t)c.vocab_size * c.n_embd > TG_MAX_NUMEL || !tg_ffn_kind_name(c.mlp) ||
        !(c.logit_softcap >= 0 && isfinite(c.logit_softcap)))
        return -1;
    const int64_t C = c.n_embd, limit = TG_MAX_NUMEL, hid = gpt_hidden(&c), ups = c.mlp == TG_FFN_SWIGLU ? 2 : 1;
    int64_t layer, n;
    /* per block: ln_1, c_attn (3C,C), attn.c_proj (C,C), ln_2, the MLP's ups (hidden,C) and its down (C,hidden),
     * with biases 4C (attention), ups hidden + C (MLP) and 2C (LayerNorms) */
    const int64_t biases = c.bias ? 4 * C + ups * hid + C + 2 * C : 0;
    if (__builtin_mul_overflow(C, 4 * C + (ups + 1) * hid, &layer) ||
        __builtin_add_overflow(layer, 2 * C + biases, &layer) || __builtin_mul_overflow(layer, (int64_t)c.n_layer, &n))
        return -1;
    int64_t emb; /* wte, wpe, ln_f, an untied lm_head */
    if (__builtin_mul_overflow(C, (int64_t)c.vocab_size * (c.untie_head ? 2 : 1) + c.block_size + (c.bias ? 2 : 1),
                               &emb) ||
        __builtin_add_overflow(n, emb, &n))
        return -1;
    return n > limit ? -1 : n;
}

/* Frees the caches: the forward runs without them again. */
static void drop_caches(tg_gpt *m)
{
    if (!m) return;
    tg_lm_caches_free(m->cache, m->cfg.n_layer);
    m->cache = NULL;
}

void tg_gpt_free(tg_gpt *m)
{
    if (!m) return;
    drop_caches(m);
    tg_params_free(m->params);
    tg_free(m->h);
    tg_free(m);
}

void tg_gpt_set_attn_composed(tg_gpt *m, bool composed)
{
    if (!m) return;
    m->cfg.attn_composed = composed;
    for (int i = 0; i < m->cfg.n_layer; i++) m->h[i].attn.composed = composed;
}

/* ---- forward ----------------------------------------------------------- */

tg_tensor *tg_gpt_forward_ex(tg_graph *g, tg_gpt *m, tg_tensor *idx, tg_tensor **attn_weights)
{
    if (!m) return tg_fail(g, "gpt: the model is NULL");
    const tg_gpt_config *c = &m->cfg;
    if (attn_weights)
        for (int i = 0; i < c->n_layer; i++) attn_weights[i] = NULL;
    tg_tensor *in[1] = {idx};
    if (!tg_op_begin(g, "gpt", 1, in) ||
        !tg_lm_check_idx(g, "gpt", idx, c->vocab_size, c->block_size, m->cache ? &m->cache[0] : NULL))
        return NULL;
    const int T = idx->shape[1];
    const int p = m->cache ? m->cache[0].len : 0; /* positions already cached */

    tg_tensor *pos = tg_tensor_new(g, TG_I32, 1, (int[]){T}); /* (T) */
    if (!pos) return NULL;
    for (int t = 0; t < T; t++) ((int32_t *)pos->data)[t] = p + t;

    tg_tensor *x = tg_add(g, tg_embedding(g, m->wte, idx), tg_embedding(g, m->wpe, pos)); /* (B,T,C) */
    x = tg_dropout(g, x, c->dropout); /* (B,T,C) */
    for (int i = 0; i < c->n_layer; i++) {
        const tg_gpt_block *b = &m->h[i];
        tg_attn_args args = {
            .causal = true, .cache = m->cache ? &m->cache[i] : NULL, .weights = attn_weights ? &attn_weights[i] : NULL};
        x = tg_add(g, x, tg_mha_forward(g, &b->attn, tg_layernorm_forward(g, &b->ln_1, x), NULL, &args));
        x = tg_add(g, x, tg_mlp_forward(g, &b->mlp, tg_layernorm_forward(g, &b->ln_2, x))); /* (B,T,C) */
    }
    x = tg_layernorm_forward(g, &m->ln_f, x); /* (B,T,C) */
    tg_tensor *logits = tg_linear(g, x, m->lm_head, NULL); /* (B,T,V); lm_head is wte when tied */
    if (c->logit_softcap > 0) logits = tg_softcap(g, logits, c->logit_softcap); /* (B,T,V) */
    if (!logits || tg_graph_error(g)) return tg_lm_forward_failed(m->cache, attn_weights, c->n_layer, p);
    return logits;
}

tg_tensor *tg_gpt_loss(tg_graph *g, tg_gpt *m, tg_tensor *idx, tg_tensor *targets)
{
    if (!m) return tg_fail(g, "gpt_loss: the model is NULL");
    tg_tensor *in[2] = {idx, targets};
    if (!tg_op_begin(g, "gpt_loss", 2, in) || !tg_lm_check_targets(g, "gpt", idx, targets)) return NULL;
    return tg_cross_entropy(g, tg_gpt_forward_ex(g, m, idx, NULL), targets); /* () */
}

/* ---- KV cache ---------------------------------------------------------- */

int tg_gpt_cache_enable(tg_gpt *m, int batch, tg_error *err)
{
    if (!m) return tg_error_set(err, "gpt_cache_enable: the model is NULL");
    drop_caches(m);
    const tg_gpt_config *c = &m->cfg;
    m->cache = tg_lm_caches_new(c->n_layer, tg_params_dtype(m->params), batch, c->n_head, c->n_embd / c->n_head,
                                c->block_size, "gpt", err);
    return m->cache ? 0 : -1;
}

void tg_gpt_cache_clear(tg_gpt *m)
{
    if (m) tg_lm_caches_clear(m->cache, m->cfg.n_layer);
}
