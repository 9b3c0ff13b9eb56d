/* tapegrad ops (internal): bf16, the operands of the mixed-precision
 * products (ops/sgemm_bf16.c), and one step of their sums.
 *
 * A bf16 is the upper half of an f32: the sign, the same 8 exponent bits
 * and the first 7 of the 23 mantissa bits. tg_bf16_round rounds an f32 to
 * it as vcvtne2ps2bf16 does (Intel's definition; tests/test_gemm_bf16.c
 * checks this CPU's instruction against it over every f32):
 *   - to nearest, ties to even (on the 7 kept bits); past the largest
 *     bf16 to inf;
 *   - |x| < 2^-126 (f32 subnormals) to a zero of x's sign;
 *   - +-inf to itself; a NaN to a quiet NaN (its upper half, quiet bit set).
 * PyTorch rounds every normal value the same (c10::BFloat16); it keeps
 * subnormals as bf16 subnormals, which vdpbf16ps reads as zero anyway.
 *
 * The sums. vdpbf16ps adds two products to each f32 lane: with the odd
 * (upper) pair first,
 *   acc = step(step(acc, a[k+1], b[k+1]), a[k], b[k]),
 * where step(acc, a, b) is acc + a b, the product exact (8 significant
 * bits times 8 fit in 24), the sum rounded once to nearest even, and then
 * a result of magnitude below 2^-126 after that rounding (as if the
 * exponent were unbounded) replaced by a zero of its sign (FTZ); an acc
 * or an operand below 2^-126 is read as a zero of its sign (DAZ). That is
 * Intel's definition and what this Zen 4 does (probed case by case: two
 * roundings, not one; odd first; a product 2^-127 added to 2^-126 kept,
 * so products are not flushed; 2^-126 - 2^-150 flushed, 2^-126 - 2^-151
 * kept). tg_bf16_step computes it in portable C, exactly
 * (tests/test_gemm_bf16.c checks it against vdpbf16ps).
 *
 * Where the plain f32 sum acc + a b (fused or not: the product is exact)
 * is that step: when every nonzero operand has an exponent in [-56, 63]
 * (tg_bf16_plain). Then each product is a multiple of 2^-126 (its lowest
 * bit is at least 2^(-56-7) 2^(-56-7)) below 2^128, so every partial sum
 * is zero or a multiple of 2^-126 (rounding only coarsens the grid): never
 * below 2^-126 but zero, so neither FTZ nor DAZ acts, and an overflow
 * rounds to inf in both. The portable kernels use the plain sum when a
 * panel's operands are all in that range and tg_bf16_step otherwise; the
 * two give the same bits, so which one ran never shows. NaN results are
 * NaN in both, but their payloads may differ. */
#ifndef TG_BF16_INTERNAL_H
#define TG_BF16_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* x rounded to bf16 (the rules above), as its 16 bits. Written with
 * selects, no branches, so that loops of it vectorise. */
static inline uint16_t tg_bf16_round(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    const uint32_t e = u & 0x7f800000u;
    /* to nearest, ties to even: add half a bf16 ulp less one, plus the kept
     * lowest bit; a carry into the exponent is the right result (up to inf) */
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    r = e == 0 ? (u >> 16) & 0x8000u : r; /* zero or subnormal: a signed zero */
    /* inf stays; a NaN keeps its sign and upper payload, made quiet */
    r = e == 0x7f800000u ? (u >> 16) | ((u & 0x007fffffu) ? 0x0040u : 0) : r;
    return (uint16_t)r;
}

/* the f32 that a bf16 is (exact) */
static inline float tg_bf16_float(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x rounded to bf16 and back: the value a product uses for x */
static inline float tg_bf16_rounded(float x) { return tg_bf16_float(tg_bf16_round(x)); }

/* Whether a bf16 operand keeps the plain f32 sum equal to tg_bf16_step
 * (zero, or an exponent in [-56, 63]: the biased exponent in [71, 190]).
 * Takes the f32 bits of a rounded operand. */
static inline bool tg_bf16_plain(uint32_t bits)
{
    const uint32_t e = (bits >> 23) & 0xffu;
    return (bits & 0x7fffffffu) == 0 || (e >= 71 && e <= 190);
}

/* One step of vdpbf16ps's sum in one lane: acc + a b with a and b bf16
 * values (as f32), exactly as the instruction rounds and flushes it (the
 * top comment). The product is exact in double; the sum s and its error e
 * (Knuth's two-sum, exact in double for these magnitudes) give s rounded
 * to odd, whose rounding to f32 is then the exact sum's (53 bits >= 24 +
 * 2); below 2^-126 the rounding is redone 2^64 higher, where f32 has its
 * full precision (the exponent unbounded), to see whether the result stays
 * below 2^-126 and is flushed. */
static inline float tg_bf16_step(float acc, float a, float b)
{
    /* DAZ: inputs below 2^-126 are zeros (the rounding never makes such
     * an operand; an acc is one only if a caller passes it) */
    if (fabsf(acc) < 0x1p-126f) acc = copysignf(0.0f, acc);
    if (fabsf(a) < 0x1p-126f) a = copysignf(0.0f, a);
    if (fabsf(b) < 0x1p-126f) b = copysignf(0.0f, b);
    const double p = (double)a * (double)b, x = acc;
    double s = x + p;
    if (!isfinite(s)) return (float)s; /* inf or NaN, as the f32 sum gives it */
    const double bv = s - x, e = (x - (s - bv)) + (p - bv);
    uint64_t bits;
    memcpy(&bits, &s, sizeof bits);
    if (e != 0 && !(bits & 1)) { /* rounded to odd: one ulp towards the exact sum */
        bits += (e > 0) == (s > 0) ? 1 : (uint64_t)-1;
        memcpy(&s, &bits, sizeof s);
    }
    if (fabs(s) >= 0x1p-126) return (float)s;
    const float t = (float)(s * 0x1p64); /* s's f32 rounding with the exponent unbounded, 2^64 up */
    if (fabsf(t) < 0x1p-62f) return copysignf(0.0f, (float)s); /* (float)s keeps the sign, also of a zero */
    return copysignf(0x1p-126f, (float)s); /* rounded up to the smallest normal */
}

/* The slices of K that every bf16 product sums one at a time (each
 * element of C: a slice's sum from zero, then added to C; the kernels'
 * top comment in ops/sgemm_bf16.c): K cut into equal slices of at most
 * TG_BF16_KC_MAX, a multiple of 32 but the last. Depends on K alone, so
 * both kernels and every cut of a product sum the same slices. */
enum { TG_BF16_KC_MAX = 512 };
static inline int tg_bf16_slice_depth(int K)
{
    const int n = (K + TG_BF16_KC_MAX - 1) / TG_BF16_KC_MAX, kc = (K + n - 1) / n;
    return (kc + 31) / 32 * 32;
}

#endif
