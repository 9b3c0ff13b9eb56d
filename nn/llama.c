/* Llama, as llama2.c's model.py builds it, composed from the modules in
 * this folder.
 *
 *   idx (B,T) i32, positions p + t (p = the KV cache length)
 *   x = dropout(tok_embeddings[idx])                              (B,T,C)
 *   per layer:  h = x + attention(attention_norm(x))   causal, RoPE on q and k,
 *                                                      n_kv_head key/value heads
 *               x = h + feed_forward(ffn_norm(h))      w2(silu(w1 h) * w3 h)
 *   logits = norm(x) output^T                                     (B,T,V)
 *
 * No position embedding (RoPE carries the positions), no biases, RMSNorm
 * everywhere (eps norm_eps), the output head tied to the token embedding
 * by default (a tied head's gradient is the sum of both uses).
 *
 * Parameters, in model.py's state_dict order and names:
 *   tok_embeddings.weight (V,C)
 *   per layer i: layers.<i>.attention.wq.weight (C,C), .wk.weight (Ckv,C),
 *     .wv.weight (Ckv,C), .wo.weight (C,C),
 *     layers.<i>.feed_forward.w1.weight (hidden,C), .w2.weight (C,hidden),
 *     .w3.weight (hidden,C), layers.<i>.attention_norm.weight (C),
 *     layers.<i>.ffn_norm.weight (C)
 *   norm.weight (C), output.weight (V,C) when not tied
 * with Ckv = n_kv_head * C / n_head.
 * Init (model.py): normal(0, 0.02) for the embedding and every linear,
 * 0.02 / sqrt(2 n_layer) for w3 and wo (model.py scales those two), norm
 * weights 1; drawn from one tg_rng seeded with `seed`, in the order above.
 *
 * The speedrun options (docs/speedrun.md; all off is model.py's model, bit for bit):
 *   mlp        TG_FFN_GELU or TG_FFN_RELU2: feed_forward.c_fc (hidden,C) and
 *              .c_proj (C,hidden), hidden_dim wide, c_proj scaled as nanoGPT
 *              (there is no w3 to scale)
 *   qk_norm    each head's q and k RMS-normalised (eps norm_eps, no weight)
 *              before RoPE
 *   zero_init_proj  wo and w2 (c_proj) drawn, then zeroed
 *   logit_softcap s > 0: logits = s tanh(logits / s)
 * (an untied head is tied = false, as before) */
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/op.h"
#include "../core/params_internal.h"
#include "lm_internal.h"
#include "nn_internal.h"

int tg_llama_hidden_dim(int dim, int multiple_of)
{
    if (dim < 1 || dim > (1 << 26) || multiple_of < 1 || multiple_of > (1 << 20)) return -1;
    const int h = 2 * (4 * dim) / 3; /* int(2 * 4 dim / 3) */
    return multiple_of * ((h + multiple_of - 1) / multiple_of);
}

/* SwiGLU (the default), with a gate w3 */
static bool gated(const tg_llama_config *c) { return c->mlp == TG_FFN_DEFAULT || c->mlp == TG_FFN_SWIGLU; }

