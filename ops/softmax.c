/* Softmax and log-softmax over the last axis, with an optional mask.
 *
 * A row is the last axis of x: s_1..s_n. The mask (TG_BOOL, broadcast to
 * x, true = blocked) and scores equal to -inf mark blocked keys; a blocked
 * score is taken as -inf BEFORE the softmax (never zeroed after it), so
 * with A the allowed keys of the row and m = max_{k in A} s_k:
 *
 *   softmax      p_j = exp(s_j - m) / sum_{k in A} exp(s_k - m)   (j in A)
 *                p_j = 0                                          (blocked)
 *   log_softmax  y_j = (s_j - m) - log(sum_{k in A} exp(s_k - m)) (j in A)
 *                y_j = -inf                                       (blocked)
 *
 * Subtracting m changes nothing mathematically and keeps exp from
 * overflowing: [1000,1000] -> [0.5,0.5].
 *
 * Backward (per row; the n x n Jacobian dp_j/ds_k = p_j (delta_jk - p_k)
 * is never built, only its product with the upstream gradient):
 *
 *   softmax      ds_j = p_j * (dp_j - sum_k p_k dp_k)
 *   log_softmax  ds_j = dy_j - p_j * sum_{k in A} dy_k,   p_j = exp(y_j)
 *
 * Blocked keys get ds_j = 0 exactly: for softmax p_j = 0 there (the kernel
 * skips p_j == 0 so that even an infinite dp_j cannot leak in), and for
 * log_softmax dy_j at a blocked key (where y_j = -inf) is left out of the
 * row sum and gets no gradient. So backward needs only the output: p for
 * softmax, y for log_softmax (blocked <=> y_j == -inf; an allowed key whose
 * y_j underflows to -inf, which needs scores spread beyond the dtype's
 * range, has weight exactly 0 and is treated the same way).
 *
 * Errors: a row whose keys are all blocked (the message names the row)
 * has no normaliser; it is an error unless TG_SOFTMAX_ZERO_BLOCKED_ROWS is
 * set, in which case the row's output is all zeros and its gradient zero.
 * A NaN or +inf score at an allowed key is an error naming the element.
 * Scores at blocked keys are never read, so they may hold anything.
 *
 * f32 runs its own row kernels (ops/softmax_f32.c), vectorised with a
 * call-free exp, which clamps its argument: an unmasked -inf score gets
 * weight exp(-87) / S there (about 1e-38), not 0. */
#include "ops.h"

#include <math.h>
#include <stdio.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

/* ---- the op ----------------------------------------------------------- */

/* Rows of one softmax pass, shared out among threads. */
typedef struct softmax_job {
    tg_dtype dt;
    bool log_out, zero_rows;
    int n; /* row length */
    const int *dim; /* padded shape of x */
    const uint8_t *m; /* mask or NULL */
    const int64_t *ms; /* its strides */
    const void *x, *dy;
    void *y, *dx; /* y: forward; dx: backward (with y = the saved output) */
    bool store; /* backward: dx is new, written instead of added to */
    uint8_t *rowmask; /* f32 forward: n bytes per part, zero-filled */
    int *status; /* forward: per part */
    int64_t *where;
} softmax_job;

#define SOFTMAX_GRAIN 16384 /* elements per thread, at least */

static void softmax_part(void *ctx, int64_t lo, int64_t hi);
static void softmax_node_backward(tg_graph *g, tg_node *nd);

