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
 *   a = |z| < 3/4: erf a = a S(a^2), S a degree-5 polynomial;
 *   a >= 3/4:      erfc a = exp(-a^2) P(a) / Q(a), P degree 2, Q degree 3,
 *                 (erfc a = 0 taken for a >= 4, where erfc < 1.6e-8);
 *   then Phi = 1/2 + erf(z)/2 for a < 3/4, 1 - erfc/2 (z > 0) or erfc/2 (z < 0).
 *   The coefficients are a minimax fit (Lawson-weighted least squares, made
 *   for this file) of erf on [0, 3/4] (max error 5.4e-10) and of erfc(a) e^(a^2)
 *   on [3/4, 4] (max error of erfc 9.3e-10). tests/test_ops_speedcheck.c checks
 *   1 + erf against the f64 libm erf over a dense grid (<= 2e-7). For z < 0
 *   Phi keeps relative accuracy (1e-4) in the tail, where 1 + erf z cancels.
 *   GELU's backward needs exp(-x^2 / 2) = exp(-z^2), returned in e. */
#ifndef TG_FASTMATH_INTERNAL_H
#define TG_FASTMATH_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Hot f32 loops are also compiled for x86-64-v3 (AVX2 + FMA: 8 lanes
 * instead of SSE2's 4, and a fused multiply-add per polynomial step) and
 * picked at load time on CPUs that have it (GCC on x86-64 Linux). The
 * library is built with -ffp-contract=fast, which only the v3 clone can
 * act on: the two clones round differently (by an ulp or so); each is
 * deterministic. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define TG_VEC_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TG_VEC_CLONES
#endif

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

static inline float tg_fexp(float x)
{
    x = tg_fsel(x > -87.0f, x, -87.0f); /* NaN too: any input gives a defined result */
    x = tg_fsel(x < 0.0f, x, 0.0f);
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float t = x * 1.44269504088896341f + shifter;
    int32_t bits;
    memcpy(&bits, &t, sizeof bits);
    int32_t k = bits - 0x4B400000; /* the integer t - shifter, in the low bits */
    float kf = t - shifter;
    float r = (x - kf * 0.693145751953125f) - kf * 1.42860682030941723212e-6f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t sb = (k + 127) << 23;
    float scale;
    memcpy(&scale, &sb, sizeof scale);
    return p * scale;
}

static inline float tg_fphi(float z, float *e)
{
    float a = fabsf(z);
    float s = a * a;
    *e = tg_fexp(-s);
    /* a < 3/4: erf a = a S(s); halved, with the constant term added last */
    float sp = -0.0006627845957251112f;
    sp = sp * s + 0.005095402113065542f;
    sp = sp * s - 0.02682388137945474f;
    sp = sp * s + 0.11283109379657796f;
    sp = sp * s - 0.3761259153324016f;
    float half_erf = a * (0.5f * 1.1283791576833315f) + (a * s) * (0.5f * sp);
    /* a >= 3/4: erfc a = e P(a) / Q(a) */
    float ac = tg_fsel(a < 4.0f, a, 4.0f);
    float p = 0.22371330834081163f;
    p = p * ac + 0.7283220815093285f;
    p = p * ac + 1.0004240570667122f;
    float q = 0.39476672169791305f;
    q = q * ac + 1.3116491437446407f;
    q = q * ac + 1.8598480310515924f;
    q = q * ac + 1.0f;
    float r = 0.5f * (*e * p / q);   /* computed for every a: no branch */
    float half_erfc = tg_fsel(a < 4.0f, r, 0.0f);
    int neg = z < 0;
    float small = tg_fsel(neg, 0.5f - half_erf, 0.5f + half_erf);
    float large = tg_fsel(neg, half_erfc, 1.0f - half_erfc);
    return tg_fsel(a < 0.75f, small, large);
}

#endif
