/* What the language models share (lm_internal.h). */
#include "lm_internal.h"

#include <stdio.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/op.h"

bool tg_lm_check_idx(tg_graph *g, const char *who, const tg_tensor *idx, int V, int block_size,
                     const tg_kv_cache *cache)
{
    char s[64]; /* idx's shape, written only for a message (not per decoded token) */
    if (idx->dtype != TG_I32 || idx->ndim != 2)
        return tg_fail(g, "%s: idx must be i32 (B,T), got %s %s", who, tg_dtype_name(idx->dtype),
                       tg_shape_str(idx, s, sizeof s)) != NULL;
    const int B = idx->shape[0], T = idx->shape[1];
    const int p = cache ? cache->len : 0; /* positions already cached */
    if (p + T > block_size)
        return tg_fail(g, "%s: idx i32 %s: T = %d with %d cached positions exceeds block_size %d", who,
                       tg_shape_str(idx, s, sizeof s), T, p, block_size) != NULL;
    if (cache && cache->batch != B)
        return tg_fail(g, "%s: idx i32 %s has batch %d, but the KV cache was enabled for batch %d", who,
                       tg_shape_str(idx, s, sizeof s), B, cache->batch) != NULL;
    for (int64_t i = 0; i < idx->numel; i++) {
        const int32_t id = ((const int32_t *)idx->data)[i];
        if (id < 0 || id >= V)
            return tg_fail(g, "%s: idx i32 %s: token id %d at flat position %lld is outside [0, %d)", who,
                           tg_shape_str(idx, s, sizeof s), (int)id, (long long)i, V) != NULL;
    }
    return true;
}

bool tg_lm_check_targets(tg_graph *g, const char *who, const tg_tensor *idx, const tg_tensor *targets)
{
    if (targets->dtype == TG_I32 && targets->ndim == idx->ndim && targets->shape[0] == idx->shape[0] &&
        targets->shape[1] == idx->shape[1])
        return true;
    char st[64], si[64];
    tg_fail(g, "%s_loss: targets must be i32 shaped like idx: targets %s %s, idx %s %s", who,
            tg_dtype_name(targets->dtype), tg_shape_str(targets, st, sizeof st), tg_dtype_name(idx->dtype),
            tg_shape_str(idx, si, sizeof si));
    return false;
}

tg_kv_cache *tg_lm_caches_new(int n_layer, tg_dtype dt, int batch, int n_kv_head, int head_dim, int max_len,
                              const char *who, tg_error *err)
{
    if (batch < 1) {
        tg_error_set(err, "%s_cache_enable: batch must be >= 1, got %d", who, batch);
        return NULL;
    }
    tg_kv_cache *c = tg_calloc((size_t)n_layer, sizeof *c);
    if (!c) {
        tg_error_set(err, "%s_cache_enable: out of memory", who);
        return NULL;
    }
    for (int i = 0; i < n_layer; i++)
        if (tg_kv_cache_init(&c[i], dt, batch, n_kv_head, head_dim, max_len, err)) {
            tg_lm_caches_free(c, n_layer);
            return NULL;
        }
    return c;
}

void tg_lm_caches_free(tg_kv_cache *c, int n_layer)
{
    if (!c) return;
    for (int i = 0; i < n_layer; i++) tg_kv_cache_release(&c[i]);
    tg_free(c);
}

void tg_lm_caches_clear(tg_kv_cache *c, int n_layer)
{
    for (int i = 0; c && i < n_layer; i++) tg_kv_cache_clear(&c[i]);
}

tg_tensor *tg_lm_forward_failed(tg_kv_cache *c, tg_tensor **attn_weights, int n_layer, int len0)
{
    for (int i = 0; c && i < n_layer; i++) c[i].len = len0;
    for (int i = 0; attn_weights && i < n_layer; i++) attn_weights[i] = NULL;
    return NULL;
}
