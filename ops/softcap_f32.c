/* The tuned f32 kernel of the logit cap's forward, y = s tanh(x / s)
 * (ops/unary.c has the maths, the checks, the f64 reference, the
 * backward and the recording). It runs on the (B,T,V) logits, the
 * largest tensor of a step, where libm's tanhf (a call per element, no
 * vector lanes) cost more than the head's matmul saved elsewhere.
 *
 * tanh u from a = |u|, with no libm call and only selects:
 *   a < 0.3: the odd Taylor series to u^13 (the next term is below
 *            2e-11 there: float rounding is all that is left);
 *   else:    (1 - e) / (1 + e), e = exp(-2a) (fastmath's tg_fexp, a few
 *            ulps; for a >= 0.3, 1 - e >= 0.45, so the subtraction loses
 *            at most a factor 1.2 of e's error); e is clamped at exp(-87)
 *            for a > 43.5, where tanh is 1 in float;
 * then the sign of u; NaN stays NaN. tests/test_kernels_f32.c holds it to
 * the f64 reference on every kernel path. */
#include "kernels_internal.h"

#include <math.h>

#include "fastmath_internal.h"

static inline float ftanh(float u)
{
    const float a = fabsf(u), a2 = a * a, a4 = a2 * a2, a8 = a4 * a4;
    /* a (1 + a2 (c3 + a2 (c5 + ...))) in Estrin's order */
    const float p = (-1.0f / 3 + a2 * (2.0f / 15)) + a4 * (-17.0f / 315 + a2 * (62.0f / 2835)) +
        a8 * ((-1382.0f / 155925 + a2 * (21844.0f / 6081075)));
    const float small = a + a * a2 * p;
    const float e = tg_fexp(-2.0f * a);
    const float big = (1.0f - e) / (1.0f + e);
    const float t = copysignf(tg_fsel(a < 0.3f, small, big), u);
    return tg_fsel(u != u, u, t);
}

TG_KERNEL_BODY void softcap_forward_f32_body(int64_t n, float s, const float *restrict x, float *restrict y)
{
    const float inv = 1.0f / s;
    for (int64_t i = 0; i < n; i++) y[i] = s * ftanh(x[i] * inv);
}
TG_ISA_CLONES_VOID(softcap_forward_f32, (int64_t n, float s, const float *restrict x, float *restrict y), (n, s, x, y))

/* the entry point declared in kernels_internal.h */
void tg_softcap_forward_f32(int64_t n, float s, const float *x, float *y) { softcap_forward_f32(n, s, x, y); }
