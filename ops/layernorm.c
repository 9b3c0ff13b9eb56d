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
 * given thread count), and rounded to the dtype once. The f32 backward
 * works in f32 (see backward_f32), summing dw and db over up to 8 rows in
 * f32 before each add into the double sums. */
#include <math.h>
#include <string.h>

#include "ops.h"

#include "../core/op.h"
#include "../core/parallel.h"
#include "fastmath_internal.h"

/* dst += e for jj = 0..C-1, or dst = e when `store` (a new gradient: no
 * zero-fill, no read) */
#define LN_PUT(store, dst, e)                                                                 \
    do {                                                                                      \
        if (store)                                                                            \
            for (int jj = 0; jj < C; jj++) dst = (e);                                         \
        else                                                                                  \
            for (int jj = 0; jj < C; jj++) dst += (e);                                        \
    } while (0)

#define DEFINE_LAYERNORM(T)                                                                   \
    /* mean/rstd may be NULL (nothing recorded): then nothing is saved */                    \
    static void forward_##T(int64_t rows, int C, const T *x, const T *w, const T *b,         \
                            double eps, T *y, double *mean, double *rstd)                    \
    {                                                                                         \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *xr = x + r * C; /* (C) */                                                \
            T *yr = y + r * C;       /* (C) */                                                \
            double m = 0, v = 0;                                                              \
            for (int j = 0; j < C; j++) m += xr[j];                                           \
            m /= C;                                                                           \
            for (int j = 0; j < C; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);        \
            v /= C;                                                                           \
            double s = 1.0 / sqrt(v + eps);                                                   \
            for (int j = 0; j < C; j++) {                                                     \
                double h = ((double)xr[j] - m) * s;                                           \
                if (w) h *= w[j];                                                             \
                if (b) h += b[j];                                                             \
                yr[j] = (T)h;                                                                 \
            }                                                                                 \
            if (mean) mean[r] = m, rstd[r] = s;                                               \
        }                                                                                     \
    }                                                                                         \
    static void backward_##T(int64_t rows, int C, const T *x, const T *w, const T *dy,       \
                             const double *mean, const double *rstd, T *gx, bool store, double *gw, \
                             double *gb)                                                      \
    {                                                                                         \
        for (int64_t r = 0; r < rows; r++) {                                                  \
            const T *xr = x + r * C, *dyr = dy + r * C; /* (C) */                             \
            const double m = mean[r], s = rstd[r];                                            \
            if (gx) {                                                                         \
                double mg = 0, mgh = 0; /* mean(g), mean(g * xhat) */                         \
                for (int j = 0; j < C; j++) {                                                 \
                    double h = ((double)xr[j] - m) * s, gj = w ? (double)dyr[j] * w[j] : dyr[j]; \
                    mg += gj;                                                                 \
                    mgh += gj * h;                                                            \
                }                                                                             \
                mg /= C;                                                                      \
                mgh /= C;                                                                     \
                T *gxr = gx + r * C;                                                          \
                LN_PUT(store, gxr[jj], (T)(s * ((w ? (double)dyr[jj] * w[jj] : dyr[jj]) - mg - \
                                                ((double)xr[jj] - m) * s * mgh)));            \
            }                                                                                 \
            if (gw)                                                                           \
                for (int j = 0; j < C; j++) gw[j] += dyr[j] * (((double)xr[j] - m) * s);   \
            if (gb)                                                                           \
                for (int j = 0; j < C; j++) gb[j] += dyr[j];                                  \
        }                                                                                     \
    }

DEFINE_LAYERNORM(double)

/* ---- f32: the row mean in double, summed in 4 partial lanes so that it
 * vectorises instead of running one dependent add per element; the rest
 * in f32 from x - mean taken as (x - mh) - ml (forward_f32, backward_f32
 * below). */
enum { LANES = 4 };

