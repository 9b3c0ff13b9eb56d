/* The tuned f32 kernels of layernorm (ops/layernorm.c has the maths, the
 * checks, the f64 reference and the recording). */
#include "kernels_internal.h"

#include <math.h>
#include <string.h>

#include "fastmath_internal.h"

/* The row mean in double, summed in 4 partial lanes so that it vectorises
 * instead of running one dependent add per element; the rest in f32 from
 * x - mean taken as (x - mh) - ml (forward_f32, backward_f32 below). */
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
TG_KERNEL_BODY void forward_f32_body(int64_t rows, int C, const float *x, const float *w, const float *b, double eps,
                                     float *y, double *mean, double *rstd)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * C; /* (C) */
        float *restrict yr = y + r * C; /* (C) */
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
TG_ISA_CLONES_VOID(forward_f32,
                   (int64_t rows, int C, const float *x, const float *w, const float *b, double eps, float *y,
                    double *mean, double *rstd),
                   (rows, C, x, w, b, eps, y, mean, rstd))

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
    /* dx_i = rstd (g_i - a - xhat_i c), g_i = dy_i w_i, stored or added */
    if (has_w && store)
        for (int i = 0; i < C; i++) gxr[i] = s * ((dyr[i] * w[i] - a) - (((xr[i] - mh) - ml) * s) * c);
    else if (has_w)
        for (int i = 0; i < C; i++) gxr[i] += s * ((dyr[i] * w[i] - a) - (((xr[i] - mh) - ml) * s) * c);
    else if (store)
        for (int i = 0; i < C; i++) gxr[i] = s * ((dyr[i] - a) - (((xr[i] - mh) - ml) * s) * c);
    else
        for (int i = 0; i < C; i++) gxr[i] += s * ((dyr[i] - a) - (((xr[i] - mh) - ml) * s) * c);
}

TG_KERNEL_BODY void backward_f32_body(int64_t rows, int C, const float *x, const float *w, const float *dy,
                                      const double *mean, const double *rstd, float *gx, bool store, double *gw,
                                      double *gb, float *acc_w, float *acc_b)
{
    float *aw = gw ? acc_w : NULL, *ab = gb ? acc_b : NULL;
    for (int64_t r = 0; r < rows; r++) {
        const float mh = (float)mean[r], ml = (float)(mean[r] - mh), s = (float)rstd[r];
        float *gxr = gx ? gx + r * C : NULL;
        const float *xr = x + r * C, *dyr = dy + r * C; /* (C) */
#define LN_ROW(f)                                                                                                      \
    case f: ln_bwd_row_f32(C, xr, w, dyr, mh, ml, s, gxr, store, aw, ab, f); break
        switch ((w ? HAS_W : 0) | (aw ? ACC_W : 0) | (ab ? ACC_B : 0)) {
            LN_ROW(0);
            LN_ROW(1);
            LN_ROW(2);
            LN_ROW(3);
            LN_ROW(4);
            LN_ROW(5);
            LN_ROW(6);
            LN_ROW(7);
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
TG_ISA_CLONES_VOID(backward_f32,
                   (int64_t rows, int C, const float *x, const float *w, const float *dy, const double *mean,
                    const double *rstd, float *gx, bool store, double *gw, double *gb, float *acc_w, float *acc_b),
                   (rows, C, x, w, dy, mean, rstd, gx, store, gw, gb, acc_w, acc_b))

/* the entry points declared in kernels_internal.h (the clones stay static:
 * see there) */
void tg_layernorm_forward_f32(int64_t rows, int C, const float *x, const float *w, const float *b, double eps, float *y,
                              double *mean, double *rstd)
{
    forward_f32(rows, C, x, w, b, eps, y, mean, rstd);
}

void tg_layernorm_backward_f32(int64_t rows, int C, const float *x, const float *w, const float *dy, const double *mean,
                               const double *rstd, float *gx, bool store, double *gw, double *gb, float *acc_w,
                               float *acc_b)
{
    backward_f32(rows, C, x, w, dy, mean, rstd, gx, store, gw, gb, acc_w, acc_b);
}
