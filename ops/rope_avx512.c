/* The f32 rows of RoPE (ops/rope.c's rope_row_float) with AVX-512
 * intrinsics, for the avx512 path: 8 pairs (interleaved) or 16 (halves)
 * at a time, the same float arithmetic in the same order, so the same
 * bits as the plain code on every path:
 *
 *   y0 = x0 c - x1 s,   y1 = x0 s + x1 c   (each product rounded, then the sum)
 *
 * The products and their sum are kept apart with the explicit-rounding
 * intrinsics (_round_ps), which the compiler cannot contract into one
 * multiply-add under the library's -ffp-contract=fast (the plain code is
 * compiled without FMA on the generic path). test_ops_rope compares the
 * two paths bit for bit. */
#include "kernels_internal.h"

#include "../core/isa_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#include "avx512_internal.h"

#define CUR (_MM_FROUND_CUR_DIRECTION)

/* n <= 8 floats at p in the low lanes (the high ones undefined) */
AVX512 static inline __m512 load8(const float *p, int n)
{
    return n >= 8 ? _mm512_castps256_ps512(_mm256_loadu_ps(p)) : _mm512_maskz_loadu_ps(lanes16(n), p);
}

/* (x0 c - x1 s, x0 s + x1 c), products rounded before the sum */
AVX512 static inline __m512 turn0(__m512 x0, __m512 x1, __m512 c, __m512 s)
{
    return _mm512_sub_round_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s), CUR);
}
AVX512 static inline __m512 turn1(__m512 x0, __m512 x1, __m512 c, __m512 s)
{
    return _mm512_add_round_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c), CUR);
}

AVX512 static void row(const float *x, float *y, const float *cs, int half, int n_rot, bool halves, int sign, bool add)
{
    const int hd = 2 * half;
    const __m512 neg = _mm512_set1_ps(sign > 0 ? 1.0f : -1.0f); /* s times +-1: exact */
    if (halves) {
        for (int h = 0; h < n_rot; h++, x += hd, y += hd)
            for (int i = 0; i < half; i += 16) {
                const int n = half - i;
                const __m512 x0 = load16(x + i, n), x1 = load16(x + half + i, n);
                const __m512 c = load16(cs + i, n), s = _mm512_mul_ps(load16(cs + half + i, n), neg);
                __m512 y0 = turn0(x0, x1, c, s), y1 = turn1(x0, x1, c, s);
                if (add) {
                    y0 = _mm512_add_ps(load16(y + i, n), y0);
                    y1 = _mm512_add_ps(load16(y + half + i, n), y1);
                }
                store16(y + i, n, y0);
                store16(y + half + i, n, y1);
            }
        return;
    }
    /* interleaved: 16 floats hold 8 pairs (x0, x1); lanes 2i and 2i+1
     * take pair i's c and s */
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    for (int h = 0; h < n_rot; h++, x += hd, y += hd)
        for (int i = 0; i < half; i += 8) {
            const int np = half - i < 8 ? half - i : 8; /* pairs */
            const __m512 v = load16(x + 2 * i, 2 * np);
            const __m512 c = _mm512_permutexvar_ps(dup, load8(cs + i, np));
            const __m512 s = _mm512_mul_ps(_mm512_permutexvar_ps(dup, load8(cs + half + i, np)), neg);
            const __m512 sw = _mm512_permute_ps(v, 0xB1); /* (x1, x0) in each pair */
            /* even lanes: x0 c - x1 s; odd lanes: x1 c + x0 s */
            const __m512 a = _mm512_mul_ps(v, c), b = _mm512_mul_ps(sw, s);
            __m512 out = _mm512_mask_sub_round_ps(_mm512_add_round_ps(a, b, CUR), 0x5555, a, b, CUR);
            if (add) out = _mm512_add_ps(load16(y + 2 * i, 2 * np), out);
            store16(y + 2 * i, 2 * np, out);
        }
}

bool tg_rope_row_avx512(const float *x, float *y, const float *cs, int half, int n_rot, bool halves, int sign, bool add)
{
    if (!tg_cpu_avx512()) return false;
    row(x, y, cs, half, n_rot, halves, sign, add);
    return true;
}

#else

bool tg_rope_row_avx512(const float *x, float *y, const float *cs, int half, int n_rot, bool halves, int sign, bool add)
{
    (void)x, (void)y, (void)cs, (void)half, (void)n_rot, (void)halves, (void)sign, (void)add;
    return false;
}

#endif
