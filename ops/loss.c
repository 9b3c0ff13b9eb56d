/* Cross-entropy of logits against integer targets.
 *
 * logits x (..., V), one row x_r of V scores per target t_r (targets i32,
 * shape (...)). A target of -1 is ignored; C is the set of counted rows
 * (t_r != -1), N = |C| >= 1. Per counted row, with m_r = max_j x_rj and
 * lse_r = m_r + log(sum_j exp(x_rj - m_r))  (= log sum_j exp(x_rj),
 * computed without overflow):
 *
 *   loss = (1/N) sum_{r in C} -log softmax(x_r)[t_r]
 *        = (1/N) sum_{r in C} (lse_r - x_r,t_r)
 *
 * Backward, with dL the upstream gradient of the scalar loss and
 * p_rj = softmax(x_r)_j = exp(x_rj - lse_r):
 *
 *   dx_rj = dL / N * (p_rj - [j == t_r])   for r in C
 *   dx_rj = 0                              for ignored rows
 *
 * The forward is one fused loop (no graph of softmax/log/gather ops); it
 * keeps lse_r per row, so backward rebuilds p from the logits with one exp
 * per element. Non-finite logits in a counted row: NaN or +inf is an error
 * naming the element; -inf is allowed (probability 0) unless the whole row
 * is -inf.
 *
 * Rows are shared out among threads (the loss is summed per thread, then
 * in thread order); the f32 kernels (ops/loss_f32.c) use the call-free exp
 * of fastmath_internal.h. */
#include "ops.h"

#include <math.h>
#include <stdio.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

/* ---- the op ----------------------------------------------------------- */

/* Rows shared out among threads; each part sums its rows' losses and keeps
 * its first error, in part (= row) order. */
typedef struct ce_job {
    tg_dtype dt;
    const void *x;
    const int32_t *t;
    int v;
    void *lse, *dx;
    bool store; /* dx is new: write it instead of adding */
    double scale;
    int *status;
    double *totals;
    int64_t *where;
} ce_job;

#define CE_GRAIN 16384 /* logits per thread, at least */

static void ce_part(void *ctx, int64_t lo, int64_t hi);
static void cross_entropy_backward(tg_graph *g, tg_node *nd);

tg_tensor *tg_cross_entropy(tg_graph *g, tg_tensor *logits, tg_tensor *targets)
{
    const char *name = "cross_entropy";
    tg_tensor *in[2] = {logits, targets};
    if (!tg_op_begin(g, name, 2, in) || !tg_op_check_float(g, name, "logits", logits)) return NULL;
    char sx[64], st[64], si[64];
    const char *dx = tg_dtype_name(logits->dtype), *dt = tg_dtype_name(targets->dtype);
    tg_shape_str(logits, sx, sizeof sx);
    tg_shape_str(targets, st, sizeof st);
    if (logits->ndim < 1) return tg_fail(g, "%s: logits must have at least one axis, got %s %s", name, dx, sx);
    if (targets->dtype != TG_I32)
        return tg_fail(g, "%s: targets must be i32, got %s %s, for logits %s %s", name, dt, st, dx, sx);
    bool shape_ok = targets->ndim == logits->ndim - 1;
    for (int i = 0; shape_ok && i < targets->ndim; i++) shape_ok = targets->shape[i] == logits->shape[i];
    if (!shape_ok)
        return tg_fail(g,
                       "%s: targets' shape must be logits' shape without the last axis: logits %s %s, "
                       "targets %s %s",
                       name, dx, sx, dt, st);

    const int v = logits->shape[logits->ndim - 1];
    const int64_t rows = targets->numel;
    const int32_t *t = targets->data;
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (t[r] == -1) continue;
        if (t[r] < -1 || t[r] >= v)
            return tg_fail(g,
                           "%s: target %d at position %lld (index %s) is outside [0, %d) and is not -1 "
                           "(ignore): logits %s %s, targets %s %s",
                           name, (int)t[r], (long long)r, tg_index_str(targets, targets->ndim, r, si, sizeof si), v, dx,
                           sx, dt, st);
        count++;
    }
    if (!count)
        return tg_fail(g,
                       "%s: every target is -1 (ignored), so there is nothing to average: logits %s %s, "
                       "targets %s %s",
                       name, dx, sx, dt, st);

    tg_tensor *y = tg_op_output(g, logits->dtype, 0, NULL);
    void *lse = tg_arena_alloc(g, (size_t)rows * tg_dtype_size(logits->dtype));
    if (!y || !lse) return NULL;
    const int nt = tg_parallel_parts(rows, 1 + CE_GRAIN / v);
    ce_job j = {.dt = logits->dtype,
                .x = logits->data,
                .t = t,
                .v = v,
                .lse = lse,
                .status = tg_arena_zalloc(g, (size_t)nt * sizeof(int)), /* (parts) CE_OK */
                .totals = tg_arena_zalloc(g, (size_t)nt * sizeof(double)), /* (parts) */
                .where = tg_arena_zalloc(g, (size_t)nt * sizeof(int64_t))}; /* (parts) */
    if (tg_graph_error(g)) return NULL;
    tg_parallel_for(rows, 1 + CE_GRAIN / v, ce_part, &j);
    double total = 0;
    int64_t where = 0;
    int status = CE_OK;
    for (int i = 0; i < nt && status == CE_OK; i++) status = j.status[i], where = j.where[i];
    for (int i = 0; i < nt; i++) total += j.totals[i];
    if (status == CE_BAD_LOGIT) {
        double x = tg_tensor_get(logits, where);
        return tg_fail(g, "%s: logit %s at element %lld (index %s) of logits %s %s (a counted row)", name,
                       isnan(x) ? "NaN" : "+inf", (long long)where,
                       tg_index_str(logits, logits->ndim, where, si, sizeof si), dx, sx);
    }
    if (status == CE_DEAD_ROW)
        return tg_fail(g, "%s: every logit of row %lld (index %s) of logits %s %s is -inf", name, (long long)where,
                       tg_index_str(logits, logits->ndim - 1, where, si, sizeof si), dx, sx);
    if (y->dtype == TG_F32) ((float *)y->data)[0] = (float)(total / (double)count);
    else ((double *)y->data)[0] = total / (double)count;

    tg_node *nd = tg_op_record(g, name, cross_entropy_backward, y, 2, in);
    if (nd) {
        nd->saved = lse;
        nd->darg[0] = (double)count;
    }
    return tg_graph_error(g) ? NULL : y;
}

