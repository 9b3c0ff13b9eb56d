/* Linear (PyTorch F.linear): an affine map on the last axis, on the gemm
 * driver (ops/gemm.c: the tuned sgemm or OpenBLAS).
 *
 *   x (..., in), w (out, in), b (out) or none  ->  y (..., out)
 *
 * The leading dimensions of x are flattened: X is the (rows, in) matrix
 * over the same contiguous data (rows = numel / in), and Y (rows, out)
 * likewise, so every product below is one gemm:
 *
 *   Y  = X W^T + 1 b^T    (rows,in) x (in,out); b copied into each row of
 *                         Y first, then the gemm adds with beta = 1
 *   dX += dY W            (rows,out) x (out,in); stored with beta = 0
 *                         when dX is new (tg_grad_store: no zero-fill)
 *   dW += dY^T X          (out,rows) x (rows,in)
 *   db += 1^T dY          column sums of dY (out)
 *
 * W^T and dY^T are BLAS transpose flags, and the backward gemms run with
 * beta = 1 straight into the gradient buffers: nothing is copied. A 1-D x
 * (in) is one row and gives y (out).
 *
 * In f32 a forward of at most TG_GEMV_MAX_ROWS rows (decoding: one token
 * per sequence) is ops/gemv_f32.c's dot products instead, which read W
 * once where a gemm would pack it first (gemv_internal.h). */
#include "ops.h"

#include <limits.h>
#include <string.h>

#include "../core/op.h"
#include "gemm_internal.h"
#include "gemv_internal.h"

#define T float
#define KERNEL(name) name##_f32
#include "linear_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "linear_kernels.inc"

static void linear_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *w = nd->in[1], *b = nd->n_in > 2 ? nd->in[2] : NULL, *y = nd->out;
    const int out = w->shape[0], in = w->shape[1], rows = (int)(x->numel / in);
    /* dX is written in one gemm: stored into a new buffer (no zero-fill).
     * It runs before dW and db, so when x is also w or b their gradients
     * add to what it stored. */
    bool store = false;
    void *gx = tg_grad_store(g, x, &store);
    void *gw = tg_grad(g, w), *gb = b ? tg_grad(g, b) : NULL;
    if (y->dtype == TG_F32) backward_f32(rows, in, out, x->data, w->data, y->grad, gx, store, gw, gb);
    else backward_f64(rows, in, out, x->data, w->data, y->grad, gx, store, gw, gb);
}

/* The message for operands that do not fit (tg_linear's test failed). */
static tg_tensor *linear_fail(tg_graph *g, const tg_tensor *x, const tg_tensor *w, const tg_tensor *b)
{
    char sx[64], sw[64], sb[64];
    tg_shape_str(x, sx, sizeof sx);
    tg_shape_str(w, sw, sizeof sw);
    const char *dx = tg_dtype_name(x->dtype), *dw = tg_dtype_name(w->dtype);
    if (w->dtype != x->dtype)
        return tg_fail(g, "linear: x and w must have the same float dtype: x %s %s, w %s %s", dx, sx, dw, sw);
    if (b && b->dtype != x->dtype)
        return tg_fail(g, "linear: b must have x's dtype: x %s %s, b %s %s", dx, sx, tg_dtype_name(b->dtype),
                       tg_shape_str(b, sb, sizeof sb));
    if (x->ndim < 1) return tg_fail(g, "linear: x must have at least 1 dimension (..., in), got %s %s", dx, sx);
    if (w->ndim != 2) return tg_fail(g, "linear: w must be 2-D (out, in), got %s %s (x %s %s)", dw, sw, dx, sx);
    const int out = w->shape[0], nin = w->shape[1];
    if (x->shape[x->ndim - 1] != nin)
        return tg_fail(g, "linear: x's last dimension must equal w's in: x %s %s, w (out, in) %s %s", dx, sx, dw, sw);
    if (b && (b->ndim != 1 || b->shape[0] != out))
        return tg_fail(g, "linear: b must be (out) = (%d) for w %s %s, got %s %s", out, dw, sw, tg_dtype_name(b->dtype),
                       tg_shape_str(b, sb, sizeof sb));
    return tg_fail(g, "linear: x %s %s and w %s %s do not fit", dx, sx, dw, sw); /* not reached */
}

tg_tensor *tg_linear(tg_graph *g, tg_tensor *x, tg_tensor *w, tg_tensor *b)
{
    tg_tensor *in[3] = {x, w, b};
    const int n = b ? 3 : 2;
    if (!tg_op_begin(g, "linear", n, in) || !tg_op_check_float(g, "linear", "x", x)) return NULL;
    /* the checks in one test first: the shapes are written out only for a
     * message, not per call (decoding calls this 7 times per layer and token) */
    const bool fits = w->dtype == x->dtype && (!b || b->dtype == x->dtype) && x->ndim >= 1 && w->ndim == 2 &&
        x->shape[x->ndim - 1] == w->shape[1] && (!b || (b->ndim == 1 && b->shape[0] == w->shape[0]));
    if (!fits) return linear_fail(g, x, w, b);
    const int out = w->shape[0], nin = w->shape[1];
    const int64_t rows = x->numel / nin;
    if (rows > INT_MAX) {
        char sx[64];
        return tg_fail(g, "linear: x %s %s has %lld rows, more than BLAS's int", tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx), (long long)rows);
    }

    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = out;
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, shape); /* (..., out) */
    if (!y) return NULL;
    if (y->dtype == TG_F32 && rows <= TG_GEMV_MAX_ROWS) /* a token or a few: one pass over W */
        tg_gemv_f32((int)rows, out, nin, x->data, nin, w->data, b ? b->data : NULL, y->data, out);
    else if (y->dtype == TG_F32) forward_f32((int)rows, nin, out, x->data, w->data, b ? b->data : NULL, y->data);
    else forward_f64((int)rows, nin, out, x->data, w->data, b ? b->data : NULL, y->data);
    tg_op_record(g, "linear", linear_backward, y, n, in);
    return tg_graph_error(g) ? NULL : y;
}
