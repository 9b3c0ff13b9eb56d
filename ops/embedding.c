/* Embedding: a gather of rows of a weight matrix by integer ids.
 *
 *   weight (V,C), ids (...) i32 with 0 <= id < V
 *   y[i, :] = weight[ids[i], :]               y (ids..., C)
 *
 * Backward is the matching scatter-add: for every position i
 *
 *   dweight[ids[i], :] += dy[i, :]
 *
 * so a row used k times receives the sum of its k output gradients.
 * ids never get a gradient (they are integers). */
#include "ops.h"

#include <stdio.h>
#include <string.h>

#include "../core/op.h"

#define T float
#define KERNEL(name) name##_f32
#include "embedding_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "embedding_kernels.inc"

static void embedding_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *w = nd->in[0], *y = nd->out; /* w (V,C), y (ids..., C) */
    const int32_t *ids = nd->saved; /* (ids...), copied at forward */
    const int C = w->shape[1];
    const int64_t n = y->numel / C;
    void *gw = tg_grad(g, w);
    if (!gw) return;
    if (y->dtype == TG_F32) backward_f32(n, C, ids, y->grad, gw);
    else backward_f64(n, C, ids, y->grad, gw);
}

tg_tensor *tg_embedding(tg_graph *g, tg_tensor *weight, tg_tensor *ids)
{
    tg_tensor *in[2] = {weight, ids};
    if (!tg_op_begin(g, "embedding", 2, in) || !tg_op_check_float(g, "embedding", "weight", weight)) return NULL;
    /* the shapes are written only for a message (decoding calls this per token) */
    char sw[64], si[64];
#define W_SHAPE tg_dtype_name(weight->dtype), tg_shape_str(weight, sw, sizeof sw)
#define I_SHAPE tg_dtype_name(ids->dtype), tg_shape_str(ids, si, sizeof si)
    if (weight->ndim != 2)
        return tg_fail(g, "embedding: weight must be 2-D (V,C), got %s %s (ids %s %s)", W_SHAPE, I_SHAPE);
    if (ids->dtype != TG_I32)
        return tg_fail(g, "embedding: ids must be i32, got %s %s (weight %s %s)", I_SHAPE, W_SHAPE);
    if (ids->ndim > 3)
        return tg_fail(g, "embedding: ids may have at most 3 dimensions, got %s %s (weight %s %s)", I_SHAPE, W_SHAPE);
    const int V = weight->shape[0], C = weight->shape[1];
    const int32_t *id = ids->data; /* (ids...) */
    for (int64_t i = 0; i < ids->numel; i++) {
        if (id[i] >= 0 && id[i] < V) continue;
        char pos[64];
        tg_index_str(ids, ids->ndim, i, pos, sizeof pos); /* e.g. (1,0) */
        return tg_fail(g,
                       "embedding: id %d at position %s (flat %lld) of ids %s %s is outside [0, V) with V = %d "
                       "(weight %s %s)",
                       (int)id[i], pos, (long long)i, I_SHAPE, V, W_SHAPE);
    }
#undef W_SHAPE
#undef I_SHAPE

    int shape[TG_MAX_DIMS];
    for (int d = 0; d < ids->ndim; d++) shape[d] = ids->shape[d];
    shape[ids->ndim] = C;
    tg_tensor *y = tg_op_output(g, weight->dtype, ids->ndim + 1, shape); /* (ids..., C) */
    if (!y) return NULL;
    if (y->dtype == TG_F32) forward_f32(ids->numel, C, id, weight->data, y->data);
    else forward_f64(ids->numel, C, id, weight->data, y->data);
    tg_node *nd = tg_op_record(g, "embedding", embedding_backward, y, 2, in);
    if (nd) {
        /* a private copy: the caller may refill ids (a batch buffer) before backward */
        int32_t *copy = tg_arena_alloc(g, (size_t)ids->numel * sizeof *copy);
        if (copy) memcpy(copy, id, (size_t)ids->numel * sizeof *copy);
        nd->saved = copy;
    }
    return tg_graph_error(g) ? NULL : y;
}
