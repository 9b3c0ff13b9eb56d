/* Shape ops: reshape (a view), transpose, permute, slice, split, concat.
 *
 * None of them does arithmetic: each output element is one input element,
 * so every backward routes dy back to where the element came from.
 *
 *   reshape    y = x with a new shape; y->data IS x->data (a view).
 *              Both are row-major with the same numel, so flat index i of
 *              y is flat index i of x:               dx[i] += dy[i]
 *   permute    y[i0,..,ik] = x[j] with j[perm[a]] = i[a]  (output axis a
 *              is input axis perm[a]); contiguous copy.
 *              Backward applies the inverse permutation: dx[j] += dy[i]
 *   transpose  permute with axes a0 and a1 swapped.
 *   slice      y[.., i, ..] = x[.., start + i, ..] along axis, i in
 *              [0, end - start).        dx[.., start + i, ..] += dy[.., i, ..]
 *              (the rest of dx gets nothing)
 *   split      n slices along axis at offsets 0, s0, s0+s1, ...; each piece
 *              is recorded as its own slice, so their backwards add their
 *              regions of dx independently.
 *   concat     y[.., o_k + i, ..] = x_k[.., i, ..] along axis, o_k the
 *              sum of the lengths of x_0..x_{k-1}.
 *              Backward slices dy back:    dx_k[.., i, ..] += dy[.., o_k + i, ..]
 *
 * One strided kernel (move) does every copy and every backward: it walks a
 * 4-D index space (the output's shape, left-padded with 1s) and moves the
 * element at src + sum(d_a * ss[a]) to dst + sum(d_a * ds[a]), as `=` in
 * the forward or `+=` in the backward. The backward of a copy is the same
 * walk with source and destination strides swapped. */
#include "ops.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../core/op.h"

/* ---- the strided move -------------------------------------------------- */

typedef struct walk {
    int dim[TG_MAX_DIMS]; /* index space, left-padded with 1 */
    int64_t ss[TG_MAX_DIMS]; /* source strides (elements) */
    int64_t ds[TG_MAX_DIMS]; /* destination strides (elements) */
} walk;

/* Row-major strides of a tensor; entries past ndim are 0. */
static void strides_of(const tg_tensor *t, int64_t st[TG_MAX_DIMS])
{
    int64_t s = 1;
    for (int a = TG_MAX_DIMS - 1; a >= 0; a--) {
        st[a] = a < t->ndim ? s : 0;
        if (a < t->ndim) s *= t->shape[a];
    }
}

/* A walk over `dim` (ndim entries) with the given strides per axis. */
static walk make_walk(int ndim, const int *dim, const int64_t *ss, const int64_t *ds)
{
    walk w;
    int off = TG_MAX_DIMS - ndim;
    for (int a = 0; a < TG_MAX_DIMS; a++) {
        w.dim[a] = a < off ? 1 : dim[a - off];
        w.ss[a] = a < off ? 0 : ss[a - off];
        w.ds[a] = a < off ? 0 : ds[a - off];
    }
    return w;
}

static walk swapped(walk w)
{
    for (int a = 0; a < TG_MAX_DIMS; a++) {
        int64_t t = w.ss[a];
        w.ss[a] = w.ds[a];
        w.ds[a] = t;
    }
    return w;
}

/* A slice of a tensor, or a piece of a concat: `part` has `whole`'s shape
 * but along `axis`, where it covers whole's [at, at + its length). The
 * walk goes over part's index space from part to whole; *off is where
 * part starts in whole (elements). */
static walk piece_walk(const tg_tensor *part, const tg_tensor *whole, int axis, int64_t at, int64_t *off)
{
    int64_t ps[TG_MAX_DIMS], ws[TG_MAX_DIMS];
    strides_of(part, ps);
    strides_of(whole, ws);
    *off = at * ws[axis];
    return make_walk(part->ndim, part->shape, ps, ws);
}

#define T float
#define KERNEL(name) name##_f32
#include "shape_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "shape_kernels.inc"
#define T int32_t
#define KERNEL(name) name##_i32
#include "shape_kernels.inc"
#define T uint8_t
#define KERNEL(name) name##_bool
#include "shape_kernels.inc"

/* Moves along w from src + soff to dst + doff (offsets in elements of dt);
 * add: dst += src (only used for float gradients). */
static void move(tg_dtype dt, const walk *w, const void *src, int64_t soff, void *dst, int64_t doff, bool add)
{
    switch (dt) {
    case TG_F32: move_f32(w, (const float *)src + soff, (float *)dst + doff, add); break;
    case TG_F64: move_f64(w, (const double *)src + soff, (double *)dst + doff, add); break;
    case TG_I32: move_i32(w, (const int32_t *)src + soff, (int32_t *)dst + doff, add); break;
    case TG_BOOL: move_bool(w, (const uint8_t *)src + soff, (uint8_t *)dst + doff, add); break;
    }
}