/* sum_j x_j in double */
static inline double sum_f32(const float *restrict x, int C)
{
    double s[LANES] = {0};
    int j = 0;
    for (; j + LANES <= C; j += LANES)
        for (int k = 0; k < LANES; k++) s[k] += (double)x[j + k];
    for (int k = 0; j < C; j++, k++) s[k] += (double)x[j];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* Backward, all in f32 with 8 partial lanes per row sum; mean and rstd
 * come from the double statistics. x - mean is taken as (x - mh) - ml with
 * mh = (float)mean, ml = (float)(mean - mh): x - mh is exact when x is
 * within a factor 2 of mh (Sterbenz), so a large common offset cancels
 * before anything rounds. Per row two passes: the sums of g and g xhat
 * (and, when wanted, the row's dy xhat and dy added into the part's f32
 * accumulators acc_w, acc_b), then dx. Every FLUSH rows (and at the end)
 * the accumulators are added into the part's double dw, db sums and
 * cleared: f32 sums over at most FLUSH rows, double beyond. */
enum { FLUSH = 8 };

/* 8 floats as one value (GCC/Clang vector extension): one AVX register in
 * the x86-64-v3 clone, two SSE registers otherwise. Row sums kept in its
 * lanes vectorise as written, where a scalar lane array did not. */
typedef float v8f __attribute__((vector_size(32)));
/* unaligned load / store; macros, as a function passing v8f by value would
 * have a different ABI in the two clones */
#define V8_LOAD(v, p) memcpy(&(v), (p), sizeof(v8f))
#define V8_STORE(p, v) memcpy((p), &(v), sizeof(v8f))

/* Forward: the mean in double (sum_f32), then x - mean as (x - mh) - ml
 * in f32 as in the backward; the variance from those in 8 f32 lanes
 * (summed in double), the output in f32. */
TG_VEC_CLONES static void forward_f32(int64_t rows, int C, const float *x, const float *w, const float *b, double eps,
                                      float *y, double *mean, double *rstd)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * C; /* (C) */
        float *restrict yr = y + r * C;       /* (C) */
        const double m = sum_f32(xr, C) / C;
        const float mh = (float)m, ml = (float)(m - mh);
        v8f sq = {0};
        int j = 0;
        for (; j + 8 <= C; j += 8) {
            v8f xv;
            V8_LOAD(xv, xr + j);
            const v8f d = (xv - mh) - ml;
            sq += d * d;
        }
        for (int k = 0; j < C; j++, k++) {
            const float d = (xr[j] - mh) - ml;
            sq[k] += d * d;
        }
        double v = 0;
        for (int k = 0; k < 8; k++) v += sq[k];
        const double sd = 1.0 / sqrt(v / C + eps);
        const float sf = (float)sd;
        if (w && b)
            for (int jj = 0; jj < C; jj++) yr[jj] = ((xr[jj] - mh) - ml) * sf * w[jj] + b[jj];
        else if (w)
            for (int jj = 0; jj < C; jj++) yr[jj] = ((xr[jj] - mh) - ml) * sf * w[jj];
        else if (b)
            for (int jj = 0; jj < C; jj++) yr[jj] = ((xr[jj] - mh) - ml) * sf + b[jj];
        else
            for (int jj = 0; jj < C; jj++) yr[jj] = ((xr[jj] - mh) - ml) * sf;
        if (mean) mean[r] = m, rstd[r] = sd;
    }
}

enum { HAS_W = 1, ACC_W = 2, ACC_B = 4 }; /* ln_bwd_row_f32's flags */

/* One row; flags is a constant at each call, so every combination gets its
 * own branch-free loops */
static inline __attribute__((always_inline)) void
ln_bwd_row_f32(int C, const float *restrict xr, const float *restrict w, const float *restrict dyr, float mh, float ml,
               float s, float *restrict gxr, bool store, float *restrict acc_w, float *restrict acc_b, const int flags)
{
    const int has_w = flags & HAS_W;
    v8f sg = {0}, sgh = {0}; /* sum(g), sum(g * xhat) in 8 lanes */
    int j = 0;
    for (; j + 8 <= C; j += 8) {
        v8f d, xv, wv, t;
        V8_LOAD(d, dyr + j);
        V8_LOAD(xv, xr + j);
        const v8f h = ((xv - mh) - ml) * s;
        if (gxr) {
            v8f gj = d;
            if (has_w) V8_LOAD(wv, w + j), gj *= wv;
            sg += gj;
            sgh += gj * h;
        }
        if (flags & ACC_W) V8_LOAD(t, acc_w + j), t += d * h, V8_STORE(acc_w + j, t);
        if (flags & ACC_B) V8_LOAD(t, acc_b + j), t += d, V8_STORE(acc_b + j, t);
    }
    for (int k = 0; j < C; j++, k++) {
        const float d = dyr[j], h = ((xr[j] - mh) - ml) * s, gj = has_w ? d * w[j] : d;
        sg[k] += gj;
        sgh[k] += gj * h;
        if (flags & ACC_W) acc_w[j] += d * h;
        if (flags & ACC_B) acc_b[j] += d;
    }
    if (!gxr) return;
    double tg = 0, tgh = 0;
    for (int k = 0; k < 8; k++) tg += sg[k], tgh += sgh[k];
    const float a = (float)(tg / C), c = (float)(tgh / C);
    if (has_w) LN_PUT(store, gxr[jj], s * ((dyr[jj] * w[jj] - a) - (((xr[jj] - mh) - ml) * s) * c));
    else LN_PUT(store, gxr[jj], s * ((dyr[jj] - a) - (((xr[jj] - mh) - ml) * s) * c));
}

