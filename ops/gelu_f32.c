/* The tuned f32 kernels of GELU, exact (erf) form (ops/unary.c has the
 * maths, the checks, the f64 reference and the recording). */
#include "kernels_internal.h"

#include <math.h>

#include "fastmath_internal.h"

#define INV_SQRT2 0.70710678118654752440

/* f32 GELU (erf): y = x Phi(x), dx += dy (Phi(x) + x phi(x)) */
TG_KERNEL_BODY void gelu_forward_f32_body(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++) {
        float e;
        y[i] = x[i] * tg_fphi(x[i] * (float)INV_SQRT2, &e);
    }
}
TG_ISA_CLONES_VOID(gelu_forward_f32, (int64_t n, const float *restrict x, float *restrict y), (n, x, y))

/* gelu' x = Phi(x) + x phi(x) with z = x / sqrt 2, a = |z|, e = exp(-a^2):
 * Phi = h or 1 - h (z < 0 or not), h = e (1 + a V(a)) / 2 (fastmath),
 * x phi(x) = -+ a e / sqrt(pi); so gelu' = q (z < 0) or 1 - q,
 * q = e (1 + a (V(a) - 2 / sqrt(pi))) / 2: one expression, no separate
 * x phi term. Past a = 4 V is used beyond its fit, where e < 1.2e-7 makes
 * its error negligible. For a^2 >= 87 (|x| > 13.2, where x phi(x) is
 * below float's smallest normal) it is the step [x > 0], as in f64; x =
 * +-inf gives NaN (as f64's Phi + x phi = 1 + inf 0, and PyTorch), and NaN
 * gives NaN. (Not x times the clamped exp(-87) / sqrt(2 pi): 2.97 at
 * x = 3e38.) */
static inline float gelu_grad_f32(float x)
{
    const float z = x * (float)INV_SQRT2, a = fabsf(z), s = a * a;
    const float e = tg_fexp_unclamped(-s);
    const float t = a * (tg_ferfc_v(a) - 1.1283791670955126f); /* 2 / sqrt(pi) */
    const float q = 0.5f * (e + e * t);
    const int neg = z < 0;
    const float far = tg_fsel(neg, 0.0f, 1.0f) + (x - x);   /* x phi(x) is 0 there; x - x: NaN at +-inf, NaN */
    return tg_fsel(s < 87.0f, tg_fsel(neg, q, 1.0f - q), far);
}

TG_KERNEL_BODY void gelu_backward_f32_body(int64_t n, const float *restrict x, const float *restrict dy,
                                           float *restrict dx, bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * gelu_grad_f32(x[i]);
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_grad_f32(x[i]);
}
TG_ISA_CLONES_VOID(gelu_backward_f32, (int64_t n, const float *restrict x, const float *restrict dy,
    float *restrict dx, bool acc), (n, x, dy, dx, acc))

/* the entry points declared in kernels_internal.h (the clones stay static:
 * see there) */
void tg_gelu_forward_f32(int64_t n, const float *x, float *y) { gelu_forward_f32(n, x, y); }

void tg_gelu_backward_f32(int64_t n, const float *x, const float *dy, float *dx, bool acc)
{
    gelu_backward_f32(n, x, dy, dx, acc);
}
