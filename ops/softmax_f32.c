/* The tuned f32 kernels of softmax and log-softmax (ops/softmax.c has the
 * maths, the checks, the f64 reference and the recording). */
#include "kernels_internal.h"

#include <math.h>

#include "fastmath_internal.h"

/* Vectorisable row kernels: the maths of the f64 reference (ops/softmax.c)
 * with the call-free exp of fastmath_internal.h (error a few f32 ulps) and
 * the branches turned into selects; the row maximum and sums run in 8
 * partial lanes (the max is exact; the sums round in a different order,
 * well within f32 rounding). blk[j] != 0 marks a blocked key (a row of
 * zeros when there is no mask). The NaN / +inf check is one OR per
 * element; the row is rescanned for the exact element only on error. */
enum { LANES = 8 };

static inline float row_max_f32(const float *restrict x, const uint8_t *restrict blk, int n, int *bad)
{
    float mx[LANES];
    int bd[LANES];
    for (int k = 0; k < LANES; k++) mx[k] = -INFINITY, bd[k] = 0;
    for (int j0 = 0; j0 < n; j0 += LANES) /* full blocks vectorise; the tail is short */
        for (int k = 0; k < (j0 + LANES <= n ? LANES : n - j0); k++) {
            const int j = j0 + k, al = blk[j] == 0;
            const float v = x[j];
            bd[k] |= al & ((v != v) | (v == INFINITY));
            const float vm = tg_fsel(al, v, -INFINITY);
            mx[k] = tg_fsel(vm > mx[k], vm, mx[k]);
        }
    float m = -INFINITY;
    for (int k = 0; k < LANES; k++) {
        m = mx[k] > m ? mx[k] : m;
        *bad |= bd[k];
    }
    return m;
}

static inline float row_sum_f32(const float *restrict y, int n)
{
    float s[LANES] = {0};
    for (int j0 = 0; j0 < n; j0 += LANES) /* full blocks vectorise; the tail is short */
        for (int k = 0; k < (j0 + LANES <= n ? LANES : n - j0); k++) s[k] += y[j0 + k];
    float t = 0;
    for (int k = 0; k < LANES; k++) t += s[k];
    return t;
}

TG_KERNEL_BODY int forward_f32_body(const float *x, float *y, const int dim[TG_MAX_DIMS], const uint8_t *m,
                                    const int64_t ms[TG_MAX_DIMS], bool log_out, bool zero_rows, uint8_t *rowmask,
                                    int64_t lo, int64_t hi, int64_t *where)
{
    const int n = dim[3];
    tg_row_index ix = tg_row_at(dim, lo);
    for (int64_t r = lo; r < hi; r++, tg_row_next(&ix, dim)) {
        const uint8_t *pm = tg_mask_row(m, ms, ix);
        const float *restrict px = x + r * n;
        float *restrict py = y + r * n;
        const uint8_t *restrict blk = rowmask; /* zeros unless filled below */
        if (pm && ms[3] == 1) blk = pm;
        else if (pm)
            for (int j = 0; j < n; j++) rowmask[j] = pm[j * ms[3]];
        int bad = 0;
        const float mx = row_max_f32(px, blk, n, &bad);
        if (bad) {
            for (int j = 0; j < n; j++)
                if (!blk[j] && (isnan(px[j]) || px[j] == INFINITY)) {
                    *where = r * n + j;
                    return BAD_SCORE;
                }
        }
        if (mx == -INFINITY) { /* every key blocked (by the mask or by -inf scores) */
            if (!zero_rows) {
                *where = r;
                return BLOCKED_ROW;
            }
            for (int j = 0; j < n; j++) py[j] = 0;
            continue;
        }
        for (int j = 0; j < n; j++) py[j] = tg_fsel(blk[j] == 0, tg_fexp(px[j] - mx), 0.0f);
        const float sum = row_sum_f32(py, n);
        if (log_out) {
            const float lse = logf(sum);
            for (int j = 0; j < n; j++) py[j] = tg_fsel(blk[j] == 0, (px[j] - mx) - lse, -INFINITY);
        } else {
            const float inv = 1.0f / sum;
            for (int j = 0; j < n; j++) py[j] *= inv;
        }
    }
    return SCORES_OK;
}
TG_ISA_CLONES(int, forward_f32,
              (const float *x, float *y, const int dim[TG_MAX_DIMS], const uint8_t *m, const int64_t ms[TG_MAX_DIMS],
               bool log_out, bool zero_rows, uint8_t *rowmask, int64_t lo, int64_t hi, int64_t *where),
              (x, y, dim, m, ms, log_out, zero_rows, rowmask, lo, hi, where))

