/* Helpers for writing ops: errors, outputs, recording, gradients,
 * broadcasting. */
#include "op.h"

#include <stdio.h>
#include <string.h>

#include "graph_fields_internal.h"
#include "op_internal.h"
#include "stb_ds_internal.h"

void *tg_fail(tg_graph *g, const char *fmt, ...)
{
    if (!g || g->has_error) return NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->error, sizeof g->error, fmt, ap);
    va_end(ap);
    g->has_error = true;
    return NULL;
}

bool tg_op_begin(tg_graph *g, const char *op, int n, tg_tensor *const *in)
{
    if (!g || g->has_error) return false;
    if (n > 0 && !in) {
        tg_fail(g, "%s: the array of %d inputs is NULL", op, n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!in[i]) {
            tg_fail(g, "%s: input %d is NULL", op, i);
            return false;
        }
        if (tg_tensor_stale(in[i])) return tg_fail_stale(g, op, i, in[i]);
    }
    return true;
}

bool tg_op_check_live(tg_graph *g, const char *op, int n, tg_tensor *const *in)
{
    if (!g || g->has_error || (n > 0 && !in)) return false;
    for (int i = 0; i < n; i++)
        if (in[i] && tg_tensor_stale(in[i])) return tg_fail_stale(g, op, i, in[i]);
    return true;
}

bool tg_fail_stale(tg_graph *g, const char *op, int i, const tg_tensor *t)
{
    char what[32] = "the tensor", s[64];
    if (i >= 0) snprintf(what, sizeof what, "input %d", i);
    tg_fail(g,
            "%s: %s (%s %s) was made before the last tg_graph_reset of %s (in generation %u; it is at %u "
            "now), so its memory belongs to newer tensors",
            op, what, tg_dtype_name(t->dtype), tg_shape_str(t, s, sizeof s),
            t->graph == g ? "this graph" : "its graph (not the graph of this op)", t->gen, t->graph->gen);
    return false;
}

bool tg_op_check_float(tg_graph *g, const char *op, const char *what, const tg_tensor *t)
{
    if (!t) {
        tg_fail(g, "%s: %s is NULL", op, what);
        return false;
    }
    if (tg_dtype_is_float(t->dtype)) return true;
    char s[64];
    tg_fail(g, "%s: %s must be f32 or f64, got %s %s", op, what, tg_dtype_name(t->dtype), tg_shape_str(t, s, sizeof s));
    return false;
}

bool tg_op_check_same_dtype(tg_graph *g, const char *op, const tg_tensor *a, const tg_tensor *b)
{
    if (!tg_op_check_float(g, op, "a", a) || !tg_op_check_float(g, op, "b", b)) return false;
    if (a->dtype == b->dtype) return true;
    char sa[64], sb[64];
    tg_fail(g, "%s: dtypes differ: a %s %s, b %s %s", op, tg_dtype_name(a->dtype), tg_shape_str(a, sa, sizeof sa),
            tg_dtype_name(b->dtype), tg_shape_str(b, sb, sizeof sb));
    return false;
}

bool tg_shape_set(tg_tensor *t, int ndim, const int *shape, const char **why)
{
    if (ndim < 0 || ndim > TG_MAX_DIMS) {
        *why = "ndim must be 0..4";
        return false;
    }
    if (ndim > 0 && !shape) {
        *why = "shape is NULL";
        return false;
    }
    int64_t numel = 1;
    for (int i = 0; i < TG_MAX_DIMS; i++) t->shape[i] = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1) {
            *why = "every dimension must be >= 1";
            return false;
        }
        if (shape[i] > TG_MAX_NUMEL / numel) {
            *why = "too many elements (over 2^40)";
            return false;
        }
        t->shape[i] = shape[i];
        numel *= shape[i];
    }
    t->ndim = ndim;
    t->numel = numel;
    return true;
}

void *tg_arena_alloc(tg_graph *g, size_t bytes)
{
    if (!g) return NULL;
    void *p = tg_arena_take(&g->arena, bytes);
    if (!p) tg_fail(g, "out of memory: the graph's arena could not grow by %zu bytes", bytes);
    return p;
}

