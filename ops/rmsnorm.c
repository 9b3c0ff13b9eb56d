/* RMS normalisation over the last axis (Llama's norm: no mean, no bias).
 *
 * For each row x (C elements) of x (..., C):
 *
 *   rstd = 1 / sqrt(sum_j x_j^2 / C + eps)
 *   y    = x * rstd * w                       (w = 1 when NULL)
 *
 * rstd is computed in double for f32 too and saved per row for backward.
 *
 * Backward, per row, with g = dy * w: rstd depends on every x_k,
 * d rstd / d x_k = -rstd^3 x_k / C, so
 *
 *   dx_k = rstd * (g_k - x_k * rstd^2 * sum_j g_j x_j / C)
 *   dw  += sum over rows of dy * x * rstd
 *
 * Rows are shared out among threads; each part sums its rows' dw in
 * double, and the parts' sums are added in part order (the same order for
 * a given thread count), rounded to the dtype once.
 *
 * f32 on the avx512 kernel path runs ops/rmsnorm_avx512.c's rows, the
 * same arithmetic as rmsnorm_kernels.inc with the same bits, summing 8
 * rows side by side. */
#include "ops.h"

#include <math.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

#define K(name) name##_f32
#define T float
#include "rmsnorm_kernels.inc"
#undef T
#undef K
#define K(name) name##_f64
#define T double
#include "rmsnorm_kernels.inc"
#undef T
#undef K

typedef struct rms_job {
    tg_dtype dt;
    int C;
    double eps;
    const void *x, *w, *dy;
    void *y, *gx;
    bool store; /* gx is new: written, not added to */
    double *pgw; /* (parts, C) zeroed per-part dw sums, or NULL */
    double *rstd; /* (rows); NULL in a forward that records nothing */
} rms_job;

#define RMS_GRAIN 16384 /* elements per thread, at least */

static void rms_part(void *ctx, int64_t lo, int64_t hi)
{
    const rms_job *j = ctx;
    const int C = j->C;
    const size_t es = tg_dtype_size(j->dt), o = (size_t)lo * C * es;
    const char *x = (const char *)j->x + o;
    double *rstd = j->rstd ? j->rstd + lo : NULL;
    if (!j->dy) {
        if (j->dt == TG_F32) {
            float *y = (float *)((char *)j->y + o);
            if (!tg_rmsnorm_forward_avx512(hi - lo, C, (const float *)x, j->w, j->eps, y, rstd))
                rms_forward_f32(hi - lo, C, (const float *)x, j->w, j->eps, y, rstd);
        } else rms_forward_f64(hi - lo, C, (const double *)x, j->w, j->eps, (double *)((char *)j->y + o), rstd);
        return;
    }
    const char *dy = (const char *)j->dy + o;
    char *gx = j->gx ? (char *)j->gx + o : NULL;
    double *gw = j->pgw ? j->pgw + (size_t)tg_parallel_part() * C : NULL;
    if (j->dt == TG_F32) {
        if (!tg_rmsnorm_backward_avx512(hi - lo, C, (const float *)x, j->w, (const float *)dy, rstd, (float *)gx,
                                        j->store, gw))
            rms_backward_f32(hi - lo, C, (const float *)x, j->w, (const float *)dy, rstd, (float *)gx, j->store, gw);
    } else rms_backward_f64(hi - lo, C, (const double *)x, j->w, (const double *)dy, rstd, (double *)gx, j->store, gw);
}

static void rmsnorm_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *w = nd->in[1], *y = nd->out; /* x, y (..., C); w (C) or NULL */
    const int C = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / C;
    const int nt = tg_parallel_parts(rows, 1 + RMS_GRAIN / C);
    void *gw = tg_grad(g, w);
    bool store;
    rms_job j = {.dt = y->dtype,
                 .C = C,
                 .x = x->data,
                 .w = w ? w->data : NULL,
                 .dy = y->grad,
                 .rstd = nd->saved,
                 .gx = tg_grad_store(g, x, &store),
                 .pgw = gw ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(double)) : NULL}; /* (parts, C) */
    j.store = store;
    if (tg_graph_error(g) || (!j.gx && !gw)) return;
    tg_parallel_for(rows, 1 + RMS_GRAIN / C, rms_part, &j);
    for (int i = 0; gw && i < C; i++) {
        double s = 0;
        for (int p = 0; p < nt; p++) s += j.pgw[(size_t)p * C + i];
        if (y->dtype == TG_F32) ((float *)gw)[i] += (float)s;
        else ((double *)gw)[i] += s;
    }
}

tg_tensor *tg_rmsnorm(tg_graph *g, tg_tensor *x, tg_tensor *w, double eps)
{
    tg_tensor *in[2] = {x, w}; /* w may be NULL by design */
    if (!tg_op_begin(g, "rmsnorm", 1, in) || !tg_op_check_live(g, "rmsnorm", 2, in) ||
        !tg_op_check_float(g, "rmsnorm", "x", x))
        return NULL;
    /* x's shape is written into a message only when one is needed */
    char sx[64], sw[64];
    if (x->ndim < 1)
        return tg_fail(g, "rmsnorm: x must have at least 1 dimension, got %s %s", tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    const int C = x->shape[x->ndim - 1];
    if (w && (!tg_op_check_same_dtype(g, "rmsnorm", x, w) || w->ndim != 1 || w->shape[0] != C))
        return tg_graph_error(g)
            ? NULL
            : tg_fail(g, "rmsnorm: w must have shape (C) = (%d) for x %s %s, got %s %s", C, tg_dtype_name(x->dtype),
                      tg_shape_str(x, sx, sizeof sx), tg_dtype_name(w->dtype), tg_shape_str(w, sw, sizeof sw));
    if (!(eps > 0) || !isfinite(eps))
        return tg_fail(g, "rmsnorm: eps must be > 0 and finite, got %g (x %s %s)", eps, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    const int64_t rows = x->numel / C;
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape); /* (..., C) */
    if (!y) return NULL;
    double *rstd = NULL;
    tg_node *nd = tg_op_record(g, "rmsnorm", rmsnorm_backward, y, 2, in);
    if (nd) {
        nd->darg[0] = eps;
        rstd = nd->saved = tg_arena_alloc(g, (size_t)rows * sizeof(double)); /* (rows) */
    }
    if (tg_graph_error(g)) return NULL;
    rms_job j = {.dt = y->dtype, .C = C, .eps = eps, .x = x->data, .w = w ? w->data : NULL, .y = y->data, .rstd = rstd};
    tg_parallel_for(rows, 1 + RMS_GRAIN / C, rms_part, &j);
    return y;
}