/* The backward of `rows` rows, from the output y (p, or log p with
 * log_out) and its gradient dy: the row sum over allowed keys in 8 lanes,
 * then dx (stored when store). log_out is a constant at each call. */
static inline __attribute__((always_inline)) void backward_rows(const float *y, const float *dy, float *dx,
                                                                int64_t rows, int n, bool store, const bool log_out)
{
    for (int64_t r = 0; r < rows; r++, y += n, dy += n, dx += n) {
        const float *restrict yr = y, *restrict dyr = dy;
        float *restrict dxr = dx;
        float s[LANES] = {0}; /* sum p dp (softmax), sum dy (log_softmax) */
        for (int j0 = 0; j0 < n; j0 += LANES) /* full blocks vectorise; the tail is short */
            for (int k = 0; k < (j0 + LANES <= n ? LANES : n - j0); k++) {
                const int j = j0 + k;
                s[k] += log_out ? tg_fsel(yr[j] != -INFINITY, dyr[j], 0.0f) : tg_fsel(yr[j] != 0, yr[j] * dyr[j], 0.0f);
            }
        float st = 0;
        for (int k = 0; k < LANES; k++) st += s[k];
        for (int j = 0; j < n; j++) {
            const float e = log_out ? tg_fsel(yr[j] != -INFINITY, dyr[j] - tg_fexp(yr[j]) * st, 0.0f)
                                    : tg_fsel(yr[j] != 0, yr[j] * (dyr[j] - st), 0.0f);
            if (store) dxr[j] = e;
            else dxr[j] += e;
        }
    }
}

TG_KERNEL_BODY void softmax_backward_f32_body(const float *p, const float *dp, float *dx, int64_t rows, int n,
                                              bool store)
{
    backward_rows(p, dp, dx, rows, n, store, false);
}
TG_ISA_CLONES_VOID(softmax_backward_f32, (const float *p, const float *dp, float *dx, int64_t rows, int n, bool store),
                   (p, dp, dx, rows, n, store))

TG_KERNEL_BODY void log_softmax_backward_f32_body(const float *y, const float *dy, float *dx, int64_t rows, int n,
                                                  bool store)
{
    backward_rows(y, dy, dx, rows, n, store, true);
}
TG_ISA_CLONES_VOID(log_softmax_backward_f32,
                   (const float *y, const float *dy, float *dx, int64_t rows, int n, bool store),
                   (y, dy, dx, rows, n, store))

/* the entry points declared in kernels_internal.h (the clones stay static:
 * see there) */
int tg_softmax_forward_f32(const float *x, float *y, const int dim[TG_MAX_DIMS], const uint8_t *m,
                           const int64_t ms[TG_MAX_DIMS], bool log_out, bool zero_rows, uint8_t *rowmask, int64_t lo,
                           int64_t hi, int64_t *where)
{
    return forward_f32(x, y, dim, m, ms, log_out, zero_rows, rowmask, lo, hi, where);
}

void tg_softmax_backward_f32(const float *p, const float *dp, float *dx, int64_t rows, int n, bool store)
{
    softmax_backward_f32(p, dp, dx, rows, n, store);
}

void tg_log_softmax_backward_f32(const float *y, const float *dy, float *dx, int64_t rows, int n, bool store)
{
    log_softmax_backward_f32(y, dy, dx, rows, n, store);
}