TG_VEC_CLONES static void backward_f32(int64_t rows, int C, const float *x, const float *w, const float *dy,
                                       const double *mean, const double *rstd, float *gx, bool store, double *gw,
                                       double *gb, float *acc_w, float *acc_b)
{
    float *aw = gw ? acc_w : NULL, *ab = gb ? acc_b : NULL;
    for (int64_t r = 0; r < rows; r++) {
        const float mh = (float)mean[r], ml = (float)(mean[r] - mh), s = (float)rstd[r];
        float *gxr = gx ? gx + r * C : NULL;
        const float *xr = x + r * C, *dyr = dy + r * C; /* (C) */
#define LN_ROW(f) case f: ln_bwd_row_f32(C, xr, w, dyr, mh, ml, s, gxr, store, aw, ab, f); break
        switch ((w ? HAS_W : 0) | (aw ? ACC_W : 0) | (ab ? ACC_B : 0)) {
            LN_ROW(0); LN_ROW(1); LN_ROW(2); LN_ROW(3); LN_ROW(4); LN_ROW(5); LN_ROW(6); LN_ROW(7);
        }
#undef LN_ROW
        if ((r + 1) % FLUSH == 0 || r == rows - 1) {
            if (aw)
                for (int j = 0; j < C; j++) gw[j] += aw[j], aw[j] = 0;
            if (ab)
                for (int j = 0; j < C; j++) gb[j] += ab[j], ab[j] = 0;
        }
    }
}

/* Rows of one layernorm pass, shared out among threads. In the backward,
 * each part sums its rows' dw and db in double into its own zeroed (C)
 * rows of pgw, pgb; those are added up in part order after. */
typedef struct ln_job {
    tg_dtype dt;
    int C;
    double eps;
    const void *x, *w, *b, *dy;
    void *y, *gx;
    bool store;          /* gx is new: written, not added to */
    double *pgw, *pgb;   /* (parts, C) each, or NULL */
    float *paw, *pab;    /* (parts, C) zeroed f32 accumulators for f32 dw, db, or NULL */
    double *mean, *rstd;
} ln_job;

#define LN_GRAIN 16384   /* elements per thread, at least */

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
        if (j->dt == TG_F32) forward_f32(rows, C, (const float *)x, j->w, j->b, j->eps, (float *)y, mean, rstd);
        else forward_double(rows, C, (const double *)x, j->w, j->b, j->eps, (double *)y, mean, rstd);
        return;
    }
    const char *dy = (const char *)j->dy + o * es;
    char *gx = j->gx ? (char *)j->gx + o * es : NULL;
    double *gw = j->pgw ? j->pgw + po : NULL, *gb = j->pgb ? j->pgb + po : NULL;
    if (j->dt == TG_F32)
        backward_f32(rows, C, (const float *)x, j->w, (const float *)dy, mean, rstd, (float *)gx, j->store, gw, gb,
                     j->paw ? j->paw + po : NULL, j->pab ? j->pab + po : NULL);
    else
        backward_double(rows, C, (const double *)x, j->w, (const double *)dy, mean, rstd, (double *)gx, j->store, gw,
                        gb);
}

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
    const int nt = tg_num_threads();
    bool store;
    ln_job j = {.dt = y->dtype, .C = C, .x = x->data, .w = w ? w->data : NULL, .dy = y->grad, .mean = mean,
                .rstd = rstd, .gx = tg_grad_store(g, x, &store),
                .pgw = gw ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(double)) : NULL,   /* (nt, C) */
                .pgb = gb ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(double)) : NULL};  /* (nt, C) */
    if (y->dtype == TG_F32) {
        j.paw = gw ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(float)) : NULL;    /* (nt, C) */
        j.pab = gb ? tg_arena_zalloc(g, (size_t)nt * C * sizeof(float)) : NULL;    /* (nt, C) */
    }
    j.store = store;
    if (tg_graph_error(g)) return;
    tg_parallel_for(rows, 1 + LN_GRAIN / C, ln_part, &j);
    if (gw) add_partials(y->dtype, gw, j.pgw, nt, C);
    if (gb) add_partials(y->dtype, gb, j.pgb, nt, C);
}

/* Checks that p (w or b, may be NULL) is a float (C) tensor of x's dtype. */
static bool check_param(tg_graph *g, const char *what, const tg_tensor *x, const tg_tensor *p)
{
    if (!p) return true;
    char sx[64], sp[64];
    tg_shape_str(x, sx, sizeof sx);
    tg_shape_str(p, sp, sizeof sp);
    if (!tg_op_check_float(g, "layernorm", what, p)) return false;
    if (p->dtype != x->dtype) {
        tg_fail(g, "layernorm: dtypes differ: x %s %s, %s %s %s", tg_dtype_name(x->dtype), sx, what,
                tg_dtype_name(p->dtype), sp);
        return false;
    }
    const int C = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != C) {
        tg_fail(g, "layernorm: %s must have shape (C) = (%d) for x %s %s, got %s %s", what, C,
                tg_dtype_name(x->dtype), sx, tg_dtype_name(p->dtype), sp);
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
    ln_job j = {.dt = y->dtype, .C = C, .eps = eps, .x = x->data, .w = w ? w->data : NULL,
                .b = b ? b->data : NULL, .y = y->data, .mean = mean, .rstd = rstd};
    tg_parallel_for(rows, 1 + LN_GRAIN / C, ln_part, &j);
    return tg_graph_error(g) ? NULL : y;
}