/* A config's problem as a message in err, or 0 when tg_llama_new takes it. */
static int check_config(const tg_llama_config *c, tg_error *err)
{
    if (c->n_layer < 1 || c->n_head < 1 || c->n_kv_head < 1 || c->n_embd < 1 || c->hidden_dim < 1 ||
        c->block_size < 1 || c->vocab_size < 1)
        return tg_error_set(err,
                            "llama: every size must be >= 1: n_layer %d, n_head %d, n_kv_head %d, n_embd %d, "
                            "hidden_dim %d, block_size %d, vocab_size %d",
                            c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->hidden_dim, c->block_size,
                            c->vocab_size);
    if (c->n_embd % c->n_head || (c->n_embd / c->n_head) % 2)
        return tg_error_set(err, "llama: n_embd %d must be n_head %d times an even head size", c->n_embd, c->n_head);
    if (c->n_head % c->n_kv_head)
        return tg_error_set(err, "llama: n_kv_head %d must divide n_head %d", c->n_kv_head, c->n_head);
    if (!(c->rope_theta > 1 && isfinite(c->rope_theta)))
        return tg_error_set(err, "llama: rope_theta must be finite and > 1, got %g", c->rope_theta);
    if (c->rope_flags != TG_ROPE_INTERLEAVED && c->rope_flags != TG_ROPE_HALVES)
        return tg_error_set(err, "llama: unknown rope_flags %d", c->rope_flags);
    if (!(c->norm_eps > 0 && c->norm_eps <= 1))
        return tg_error_set(err, "llama: norm_eps must be in (0, 1], got %g", c->norm_eps);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return tg_error_set(err, "llama: dropout must be in [0, 1), got %g", c->dropout);
    if (!tg_ffn_kind_name(c->mlp))
        return tg_error_set(err, "llama: unknown mlp %d (TG_FFN_SWIGLU, TG_FFN_GELU or TG_FFN_RELU2)", (int)c->mlp);
    if (c->gelu != TG_GELU_ERF && (c->gelu != TG_GELU_TANH || c->mlp != TG_FFN_GELU))
        return tg_error_set(err, "llama: gelu %d is a setting of mlp TG_FFN_GELU (TG_GELU_ERF or TG_GELU_TANH)",
                            (int)c->gelu);
    if (!(c->logit_softcap >= 0 && isfinite(c->logit_softcap)))
        return tg_error_set(err, "llama: logit_softcap must be 0 (none) or finite and > 0, got %g", c->logit_softcap);
    return 0;
}

int64_t tg_llama_num_params(const tg_llama_config *cfg)
{
    if (!cfg || check_config(cfg, NULL)) return -1;
    const tg_llama_config c = *cfg;
    /* what the modules refuse (an MLP past 2^28 wide, a tensor or store past TG_MAX_NUMEL) counts as refused too:
     * tg_llama_new reserves this count before its modules look at the config */
    if (c.n_embd > (1 << 28) || c.hidden_dim > (1 << 28) || (int64_t)c.vocab_size * c.n_embd > TG_MAX_NUMEL) return -1;
    const int64_t C = c.n_embd, Ckv = (int64_t)c.n_kv_head * (C / c.n_head), V = c.vocab_size;
    int64_t layer, n, emb;
    /* wq, wo (C,C); wk, wv (Ckv,C); w1, w2, w3 (c_fc, c_proj without a gate) hidden x C; two norms */
    const int64_t mats = gated(&c) ? 3 : 2;
    if (__builtin_mul_overflow(C, 2 * C + 2 * Ckv + mats * (int64_t)c.hidden_dim + 2, &layer) ||
        __builtin_mul_overflow(layer, (int64_t)c.n_layer, &n) ||
        __builtin_mul_overflow(C, V * (c.tied ? 1 : 2) + 1, &emb) || __builtin_add_overflow(n, emb, &n))
        return -1;
    return n > TG_MAX_NUMEL ? -1 : n;
}

static tg_llama *fail_new(tg_llama *m, tg_error *err, const char *msg)
{
    if (msg) tg_error_set(err, "%s", msg);
    tg_llama_free(m);
    return NULL;
}

