/* Layer normalisation over the last axis.
 *
 * For each row x (C elements) of x (..., C):
 *
 *   mean = sum_j x_j / C
 *   var  = sum_j (x_j - mean)^2 / C            (biased, as PyTorch)
 *   rstd = 1 / sqrt(var + eps)
 *   xhat = (x - mean) * rstd
 *   y    = xhat * w + b                        (w = 1 / b = 0 when NULL)
 *
 * mean, var and rstd are computed in double for f32 too, and mean and
 * rstd of every row are saved for backward.
 *
 * Backward, per row, with g = dy * w (elementwise):
 *
 *   dx += rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))
 *   dw += sum over rows of dy * xhat
 *   db += sum over rows of dy
 *
 * (dx: d xhat_i / d x_k = rstd * (delta_ik - 1/C - xhat_i xhat_k / C);
 * contracting with g gives the line above. With C = 1, xhat = 0 and the
 * output is b, and dx = 0.)
 *
 * Rows are shared out among threads; dw and db are summed in double per
 * thread, then the per-thread sums in thread order (the same order for a
 * given thread count), and rounded to the dtype once. The f32 kernels
 * (ops/layernorm_f32.c) work in f32 from the double mean and rstd, the
 * backward summing dw and db over up to 8 rows in f32 before each add
 * into the double sums. */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

/* ---- the op ----------------------------------------------------------- */

/* Rows of one layernorm pass, shared out among threads. In the backward,
 * each part sums its rows' dw and db in double into its own zeroed (C)
 * rows of pgw, pgb; those are added up in part order after. */
typedef struct ln_job {
    tg_dtype dt;
    int C;
    double eps;
    const void *x, *w, *b, *dy;
    void *y, *gx;
    bool store; /* gx is new: written, not added to */
    double *pgw, *pgb; /* (parts, C) each, or NULL */
    float *paw, *pab; /* (parts, C) zeroed f32 accumulators for f32 dw, db, or NULL */
    double *mean, *rstd;
} ln_job;

#define LN_GRAIN 16384 /* elements per thread, at least */

static void ln_part(void *ctx, int64_t lo, int64_t hi);
static void layernorm_backward(tg_graph *g, tg_node *nd);

/* Checks that p (w or b, may be NULL) is a float (C) tensor of x's dtype. */
static bool check_param(tg_graph *g, const char *what, const tg_tensor *x, const tg_tensor *p)
{
    if (!p) return true;
    char sx[64], sp[64]; /* the shapes, written only for a message */
    if (!tg_op_check_float(g, "layernorm", what, p)) return false;
    if (p->dtype != x->dtype) {
        tg_fail(g, "layernorm: dtypes differ: x %s %s, %s %s %s", tg_dtype_name(x->dtype),
                tg_shape_str(x, sx, sizeof sx), what, tg_dtype_name(p->dtype), tg_shape_str(p, sp, sizeof sp));
        return false;
    }
    const int C = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != C) {
        tg_fail(g, "layernorm: %s must have shape (C) = (%d) for x %s %s, got %s %s", what, C, tg_dtype_name(x->dtype),
                tg_shape_str(x, sx, sizeof sx), tg_dtype_name(p->dtype), tg_shape_str(p, sp, sizeof sp));
        return false;
    }
    return true;
}

tg_tensor *tg_layernorm(tg_graph *g, tg_tensor *x, tg_tensor *w, tg_tensor *b, double eps)
{
    /* w and b may be NULL by design; only x must be there */
    tg_tensor *in[3] = {x, w, b};
    if (!tg_op_begin(g, "layernorm", 1, in) || !tg_op_check_live(g, "layernorm", 3, in) ||
        !tg_op_check_float(g, "layernorm", "x", x))
        return NULL;
    char sx[64];
    if (x->ndim < 1)
        return tg_fail(g, "layernorm: x must have at least 1 dimension, got %s %s", tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));
    if (!check_param(g, "w", x, w) || !check_param(g, "b", x, b)) return NULL;
    if (!(eps > 0))
        return tg_fail(g, "layernorm: eps must be > 0, got %g (x %s %s)", eps, tg_dtype_name(x->dtype),
                       tg_shape_str(x, sx, sizeof sx));

    const int C = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / C;
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape); /* (..., C) */
    if (!y) return NULL;
    double *stats = NULL; /* mean (rows), then rstd (rows) */
    tg_node *nd = tg_op_record(g, "layernorm", layernorm_backward, y, 3, in);
    if (nd) {
        nd->darg[0] = eps;
        stats = nd->saved = tg_arena_alloc(g, 2 * (size_t)rows * sizeof(double));
    }
    if (tg_graph_error(g)) return NULL;
    double *mean = stats, *rstd = stats ? stats + rows : NULL;
    ln_job j = {.dt = y->dtype,
                .C = C,
                .eps = eps,
                .x = x->data,
                .w = w ? w->data : NULL,
                .b = b ? b->data : NULL,
                .y = y->data,
                .mean = mean,
                .rstd = rstd};
    tg_parallel_for(rows, 1 + LN_GRAIN / C, ln_part, &j);
    return tg_graph_error(g) ? NULL : y;
}

/* ---- the reference kernels (f64) -------------------------------------- */

/* Rows [0, rows) of x (rows, C): y = xhat w + b, xhat = (x - mean) rstd;
 * each row's mean and rstd saved when mean is not NULL (a recorded op). */