/* ---- helpers --------------------------------------------------------- */

/* Normalises a possibly negative axis; false when out of range. */
static bool norm_axis(int *axis, int ndim)
{
    if (*axis < -ndim || *axis >= ndim) return false;
    if (*axis < 0) *axis += ndim;
    return true;
}

/* "(2,-1,3)" for a requested shape that is not a tensor yet. */
static char *dims_str(int ndim, const int *dims, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && dims && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ",%d" : "%d", dims[i]);
    if (at < size) snprintf(buf + at, size - at, ")");
    return buf;
}

/* ---- reshape ----------------------------------------------------------- */

static void reshape_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    void *gx = tg_grad(g, x);
    if (!gx) return;
    int64_t st[TG_MAX_DIMS];
    strides_of(x, st);
    walk w = make_walk(x->ndim, x->shape, st, st); /* flat index i to flat index i */
    move(x->dtype, &w, y->grad, 0, gx, 0, true);
}

tg_tensor *tg_reshape(tg_graph *g, tg_tensor *x, int ndim, const int *shape)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "reshape", 1, in)) return NULL;
    char sx[64], ss[80];
    if (ndim < 0 || ndim > TG_MAX_DIMS)
        return tg_fail(g, "reshape: ndim must be 0..%d, got %d (x %s %s)", TG_MAX_DIMS, ndim, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    if (ndim > 0 && !shape) return tg_fail(g, "reshape: shape is NULL with ndim %d", ndim);
    int dims[TG_MAX_DIMS] = {1, 1, 1, 1};
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        dims[i] = shape[i];
        if (shape[i] == -1 && infer < 0) infer = i;
        else if (shape[i] < 1)
            return tg_fail(g,
                           "reshape: bad target shape %s for x %s %s: each entry must be >= 1, "
                           "or -1 (once) to infer it",
                           dims_str(ndim, shape, ss, sizeof ss), tg_dtype_name(x->dtype),
                           tg_shape_str(x, sx, sizeof sx));
    }
    /* the product of the given entries, stopping once it exceeds numel */
    int64_t known = 1;
    bool ok = true;
    for (int i = 0; i < ndim && ok; i++) {
        if (i == infer) continue;
        ok = shape[i] <= x->numel / known;
        known *= ok ? shape[i] : 1;
    }
    if (ok && infer >= 0) {
        ok = x->numel % known == 0 && x->numel / known <= INT_MAX;
        if (ok) dims[infer] = (int)(x->numel / known);
    } else if (ok) {
        ok = known == x->numel;
    }
    if (!ok)
        return tg_fail(g, "reshape: cannot reshape x %s %s (%lld elements) into %s", tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx), (long long)x->numel, dims_str(ndim, shape, ss, sizeof ss));

    tg_tensor *y = tg_op_view(g, x); /* same dtype, numel and data */
    if (!y) return NULL;
    y->ndim = ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) y->shape[i] = dims[i];
    tg_op_record(g, "reshape", reshape_backward, y, 1, in);
    return tg_graph_error(g) ? NULL : y;
}

/* ---- permute / transpose ------------------------------------------------ */

/* The walk over y's index space reading x: output axis a is x's axis perm[a]. */
static walk permute_walk(const tg_tensor *x, const tg_tensor *y, const int *perm)
{
    int64_t xs[TG_MAX_DIMS], ys[TG_MAX_DIMS], ss[TG_MAX_DIMS];
    strides_of(x, xs);
    strides_of(y, ys);
    for (int a = 0; a < x->ndim; a++) ss[a] = xs[perm[a]];
    return make_walk(y->ndim, y->shape, ss, ys);
}

static void permute_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    void *gx = tg_grad(g, x);
    if (!gx) return;
    walk w = swapped(permute_walk(x, y, nd->iarg)); /* the inverse permutation */
    move(x->dtype, &w, y->grad, 0, gx, 0, true);
}

