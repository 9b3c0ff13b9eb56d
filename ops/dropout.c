/* Dropout (inverted): zero each element with probability p and scale the
 * survivors so that the expectation is unchanged.
 *
 *   keep_i = 1 iff u_i >= p, u_i = tg_rng_uniform(graph's stream)
 *   y_i    = keep_i * x_i / (1 - p)          (p = 1: y = 0)
 *
 * Backward, with the keep mask saved (uint8, in the arena):
 *
 *   dx_i += keep_i * dy_i / (1 - p)
 *
 * The identity (x itself is returned and nothing is recorded) when p = 0,
 * in eval mode (tg_graph_training false) and when grad mode is off.
 * Draws come from the graph's seeded stream in element order, so the same
 * seed gives the same mask. */
#include "ops.h"

#include <math.h>

#include "../core/op.h"
#include "../core/rng.h"

#define T float
#define KERNEL(name) name##_f32
#include "dropout_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "dropout_kernels.inc"

static void dropout_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out; /* same shape */
    void *gx = tg_grad(g, x);
    if (!gx) return;
    const double q = 1.0 - nd->darg[0];
    if (y->dtype == TG_F32) backward_f32(x->numel, q, nd->saved, y->grad, gx);
    else backward_f64(x->numel, q, nd->saved, y->grad, gx);
}

tg_tensor *tg_dropout(tg_graph *g, tg_tensor *x, double p)
{
    if (!tg_op_begin(g, "dropout", 1, &x) || !tg_op_check_float(g, "dropout", "x", x)) return NULL;
    if (!(p >= 0 && p <= 1)) {
        char sx[64];
        return tg_fail(g, "dropout: p must be in [0, 1], got %g (x %s %s)", p, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    }
    if (p == 0 || !tg_graph_training(g) || !tg_graph_grad_enabled(g)) return x;

    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape); /* like x */
    uint8_t *keep = y ? tg_arena_alloc(g, (size_t)x->numel) : NULL; /* like x */
    if (!keep) return NULL;
    tg_rng *rng = tg_graph_rng(g);
    for (int64_t i = 0; i < x->numel; i++) keep[i] = tg_rng_uniform(rng) >= p;
    const double q = 1.0 - p; /* p = 1: every keep is 0, so q = 0 is never divided by */
    if (y->dtype == TG_F32) forward_f32(x->numel, q, keep, x->data, y->data);
    else forward_f64(x->numel, q, keep, x->data, y->data);
    tg_node *nd = tg_op_record(g, "dropout", dropout_backward, y, 1, &x);
    if (nd) {
        nd->saved = keep;
        nd->darg[0] = p;
    }
    return tg_graph_error(g) ? NULL : y;
}
