/* The graph: arena, tape, grad mode, errors, backward. */
#include "graph.h"

#include <math.h>
#include <string.h>

#include "alloc.h"
#include "graph_fields_internal.h"
#include "op_internal.h"
#include "stb_ds_internal.h"

tg_graph *tg_graph_new(void)
{
    tg_graph *g = tg_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->grad_enabled = true;
    g->training = true;
    g->heads[0].min_chunk = g->heads[1].min_chunk = TG_HEADS_CHUNK;
    tg_rng_seed(&g->rng, 0, 0);
    return g;
}

void tg_graph_free(tg_graph *g)
{
    if (!g) return;
    tg_arena_release(&g->arena);
    tg_arena_release(&g->heads[0]);
    tg_arena_release(&g->heads[1]);
    stbds_arrfree(g->tape);
    tg_free(g);
}

void tg_graph_reset(tg_graph *g)
{
    if (!g) return;
    tg_arena_clear(&g->arena);
    /* a new generation; its headers go where those of two resets ago were,
     * sized like the last generation's so that a step of the same shape
     * allocates nothing */
    g->gen++;
    tg_arena_clear_reserve(&g->heads[g->gen & 1], tg_arena_capacity_of(&g->heads[(g->gen + 1) & 1]));
    if (g->tape) stbds_arrdeln(g->tape, 0, stbds_arrlen(g->tape)); /* keeps capacity */
    g->has_error = false;
    g->error[0] = 0;
}

const char *tg_graph_error(const tg_graph *g) { return g && g->has_error ? g->error : NULL; }

void tg_graph_clear_error(tg_graph *g)
{
    if (!g) return;
    g->has_error = false;
    g->error[0] = 0;
}

bool tg_graph_set_grad_enabled(tg_graph *g, bool on)
{
    if (!g) return false;
    bool old = g->grad_enabled;
    g->grad_enabled = on;
    return old;
}

bool tg_graph_grad_enabled(const tg_graph *g) { return g && g->grad_enabled; }
void tg_graph_set_training(tg_graph *g, bool on)
{
    if (g) g->training = on;
}
bool tg_graph_training(const tg_graph *g) { return g && g->training; }
void tg_graph_seed(tg_graph *g, uint64_t seed)
{
    if (g) tg_rng_seed(&g->rng, seed, 0);
}
tg_rng *tg_graph_rng(tg_graph *g) { return g ? &g->rng : NULL; }

int tg_graph_tape_len(const tg_graph *g) { return g ? (int)stbds_arrlen(g->tape) : 0; }

const tg_node *tg_graph_node(const tg_graph *g, int i)
{
    return g && i >= 0 && i < (int)stbds_arrlen(g->tape) ? &g->tape[i] : NULL;
}

void tg_graph_set_backward_hook(tg_graph *g, tg_backward_hook fn, void *ctx)
{
    if (!g) return;
    g->hook = fn;
    g->hook_ctx = fn ? ctx : NULL;
}
size_t tg_graph_arena_capacity(const tg_graph *g) { return g ? tg_arena_capacity_of(&g->arena) : 0; }
size_t tg_graph_arena_used(const tg_graph *g) { return g ? tg_arena_used_of(&g->arena) : 0; }

/* ---- tensors made by the user -------------------------------------- */

tg_tensor *tg_tensor_new(tg_graph *g, tg_dtype dt, int ndim, const int *shape)
{
    if (!g || g->has_error) return NULL;
    tg_tensor *t = tg_op_output(g, dt, ndim, shape);
    if (t) memset(t->data, 0, (size_t)t->numel * tg_dtype_size(dt));
    return t;
}

tg_tensor *tg_tensor_from(tg_graph *g, tg_dtype dt, int ndim, const int *shape, const void *data)
{
    if (!g || g->has_error) return NULL;
    if (!data) return tg_fail(g, "tensor_from: data is NULL");
    tg_tensor *t = tg_op_output(g, dt, ndim, shape);
    if (t) memcpy(t->data, data, (size_t)t->numel * tg_dtype_size(dt));
    return t;
}

tg_tensor *tg_tensor_wrap(tg_graph *g, tg_dtype dt, int ndim, const int *shape, void *data)
{
    if (!g || g->has_error) return NULL;
    if (!data) return tg_fail(g, "tensor_wrap: data is NULL");
    tg_tensor *t = tg_leaf_header(g, "tensor_wrap", dt, ndim, shape);
    if (t) t->data = data;
    return t;
}

