/* Call-free f32 exp and normal CDF for the hot loops of the f32 kernels.
 * Plain arithmetic with no libm calls and no data-dependent branches (only
 * selects), so loops over them vectorise at -O3. f64 kernels keep libm.
 *
 * tg_fexp(x) for x in [-87, 0]:
 *   x = k ln2 + r, k = round(x / ln2), |r| <= ln2 / 2 (ln2 split in a high
 *   part exact in f32 and a low part); e^r by its Taylor series to r^7
 *   (truncation < 6e-9 relative); 2^k built from the exponent bits. Relative
 *   error a few f32 ulps. Inputs below -87 are clamped to -87 (e^-87 ~ 1.6e-38,
 *   the smallest result kept normal), NaN to -87 and inputs above 0 to 0
 *   (so 2^k never overflows; callers select such lanes away or never pass them).
 *
 * tg_fphi(z, &e) = Phi(z sqrt 2) = (1 + erf z) / 2, and e = exp(-z^2):
 *   one formula for a = |z| < 4, no branch at small a:
 *     erfc a = exp(-a^2) (1 + a VP(a) / VQ(a)),  VP degree 4, VQ degree 5,
 *   a rational fit of erfc(a) e^(a^2) = 1 + a V(a) with value 1 at a = 0
 *   (linearised least squares, Lawson-reweighted towards minimax, made for
 *   this file; relative error 3.9e-10 on [0, 4]). Written as 1 + a V rather
 *   than P / Q so that near a = 0, where Phi is about 1/2 and its error is
 *   absolute, the rounding of V is scaled down by a; e (1 + t) is one
 *   multiply-add. Then Phi = 1 - erfc/2 (z >= 0) or erfc/2 (z < 0), and
 *   erfc a = 0 for a >= 4 (erfc < 1.6e-8 there). exp(-a^2) comes from
 *   tg_fexp_unclamped; e is clamped as tg_fexp would (exp(-87) for
 *   a^2 >= 87 or NaN). tests/test_kernels_f32.c checks 1 + erf against
 *   the f64 libm erf over a dense grid (<= 2e-7; measured 1.8e-7, nearly all
 *   f32 rounding). For z < 0 Phi keeps relative accuracy (measured 2e-6) in
 *   the tail, where 1 + erf z cancels.
 *   GELU's backward needs exp(-x^2 / 2) = exp(-z^2), returned in e. */
#ifndef TG_FASTMATH_INTERNAL_H
#define TG_FASTMATH_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../core/isa_internal.h" /* TG_ISA_CLONES, tg_cpu_avx2, tg_cpu_avx512 */

/* c ? a : b through bit masks: no branch for the compiler to make of it,
 * so both sides are computed and the loop vectorises */
static inline float tg_fsel(int c, float a, float b)
{
    int32_t ia, ib, m = -(int32_t)(c != 0), r;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    r = (ia & m) | (ib & ~m);
    float out;
    memcpy(&out, &r, sizeof out);
    return out;
}

/* e^x for x in [-87, 0] with no clamping: 2^k e^r with k = round(x /
 * ln 2), r = x - k ln 2 (ln 2 in two parts, so r is exact to float), e^r
 * by its degree-7 Taylor polynomial in Estrin's order (three levels of
 * multiply-adds instead of seven in a row: less latency per lane). Outside
 * [-87, 0] the result is meaningless (not UB: the exponent bits are built
 * in unsigned arithmetic); callers select such lanes away. */
static inline float tg_fexp_unclamped(float x)
{
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float t = x * 1.44269504088896341f + shifter;
    uint32_t bits;
    memcpy(&bits, &t, sizeof bits);
    uint32_t sb = (bits - (uint32_t)(0x4B400000 - 127)) << 23; /* 2^k: k + 127 in the exponent */
    float kf = t - shifter;
    float r = (x - kf * 0.693145751953125f) - kf * 1.42860682030941723212e-6f;
    float r2 = r * r, r4 = r2 * r2;
    float p01 = 1.0f + r, p23 = 0.5f + r * (1.0f / 6);
    float p45 = 1.0f / 24 + r * (1.0f / 120), p67 = 1.0f / 720 + r * (1.0f / 5040);
    float p = (p01 + r2 * p23) + r4 * (p45 + r2 * p67);
    float scale;
    memcpy(&scale, &sb, sizeof scale);
    return p * scale;
}

/* e^x, x clamped to [-87, 0] first (NaN gives e^-87): any input gives a
 * defined result */
static inline float tg_fexp(float x)
{
    x = tg_fsel(x > -87.0f, x, -87.0f);
    x = tg_fsel(x < 0.0f, x, 0.0f);
    return tg_fexp_unclamped(x);
}

/* V(a) of erfc a = exp(-a^2) (1 + a V(a)), a = |z| in [0, 4] (see the top;
 * finite and smooth beyond, as VQ has no root for a >= 0), both
 * polynomials in Estrin's order */
static inline float tg_ferfc_v(float a)
{
    float a2 = a * a, a4 = a2 * a2;
    float vp = (-1.1283791979102216f + a * -1.5609477857486262f) +
        a2 * (-0.9596063915633067f + a * -0.30286549076475583f) + a4 * -0.042257663488184966f;
    float vq = (1.0f + a * 2.269581551181068f) + a2 * (2.1951209368428453f + a * 1.1438668734692632f) +
        a4 * (0.32670954133394414f + a * 0.042257663488184966f);
    return vp / vq;
}

static inline float tg_fphi(float z, float *e)
{
    float a = fabsf(z);
    float s = a * a;
    float ex = tg_fexp_unclamped(-s); /* garbage for s > 87 or NaN: selected away below */
    *e = tg_fsel(s < 87.0f, ex, tg_fexp(-87.0f));
    float t = a * tg_ferfc_v(a); /* erfc a = e (1 + t) */
    float half_erfc = tg_fsel(a < 4.0f, 0.5f * (ex + ex * t), 0.0f);
    return tg_fsel(z < 0, half_erfc, 1.0f - half_erfc);
}

#endif