static tg_tensor *softmax_common(tg_graph *g, const char *name, tg_tensor *x, tg_tensor *mask, int flags, bool log_out)
{
    tg_tensor *in[2] = {x, mask};
    if (!tg_op_begin(g, name, mask ? 2 : 1, in) || !tg_op_check_float(g, name, "x", x)) return NULL;
    char sx[64], sm[64], si[64];
    const char *dx = tg_dtype_name(x->dtype);
    tg_shape_str(x, sx, sizeof sx);
    if (x->ndim < 1) return tg_fail(g, "%s: x must have at least one axis, got %s %s", name, dx, sx);
    if (flags & ~TG_SOFTMAX_ZERO_BLOCKED_ROWS)
        return tg_fail(g, "%s: unknown flags 0x%x for x %s %s", name, (unsigned)flags, dx, sx);

    int64_t ms[TG_MAX_DIMS] = {0};
    if (mask) {
        tg_shape_str(mask, sm, sizeof sm);
        if (mask->dtype != TG_BOOL)
            return tg_fail(g, "%s: mask must be bool, got %s %s, for x %s %s", name, tg_dtype_name(mask->dtype), sm, dx,
                           sx);
        if (!tg_broadcast_to(mask, x->ndim, x->shape, ms))
            return tg_fail(g, "%s: mask bool %s does not broadcast to x %s %s", name, sm, dx, sx);
    }
    int dim[TG_MAX_DIMS]; /* x's shape padded on the left with 1 */
    const int off = TG_MAX_DIMS - x->ndim;
    for (int i = 0; i < TG_MAX_DIMS; i++) dim[i] = i < off ? 1 : x->shape[i - off];

    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    /* each part stops at its first bad row; parts run in row order, so the
     * first part that failed holds the first bad row */
    const int64_t rows = x->numel / dim[3], grain = 1 + SOFTMAX_GRAIN / dim[3];
    const int nt = tg_parallel_parts(rows, grain);
    int *status = tg_arena_zalloc(g, (size_t)nt * sizeof *status); /* (parts) SCORES_OK */
    int64_t *wheres = tg_arena_zalloc(g, (size_t)nt * sizeof *wheres); /* (parts) */
    uint8_t *rowmask = x->dtype == TG_F32 ? tg_arena_zalloc(g, (size_t)nt * dim[3]) : NULL; /* (parts, n) */
    if (!status || !wheres || (x->dtype == TG_F32 && !rowmask)) return NULL;
    softmax_job j = {.dt = x->dtype,
                     .log_out = log_out,
                     .zero_rows = !log_out && (flags & TG_SOFTMAX_ZERO_BLOCKED_ROWS),
                     .n = dim[3],
                     .dim = dim,
                     .m = mask ? mask->data : NULL,
                     .ms = ms,
                     .x = x->data,
                     .y = y->data,
                     .rowmask = rowmask,
                     .status = status,
                     .where = wheres};
    tg_parallel_for(rows, grain, softmax_part, &j);
    int kind = SCORES_OK;
    int64_t where = 0;
    for (int i = 0; i < nt && kind == SCORES_OK; i++) kind = status[i], where = wheres[i];
    if (kind == BAD_SCORE) {
        double v = tg_tensor_get(x, where);
        return tg_fail(g,
                       "%s: score %s at element %lld (index %s) of x %s %s, a key the mask does not block "
                       "(scores must be finite or -inf)",
                       name, isnan(v) ? "NaN" : "+inf", (long long)where,
                       tg_index_str(x, x->ndim, where, si, sizeof si), dx, sx);
    }
    if (kind == BLOCKED_ROW) {
        if (x->ndim == 1)
            return tg_fail(g, "%s: row 0 of x %s %s has every key blocked%s", name, dx, sx,
                           log_out ? "" : " (TG_SOFTMAX_ZERO_BLOCKED_ROWS gives zeros instead)");
        return tg_fail(g, "%s: row %lld (index %s) of x %s %s has every key blocked%s", name, (long long)where,
                       tg_index_str(x, x->ndim - 1, where, si, sizeof si), dx, sx,
                       log_out ? "" : " (TG_SOFTMAX_ZERO_BLOCKED_ROWS gives zeros instead)");
    }
    tg_node *nd = tg_op_record(g, name, softmax_node_backward, y, 1, in);
    if (nd) nd->iarg[0] = log_out;
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask)
{
    return softmax_common(g, "softmax", x, mask, TG_SOFTMAX_DEFAULT, false);
}

tg_tensor *tg_softmax_ex(tg_graph *g, tg_tensor *x, tg_tensor *mask, int flags)
{
    return softmax_common(g, "softmax", x, mask, flags, false);
}

tg_tensor *tg_log_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask)
{
    return softmax_common(g, "log_softmax", x, mask, TG_SOFTMAX_DEFAULT, true);
}

/* ---- the reference kernels (f64) -------------------------------------- */

/* key j of a row with mask row pm (keys `stride` apart; NULL: no mask) */
static inline bool blocked(const uint8_t *pm, int64_t stride, int j) { return pm && pm[j * stride]; }

/* Rows [lo, hi) of x, padded shape dim, mask m with strides ms (NULL: no
 * mask): y = softmax (p) or log_softmax of each row. Returns SCORES_OK, or
 * an error kind with the row / element in *where. */
