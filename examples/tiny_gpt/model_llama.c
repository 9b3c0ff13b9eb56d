/* The Llama family (nn/llama.c) behind tiny_gpt's model interface. Its
 * checkpoint keys: n_layer, n_head, n_kv_head, n_embd, hidden_dim,
 * block_size, vocab_size, rope_theta, norm_eps, tied, rope ("interleaved",
 * Meta's and llama2.c's pairing, or "halves", Hugging Face's), dropout. */
#include "model.h"

#include <stdio.h>
#include <string.h>

static tg_llama_config llama_config(const model_config *c)
{
    return (tg_llama_config){.n_layer = c->n_layer, .n_head = c->n_head, .n_kv_head = c->n_kv_head,
                             .n_embd = c->n_embd, .hidden_dim = c->hidden_dim, .block_size = c->block_size,
                             .vocab_size = c->vocab_size, .rope_theta = c->rope_theta,
                             .rope_flags = c->rope_halves ? TG_ROPE_HALVES : TG_ROPE_INTERLEAVED,
                             .norm_eps = c->norm_eps, .tied = c->tied, .dropout = c->dropout};
}

static void *create(const model_config *c, tg_dtype dt, uint64_t seed, char *err, size_t errlen)
{
    if (c->bias) {
        snprintf(err, errlen, "llama: the Llama has no biases (give --bias false)");
        return NULL;
    }
    const tg_llama_config l = llama_config(c);
    return tg_llama_new(&l, dt, seed, err, errlen);
}
static void destroy(void *m) { tg_llama_free(m); }
static tg_params *params(void *m) { return ((tg_llama *)m)->params; }
static int64_t num_params(const model_config *c)
{
    const tg_llama_config l = llama_config(c);
    return tg_llama_num_params(&l);
}
static tg_tensor *forward(tg_graph *g, void *m, tg_tensor *idx, tg_tensor **w) { return tg_llama_forward_ex(g, m, idx, w); }
static tg_tensor *loss(tg_graph *g, void *m, tg_tensor *idx, tg_tensor *t) { return tg_llama_loss(g, m, idx, t); }
static void set_composed(void *m, bool c) { tg_llama_set_attn_composed(m, c); }
static int cache_enable(void *m, int b, char *err, size_t errlen) { return tg_llama_cache_enable(m, b, err, errlen); }
static void cache_clear(void *m) { tg_llama_cache_clear(m); }
static int cache_len(const void *m) { return ((const tg_llama *)m)->cache ? ((const tg_llama *)m)->cache[0].len : 0; }

static int record(const model_config *c, kv_list *l)
{
    char v[7][16], theta[40], eps[40], dr[40];
    const int n[7] = {c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->hidden_dim, c->block_size, c->vocab_size};
    const char *k[7] = {"n_layer", "n_head", "n_kv_head", "n_embd", "hidden_dim", "block_size", "vocab_size"};
    for (int i = 0; i < 7; i++) {
        snprintf(v[i], sizeof v[i], "%d", n[i]);
        if (kv_add(l, k[i], v[i])) return -1;
    }
    snprintf(theta, sizeof theta, "%.17g", c->rope_theta);
    snprintf(eps, sizeof eps, "%.17g", c->norm_eps);
    snprintf(dr, sizeof dr, "%.17g", c->dropout);
    return kv_add(l, "rope_theta", theta) || kv_add(l, "norm_eps", eps) || kv_add(l, "tied", c->tied ? "true" : "false") ||
           kv_add(l, "rope", c->rope_halves ? "halves" : "interleaved") || kv_add(l, "bias", "false") ||
           kv_add(l, "dropout", dr);
}

static int read(const tg_st_file *f, model_config *c, char *err, size_t errlen)
{
    const int cap = 1 << 24;
    if (meta_int_in(f, "n_layer", 1, cap, &c->n_layer, err, errlen) ||
        meta_int_in(f, "n_head", 1, cap, &c->n_head, err, errlen) ||
        meta_int_in(f, "n_kv_head", 1, cap, &c->n_kv_head, err, errlen) ||
        meta_int_in(f, "n_embd", 1, cap, &c->n_embd, err, errlen) ||
        meta_int_in(f, "hidden_dim", 1, cap, &c->hidden_dim, err, errlen) ||
        meta_int_in(f, "block_size", 1, cap, &c->block_size, err, errlen) ||
        meta_int_in(f, "vocab_size", 1, cap, &c->vocab_size, err, errlen) ||
        meta_double_in(f, "rope_theta", 1.0000001, 1e12, &c->rope_theta, err, errlen) ||
        meta_double_in(f, "norm_eps", 1e-30, 1, &c->norm_eps, err, errlen) || meta_bool(f, "tied", &c->tied, err, errlen))
        return -1;
    const char *rope = tg_st_meta(f, "rope");
    if (rope && strcmp(rope, "interleaved") && strcmp(rope, "halves")) {
        snprintf(err, errlen, "checkpoint metadata 'rope' = '%s' is not interleaved or halves", rope);
        return -1;
    }
    c->rope_halves = rope && !strcmp(rope, "halves");
    c->bias = false;
    c->dropout = 0;
    return tg_st_meta(f, "dropout") ? meta_double_in(f, "dropout", 0, 0.999, &c->dropout, err, errlen) : 0;
}

const family FAMILY_LLAMA = {"llama", "tok_embeddings.weight", NULL, "output.weight", create, destroy, params, num_params, forward, loss,
                             set_composed, cache_enable, cache_clear, cache_len, record, read};