/* ---- the reference kernels (f64) -------------------------------------- */

/* Rows [lo, hi) of logits x (rows, v) against targets t: lse_r of each
 * counted row into lse, the sum of their losses lse_r - x_r,t_r into
 * *total. Returns CE_OK, or an error kind with the element / row in
 * *where. */
int tg_cross_entropy_forward_f64(const double *x, const int32_t *t, int64_t lo, int64_t hi, int v, double *lse,
                                 double *total, int64_t *where)
{
    double sum_loss = 0;
    for (int64_t r = lo; r < hi; r++) {
        if (t[r] == -1) continue;
        const double *xr = x + r * v;
        double m = -INFINITY; /* m_r = max_j x_rj */
        for (int j = 0; j < v; j++) {
            if (isnan(xr[j]) || xr[j] == INFINITY) {
                *where = r * v + j;
                return CE_BAD_LOGIT;
            }
            m = xr[j] > m ? xr[j] : m;
        }
        if (m == -INFINITY) {
            *where = r;
            return CE_DEAD_ROW;
        }
        double sum = 0; /* sum_j exp(x_rj - m_r) */
        for (int j = 0; j < v; j++) sum += exp(xr[j] - m);
        lse[r] = m + log(sum);
        sum_loss += lse[r] - xr[t[r]];
    }
    *total = sum_loss;
    return CE_OK;
}

/* dx_rj = scale (p_rj - [j == t_r]), p_rj = exp(x_rj - lse_r), scale =
 * dL / N, for the counted rows of [lo, hi); stored when store (ignored rows
 * as 0), else added (ignored rows left alone). */
void tg_cross_entropy_backward_f64(const double *x, const int32_t *t, int64_t lo, int64_t hi, int v, const double *lse,
                                   double scale, double *dx, bool store)
{
    for (int64_t r = lo; r < hi; r++) {
        double *dr = dx + r * v;
        if (t[r] == -1) {
            if (store)
                for (int j = 0; j < v; j++) dr[j] = 0;
            continue;
        }
        const double *xr = x + r * v;
        for (int j = 0; j < v; j++) {
            const double p = exp(xr[j] - lse[r]);
            dr[j] = store ? scale * p : dr[j] + scale * p;
        }
        dr[t[r]] -= scale;
    }
}

/* ---- backward, and the rows shared out among threads ------------------ */

/* in[0] logits, in[1] targets; saved: lse per row; darg[0]: counted rows. */
static void cross_entropy_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *t = nd->in[1], *y = nd->out;
    bool store;
    void *gx = tg_grad_store(g, x, &store);
    if (!gx) return;
    const int v = x->shape[x->ndim - 1];
    const double dl = x->dtype == TG_F32 ? ((float *)y->grad)[0] : ((double *)y->grad)[0];
    ce_job j = {.dt = x->dtype,
                .x = x->data,
                .t = t->data,
                .v = v,
                .lse = nd->saved,
                .dx = gx,
                .store = store,
                .scale = dl / nd->darg[0]};
    tg_parallel_for(x->numel / v, 1 + CE_GRAIN / v, ce_part, &j);
}

static void ce_part(void *ctx, int64_t lo, int64_t hi)
{
    const ce_job *j = ctx;
    const int part = tg_parallel_part();
    if (j->dx && j->dt == TG_F32)
        tg_cross_entropy_backward_f32(j->x, j->t, lo, hi, j->v, j->lse, (float)j->scale, j->dx, j->store);
    else if (j->dx) tg_cross_entropy_backward_f64(j->x, j->t, lo, hi, j->v, j->lse, j->scale, j->dx, j->store);
    else if (j->dt == TG_F32)
        j->status[part] =
            tg_cross_entropy_forward_f32(j->x, j->t, lo, hi, j->v, j->lse, &j->totals[part], &j->where[part]);
    else
        j->status[part] =
            tg_cross_entropy_forward_f64(j->x, j->t, lo, hi, j->v, j->lse, &j->totals[part], &j->where[part]);
}