tg_llama *tg_llama_new(const tg_llama_config *cfg, tg_dtype dt, uint64_t seed, tg_error *err)
{
    if (!cfg) {
        tg_error_set(err, "llama: the config is NULL");
        return NULL;
    }
    const tg_llama_config c = *cfg;
    if (check_config(&c, err)) return NULL;
    if (!tg_dtype_is_float(dt)) {
        tg_error_set(err, "llama: dtype must be f32 or f64, got %s", tg_dtype_name(dt));
        return NULL;
    }
    tg_llama *m = tg_calloc(1, sizeof *m);
    if (!m) return fail_new(m, err, "llama: out of memory");
    m->cfg = c;
    if (!(m->params = tg_params_new(dt, err))) return fail_new(m, err, NULL);
    tg_params_reserve(m->params, tg_llama_num_params(&c)); /* its buffers allocated once */
    if (!(m->layers = tg_calloc((size_t)c.n_layer, sizeof *m->layers))) return fail_new(m, err, "llama: out of memory");

    const bool draw = seed != TG_NO_INIT; /* TG_NO_INIT: the weights come from a file next */
    tg_rng rng;
    tg_rng_seed(&rng, seed, 0);
    const double std = 0.02, scaled = 0.02 / sqrt(2.0 * c.n_layer);
    const int C = c.n_embd;
    tg_params *p = m->params;
    if (!(m->tok_embeddings = tg_params_add(p, "tok_embeddings.weight", 2, (int[]){c.vocab_size, C}, err))) /* (V,C) */
        return fail_new(m, err, NULL);
    if (draw) tg_rng_fill_normal(&rng, m->tok_embeddings, 0.0, std);
    const tg_mha_config ac = {.n_embd = C,
                              .n_head = c.n_head,
                              .n_kv_head = c.n_kv_head,
                              .layout = TG_MHA_LLAMA,
                              .dropout = c.dropout,
                              .rope_theta = c.rope_theta,
                              .rope_flags = c.rope_flags,
                              .qk_norm_eps = c.qk_norm ? c.norm_eps : 0};
    const tg_mlp_kind kind = gated(&c) ? TG_MLP_SWIGLU
        : c.mlp == TG_FFN_RELU2        ? TG_MLP_RELU2
        : c.gelu == TG_GELU_TANH       ? TG_MLP_GELU_TANH
                                       : TG_MLP_GELU;
    char name[128];
    for (int i = 0; i < c.n_layer; i++) {
        tg_llama_block *b = &m->layers[i];
        snprintf(name, sizeof name, "layers.%d.attention", i);
        if (tg_mha_init(&b->attention, p, name, &ac, err)) return fail_new(m, err, NULL);
        if (draw) tg_mha_init_normal(&b->attention, &rng, std, scaled); /* wo scaled */
        b->attention.composed = c.attn_composed;
        snprintf(name, sizeof name, "layers.%d.feed_forward", i);
        const tg_mlp_options mo = {.kind = kind, .dropout = c.dropout};
        if (tg_mlp_init(&b->feed_forward, p, name, C, c.hidden_dim, &mo, err)) return fail_new(m, err, NULL);
        if (draw && gated(&c)) tg_mlp_init_normal(&b->feed_forward, &rng, std, scaled, std); /* w3 scaled */
        else if (draw) tg_mlp_init_normal(&b->feed_forward, &rng, std, std, scaled); /* c_proj scaled */
        if (draw && c.zero_init_proj) {
            tg_nn_zero(b->attention.c_proj.weight);
            tg_nn_zero(b->feed_forward.down.weight);
        }
        snprintf(name, sizeof name, "layers.%d.attention_norm", i);
        if (tg_rmsnorm_init(&b->attention_norm, p, name, C, c.norm_eps, err)) return fail_new(m, err, NULL);
        snprintf(name, sizeof name, "layers.%d.ffn_norm", i);
        if (tg_rmsnorm_init(&b->ffn_norm, p, name, C, c.norm_eps, err)) return fail_new(m, err, NULL);
    }
    if (tg_rmsnorm_init(&m->norm, p, "norm", C, c.norm_eps, err)) return fail_new(m, err, NULL);
    if (c.tied) {
        m->output = m->tok_embeddings;
    } else {
        if (!(m->output = tg_params_add(p, "output.weight", 2, (int[]){c.vocab_size, C}, err))) /* (V,C) */
            return fail_new(m, err, NULL);
        if (draw) tg_rng_fill_normal(&rng, m->output, 0.0, std);
    }
    return m;
}

