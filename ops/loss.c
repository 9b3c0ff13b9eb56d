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
 * is -inf. */
#include <math.h>
#include <stdio.h>

#include "ops.h"

#include "../core/op.h"

enum { CE_OK, CE_BAD_LOGIT, CE_DEAD_ROW };

#define DEFINE_CE(T, EXP, LOG)                                                                  \
    /* Fills lse[r] for counted rows and returns CE_OK with the summed loss in *total, or an    \
     * error kind with the element / row in *where. */                                         \
    static int forward_##T(const T *x, const int32_t *t, int64_t rows, int v, T *lse,           \
                           double *total, int64_t *where)                                       \
    {                                                                                           \
        double acc = 0;                                                                         \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            if (t[r] == -1) continue;                                                           \
            const T *px = x + r * v;                                                            \
            T mx = -INFINITY;                                                                   \
            for (int j = 0; j < v; j++) {                                                       \
                if (isnan(px[j]) || px[j] == INFINITY) { *where = r * v + j; return CE_BAD_LOGIT; } \
                if (px[j] > mx) mx = px[j];                                                     \
            }                                                                                   \
            if (mx == -INFINITY) { *where = r; return CE_DEAD_ROW; }                            \
            T sum = 0;                                                                          \
            for (int j = 0; j < v; j++) sum += EXP(px[j] - mx);                                 \
            lse[r] = mx + LOG(sum);                                                             \
            acc += (double)(lse[r] - px[t[r]]);                                                 \
        }                                                                                       \
        *total = acc;                                                                           \
        return CE_OK;                                                                           \
    }                                                                                           \
    static void backward_##T(const T *x, const int32_t *t, int64_t rows, int v, const T *lse,   \
                             T scale, T *dx)                                                    \
    {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            if (t[r] == -1) continue;                                                           \
            const T *px = x + r * v;                                                            \
            T *pd = dx + r * v;                                                                 \
            for (int j = 0; j < v; j++) pd[j] += scale * EXP(px[j] - lse[r]);                   \
            pd[t[r]] -= scale;                                                                  \
        }                                                                                       \
    }

DEFINE_CE(float, expf, logf)
DEFINE_CE(double, exp, log)

/* in[0] logits, in[1] targets; saved: lse per row; darg[0]: counted rows. */
static void cross_entropy_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *t = nd->in[1], *y = nd->out;
    void *gx = tg_grad(g, x);
    if (!gx) return;
    const int v = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / v;
    if (x->dtype == TG_F32)
        backward_float(x->data, t->data, rows, v, nd->saved, (float)(((float *)y->grad)[0] / nd->darg[0]), gx);
    else
        backward_double(x->data, t->data, rows, v, nd->saved, ((double *)y->grad)[0] / nd->darg[0], gx);
}

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
        return tg_fail(g, "%s: targets' shape must be logits' shape without the last axis: logits %s %s, "
                          "targets %s %s", name, dx, sx, dt, st);

    const int v = logits->shape[logits->ndim - 1];
    const int64_t rows = targets->numel;
    const int32_t *t = targets->data;
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (t[r] == -1) continue;
        if (t[r] < -1 || t[r] >= v)
            return tg_fail(g, "%s: target %d at position %lld (index %s) is outside [0, %d) and is not -1 "
                              "(ignore): logits %s %s, targets %s %s",
                           name, (int)t[r], (long long)r, tg_index_str(targets, targets->ndim, r, si, sizeof si), v,
                           dx, sx, dt, st);
        count++;
    }
    if (!count)
        return tg_fail(g, "%s: every target is -1 (ignored), so there is nothing to average: logits %s %s, "
                          "targets %s %s", name, dx, sx, dt, st);

    tg_tensor *y = tg_op_output(g, logits->dtype, 0, NULL);
    void *lse = tg_arena_alloc(g, (size_t)rows * tg_dtype_size(logits->dtype));
    if (!y || !lse) return NULL;
    double total = 0;
    int64_t where = 0;
    int status = logits->dtype == TG_F32 ? forward_float(logits->data, t, rows, v, lse, &total, &where)
                                         : forward_double(logits->data, t, rows, v, lse, &total, &where);
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
