/* The packing of the bf16 product's vdpbf16ps kernel (ops/sgemm_bf16_avx512.c
 * describes when each runs): f32 operands rounded to bf16 by vcvtne2ps2bf16
 * (the rounding of ops/bf16_internal.h) and laid out as pairs of k.
 *
 * Where k runs along a row in memory (A as stored, B stored transposed),
 * 32 floats of a row round to 16 pairs in order: A's rows are stored so,
 * and 16 rows of B's are turned by a 16 x 16 word transpose into 16
 * vectors, one per pair. Where k runs down the columns (A stored
 * transposed, B as stored), rows k and k + 1 round to one vector of 32
 * bf16, the row k in its low half, and a word shuffle interleaves the
 * halves into 16 pairs. */
#include "../core/isa_internal.h"

#ifdef TG_AVX2_KERNELS
#include "sgemm_bf16_avx512_pack_internal.h"

enum { PF = 8 }; /* pairs of rows of B ahead that its packing prefetches */

/* 32 floats of a row from src (w of them, the rest zero) rounded to 16
 * pairs: word d = (src[2d], src[2d + 1]) */
AVX512BF16 INLINE __m512i row_pairs(const float *src, int w)
{
    const __m512 lo = w >= 16 ? _mm512_loadu_ps(src) : _mm512_maskz_loadu_ps(lanes(w), src);
    const __m512 hi = w >= 32 ? _mm512_loadu_ps(src + 16) : _mm512_maskz_loadu_ps(lanes(w - 16), src + 16);
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* the word shuffle that interleaves two halves of 16 bf16 each */
AVX512BF16 INLINE __m512i interleave_index(void)
{
    return _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4,
                            19, 3, 18, 2, 17, 1, 16, 0);
}

/* 16 floats of row k and of row k + 1 (w of each, the rest zero; no row
 * k + 1 when !second) rounded and interleaved by inter
 * (interleave_index): word d = (k[d], k1[d]) */
AVX512BF16 INLINE __m512i column_pairs(__m512i inter, const float *k0, const float *k1, bool second, int w)
{
    const __mmask16 m = lanes(w);
    const __m512 lo = w >= 16 ? _mm512_loadu_ps(k0) : _mm512_maskz_loadu_ps(m, k0);
    const __m512 hi = !second ? _mm512_setzero_ps() : w >= 16 ? _mm512_loadu_ps(k1) : _mm512_maskz_loadu_ps(m, k1);
    return _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* x[c] becomes column c of the 16 x 16 block of words whose row r was
 * x[r]: pairs of words within 128-bit lanes, then pairs of those, then
 * whole lanes in two rounds */
AVX512BF16 INLINE void transpose16(__m512i x[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(x[2 * i], x[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(x[2 * i], x[2 * i + 1]);
    }
    /* u[4i + m], lane L: column 4L + m of rows 4i .. 4i + 3 */
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* column 4L + m is lane L of u[m], u[4 + m], u[8 + m], u[12 + m] */
    for (int m = 0; m < 4; m++) {
        const __m512i p = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x88), q = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xDD);
        const __m512i r = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x88),
                      w = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xDD);
        x[m] = _mm512_shuffle_i32x4(p, r, 0x88);
        x[8 + m] = _mm512_shuffle_i32x4(p, r, 0xDD);
        x[4 + m] = _mm512_shuffle_i32x4(q, w, 0x88);
        x[12 + m] = _mm512_shuffle_i32x4(q, w, 0xDD);
    }
}

/* n rows of kc floats (ss apart; rows n .. 15 zero) as pairs, the words
 * of pair p (one per row) stored whole at dst + p ds in increasing p (so
 * ds < 16 overlaps the next pair's, which is stored after; the last store
 * reaches dst + (kp - 1) ds + 16) */
AVX512BF16 INLINE void transpose_rows(uint32_t *dst, int64_t ds, const float *src, int64_t ss, int n, int kc)
{
    __m512i x[16];
    for (int k0 = 0; k0 < kc; k0 += 32) {
        const int w = kc - k0 < 32 ? kc - k0 : 32, pairs = (w + 1) / 2;
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) x[r] = r < n ? row_pairs(src + r * ss + k0, w) : _mm512_setzero_si512();
        transpose16(x);
        uint32_t *d = dst + (int64_t)(k0 / 2) * ds;
        if (pairs == 16) {
#pragma GCC unroll 16
            for (int p = 0; p < 16; p++) _mm512_storeu_si512(d + p * ds, x[p]);
        } else
            for (int p = 0; p < pairs; p++) _mm512_storeu_si512(d + p * ds, x[p]);
    }
}

AVX512BF16 void tg_bf16x512_pack_a(const float *a, int lda, int mr, int kc, uint32_t *restrict dst)
{
    const __m512i inter = interleave_index();
    for (int k = 0; k < kc; k += 2, a += 2 * (int64_t)lda, dst += MR)
        _mm512_storeu_si512(dst, column_pairs(inter, a, a + lda, k + 1 < kc, mr));
}

AVX512BF16 void tg_bf16x512_round_rows(const float *a, int lda, int mr, int kc, uint32_t *restrict dst, int64_t ds)
{
    /* 32 floats of each row in turn: mr streams of loads in flight, where
     * a row at a time waits for each row's first lines */
    for (int k0 = 0; k0 < kc; k0 += 32)
        for (int r = 0; r < mr; r++)
            _mm512_storeu_si512(dst + r * ds + k0 / 2, row_pairs(a + r * (int64_t)lda + k0, kc - k0));
}

AVX512BF16 void tg_bf16x512_pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc,
                                   uint32_t *restrict dst)
{
    const int kp = (kc + 1) / 2;
    const int64_t ps = (int64_t)kp * NR; /* words per panel */
    if (!tb) {
        /* B (K,N): a panel at a time, rows k and k + 1 of its 32 columns
         * for each pair, so that the stores run along the panel (panels
         * are a multiple of 4 KiB apart: stored across, every one of them
         * would fall in one L1 set), and rows PF ahead on their way in */
        const __m512i inter = interleave_index();
        for (int q = 0; q < nc; q += NR, dst += ps) {
            const float *r0 = B + (int64_t)k0 * ldb + j0 + q;
            uint32_t *d = dst;
            for (int p = 0; p < kp; p++, r0 += 2 * (int64_t)ldb, d += NR) {
                const bool second = 2 * p + 1 < kc;
                pf0(r0, PF * (int64_t)ldb), pf0(r0, PF * (int64_t)ldb + 16);
                _mm512_storeu_si512(d, column_pairs(inter, r0, r0 + ldb, second, nc - q));
                _mm512_storeu_si512(d + 16, column_pairs(inter, r0 + 16, r0 + ldb + 16, second, nc - q - 16));
            }
        }
        return;
    }
    /* B stored (N,K): column j of op(B) is row j of B; a panel's two
     * 16-column halves are transposes of 16 rows of B each (zero past nc) */
    for (int q = 0; q < nc; q += NR, dst += ps) {
        const int w = nc - q < NR ? nc - q : NR;
        const float *src = B + (int64_t)(j0 + q) * ldb + k0;
        transpose_rows(dst, NR, src, ldb, w < 16 ? w : 16, kc);
        transpose_rows(dst + 16, NR, src + (int64_t)16 * ldb, ldb, w - 16, kc);
    }
}

#endif
