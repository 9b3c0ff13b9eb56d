/* The micro-kernels of the avx512 path's f32 gemm (ops/sgemm_avx512.c
 * describes the whole): one MR x 32 tile of C in registers, compiled for
 * each row count 1..14 and one or two vectors of columns, and the
 * variants that pack A or B as they compute. */
#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include "sgemm_avx512_parts_internal.h"

/* One mr x (16 nv) tile of C, mr, nv, copy and copya constants where this
 * is inlined: C[r][c] (r < mr, c < nr) = alpha acc + beta C on the first
 * slice (beta = 0: C not read), fma(alpha, acc, C) on later ones, where
 * acc = sum_k A(r, k) B(k, c), A(r, k) = a[r ars + k acs] and row k of B
 * is the 16 nv floats at b + k bs. Columns past nr (nr <= 16 nv) are
 * neither read nor written, rows past mr neither. copy: B's rows are also
 * stored to the panel bc (k NR apart; read masked to nr columns, so the
 * panel is zero past them); copya: A's rows (ars = 1) are also stored
 * to the panel ad (k MR apart). */
AVX512 INLINE void tile_body(const int mr, const int nv, const int copy, const int copya, const int arows, int kc,
                             const float *a, int64_t ars, int64_t acs, float *restrict ad, const float *b, int64_t bs,
                             float *restrict bc, float *c, int64_t ldc, int nr, float alpha, float beta, int first,
                             int wide)
{
    /* arows: A's rows ars apart, each read through one of four pointers
     * to rows 0, 4, 8, 12 and the offsets 0, ars, 2 ars, 3 ars (seven
     * registers, where fourteen row pointers would not fit) */
    const float *pa[4] = {a, a + (mr > 4 ? 4 : 0) * ars, a + (mr > 8 ? 8 : 0) * ars, a + (mr > 12 ? 12 : 0) * ars};
    const int64_t off[4] = {0, ars, 2 * ars, 3 * ars};
    const __mmask16 bm0 = lanes(nr), bm1 = lanes(nr - 16);
    /* alpha and beta wait in memory: kept in registers through the loop,
     * they pushed GCC to spill a B vector instead with 13 rows */
    volatile float ab[2] = {alpha, beta};
    __m512 acc[MR][2];
    /* C's tile, wanted after the loop: on its way to L2 meanwhile */
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        pf1(c, r * ldc);
        pf1(c, r * ldc + 16 * nv - 1);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++, a += acs, b += bs) {
        if (arows && k) pa[0] += acs, pa[1] += acs, pa[2] += acs, pa[3] += acs;
        __m512 b0, b1;
        if (copy) { /* B where it lies, stored to its panel as it passes */
            pf0(b, PF * bs);
            if (nv > 1) pf0(b, PF * bs + 31);
            if (nr == 16 * nv) b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
            else b0 = _mm512_maskz_loadu_ps(bm0, b), b1 = nv > 1 ? _mm512_maskz_loadu_ps(bm1, b + 16) : b0;
            _mm512_store_ps(bc + k * NR, b0);
            if (nv > 1) _mm512_store_ps(bc + k * NR + 16, b1);
        } else b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            if (r >= mr) break;
            const __m512 av = _mm512_set1_ps(arows ? pa[r / 4][off[r % 4]] : a[r * ars]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            if (nv > 1) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
        if (copya) { /* A's panel, as it passes (k's mr floats are contiguous) */
            if (wide) _mm512_storeu_ps(ad, _mm512_loadu_ps(a)); /* the panel has a vector of slack */
            else _mm512_mask_storeu_ps(ad, lanes(mr), _mm512_maskz_loadu_ps(lanes(mr), a));
            pf0(a, PF * acs);
            ad += MR;
        }
    }
    alpha = ab[0], beta = ab[1];
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    if (nr == 16 * nv) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            if (r >= mr) break;
            float *cr = c + (int64_t)r * ldc;
#pragma GCC unroll 2
            for (int h = 0; h < nv; h++) {
                __m512 v;
                if (!first) v = _mm512_fmadd_ps(va, acc[r][h], _mm512_loadu_ps(cr + 16 * h));
                else if (beta != 0) v = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cr + 16 * h), _mm512_mul_ps(va, acc[r][h]));
                else v = _mm512_mul_ps(va, acc[r][h]);
                _mm512_storeu_ps(cr + 16 * h, v);
            }
        }
        return;
    }
    const __mmask16 m[2] = {lanes(nr), lanes(nr - 16)};
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        float *cr = c + (int64_t)r * ldc;
#pragma GCC unroll 2
        for (int h = 0; h < nv; h++) {
            __m512 v;
            if (!first) v = _mm512_fmadd_ps(va, acc[r][h], _mm512_maskz_loadu_ps(m[h], cr + 16 * h));
            else if (beta != 0)
                v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m[h], cr + 16 * h), _mm512_mul_ps(va, acc[r][h]));
            else v = _mm512_mul_ps(va, acc[r][h]);
            _mm512_mask_storeu_ps(cr + 16 * h, m[h], v);
        }
    }
}

