/* SiLU and the SwiGLU product of a gated MLP (Llama's feed-forward).
 *
 *   silu(x)      = x s(x),           s(x) = 1 / (1 + e^-x)   (the sigmoid)
 *   swiglu(a, b) = silu(a) * b       (elementwise; a = x W1^T, b = x W3^T)
 *
 * Backward, with s' = s (1 - s):
 *
 *   silu'(x) = s + x s (1 - s) = s (1 + x (1 - s))
 *   swiglu:  da += dy * b * silu'(a),   db += dy * silu(a)
 *
 * The sigmoid is computed from e = e^-|x| <= 1, which never overflows:
 * s = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0. f32 takes e from
 * the call-free tg_fexp (ops/fastmath_internal.h), so its loops vectorise;
 * f64 from libm. Fused into one op, swiglu keeps no silu(a) tensor: its
 * backward recomputes s from a. */
#include "ops.h"

#include <math.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "fastmath_internal.h"

/* ---- reference (f64): the formulas as written above ----------------------- */

static double sigmoid_f64(double x)
{
    const double e = exp(-fabs(x));
    return x >= 0 ? 1 / (1 + e) : e / (1 + e);
}

/* y = silu(a) (b NULL) or silu(a) * b */
static void forward_f64(int64_t n, const double *a, const double *b, double *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * sigmoid_f64(a[i]) * (b ? b[i] : 1);
}

/* da (+)= dy * b * silu'(a), db (+)= dy * silu(a); b, da or db may be NULL */
static void backward_f64(int64_t n, const double *a, const double *b, const double *dy, double *da, bool da_add,
                         double *db, bool db_add)
{
    for (int64_t i = 0; i < n; i++) {
        const double s = sigmoid_f64(a[i]), gb = b ? b[i] : 1;
        if (da) da[i] = (da_add ? da[i] : 0) + dy[i] * gb * s * (1 + a[i] * (1 - s));
        if (db) db[i] = (db_add ? db[i] : 0) + dy[i] * a[i] * s;
    }
}

/* ---- f32: the same with the call-free exp, vectorised ---------------------- */

static inline float sigmoid_f32(float x)
{
    const float e = tg_fexp(-fabsf(x));
    return tg_fsel(x >= 0, 1.0f, e) / (1.0f + e);
}

