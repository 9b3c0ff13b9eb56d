/* The GPT family (nn/gpt.c) behind tiny_gpt's model interface. Its
 * checkpoint keys: n_layer, n_head, n_embd, block_size, vocab_size, bias,
 * dropout (a file may lack dropout: 0). */
#include <stdio.h>

#include "model.h"

static tg_gpt_config gpt_config(const model_config *c)
{
    return (tg_gpt_config){c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, c->bias, c->dropout, false};
}

static void *create(const model_config *c, tg_dtype dt, uint64_t seed, char *err, size_t errlen)
{
    const tg_gpt_config g = gpt_config(c);
    return tg_gpt_new(&g, dt, seed, err, errlen);
}
static void destroy(void *m) { tg_gpt_free(m); }
static tg_params *params(void *m) { return ((tg_gpt *)m)->params; }
static int64_t num_params(const model_config *c)
{
    const tg_gpt_config g = gpt_config(c);
    return tg_gpt_num_params(&g);
}
static tg_tensor *forward(tg_graph *g, void *m, tg_tensor *idx, tg_tensor **w) { return tg_gpt_forward_ex(g, m, idx, w); }
static tg_tensor *loss(tg_graph *g, void *m, tg_tensor *idx, tg_tensor *t) { return tg_gpt_loss(g, m, idx, t); }
static void set_composed(void *m, bool c) { tg_gpt_set_attn_composed(m, c); }
static int cache_enable(void *m, int b, char *err, size_t errlen) { return tg_gpt_cache_enable(m, b, err, errlen); }
static void cache_clear(void *m) { tg_gpt_cache_clear(m); }
static int cache_len(const void *m) { return ((const tg_gpt *)m)->cache ? ((const tg_gpt *)m)->cache[0].len : 0; }

static int record(const model_config *c, kv_list *l)
{
    char v[5][16], dr[40];
    const int n[5] = {c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size};
    const char *k[5] = {"n_layer", "n_head", "n_embd", "block_size", "vocab_size"};
    for (int i = 0; i < 5; i++) {
        snprintf(v[i], sizeof v[i], "%d", n[i]);
        if (kv_add(l, k[i], v[i])) return -1;
    }
    snprintf(dr, sizeof dr, "%.17g", c->dropout);
    return kv_add(l, "bias", c->bias ? "true" : "false") || kv_add(l, "dropout", dr);
}

static int read(const tg_st_file *f, model_config *c, char *err, size_t errlen)
{
    const int cap = 1 << 24;
    if (meta_int_in(f, "n_layer", 1, cap, &c->n_layer, err, errlen) ||
        meta_int_in(f, "n_head", 1, cap, &c->n_head, err, errlen) ||
        meta_int_in(f, "n_embd", 1, cap, &c->n_embd, err, errlen) ||
        meta_int_in(f, "block_size", 1, cap, &c->block_size, err, errlen) ||
        meta_int_in(f, "vocab_size", 1, cap, &c->vocab_size, err, errlen) || meta_bool(f, "bias", &c->bias, err, errlen))
        return -1;
    c->dropout = 0;
    c->tied = true;
    return tg_st_meta(f, "dropout") ? meta_double_in(f, "dropout", 0, 0.999, &c->dropout, err, errlen) : 0;
}

const family FAMILY_GPT = {"gpt", "transformer.wte.weight", "transformer.wpe.weight", "lm_head.weight", create, destroy, params, num_params, forward, loss,
                           set_composed, cache_enable, cache_clear, cache_len, record, read};