AVX512 INLINE void tile(const int mr, const int nv, int kc, const float *a, int64_t ars, int64_t acs, const float *b,
                        int64_t bs, float *c, int64_t ldc, int nr, float alpha, float beta, int first)
{
    tile_body(mr, nv, 0, 0, 0, kc, a, ars, acs, NULL, b, bs, NULL, c, ldc, nr, alpha, beta, first, 0);
}

/* the same with A's rows ars apart (A as stored: acs = 1) */
AVX512 INLINE void tile_rows(const int mr, const int nv, int kc, const float *a, int64_t ars, int64_t acs,
                             const float *b, int64_t bs, float *c, int64_t ldc, int nr, float alpha, float beta,
                             int first)
{
    tile_body(mr, nv, 0, 0, 1, kc, a, ars, acs, NULL, b, bs, NULL, c, ldc, nr, alpha, beta, first, 0);
}

#define APACKING(mr)                                                                                                   \
    AVX512 static void apacking_##mr(int kc, const float *a, int64_t acs, float *restrict ad, const float *b,          \
                                     float *c, int64_t ldc, int nr, float alpha, float beta, int first, int wide)      \
    {                                                                                                                  \
        tile_body(mr, 2, 0, 1, 0, kc, a, 1, acs, ad, b, NR, NULL, c, ldc, nr, alpha, beta, first, wide);               \
    }
APACKING(12)
APACKING(13)
APACKING(14)
apacking_fn *const tg_sgemm512_apacking[3] = {apacking_12, apacking_13, apacking_14};

AVX512 void tg_sgemm512_packing_kernel_1(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                         float *c, int64_t ldc, int nr, float alpha, float beta, int first)
{
    tile_body(MR, 1, 1, 0, 0, kc, a, 1, MR, NULL, b, ldb, bc, c, ldc, nr, alpha, beta, first, 0);
}
AVX512 void tg_sgemm512_packing_kernel_2(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                         float *c, int64_t ldc, int nr, float alpha, float beta, int first)
{
    tile_body(MR, 2, 1, 0, 0, kc, a, 1, MR, NULL, b, ldb, bc, c, ldc, nr, alpha, beta, first, 0);
}

/* kc_<rows>_<vectors> and kr_<rows>_<vectors>, for rows 1..14 */
#define KNAME_PASTE(kind, rows, nv) kind##_##rows##_##nv
#define KNAME_(kind, rows, nv) KNAME_PASTE(kind, rows, nv) /* rows (ROWS) expanded first */
#define KNAME(kind, nv) KNAME_(kind, ROWS, nv)
#define ROWS 1
#include "sgemm_avx512_rows.inc"
#define ROWS 2
#include "sgemm_avx512_rows.inc"
#define ROWS 3
#include "sgemm_avx512_rows.inc"
#define ROWS 4
#include "sgemm_avx512_rows.inc"
#define ROWS 5
#include "sgemm_avx512_rows.inc"
#define ROWS 6
#include "sgemm_avx512_rows.inc"
#define ROWS 7
#include "sgemm_avx512_rows.inc"
#define ROWS 8
#include "sgemm_avx512_rows.inc"
#define ROWS 9
#include "sgemm_avx512_rows.inc"
#define ROWS 10
#include "sgemm_avx512_rows.inc"
#define ROWS 11
#include "sgemm_avx512_rows.inc"
#define ROWS 12
#include "sgemm_avx512_rows.inc"
#define ROWS 13
#include "sgemm_avx512_rows.inc"
#define ROWS 14
#include "sgemm_avx512_rows.inc"
#undef KNAME
#undef KNAME_
#undef KNAME_PASTE
_Static_assert(MR == 14, "one ROWS include per row count");

kernel_fn *const tg_sgemm512_kernels[2][MR][2] = {
    {{kc_1_1, kc_1_2},
     {kc_2_1, kc_2_2},
     {kc_3_1, kc_3_2},
     {kc_4_1, kc_4_2},
     {kc_5_1, kc_5_2},
     {kc_6_1, kc_6_2},
     {kc_7_1, kc_7_2},
     {kc_8_1, kc_8_2},
     {kc_9_1, kc_9_2},
     {kc_10_1, kc_10_2},
     {kc_11_1, kc_11_2},
     {kc_12_1, kc_12_2},
     {kc_13_1, kc_13_2},
     {kc_14_1, kc_14_2}},
    {{kr_1_1, kr_1_2},
     {kr_2_1, kr_2_2},
     {kr_3_1, kr_3_2},
     {kr_4_1, kr_4_2},
     {kr_5_1, kr_5_2},
     {kr_6_1, kr_6_2},
     {kr_7_1, kr_7_2},
     {kr_8_1, kr_8_2},
     {kr_9_1, kr_9_2},
     {kr_10_1, kr_10_2},
     {kr_11_1, kr_11_2},
     {kr_12_1, kr_12_2},
     {kr_13_1, kr_13_2},
     {kr_14_1, kr_14_2}},
};

#endif