void *tg_arena_zalloc(tg_graph *g, size_t bytes)
{
    void *p = tg_arena_alloc(g, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

tg_tensor *tg_tensor_header(tg_graph *g)
{
    tg_tensor *t = tg_arena_take(&g->heads[g->gen & 1], sizeof *t);
    if (!t) return tg_fail(g, "out of memory: no room for a tensor header");
    *t = (tg_tensor){.graph = g, .gen = g->gen};
    return t;
}

tg_tensor *tg_op_view(tg_graph *g, const tg_tensor *x)
{
    if (!g || !x) return NULL;
    tg_tensor *y = tg_tensor_header(g);
    if (!y) return NULL;
    y->dtype = x->dtype;
    y->ndim = x->ndim;
    memcpy(y->shape, x->shape, sizeof y->shape);
    y->numel = x->numel;
    y->data = x->data;
    y->is_leaf = true;
    return y;
}

tg_tensor *tg_leaf_header(tg_graph *g, const char *who, tg_dtype dt, int ndim, const int *shape)
{
    tg_tensor h = {0};
    const char *why = NULL;
    if (!tg_dtype_size(dt)) return tg_fail(g, "%s: unknown dtype %d", who, (int)dt);
    if (!tg_shape_set(&h, ndim, shape, &why)) {
        char s[80] = "(";
        for (int i = 0; i < ndim && i < TG_MAX_DIMS && shape; i++)
            snprintf(s + strlen(s), sizeof s - strlen(s), i ? ",%d" : "%d", shape[i]);
        return tg_fail(g, "%s: bad shape %s) with ndim %d: %s", who, s, ndim, why);
    }
    tg_tensor *t = tg_tensor_header(g);
    if (!t) return NULL;
    t->dtype = dt;
    t->ndim = h.ndim;
    memcpy(t->shape, h.shape, sizeof t->shape);
    t->numel = h.numel;
    t->is_leaf = true;
    return t;
}

tg_tensor *tg_op_output(tg_graph *g, tg_dtype dt, int ndim, const int *shape)
{
    if (!g) return NULL;
    tg_tensor *t = tg_leaf_header(g, "tensor", dt, ndim, shape);
    if (!t) return NULL;
    t->data = tg_arena_alloc(g, (size_t)t->numel * tg_dtype_size(dt));
    return t->data ? t : NULL;
}

bool tg_needs_grad(const tg_graph *g, const tg_tensor *t)
{
    return t && t->requires_grad && (t->is_leaf || t->graph == g);
}

tg_node *tg_op_record(tg_graph *g, const char *op, tg_backward_fn backward, tg_tensor *out, int n, tg_tensor *const *in)
{
    if (!g || g->has_error || !g->grad_enabled || g->in_backward || n < 1 || !in) return NULL;
    if (!out) return tg_fail(g, "%s: recording an op with a NULL output", op);
    bool any = false;
    for (int i = 0; i < n; i++) any |= tg_needs_grad(g, in[i]);
    if (!any) return NULL;
    if (!backward) return tg_fail(g, "%s: op has no backward, so it cannot be recorded", op);
    if (n > TG_MAX_INPUTS) return tg_fail(g, "%s: more than %d inputs", op, TG_MAX_INPUTS);
    tg_node node = {.op = op, .backward = backward, .out = out, .n_in = n};
    for (int i = 0; i < n; i++) node.in[i] = in[i];
    stbds_arrput(g->tape, node);
    out->requires_grad = true;
    out->is_leaf = false;
    return &g->tape[stbds_arrlen(g->tape) - 1];
}

void *tg_grad(tg_graph *g, tg_tensor *t)
{
    if (!tg_needs_grad(g, t)) return NULL;
    if (!t->grad) t->grad = tg_arena_zalloc(g, (size_t)t->numel * tg_dtype_size(t->dtype));
    return t->grad;
}

void *tg_grad_store(tg_graph *g, tg_tensor *t, bool *store)
{
    if (!store) return tg_grad(g, t); /* nobody to tell to store: zero-filled */
    *store = false;
    if (!tg_needs_grad(g, t)) return NULL;
    if (t->grad) return t->grad;
    t->grad = tg_arena_alloc(g, (size_t)t->numel * tg_dtype_size(t->dtype));
    *store = t->grad != NULL;
    return t->grad;
}

/* ---- broadcasting -------------------------------------------------- */

/* padded dims of t: t's shape right-aligned in TG_MAX_DIMS slots */
static void padded(const tg_tensor *t, int out[TG_MAX_DIMS])
{
    int off = TG_MAX_DIMS - t->ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) out[i] = i < off ? 1 : t->shape[i - off];
}

static void strides_for(const int dims[TG_MAX_DIMS], const int to[TG_MAX_DIMS], int64_t stride[TG_MAX_DIMS])
{
    int64_t s = 1;
    for (int i = TG_MAX_DIMS - 1; i >= 0; i--) {
        stride[i] = (dims[i] == 1 && to[i] != 1) ? 0 : s;
        s *= dims[i];
    }
}

bool tg_broadcast(const tg_tensor *a, const tg_tensor *b, tg_bcast *bc)
{
    if (!a || !b || !bc) return false;
    int da[TG_MAX_DIMS], db[TG_MAX_DIMS];
    padded(a, da);
    padded(b, db);
    bc->ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) {
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1) return false;
        bc->dim[i] = da[i] > db[i] ? da[i] : db[i];
    }
    for (int i = 0; i < TG_MAX_DIMS; i++) bc->shape[i] = 1;
    for (int i = 0; i < bc->ndim; i++) bc->shape[i] = bc->dim[TG_MAX_DIMS - bc->ndim + i];
    strides_for(da, bc->dim, bc->stride[0]);
    strides_for(db, bc->dim, bc->stride[1]);
    return true;
}

bool tg_broadcast_to(const tg_tensor *t, int ndim, const int *shape, int64_t stride[TG_MAX_DIMS])
{
    if (!t || !stride || ndim < 0 || ndim > TG_MAX_DIMS || (ndim > 0 && !shape) || t->ndim > ndim) return false;
    int dt[TG_MAX_DIMS], to[TG_MAX_DIMS];
    padded(t, dt);
    int off = TG_MAX_DIMS - ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) to[i] = i < off ? 1 : shape[i - off];
    for (int i = 0; i < TG_MAX_DIMS; i++)
        if (dt[i] != to[i] && dt[i] != 1) return false;
    strides_for(dt, to, stride);
    return true;
}