/* perm: x->ndim normalised axes forming a permutation. */
static tg_tensor *permute_run(tg_graph *g, const char *name, tg_tensor *x, const int *perm)
{
    int shape[TG_MAX_DIMS];
    for (int a = 0; a < x->ndim; a++) shape[a] = x->shape[perm[a]];
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, shape);
    if (!y) return NULL;
    walk w = permute_walk(x, y, perm);
    move(x->dtype, &w, x->data, 0, y->data, 0, false);
    tg_tensor *in[1] = {x};
    tg_node *nd = tg_op_record(g, name, permute_backward, y, 1, in);
    if (nd)
        for (int a = 0; a < x->ndim; a++) nd->iarg[a] = perm[a];
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_permute(tg_graph *g, tg_tensor *x, const int *perm)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "permute", 1, in)) return NULL;
    if (!perm && x->ndim > 0) return tg_fail(g, "permute: perm is NULL");
    char sx[64], sp[80];
    int p[TG_MAX_DIMS];
    bool seen[TG_MAX_DIMS] = {false};
    for (int a = 0; a < x->ndim; a++) {
        p[a] = perm[a];
        if (!norm_axis(&p[a], x->ndim) || seen[p[a]])
            return tg_fail(g, "permute: perm %s is not a permutation of the %d axes of x %s %s",
                           dims_str(x->ndim, perm, sp, sizeof sp), x->ndim, tg_dtype_name(x->dtype),
                           tg_shape_str(x, sx, sizeof sx));
        seen[p[a]] = true;
    }
    return permute_run(g, "permute", x, p);
}

tg_tensor *tg_transpose(tg_graph *g, tg_tensor *x, int axis0, int axis1)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "transpose", 1, in)) return NULL;
    int a0 = axis0, a1 = axis1;
    if (!norm_axis(&a0, x->ndim) || !norm_axis(&a1, x->ndim)) {
        char sx[64];
        return tg_fail(g, "transpose: axes (%d, %d) out of range for x %s %s", axis0, axis1, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    }
    int p[TG_MAX_DIMS];
    for (int a = 0; a < x->ndim; a++) p[a] = a;
    p[a0] = a1;
    p[a1] = a0;
    return permute_run(g, "transpose", x, p);
}

/* ---- slice / split -------------------------------------------------------- */

static void slice_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    void *gx = tg_grad(g, x);
    if (!gx) return;
    int64_t xoff;
    walk w = piece_walk(y, x, nd->iarg[0], nd->iarg[1], &xoff); /* dy into dx */
    move(x->dtype, &w, y->grad, 0, gx, xoff, true);
}

tg_tensor *tg_slice(tg_graph *g, tg_tensor *x, int axis, int start, int end)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "slice", 1, in)) return NULL;
    char sx[64];
    int ax = axis;
    if (!norm_axis(&ax, x->ndim))
        return tg_fail(g, "slice: axis %d out of range for x %s %s", axis, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    if (start < 0 || start >= end || end > x->shape[ax])
        return tg_fail(g,
                       "slice: range [%d, %d) is not within axis %d of length %d of x %s %s "
                       "(need 0 <= start < end <= length)",
                       start, end, axis, x->shape[ax], tg_dtype_name(x->dtype), tg_shape_str(x, sx, sizeof sx));
    int shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[ax] = end - start;
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, shape);
    if (!y) return NULL;
    int64_t xoff;
    walk w = swapped(piece_walk(y, x, ax, start, &xoff)); /* x into y */
    move(x->dtype, &w, x->data, xoff, y->data, 0, false);
    tg_node *nd = tg_op_record(g, "slice", slice_backward, y, 1, in);
    if (nd) {
        nd->iarg[0] = ax;
        nd->iarg[1] = start;
    }
    return tg_graph_error(g) ? NULL : y;
}

int tg_split(tg_graph *g, tg_tensor *x, int axis, int n, const int *sizes, tg_tensor **out)
{
    if (out)
        for (int i = 0; i < n; i++) out[i] = NULL;
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "split", 1, in)) return -1;
    char sx[64], ss[160];
    if (!out) {
        tg_fail(g, "split: out is NULL");
        return -1;
    }
    if (n < 1 || !sizes) {
        tg_fail(g, "split: need n >= 1 sizes, got n %d%s", n, sizes ? "" : " and sizes NULL");
        return -1;
    }
    int ax = axis;
    if (!norm_axis(&ax, x->ndim)) {
        tg_fail(g, "split: axis %d out of range for x %s %s", axis, tg_dtype_name(x->dtype),
                tg_shape_str(x, sx, sizeof sx));
        return -1;
    }
    int64_t total = 0;
    bool positive = true;
    for (int i = 0; i < n; i++) {
        positive &= sizes[i] >= 1;
        total += sizes[i];
    }
    if (!positive || total != x->shape[ax]) {
        /* the sizes as text, shortened if there are many */
        size_t at = (size_t)snprintf(ss, sizeof ss, "(");
        for (int i = 0; i < n && at < sizeof ss - 8; i++)
            at += (size_t)snprintf(ss + at, sizeof ss - at, i ? ",%d" : "%d", sizes[i]);
        snprintf(ss + at, sizeof ss - at, at < sizeof ss - 8 ? ")" : ",...)");
        tg_fail(g, "split: sizes %s must be >= 1 and sum to the length %d of axis %d of x %s %s (they sum to %lld)", ss,
                x->shape[ax], axis, tg_dtype_name(x->dtype), tg_shape_str(x, sx, sizeof sx), (long long)total);
        return -1;
    }
    for (int i = 0, at = 0; i < n; at += sizes[i], i++) {
        out[i] = tg_slice(g, x, ax, at, at + sizes[i]);
        if (!out[i]) {
            for (int k = 0; k < n; k++) out[k] = NULL;
            return -1;
        }
    }
    return 0;
}