int tg_softmax_forward_f64(const double *x, double *y, const int dim[TG_MAX_DIMS], const uint8_t *m,
                           const int64_t ms[TG_MAX_DIMS], bool log_out, bool zero_rows, int64_t lo, int64_t hi,
                           int64_t *where)
{
    const int n = dim[3];
    tg_row_index ix = tg_row_at(dim, lo);
    for (int64_t r = lo; r < hi; r++, tg_row_next(&ix, dim)) {
        const uint8_t *pm = tg_mask_row(m, ms, ix);
        const double *s = x + r * n;
        double *p = y + r * n;
        double mx = -INFINITY; /* m = max over the allowed keys */
        for (int j = 0; j < n; j++) {
            if (blocked(pm, ms[3], j)) continue;
            if (isnan(s[j]) || s[j] == INFINITY) {
                *where = r * n + j;
                return BAD_SCORE;
            }
            if (s[j] > mx) mx = s[j];
        }
        if (mx == -INFINITY) { /* every key blocked (by the mask or by -inf scores) */
            if (!zero_rows) {
                *where = r;
                return BLOCKED_ROW;
            }
            for (int j = 0; j < n; j++) p[j] = 0;
            continue;
        }
        double sum = 0; /* sum_{k in A} exp(s_k - m) */
        for (int j = 0; j < n; j++) {
            p[j] = blocked(pm, ms[3], j) ? 0 : exp(s[j] - mx);
            sum += p[j];
        }
        if (log_out) {
            const double lse = log(sum);
            for (int j = 0; j < n; j++) p[j] = blocked(pm, ms[3], j) ? -INFINITY : (s[j] - mx) - lse;
        } else {
            for (int j = 0; j < n; j++) p[j] /= sum;
        }
    }
    return SCORES_OK;
}

/* ds_j = p_j (dp_j - sum_k p_k dp_k) for `rows` rows of n; stored into dx
 * when store (a new gradient), else added */
void tg_softmax_backward_f64(const double *p, const double *dp, double *dx, int64_t rows, int n, bool store)
{
    for (int64_t r = 0; r < rows; r++, p += n, dp += n, dx += n) {
        double s = 0;
        for (int j = 0; j < n; j++)
            if (p[j] != 0) s += p[j] * dp[j];
        for (int j = 0; j < n; j++) {
            const double ds = p[j] != 0 ? p[j] * (dp[j] - s) : 0;
            dx[j] = store ? ds : dx[j] + ds;
        }
    }
}

/* ds_j = dy_j - exp(y_j) sum_{k in A} dy_k, 0 at blocked keys (y_j = -inf) */
void tg_log_softmax_backward_f64(const double *y, const double *dy, double *dx, int64_t rows, int n, bool store)
{
    for (int64_t r = 0; r < rows; r++, y += n, dy += n, dx += n) {
        double s = 0;
        for (int j = 0; j < n; j++)
            if (y[j] != -INFINITY) s += dy[j];
        for (int j = 0; j < n; j++) {
            const double ds = y[j] != -INFINITY ? dy[j] - exp(y[j]) * s : 0;
            dx[j] = store ? ds : dx[j] + ds;
        }
    }
}

/* ---- backward, and the rows shared out among threads ------------------ */

/* iarg[0]: 1 for log_softmax. Backward reads only the output and its grad. */
static void softmax_node_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    bool store;
    void *gx = tg_grad_store(g, x, &store);
    if (!gx) return;
    const int n = x->shape[x->ndim - 1];
    softmax_job j = {
        .dt = x->dtype, .log_out = nd->iarg[0], .n = n, .y = y->data, .dy = y->grad, .dx = gx, .store = store};
    tg_parallel_for(x->numel / n, 1 + SOFTMAX_GRAIN / n, softmax_part, &j);
}

static void softmax_part(void *ctx, int64_t lo, int64_t hi)
{
    const softmax_job *j = ctx;
    const int n = j->n, part = tg_parallel_part();
    const int64_t o = lo * n, rows = hi - lo;
    if (j->dx && j->dt == TG_F32) {
        const float *y = (const float *)j->y + o, *dy = (const float *)j->dy + o;
        if (j->log_out) tg_log_softmax_backward_f32(y, dy, (float *)j->dx + o, rows, n, j->store);
        else tg_softmax_backward_f32(y, dy, (float *)j->dx + o, rows, n, j->store);
    } else if (j->dx) {
        const double *y = (const double *)j->y + o, *dy = (const double *)j->dy + o;
        if (j->log_out) tg_log_softmax_backward_f64(y, dy, (double *)j->dx + o, rows, n, j->store);
        else tg_softmax_backward_f64(y, dy, (double *)j->dx + o, rows, n, j->store);
    } else if (j->dt == TG_F32) {
        j->status[part] = tg_softmax_forward_f32(j->x, j->y, j->dim, j->m, j->ms, j->log_out, j->zero_rows,
                                                 j->rowmask + (size_t)part * n, lo, hi, &j->where[part]);
    } else {
        j->status[part] =
            tg_softmax_forward_f64(j->x, j->y, j->dim, j->m, j->ms, j->log_out, j->zero_rows, lo, hi, &j->where[part]);
    }
}
