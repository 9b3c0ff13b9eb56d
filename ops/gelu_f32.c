/* The tuned f32 kernels of GELU, the exact (erf) form and GPT-2's tanh
 * form (ops/unary.c has the maths, the checks, the f64 references and the
 * recording). */
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
    const float far = tg_fsel(neg, 0.0f, 1.0f) + (x - x); /* x phi(x) is 0 there; x - x: NaN at +-inf, NaN */
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
TG_ISA_CLONES_VOID(gelu_backward_f32,
                   (int64_t n, const float *restrict x, const float *restrict dy, float *restrict dx, bool acc),
                   (n, x, dy, dx, acc))

/* ---- the tanh form -------------------------------------------------- */

/* y = x (1 + tanh u) / 2, u = k (x + c x^3), k = sqrt(2 / pi), c = 0.044715,
 * is x s with s = (1 + tanh u) / 2 = 1 / (1 + exp(-2u)). From a = 2|u| =
 * |x| (2k + 2kc x^2) and e = exp(-a) (fastmath's, a few ulps):
 *   s = 1 / (1 + e) (x >= 0) or e / (1 + e) (x < 0),
 *   gelu' = s + 2 x u' s (1 - s),  s (1 - s) = e / (1 + e)^2,
 *   2 u' = 2k + 6kc x^2  (as 1 - tanh^2 u = 4 s (1 - s)):
 * one exp and one division, and no subtraction, so s keeps its relative
 * accuracy in the negative tail, where the f64 reference's 1 + tanh u
 * cancels. For a >= 87 (|x| > 9.99), where e < 1.7e-38 and the
 * reference's 1 + tanh u is 0 or 2 already, s and gelu' are the step
 * [x > 0]; as in f64, x = -inf gives y = NaN (-inf 0), x = +-inf gives
 * gelu' = NaN (1 + inf 0), and NaN gives NaN. */
#define K2 1.5957691216057308f /* 2k */
#define K2C 0.07135481627260025f /* 2kc */
#define K6C 0.21406444881780076f /* 6kc */

/* a = 2|u| and e = exp(-a), meaningful for a < 87 (garbage beyond, or
 * NaN: the callers select it away) */
static inline float gelu_tanh_e(float x, float x2, float *a)
{
    *a = fabsf(x) * (K2 + K2C * x2);
    return tg_fexp_unclamped(-*a);
}

/* y = x / (1 + e) or x e / (1 + e): one rounding fewer than x s */
TG_KERNEL_BODY void gelu_tanh_forward_f32_body(int64_t n, const float *restrict x, float *restrict y)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        float a;
        const float e = gelu_tanh_e(v, v * v, &a);
        const float near = tg_fsel(v < 0, v * e, v) / (1.0f + e);
        y[i] = tg_fsel(a < 87.0f, near, v * tg_fsel(v > 0, 1.0f, 0.0f));
    }
}
TG_ISA_CLONES_VOID(gelu_tanh_forward_f32, (int64_t n, const float *restrict x, float *restrict y), (n, x, y))

static inline float gelu_tanh_grad_f32(float x)
{
    const float x2 = x * x;
    float a;
    const float e = gelu_tanh_e(x, x2, &a);
    const float r = 1.0f / (1.0f + e);
    const float s = tg_fsel(x < 0, e * r, r);
    const float q = x * (K2 + K6C * x2) * (e * r * r); /* 2 x u' s (1 - s) */
    return tg_fsel(a < 87.0f, s + q, tg_fsel(x > 0, 1.0f, 0.0f) + (x - x)); /* x - x: NaN at +-inf, NaN */
}

TG_KERNEL_BODY void gelu_tanh_backward_f32_body(int64_t n, const float *restrict x, const float *restrict dy,
                                                float *restrict dx, bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * gelu_tanh_grad_f32(x[i]);
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_tanh_grad_f32(x[i]);
}
TG_ISA_CLONES_VOID(gelu_tanh_backward_f32,
                   (int64_t n, const float *restrict x, const float *restrict dy, float *restrict dx, bool acc),
                   (n, x, dy, dx, acc))

/* the entry points declared in kernels_internal.h (the clones stay static:
 * see there) */
void tg_gelu_forward_f32(int64_t n, const float *x, float *y) { gelu_forward_f32(n, x, y); }

void tg_gelu_backward_f32(int64_t n, const float *x, const float *dy, float *dx, bool acc)
{
    gelu_backward_f32(n, x, dy, dx, acc);
}

void tg_gelu_tanh_forward_f32(int64_t n, const float *x, float *y) { gelu_tanh_forward_f32(n, x, y); }

void tg_gelu_tanh_backward_f32(int64_t n, const float *x, const float *dy, float *dx, bool acc)
{
    gelu_tanh_backward_f32(n, x, dy, dx, acc);
}
