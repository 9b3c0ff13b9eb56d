/* The tuned f32 kernels of cross-entropy (ops/loss.c has the maths, the
 * checks, the f64 reference and the recording). */
#include <math.h>

#include "fastmath_internal.h"
#include "kernels_f32_internal.h"

/* e^(x - m) with m >= x. f32: the call-free exp of fastmath_internal.h (a
 * few ulps; the loops vectorise), exactly 0 for a -inf logit as libm's. */
static inline float ce_exp_f32(float x, float m) { return tg_fsel(x != -INFINITY, tg_fexp(x - m), 0.0f); }

DEFINE_CE(float, ce_exp_f32, logf, TG_VEC_CLONES)

/* the entry points of kernels_f32_internal.h */
int tg_cross_entropy_forward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, float *lse,
                                 double *total, int64_t *where)
{
    return forward_float(x, t, lo, hi, v, lse, total, where);
}

void tg_cross_entropy_backward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, const float *lse,
                                   float scale, float *dx, bool store)
{
    backward_float(x, t, lo, hi, v, lse, scale, dx, store);
}