void tg_layernorm_forward_f64(int64_t rows, int C, const double *x, const double *w, const double *b, double eps,
                              double *y, double *mean, double *rstd)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * C; /* (C) */
        double *yr = y + r * C; /* (C) */
        double m = 0, v = 0;
        for (int j = 0; j < C; j++) m += xr[j];
        m /= C;
        for (int j = 0; j < C; j++) v += (xr[j] - m) * (xr[j] - m);
        v /= C;
        const double s = 1.0 / sqrt(v + eps); /* rstd */
        for (int j = 0; j < C; j++) {
            double h = (xr[j] - m) * s; /* xhat */
            if (w) h *= w[j];
            if (b) h += b[j];
            yr[j] = h;
        }
        if (mean) mean[r] = m, rstd[r] = s;
    }
}

/* The backward of those rows, with g = dy w: dx = rstd (g - mean(g) -
 * xhat mean(g xhat)) into gx (stored when store, else added; NULL: not
 * wanted), dw += dy xhat into gw and db += dy into gb (NULL: not wanted). */
void tg_layernorm_backward_f64(int64_t rows, int C, const double *x, const double *w, const double *dy,
                               const double *mean, const double *rstd, double *gx, bool store, double *gw, double *gb)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * C, *dyr = dy + r * C; /* (C) */
        const double m = mean[r], s = rstd[r];
        if (gx) {
            double mg = 0, mgh = 0; /* mean(g), mean(g xhat) */
            for (int j = 0; j < C; j++) {
                const double h = (xr[j] - m) * s, g = w ? dyr[j] * w[j] : dyr[j];
                mg += g;
                mgh += g * h;
            }
            mg /= C;
            mgh /= C;
            double *gxr = gx + r * C;
            for (int j = 0; j < C; j++) {
                const double h = (xr[j] - m) * s, g = w ? dyr[j] * w[j] : dyr[j];
                const double d = s * (g - mg - h * mgh);
                gxr[j] = store ? d : gxr[j] + d;
            }
        }
        if (gw)
            for (int j = 0; j < C; j++) gw[j] += dyr[j] * ((xr[j] - m) * s);
        if (gb)
            for (int j = 0; j < C; j++) gb[j] += dyr[j];
    }
}

/* ---- backward, and the rows shared out among threads ------------------ */

/* acc[i] += the sum over parts of part[p * n + i], rounded once to acc's dtype */
static void add_partials(tg_dtype dt, void *acc, const double *part, int parts, int n)
{
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int p = 0; p < parts; p++) s += part[(size_t)p * n + i];
        if (dt == TG_F32) ((float *)acc)[i] += (float)s;
        else ((double *)acc)[i] += s;
    }
}

static void layernorm_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *w = nd->in[1], *y = nd->out; /* x, y (..., C); w (C) or NULL */
    const int C = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / C;
    double *mean = nd->saved, *rstd = mean + rows; /* (rows) each */
    void *gw = tg_grad(g, w), *gb = tg_grad(g, nd->in[2]);
    const int nt = tg_parallel_parts(rows, 1 + LN_GRAIN / C);
    bool store;
    ln_job j = {.dt = y->dtype,
                .C = C,
                .x = x->data,
                .w = w ? w->data : NULL,
                .dy = y->grad,
                .mean = mean,
                .rstd = rstd,
                .gx = tg_grad_store(g, x, &store),
                .pgw = gw ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(double)) : NULL, /* (parts, C) */
                .pgb = gb ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(double)) : NULL}; /* (parts, C) */
    if (y->dtype == TG_F32) {
        j.paw = gw ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(float)) : NULL; /* (parts, C) */
        j.pab = gb ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(float)) : NULL; /* (parts, C) */
    }
    j.store = store;
    if (tg_graph_error(g)) return;
    tg_parallel_for(rows, 1 + LN_GRAIN / C, ln_part, &j);
    if (gw) add_partials(y->dtype, gw, j.pgw, nt, C);
    if (gb) add_partials(y->dtype, gb, j.pgb, nt, C);
}

static void ln_part(void *ctx, int64_t lo, int64_t hi)
{
    const ln_job *j = ctx;
    const int C = j->C;
    const int64_t o = lo * C, rows = hi - lo;
    const size_t es = tg_dtype_size(j->dt), po = (size_t)tg_parallel_part() * C;
    const char *x = (const char *)j->x + o * es;
    double *mean = j->mean ? j->mean + lo : NULL, *rstd = j->rstd ? j->rstd + lo : NULL;
    if (!j->dy) {
        char *y = (char *)j->y + o * es;
        if (j->dt == TG_F32)
            tg_layernorm_forward_f32(rows, C, (const float *)x, j->w, j->b, j->eps, (float *)y, mean, rstd);
        else tg_layernorm_forward_f64(rows, C, (const double *)x, j->w, j->b, j->eps, (double *)y, mean, rstd);
        return;
    }
    const char *dy = (const char *)j->dy + o * es;
    char *gx = j->gx ? (char *)j->gx + o * es : NULL;
    double *gw = j->pgw ? j->pgw + po : NULL, *gb = j->pgb ? j->pgb + po : NULL;
    if (j->dt == TG_F32)
        tg_layernorm_backward_f32(rows, C, (const float *)x, j->w, (const float *)dy, mean, rstd, (float *)gx, j->store,
                                  gw, gb, j->paw ? j->paw + po : NULL, j->pab ? j->pab + po : NULL);
    else
        tg_layernorm_backward_f64(rows, C, (const double *)x, j->w, (const double *)dy, mean, rstd, (double *)gx,
                                  j->store, gw, gb);
}