tg_tensor *tg_scalar(tg_graph *g, tg_dtype dt, double value)
{
    if (!g || g->has_error) return NULL;
    if (!tg_dtype_is_float(dt)) return tg_fail(g, "scalar: dtype must be f32 or f64, got %s", tg_dtype_name(dt));
    tg_tensor *t = tg_op_output(g, dt, 0, NULL);
    if (!t) return NULL;
    if (dt == TG_F32) *(float *)t->data = (float)value;
    else *(double *)t->data = value;
    return t;
}

int tg_tensor_set_requires_grad(tg_graph *g, tg_tensor *t, bool on)
{
    if (!g) return -1;
    if (!t) {
        tg_fail(g, "requires_grad: tensor is NULL");
        return -1;
    }
    if (tg_tensor_stale(t)) {
        tg_fail_stale(g, "requires_grad", -1, t);
        return -1;
    }
    char s[64];
    if (!on) {
        t->requires_grad = false;
        return 0;
    }
    if (!tg_dtype_is_float(t->dtype)) {
        tg_fail(g, "requires_grad: only f32/f64 tensors can require grad, got %s %s", tg_dtype_name(t->dtype),
                tg_shape_str(t, s, sizeof s));
        return -1;
    }
    if (!t->is_leaf) {
        tg_fail(g, "requires_grad: tensor %s was made by a recorded op; only leaves can be marked",
                tg_shape_str(t, s, sizeof s));
        return -1;
    }
    if (!t->grad) {
        /* the gradient lives as long as the tensor: in the arena that owns it */
        size_t bytes = (size_t)t->numel * tg_dtype_size(t->dtype);
        if (!t->graph) {
            tg_fail(g, "requires_grad: tensor %s belongs to no graph and has no gradient buffer",
                    tg_shape_str(t, s, sizeof s));
            return -1;
        }
        void *gr = tg_arena_take(&t->graph->arena, bytes);
        if (!gr) {
            tg_fail(g, "requires_grad: out of memory for %zu bytes", bytes);
            return -1;
        }
        memset(gr, 0, bytes);
        t->grad = gr;
    }
    t->requires_grad = true;
    return 0;
}

/* ---- backward ------------------------------------------------------ */

static int backward_from(tg_graph *g, tg_tensor *t, const void *seed)
{
    if (!g) return -1;
    if (g->has_error) return -1;
    char s[64];
    if (!t) {
        tg_fail(g, "backward: tensor is NULL");
        return -1;
    }
    if (tg_tensor_stale(t)) {
        tg_fail_stale(g, "backward", -1, t);
        return -1;
    }
    if (!tg_dtype_is_float(t->dtype)) {
        tg_fail(g, "backward: tensor must be f32 or f64, got %s %s", tg_dtype_name(t->dtype),
                tg_shape_str(t, s, sizeof s));
        return -1;
    }
    if (!seed && t->numel != 1) {
        tg_fail(g, "backward: loss must have one element, got %s; use tg_graph_backward_seeded",
                tg_shape_str(t, s, sizeof s));
        return -1;
    }
    if (!tg_needs_grad(g, t)) {
        tg_fail(g,
                "backward: tensor %s does not require grad (no recorded op reaches it, or grad "
                "mode was off)",
                tg_shape_str(t, s, sizeof s));
        return -1;
    }
    /* activation gradients start from zero on every backward */
    ptrdiff_t len = stbds_arrlen(g->tape);
    for (ptrdiff_t i = 0; i < len; i++) g->tape[i].out->grad = NULL;

    void *gt = tg_grad(g, t);
    if (!gt) return -1;
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == TG_F32) ((float *)gt)[i] += seed ? ((const float *)seed)[i] : 1.0f;
        else ((double *)gt)[i] += seed ? ((const double *)seed)[i] : 1.0;
    }
    g->in_backward = true;
    for (ptrdiff_t i = len - 1; i >= 0 && !g->has_error; i--) {
        tg_node *n = &g->tape[i];
        if (n->out->grad) n->backward(g, n);
        if (g->hook) g->hook(g->hook_ctx, g, (int)i); /* nodes i .. len-1 are done */
    }
    g->in_backward = false;
    return g->has_error ? -1 : 0;
}

int tg_graph_backward(tg_graph *g, tg_tensor *loss) { return backward_from(g, loss, NULL); }

int tg_graph_backward_seeded(tg_graph *g, tg_tensor *t, const void *seed)
{
    if (g && !g->has_error && !seed) {
        tg_fail(g, "backward: seed is NULL");
        return -1;
    }
    return backward_from(g, t, seed);
}