/* Frees the caches: the forward runs without them again. */
static void drop_caches(tg_llama *m)
{
    if (!m) return;
    tg_lm_caches_free(m->cache, m->cfg.n_layer);
    m->cache = NULL;
}

void tg_llama_free(tg_llama *m)
{
    if (!m) return;
    drop_caches(m);
    tg_params_free(m->params);
    tg_free(m->layers);
    tg_free(m);
}

void tg_llama_set_attn_composed(tg_llama *m, bool composed)
{
    if (!m) return;
    m->cfg.attn_composed = composed;
    for (int i = 0; i < m->cfg.n_layer; i++) m->layers[i].attention.composed = composed;
}

/* ---- forward ----------------------------------------------------------- */

tg_tensor *tg_llama_forward_ex(tg_graph *g, tg_llama *m, tg_tensor *idx, tg_tensor **attn_weights)
{
    if (!m) return tg_fail(g, "llama: the model is NULL");
    const tg_llama_config *c = &m->cfg;
    if (attn_weights)
        for (int i = 0; i < c->n_layer; i++) attn_weights[i] = NULL;
    tg_tensor *in[1] = {idx};
    if (!tg_op_begin(g, "llama", 1, in) ||
        !tg_lm_check_idx(g, "llama", idx, c->vocab_size, c->block_size, m->cache ? &m->cache[0] : NULL))
        return NULL;
    const int p = m->cache ? m->cache[0].len : 0; /* positions already cached */
    tg_tensor *x = tg_dropout(g, tg_embedding(g, m->tok_embeddings, idx), c->dropout); /* (B,T,C) */
    for (int i = 0; i < c->n_layer; i++) {
        const tg_llama_block *b = &m->layers[i];
        tg_attn_args args = {
            .causal = true, .cache = m->cache ? &m->cache[i] : NULL, .weights = attn_weights ? &attn_weights[i] : NULL};
        x = tg_add(g, x, tg_mha_forward(g, &b->attention, tg_rmsnorm_forward(g, &b->attention_norm, x), NULL, &args));
        x = tg_add(g, x, tg_mlp_forward(g, &b->feed_forward, tg_rmsnorm_forward(g, &b->ffn_norm, x))); /* (B,T,C) */
    }
    x = tg_rmsnorm_forward(g, &m->norm, x); /* (B,T,C) */
    tg_tensor *logits = tg_linear(g, x, m->output, NULL); /* (B,T,V) */
    if (c->logit_softcap > 0) logits = tg_softcap(g, logits, c->logit_softcap); /* (B,T,V) */
    if (!logits || tg_graph_error(g)) return tg_lm_forward_failed(m->cache, attn_weights, c->n_layer, p);
    return logits;
}

tg_tensor *tg_llama_loss(tg_graph *g, tg_llama *m, tg_tensor *idx, tg_tensor *targets)
{
    if (!m) return tg_fail(g, "llama_loss: the model is NULL");
    tg_tensor *in[2] = {idx, targets};
    if (!tg_op_begin(g, "llama_loss", 2, in) || !tg_lm_check_targets(g, "llama", idx, targets)) return NULL;
    return tg_cross_entropy(g, tg_llama_forward_ex(g, m, idx, NULL), targets); /* () */
}

/* ---- KV cache ---------------------------------------------------------- */

int tg_llama_cache_enable(tg_llama *m, int batch, tg_error *err)
{
    if (!m) return tg_error_set(err, "llama_cache_enable: the model is NULL");
    drop_caches(m);
    const tg_llama_config *c = &m->cfg;
    m->cache = tg_lm_caches_new(c->n_layer, tg_params_dtype(m->params), batch, c->n_kv_head, c->n_embd / c->n_head,
                                c->block_size, "llama", err);
    return m->cache ? 0 : -1;
}

void tg_llama_cache_clear(tg_llama *m)
{
    if (m) tg_lm_caches_clear(m->cache, m->cfg.n_layer);
}
