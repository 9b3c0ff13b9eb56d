/* Reductions: sum and mean over one axis, or over all elements.
 *
 * Seen around the reduced axis, x is (outer, len, inner): outer the product
 * of the dimensions before the axis, inner of those after it. Reducing
 * everything is the case outer = inner = 1, len = numel.
 *
 *   sum   y[o,i] = sum_k x[o,k,i]              dx[o,k,i] += dy[o,i]
 *   mean  y[o,i] = (1/len) sum_k x[o,k,i]      dx[o,k,i] += dy[o,i] / len
 *
 * so y = s * sum_k x with s = 1 (sum) or 1/len (mean), and the backward
 * broadcasts dy back along the reduced axis, times s. Sums accumulate in
 * double even for f32 input. The output drops the axis, or keeps it with
 * size 1 (keepdim); either way its elements are laid out as (outer, inner).
 * Reducing a 1-D tensor without keepdim, or everything, gives a scalar
 * (ndim 0). */
#include "ops.h"

#include "../core/op.h"

#define T float
#define KERNEL(name) name##_f32
#include "reduce_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "reduce_kernels.inc"

/* outer, len, inner of x around axis; axis -1 means all elements. */
static void extents(const tg_tensor *x, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    *len = axis < 0 ? x->numel : x->shape[axis];
    if (axis < 0) return;
    for (int a = 0; a < axis; a++) *outer *= x->shape[a];
    for (int a = axis + 1; a < x->ndim; a++) *inner *= x->shape[a];
}

static void reduce_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    void *gx = tg_grad(g, x);
    if (!gx) return;
    int64_t outer, len, inner;
    extents(x, nd->iarg[0], &outer, &len, &inner);
    if (x->dtype == TG_F32) backward_f32(outer, len, inner, nd->darg[0], y->grad, gx);
    else backward_f64(outer, len, inner, nd->darg[0], y->grad, gx);
}

/* axis: as given by the user, or `all` for every element. */
static tg_tensor *reduce(tg_graph *g, const char *name, bool mean, tg_tensor *x, bool all, int axis, bool keepdim)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, name, 1, in) || !tg_op_check_float(g, name, "x", x)) return NULL;
    int ax = -1; /* -1: all */
    int ndim = 0, shape[TG_MAX_DIMS];
    if (!all) {
        ax = axis < 0 ? axis + x->ndim : axis;
        if (ax < 0 || ax >= x->ndim) {
            char sx[64];
            return tg_fail(g, "%s: axis %d out of range for x %s %s", name, axis, tg_dtype_name(x->dtype),
                           tg_shape_str(x, sx, sizeof sx));
        }
        for (int a = 0; a < x->ndim; a++)
            if (a != ax) shape[ndim++] = x->shape[a];
            else if (keepdim) shape[ndim++] = 1;
    }
    tg_tensor *y = tg_op_output(g, x->dtype, ndim, shape);
    if (!y) return NULL;
    int64_t outer, len, inner;
    extents(x, ax, &outer, &len, &inner);
    double s = mean ? 1.0 / (double)len : 1.0;
    double *acc = tg_arena_alloc(g, (size_t)inner * sizeof *acc);
    if (!acc) return NULL;
    if (x->dtype == TG_F32) forward_f32(outer, len, inner, s, x->data, y->data, acc);
    else forward_f64(outer, len, inner, s, x->data, y->data, acc);
    tg_node *nd = tg_op_record(g, name, reduce_backward, y, 1, in);
    if (nd) {
        nd->iarg[0] = ax;
        nd->darg[0] = s;
    }
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_sum(tg_graph *g, tg_tensor *x, int axis, bool keepdim)
{
    return reduce(g, "sum", false, x, false, axis, keepdim);
}
tg_tensor *tg_mean(tg_graph *g, tg_tensor *x, int axis, bool keepdim)
{
    return reduce(g, "mean", true, x, false, axis, keepdim);
}
tg_tensor *tg_sum_all(tg_graph *g, tg_tensor *x) { return reduce(g, "sum_all", false, x, true, 0, false); }
tg_tensor *tg_mean_all(tg_graph *g, tg_tensor *x) { return reduce(g, "mean_all", true, x, true, 0, false); }