/* ---- concat ------------------------------------------------------------- */

static void concat_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *y = nd->out;
    int axis = nd->iarg[0];
    for (int k = 0, at = 0; k < nd->n_in; at += nd->in[k]->shape[axis], k++) {
        void *gx = tg_grad(g, nd->in[k]);
        if (!gx) continue;
        int64_t yoff;
        walk w = swapped(piece_walk(nd->in[k], y, axis, at, &yoff)); /* dy into dx_k */
        move(y->dtype, &w, y->grad, yoff, gx, 0, true);
    }
}

/* n <= TG_MAX_INPUTS checked inputs: one copy, one node. */
static tg_tensor *concat_run(tg_graph *g, int n, tg_tensor *const *xs, int axis)
{
    int shape[TG_MAX_DIMS];
    memcpy(shape, xs[0]->shape, sizeof shape);
    shape[axis] = 0;
    for (int k = 0; k < n; k++) shape[axis] += xs[k]->shape[axis];
    tg_tensor *y = tg_op_output(g, xs[0]->dtype, xs[0]->ndim, shape);
    if (!y) return NULL;
    for (int k = 0, at = 0; k < n; at += xs[k]->shape[axis], k++) {
        int64_t yoff;
        walk w = piece_walk(xs[k], y, axis, at, &yoff); /* x_k into y */
        move(y->dtype, &w, xs[k]->data, 0, y->data, yoff, false);
    }
    tg_node *nd = tg_op_record(g, "concat", concat_backward, y, n, xs);
    if (nd) nd->iarg[0] = axis;
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_concat(tg_graph *g, int n, tg_tensor *const *xs, int axis)
{
    if (!g || tg_graph_error(g)) return NULL;
    if (n < 1 || !xs) return tg_fail(g, "concat: need n >= 1 tensors, got n %d%s", n, xs ? "" : " and xs NULL");
    if (!tg_op_begin(g, "concat", n, xs)) return NULL;
    const tg_tensor *x0 = xs[0];
    char s0[64], sk[64];
    int ax = axis;
    if (!norm_axis(&ax, x0->ndim))
        return tg_fail(g, "concat: axis %d out of range for input 0 %s %s", axis, tg_dtype_name(x0->dtype),
                       tg_shape_str(x0, s0, sizeof s0));
    int64_t len = 0;
    for (int k = 0; k < n; k++) {
        const tg_tensor *x = xs[k];
        bool fits = x->dtype == x0->dtype && x->ndim == x0->ndim;
        for (int a = 0; fits && a < x0->ndim; a++) fits = a == ax || x->shape[a] == x0->shape[a];
        if (!fits)
            return tg_fail(g,
                           "concat: input %d %s %s does not match input 0 %s %s (same dtype and "
                           "dimensions except axis %d needed)",
                           k, tg_dtype_name(x->dtype), tg_shape_str(x, sk, sizeof sk), tg_dtype_name(x0->dtype),
                           tg_shape_str(x0, s0, sizeof s0), axis);
        len += x->shape[ax];
    }
    if (len > INT_MAX)
        return tg_fail(g, "concat: axis %d would have %lld entries, more than an int holds", axis, (long long)len);

    /* A node holds at most TG_MAX_INPUTS inputs: join longer lists in
     * steps, each step taking the previous result and up to 3 more. */
    int m = n < TG_MAX_INPUTS ? n : TG_MAX_INPUTS;
    tg_tensor *y = concat_run(g, m, xs, ax);
    for (int k = m; k < n && y; k += TG_MAX_INPUTS - 1) {
        tg_tensor *part[TG_MAX_INPUTS] = {y};
        int step = n - k < TG_MAX_INPUTS - 1 ? n - k : TG_MAX_INPUTS - 1;
        for (int i = 0; i < step; i++) part[1 + i] = xs[k + i];
        y = concat_run(g, 1 + step, part, ax);
    }
    return y;
}