TG_KERNEL_BODY void forward_f32_body(int64_t n, const float *restrict a, const float *restrict b, float *restrict y)
{
    if (b)
        for (int64_t i = 0; i < n; i++) y[i] = a[i] * sigmoid_f32(a[i]) * b[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = a[i] * sigmoid_f32(a[i]);
}
TG_ISA_CLONES_VOID(forward_f32, (int64_t n, const float *restrict a, const float *restrict b, float *restrict y),
                   (n, a, b, y))

/* One pass of the backward; inlined with every flag a constant, so that
 * each case is a loop without branches, which vectorises. */
static inline __attribute__((always_inline)) void backward_pass_f32(int64_t n, const float *restrict a,
                                                                    const float *restrict b, const float *restrict dy,
                                                                    float *restrict da, bool da_add, float *restrict db,
                                                                    bool db_add)
{
    for (int64_t i = 0; i < n; i++) {
        const float s = sigmoid_f32(a[i]), gb = b ? b[i] : 1.0f;
        if (da) da[i] = (da_add ? da[i] : 0.0f) + dy[i] * gb * s * (1.0f + a[i] * (1.0f - s));
        if (db) db[i] = (db_add ? db[i] : 0.0f) + dy[i] * a[i] * s;
    }
}

TG_KERNEL_BODY void backward_f32_body(int64_t n, const float *restrict a, const float *restrict b,
                                      const float *restrict dy, float *restrict da, bool da_add, float *restrict db,
                                      bool db_add)
{
    if (da && db) { /* swiglu: both gradients in one pass */
        if (da_add && db_add) backward_pass_f32(n, a, b, dy, da, true, db, true);
        else if (da_add) backward_pass_f32(n, a, b, dy, da, true, db, false);
        else if (db_add) backward_pass_f32(n, a, b, dy, da, false, db, true);
        else backward_pass_f32(n, a, b, dy, da, false, db, false);
    } else if (da && b) {
        if (da_add) backward_pass_f32(n, a, b, dy, da, true, NULL, false);
        else backward_pass_f32(n, a, b, dy, da, false, NULL, false);
    } else if (da) { /* silu */
        if (da_add) backward_pass_f32(n, a, NULL, dy, da, true, NULL, false);
        else backward_pass_f32(n, a, NULL, dy, da, false, NULL, false);
    } else if (db) {
        if (db_add) backward_pass_f32(n, a, NULL, dy, NULL, false, db, true);
        else backward_pass_f32(n, a, NULL, dy, NULL, false, db, false);
    }
}
TG_ISA_CLONES_VOID(backward_f32,
                   (int64_t n, const float *restrict a, const float *restrict b, const float *restrict dy,
                    float *restrict da, bool da_add, float *restrict db, bool db_add),
                   (n, a, b, dy, da, da_add, db, db_add))

/* ---- threads and recording ------------------------------------------------- */

typedef struct silu_job {
    tg_dtype dt;
    const void *a, *b, *dy;
    void *y, *da, *db; /* y forward; da, db backward (either may be NULL) */
    bool da_add, db_add;
} silu_job;

#define SILU_GRAIN 16384 /* elements per thread, at least */

static void silu_part(void *ctx, int64_t lo, int64_t hi)
{
    const silu_job *j = ctx;
    const int64_t n = hi - lo;
    if (j->dt == TG_F32) {
        const float *a = (const float *)j->a + lo, *b = j->b ? (const float *)j->b + lo : NULL;
        if (!j->dy) forward_f32(n, a, b, (float *)j->y + lo);
        else
            backward_f32(n, a, b, (const float *)j->dy + lo, j->da ? (float *)j->da + lo : NULL, j->da_add,
                         j->db ? (float *)j->db + lo : NULL, j->db_add);
    } else {
        const double *a = (const double *)j->a + lo, *b = j->b ? (const double *)j->b + lo : NULL;
        if (!j->dy) forward_f64(n, a, b, (double *)j->y + lo);
        else
            backward_f64(n, a, b, (const double *)j->dy + lo, j->da ? (double *)j->da + lo : NULL, j->da_add,
                         j->db ? (double *)j->db + lo : NULL, j->db_add);
    }
}

static void silu_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *a = nd->in[0], *b = nd->n_in > 1 ? nd->in[1] : NULL, *y = nd->out;
    bool store_a = false, store_b = false;
    silu_job j = {.dt = y->dtype, .a = a->data, .b = b ? b->data : NULL, .dy = y->grad};
    /* a and b may be one tensor (swiglu(x, x)): then both add into one gradient */
    j.da = a == b ? tg_grad(g, a) : tg_grad_store(g, a, &store_a);
    j.db = b ? (a == b ? NULL : tg_grad_store(g, b, &store_b)) : NULL;
    j.da_add = !store_a;
    j.db_add = !store_b;
    if (tg_graph_error(g) || (!j.da && !j.db)) return;
    tg_parallel_for(a->numel, SILU_GRAIN, silu_part, &j);
    if (a == b && j.da) { /* the db part of x * silu(x)'s derivative: dy * silu(x), added */
        silu_job k = {.dt = y->dtype, .a = a->data, .dy = y->grad, .db = j.da, .db_add = true};
        tg_parallel_for(a->numel, SILU_GRAIN, silu_part, &k);
    }
}

static tg_tensor *silu_op(tg_graph *g, const char *op, tg_tensor *a, tg_tensor *b)
{
    tg_tensor *in[2] = {a, b};
    const int n = b ? 2 : 1;
    if (!tg_op_begin(g, op, n, in) || !tg_op_check_float(g, op, b ? "a" : "x", a)) return NULL;
    if (b && (!tg_op_check_same_dtype(g, op, a, b))) return NULL;
    if (b && !tg_tensor_same_shape(a, b)) {
        char sa[64], sb[64];
        return tg_fail(g, "%s: a and b must have the same shape, got a %s %s, b %s %s", op, tg_dtype_name(a->dtype),
                       tg_shape_str(a, sa, sizeof sa), tg_dtype_name(b->dtype), tg_shape_str(b, sb, sizeof sb));
    }
    tg_tensor *y = tg_op_output(g, a->dtype, a->ndim, a->shape);
    if (!y) return NULL;
    silu_job j = {.dt = a->dtype, .a = a->data, .b = b ? b->data : NULL, .y = y->data};
    tg_parallel_for(a->numel, SILU_GRAIN, silu_part, &j);
    tg_op_record(g, op, silu_backward, y, n, in);
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_silu(tg_graph *g, tg_tensor *x) { return silu_op(g, "silu", x, NULL); }
tg_tensor *tg_swiglu(tg_graph *g, tg_tensor *a, tg_tensor *b)
{
    if (!b) { /* a NULL b is an error here, not silu */
        tg_tensor *in[2] = {a, b};
        tg_op_begin(g, "swiglu", 2, in);
        return NULL;
    }
    return silu_op(g, "swiglu", a, b);
}
