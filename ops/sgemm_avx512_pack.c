/* The packing of the avx512 path's f32 gemm (ops/sgemm_avx512.c
 * describes when each runs): A's and B's blocks copied into the layout
 * the micro-kernels read, by 16 x 16 register transposes or plain copies. */
#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include "sgemm_avx512_parts_internal.h"

/* t[c] = column c of the 16 x 16 block whose row r is x[r]: four rounds
 * of two-source shuffles (within 128-bit lanes, then of whole lanes) */
AVX512 INLINE void transpose16(const __m512 x[16], __m512 t[16])
{
    __m512 s[16], u[16];
    for (int j = 0; j < 8; j++) {
        s[2 * j] = _mm512_unpacklo_ps(x[2 * j], x[2 * j + 1]);
        s[2 * j + 1] = _mm512_unpackhi_ps(x[2 * j], x[2 * j + 1]);
    }
    /* u[4g + m], lane L: column 4L + m of rows 4g .. 4g+3 */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(s[4 * g], s[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(s[4 * g], s[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(s[4 * g + 1], s[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(s[4 * g + 1], s[4 * g + 3], 0xEE);
    }
    /* column 4L + m = lane L of u[m], u[4+m], u[8+m], u[12+m] */
    for (int m = 0; m < 4; m++) {
        const __m512 p = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), q = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
        const __m512 r = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88),
                     w = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
        t[m] = _mm512_shuffle_f32x4(p, r, 0x88);
        t[8 + m] = _mm512_shuffle_f32x4(p, r, 0xDD);
        t[4 + m] = _mm512_shuffle_f32x4(q, w, 0x88);
        t[12 + m] = _mm512_shuffle_f32x4(q, w, 0xDD);
    }
}

/* dst[k ds + r] = src[r ss + k] for r < n rows (zero for n <= r < 16) and
 * k < kc: the transpose of n rows of kc floats, each k's 16 floats stored
 * whole at dst + k ds in increasing k (so ds < 16 overlaps the next k,
 * which is stored after; the last store reaches dst + (kc-1) ds + 16) */
AVX512 INLINE void transpose_rows16(float *dst, int64_t ds, const float *src, int64_t ss, int n, int kc)
{
    __m512 x[16], t[16];
    for (int k0 = 0; k0 < kc; k0 += 16) {
        const int w = kc - k0 < 16 ? kc - k0 : 16;
        const __mmask16 m = lanes(w);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            x[r] = r >= n ? _mm512_setzero_ps()
                : w == 16 ? _mm512_loadu_ps(src + r * ss + k0)
                          : _mm512_maskz_loadu_ps(m, src + r * ss + k0);
        transpose16(x, t);
        if (w == 16) {
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
        } else
            for (int k = 0; k < w; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
    }
}

AVX512 void tg_sgemm512_pack_a(bool ta, const float *a, int lda, int mr, int kc, float *restrict dst, bool wide)
{
    if (ta) {
        const __mmask16 m = lanes(mr);
        for (int k = 0; k < kc; k++, a += lda)
            _mm512_storeu_ps(dst + (int64_t)k * MR, wide ? _mm512_loadu_ps(a) : _mm512_maskz_loadu_ps(m, a));
        return;
    }
    transpose_rows16(dst, MR, a, lda, mr, kc);
}

/* dst[r ds + k] = src[r ss + k] for r < n, k < kc: rows copied to a new
 * stride */
AVX512 void tg_sgemm512_copy_rows(float *restrict dst, int64_t ds, const float *src, int64_t ss, int n, int kc)
{
    const __mmask16 m = lanes(kc % 16);
    const int full = kc / 16 * 16;
    for (int r = 0; r < n; r++, dst += ds, src += ss) {
        for (int k = 0; k < full; k += 16) _mm512_storeu_ps(dst + k, _mm512_loadu_ps(src + k));
        if (full < kc) _mm512_mask_storeu_ps(dst + full, m, _mm512_maskz_loadu_ps(m, src + full));
    }
}

AVX512 void tg_sgemm512_pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict dst)
{
    const int64_t ps = (int64_t)kc * NR; /* floats per panel */
    if (!tb) { /* B (K,N): row k of the block is contiguous, read front to back */
        const int full = nc / NR * NR, w = nc - full;
        const __mmask16 m0 = lanes(w), m1 = lanes(w - 16);
        for (int k = 0; k < kc; k++) {
            const float *src = B + (int64_t)(k0 + k) * ldb + j0;
            float *d = dst + (int64_t)k * NR;
            /* a row PF ahead on its way in (rows ldb apart restart the
             * hardware's stream prefetch at every row) */
            if (k + PF < kc)
                for (int q = 0; q < nc; q += 16) pf0(src, PF * (int64_t)ldb + q);
            for (int q = 0; q < full; q += NR, d += ps) {
                _mm512_store_ps(d, _mm512_loadu_ps(src + q));
                _mm512_store_ps(d + 16, _mm512_loadu_ps(src + q + 16));
            }
            if (w) {
                _mm512_store_ps(d, _mm512_maskz_loadu_ps(m0, src + full));
                _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(m1, src + full + 16));
            }
        }
        return;
    }
    /* B stored (N,K): column j of op(B) is row j of B; a panel's two
     * 16-column halves are transposes of 16 rows of B each */
    for (int q = 0; q < nc; q += NR, dst += ps) {
        const int w = nc - q < NR ? nc - q : NR;
        const float *src = B + (int64_t)(j0 + q) * ldb + k0;
        transpose_rows16(dst, NR, src, ldb, w < 16 ? w : 16, kc);
        if (w > 16) transpose_rows16(dst + 16, NR, src + (int64_t)16 * ldb, ldb, w - 16, kc);
    }
}

#endif
