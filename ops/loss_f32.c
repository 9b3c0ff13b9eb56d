/* The tuned f32 kernels of cross-entropy (ops/loss.c has the maths, the
 * checks, the f64 reference and the recording). */
#include "kernels_internal.h"

#include <math.h>

#include "fastmath_internal.h"

/* e^(x - m) with m >= x. f32: the call-free exp of fastmath_internal.h (a
 * few ulps; the loops vectorise), exactly 0 for a -inf logit as libm's. */
static inline float ce_exp_f32(float x, float m) { return tg_fsel(x != -INFINITY, tg_fexp(x - m), 0.0f); }

TG_KERNEL_BODY int forward_f32_body(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, float *lse,
                                    double *total, int64_t *where)
{
    double acc = 0;
    for (int64_t r = lo; r < hi; r++) {
        if (t[r] == -1) continue;
        const float *restrict px = x + r * v;
        float mx = -INFINITY;
        int bad = 0; /* one OR per logit; the row is rescanned only on error */
        for (int j = 0; j < v; j++) {
            bad |= isnan(px[j]) || px[j] == INFINITY;
            mx = px[j] > mx ? px[j] : mx;
        }
        if (bad)
            for (int j = 0; j < v; j++)
                if (isnan(px[j]) || px[j] == INFINITY) {
                    *where = r * v + j;
                    return CE_BAD_LOGIT;
                }
        if (mx == -INFINITY) {
            *where = r;
            return CE_DEAD_ROW;
        }
        float sum = 0;
        for (int j = 0; j < v; j++) sum += ce_exp_f32(px[j], mx);
        lse[r] = mx + logf(sum);
        acc += (double)(lse[r] - px[t[r]]);
    }
    *total = acc;
    return CE_OK;
}
TG_ISA_CLONES(int, forward_f32,
              (const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, float *lse, double *total,
               int64_t *where),
              (x, t, lo, hi, v, lse, total, where))

TG_KERNEL_BODY void backward_f32_body(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, const float *lse,
                                      float scale, float *dx, bool store)
{
    for (int64_t r = lo; r < hi; r++) {
        float *restrict pd = dx + r * v;
        if (t[r] == -1) {
            if (store)
                for (int j = 0; j < v; j++) pd[j] = 0;
            continue;
        }
        const float *restrict px = x + r * v;
        const float l = lse[r];
        if (store)
            for (int j = 0; j < v; j++) pd[j] = scale * ce_exp_f32(px[j], l);
        else
            for (int j = 0; j < v; j++) pd[j] += scale * ce_exp_f32(px[j], l);
        pd[t[r]] -= scale;
    }
}
TG_ISA_CLONES_VOID(backward_f32,
                   (const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, const float *lse, float scale,
                    float *dx, bool store),
                   (x, t, lo, hi, v, lse, scale, dx, store))

/* the entry points declared in kernels_internal.h (the clones stay static:
 * see there) */
int tg_cross_entropy_forward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, float *lse,
                                 double *total, int64_t *where)
{
    return forward_f32(x, t, lo, hi, v, lse, total, where);
}

void tg_cross_entropy_backward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, const float *lse,
                                   float scale, float *dx, bool store)
{
    backward_f32(x, t, lo, hi, v, lse, scale, dx, store);
}
