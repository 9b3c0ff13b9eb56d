/* tapegrad's f32 gemm on the avx512 kernel path (core/cpu.h): the AVX-512
 * counterpart of ops/sgemm.c's AVX2 kernel, which tg_sgemm_kernel,
 * tg_sgemm_tiles and tg_sgemm call when tg_cpu_avx512() (sgemm_internal.h).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,   row-major, op = as is or ^T
 *
 * The micro-kernel keeps an MR x 32 tile of C in registers (MR = 14 rows
 * of two 16-lane vectors: 28 of the 32 zmm registers); per k it loads one
 * row of B's panel (two vectors) and broadcasts A(i+r, k) for the 14 rows:
 * 28 fused multiply-adds, 16 loads. Zen 4 and 5 start two FMAs a cycle
 * with a 4-cycle latency, so 8 chains would do; 28 leave the loads room.
 *
 * The blocking (BLIS's loops, the two innermost swapped as in ops/sgemm.c):
 *
 *   for each NC columns of C           (jc)
 *     for each kc deep slice of K      (pc)   B(pc.., jc..) in 32-column
 *                                             panels, k-major: kc x NC,
 *                                             768 KiB of the 1 MiB L2
 *       for each MR rows of C          (i)    A's 14 rows of the slice
 *                                             (21 KiB), packed k-major
 *                                             or read in place: in L1
 *         for each 32-column panel     (jr)   the micro-kernel; the panel
 *                                             (kc x 32) streams from L2
 *
 * kc is at most KC_MAX = 384, chosen from K alone (K cut into equal
 * slices, a multiple of 16 but the last), so every call on the same K sums
 * the same slices.
 *
 * Packing. ops/gemm.c cuts a large product into 8 row (or column) blocks,
 * one call each, so a call often packs all of B for few rows of A: a
 * separate pass over B cost 10-14% of a 128-row call of 1024^3. So B
 * stored as is is packed by the first 14 rows' kernels, which read each
 * row of B where it lies (prefetched 16 rows ahead) and store it to the
 * panel as they use it: the copy hides behind the FMAs. B stored
 * transposed is packed before, by 16 x 16 register transposes. A stored
 * transposed is packed the same way by each row panel's first kernel
 * (each k's 14 floats are contiguous: one masked load and store). A
 * stored as is is read in place, its 14 rows through four row pointers
 * and three offsets (packing it by 16 x 16 transposes cost 3-9% of the
 * products), except when its rows are a multiple of 1024 floats apart:
 * then the 14 rows of a k would share one L1 set (12 ways), and they are
 * copied to rows kc + 16 floats apart first (a plain copy, with the next
 * panel's rows prefetched to L2 meanwhile: 1.4% of 1024^3, where the
 * transposes took 3.3%). The first row panel of a block, whose kernels
 * pack B, takes A packed k-major by the transposes.
 *
 * Edges: the kernel is compiled for each row count 1..14 and for one or
 * two vectors of columns, so an edge tile does only its rows and (up to
 * 16) its columns; C is read and stored through AVX-512 masks, never past
 * N or M. B's last panel is zero past N. Rows are shared evenly among row
 * panels (128 = 14 + 6 x 13 + 3 x 12, not 9 x 14 + 2: a panel of a few
 * rows has too few chains of FMAs to cover their latency).
 *
 * Sums: each element of C is alpha times a sum of fused multiply-adds over
 * k in increasing order, one kc slice at a time, added to C as in
 * ops/sgemm.c: the first slice stores alpha acc (fma(beta, C, alpha acc)
 * when beta != 0; beta = 0 never reads C), each later one fma(alpha, acc,
 * C). Nothing depends on which rows or columns a call covers, or on which
 * kernel variant does a tile, so cutting a product into blocks (ops/gemm.c)
 * gives the same bits as one call.
 *
 * tg_sgemm_tiles_avx512 runs the same micro-kernel on A and B where they
 * lie, nothing packed, K unsliced: for the attention's small products. */
#include "sgemm_avx512_internal.h"

#include <stdint.h>
#include <string.h>

#include "../core/parallel_internal.h"
#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#include "avx512_internal.h"

/* rows and columns of C's tile, K's slices, C's column blocks; PF: rows
 * of B (or A) ahead that the packing kernels prefetch */
enum { MR = 14, NR = 32, KC_MAX = 384, NC = 512, PF = 16 };
/* the scratch: B's block, then A's panel (k-major, plus one vector of
 * slack: the transposes store 16 floats a k; or row-major, rows kc + 16
 * floats apart) */
enum { B_FLOATS = KC_MAX * NC, A_FLOATS = (KC_MAX + 16) * MR + 16 };
_Static_assert((B_FLOATS + A_FLOATS) * sizeof(float) <= TG_THREAD_SCRATCH_BYTES, "the packed blocks fit the scratch");
_Static_assert(MR <= 16 && NC % NR == 0 && KC_MAX % 16 == 0, "blocking");

#define INLINE static inline __attribute__((always_inline))

/* The line of p + n floats on its way to L1 (pf0) or L2 (pf1). The
 * address is computed as an integer: it may lie past the operand (a
 * prefetch does not fault), where pointer arithmetic would be undefined. */
INLINE void pf0(const float *p, int64_t n) { _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T0); }
INLINE void pf1(const float *p, int64_t n) { _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T1); }

/* lanes [0, n) of a 16-lane mask: none for n <= 0, all for n >= 16 */
INLINE __mmask16 lanes(int n) { return (__mmask16)(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }

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
        } else
            b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
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

AVX512 INLINE void tile(const int mr, const int nv, int kc, const float *a, int64_t ars, int64_t acs,
                        const float *b, int64_t bs, float *c, int64_t ldc, int nr, float alpha, float beta,
                        int first)
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

/* A row panel's first 32 columns while packing A stored transposed:
 * A(r, k) = a[r + k acs] (r < mr, 12 <= mr <= MR) read where it lies and
 * stored to the panel ad[k MR + r] as it is used (wide: 16 floats
 * readable at each k). b: B's first packed panel. */
typedef void apacking_fn(int kc, const float *a, int64_t acs, float *restrict ad, const float *b, float *c,
                         int64_t ldc, int nr, float alpha, float beta, int first, int wide);
#define APACKING(mr)                                                                                                \
    AVX512 static void apacking_##mr(int kc, const float *a, int64_t acs, float *restrict ad, const float *b,      \
                                     float *c, int64_t ldc, int nr, float alpha, float beta, int first, int wide)  \
    {                                                                                                               \
        tile_body(mr, 2, 0, 1, 0, kc, a, 1, acs, ad, b, NR, NULL, c, ldc, nr, alpha, beta, first, wide);           \
    }
APACKING(12)
APACKING(13)
APACKING(14)
static apacking_fn *const APACKING_KERNEL[3] = {apacking_12, apacking_13, apacking_14};

/* A block's first MR rows while packing B stored as is: row k of B read
 * where it lies (b + k ldb, columns past nr masked off) and stored to the
 * panel bc + k NR as it is used, so the pass that packs B also computes
 * (and its loads, from L3 or memory, hide behind the FMAs). a: A's packed
 * panel. */
AVX512 static void packing_kernel_1(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                    float *c, int64_t ldc, int nr, float alpha, float beta, int first)
{
    tile_body(MR, 1, 1, 0, 0, kc, a, 1, MR, NULL, b, ldb, bc, c, ldc, nr, alpha, beta, first, 0);
}
AVX512 static void packing_kernel_2(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                    float *c, int64_t ldc, int nr, float alpha, float beta, int first)
{
    tile_body(MR, 2, 1, 0, 0, kc, a, 1, MR, NULL, b, ldb, bc, c, ldc, nr, alpha, beta, first, 0);
}

/* The kernels, for each row count and vector count: packed or
 * column-strided A (ars = 1: A(r,k) = a[r + k acs]; kc_*), and A with any
 * strides (kr_*, for tg_sgemm_tiles on A as stored). */
typedef void kernel_fn(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs, float *c,
                       int64_t ldc, int nr, float alpha, float beta, int first);

#define KERNELS(mr)                                                                                                 \
    AVX512 static void kc_##mr##_1(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs,  \
                                   float *c, int64_t ldc, int nr, float alpha, float beta, int first)             \
    {                                                                                                               \
        (void)ars;                                                                                                  \
        tile(mr, 1, kc, a, 1, acs, b, bs, c, ldc, nr, alpha, beta, first);                                         \
    }                                                                                                               \
    AVX512 static void kc_##mr##_2(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs,  \
                                   float *c, int64_t ldc, int nr, float alpha, float beta, int first)             \
    {                                                                                                               \
        (void)ars;                                                                                                  \
        tile(mr, 2, kc, a, 1, acs, b, bs, c, ldc, nr, alpha, beta, first);                                         \
    }                                                                                                               \
    AVX512 static void kr_##mr##_1(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs,  \
                                   float *c, int64_t ldc, int nr, float alpha, float beta, int first)             \
    {                                                                                                               \
        tile_rows(mr, 1, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, beta, first);                                  \
    }                                                                                                               \
    AVX512 static void kr_##mr##_2(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs,  \
                                   float *c, int64_t ldc, int nr, float alpha, float beta, int first)             \
    {                                                                                                               \
        tile_rows(mr, 2, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, beta, first);                                  \
    }

KERNELS(1)
KERNELS(2)
KERNELS(3)
KERNELS(4)
KERNELS(5)
KERNELS(6)
KERNELS(7)
KERNELS(8)
KERNELS(9)
KERNELS(10)
KERNELS(11)
KERNELS(12)
KERNELS(13)
KERNELS(14)
_Static_assert(MR == 14, "one KERNELS line per row count");

/* [column-strided or packed A, row-strided A][mr - 1][nv - 1] */
static kernel_fn *const KERNEL[2][MR][2] = {
    {{kc_1_1, kc_1_2}, {kc_2_1, kc_2_2}, {kc_3_1, kc_3_2}, {kc_4_1, kc_4_2}, {kc_5_1, kc_5_2}, {kc_6_1, kc_6_2},
     {kc_7_1, kc_7_2}, {kc_8_1, kc_8_2}, {kc_9_1, kc_9_2}, {kc_10_1, kc_10_2}, {kc_11_1, kc_11_2},
     {kc_12_1, kc_12_2}, {kc_13_1, kc_13_2}, {kc_14_1, kc_14_2}},
    {{kr_1_1, kr_1_2}, {kr_2_1, kr_2_2}, {kr_3_1, kr_3_2}, {kr_4_1, kr_4_2}, {kr_5_1, kr_5_2}, {kr_6_1, kr_6_2},
     {kr_7_1, kr_7_2}, {kr_8_1, kr_8_2}, {kr_9_1, kr_9_2}, {kr_10_1, kr_10_2}, {kr_11_1, kr_11_2},
     {kr_12_1, kr_12_2}, {kr_13_1, kr_13_2}, {kr_14_1, kr_14_2}},
};

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
            x[r] = r >= n ? _mm512_setzero_ps() : w == 16 ? _mm512_loadu_ps(src + r * ss + k0)
                                                          : _mm512_maskz_loadu_ps(m, src + r * ss + k0);
        transpose16(x, t);
        if (w == 16) {
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
        } else
            for (int k = 0; k < w; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
    }
}

/* mr <= MR rows of op(A) over kc of K, packed k-major: dst[k MR + r] =
 * op(A)(r, k) for r < mr, where op(A)(r, k) = a[k lda + r] (A stored
 * transposed: each k's mr floats contiguous, one masked load and store)
 * or a[r lda + k] (as stored: 16 x 16 register transposes). The rest of
 * each k's MR floats is not read; dst needs 16 floats of slack. wide:
 * 16 floats are readable at each k of A stored transposed. */
AVX512 static void pack_a(bool ta, const float *a, int lda, int mr, int kc, float *restrict dst, bool wide)
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
AVX512 static void copy_rows(float *restrict dst, int64_t ds, const float *src, int64_t ss, int n, int kc)
{
    const __mmask16 m = lanes(kc % 16);
    const int full = kc / 16 * 16;
    for (int r = 0; r < n; r++, dst += ds, src += ss) {
        for (int k = 0; k < full; k += 16) _mm512_storeu_ps(dst + k, _mm512_loadu_ps(src + k));
        if (full < kc) _mm512_mask_storeu_ps(dst + full, m, _mm512_maskz_loadu_ps(m, src + full));
    }
}

/* op(B)[k0 .. k0+kc) x [j0 .. j0+nc) into 32-column panels: panel q holds
 * columns j0 + 32 q .. as kc rows of 32 floats, zero past nc (or, for B
 * stored transposed, the second 16 not written when the panel has at most
 * 16 columns: the one-vector kernels that do it never read them). For B
 * stored as is, the packing kernels do the same as they compute; this is
 * for products of fewer than MR rows. */
AVX512 static void pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict dst)
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

/* Rows of the row panel that starts with rem rows left: all of them if
 * at most MR, else rem shared evenly among the fewest panels of at most
 * MR (1024 = 73 x 14 + 2 would leave a 2-row panel, which the kernel does
 * at half its speed: 4 chains of FMAs do not cover their latency). */
static int panel_rows(int rem)
{
    if (rem <= MR) return rem;
    const int panels = (rem + MR - 1) / MR;
    return (rem + panels - 1) / panels;
}

/* the slice depth for K: K cut into equal slices of at most KC_MAX, a
 * multiple of 16 but the last. Depends on K alone. */
static int slice_depth(int K)
{
    const int n = (K + KC_MAX - 1) / KC_MAX, kc = (K + n - 1) / n;
    return (kc + 15) / 16 * 16;
}

/* scratch: B's block (B_FLOATS), then A's panel (A_FLOATS), 64-byte
 * aligned */
AVX512 static void sgemm_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc, float *restrict scratch)
{
    float *const bp = scratch, *const ap = scratch + B_FLOATS;
    const int kcs = slice_depth(K);
    /* B stored as is is packed by the first MR rows' kernels */
    const bool fuse_b = !tb && M >= MR;
    /* A stored transposed is packed by each panel's first kernel; A stored
     * as is is read in place, but when its rows are a multiple of 4 KiB
     * apart (they would share one L1 set): then copied to rows kc + 16
     * floats apart */
    const bool fuse_a = ta, in_place = !ta && lda % 1024 != 0;
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += kcs) {
            const int kc = K - pc < kcs ? K - pc : kcs, first = pc == 0;
            if (!fuse_b) pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
            for (int i = 0, mr; i < M; i += mr) {
                /* the first panel packs B (fuse_b: M >= MR): MR rows */
                mr = fuse_b && i == 0 ? MR : panel_rows(M - i);
                float *c = C + (int64_t)i * ldc + jc;
                /* A(i+r, pc+k) = a0[r ars + k acs]; wide: A stored transposed
                 * has 16 floats at each k from row i on */
                const float *a0 = A + (ta ? (int64_t)pc * lda + i : (int64_t)i * lda + pc);
                const bool wide = ta && i + 16 <= M;
                int jr = 0;
                if (fuse_b && i == 0) {
                    const float *b = B + (int64_t)pc * ldb + jc;
                    pack_a(ta, a0, lda, mr, kc, ap, wide);
                    for (; jr < nc; jr += NR) {
                        const int nr = nc - jr < NR ? nc - jr : NR;
                        (nr > 16 ? packing_kernel_2 : packing_kernel_1)(kc, ap, b + jr, ldb, bp + (int64_t)jr * kc,
                                                                       c + jr, ldc, nr, alpha, beta, first);
                    }
                    continue;
                }
                if (!ta) {
                    /* A's rows in place, or copied kc + 16 floats apart */
                    const float *a = a0;
                    int64_t ars = lda;
                    if (!in_place) {
                        copy_rows(ap, kc + 16, a0, lda, mr, kc);
                        a = ap, ars = kc + 16;
                    }
                    kernel_fn *const *kern = KERNEL[1][mr - 1];
                    /* the next row panel's A on its way to L2, a share
                     * after each kernel: per of the lines of its mr2 x kc */
                    const int mr2 = panel_rows(M - i - mr), lines = (kc + 15) / 16,
                              calls = (nc - jr + NR - 1) / NR;
                    const int per = mr2 > 0 ? (mr2 * lines + calls - 1) / calls : 0;
                    /* (row, line) counted along (l / lines and l % lines: the
                     * divisions were about 1% of a Llama training step) */
                    int pr = 0, pl = 0;
                    for (; jr < nc; jr += NR) {
                        const int nr = nc - jr < NR ? nc - jr : NR;
                        kern[nr > 16](kc, a, ars, 1, bp + (int64_t)jr * kc, NR, c + jr, ldc, nr, alpha, beta, first);
                        for (int l = 0; l < per && pr < mr2; l++) {
                            pf1(a0, (int64_t)(mr + pr) * lda + 16 * pl);
                            if (++pl == lines) pl = 0, pr++;
                        }
                    }
                    continue;
                }
                if (fuse_a && mr >= 12 && nc > 16) {
                    const int nr = nc < NR ? nc : NR;
                    APACKING_KERNEL[mr - 12](kc, a0, lda, ap, bp, c, ldc, nr, alpha, beta, first, wide);
                    jr = NR;
                } else
                    pack_a(ta, a0, lda, mr, kc, ap, wide);
                kernel_fn *const *kern = KERNEL[0][mr - 1];
                for (; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    kern[nr > 16](kc, ap, 1, MR, bp + (int64_t)jr * kc, NR, c + jr, ldc, nr, alpha, beta, first);
                }
            }
        }
    }
}

bool tg_sgemm_kernel_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc)
{
    if (K <= 0 || !tg_cpu_avx512()) return false;
    if (M <= 0 || N <= 0) return true;
    float *scratch = tg_thread_scratch();
    if (!scratch) return false;
    sgemm_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, scratch);
    return true;
}

/* tg_sgemm_tiles on this path: MR-row strips of A read in place (one
 * pointer stepping k when A is stored transposed, ars = 1), B's rows in
 * place, one 32-column sliver of B at a time (16 at the edge: B is read
 * only up to N rounded up to 16). */
AVX512 static void tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs,
                                const float *b, int64_t ldb, float *c, int64_t ldc, bool add)
{
    const int mode = ars != 1;
    for (int j = 0; j < N; j += NR) {
        const int nr = N - j < NR ? N - j : NR;
        for (int i = 0, mr; i < M; i += mr) {
            mr = panel_rows(M - i);
            KERNEL[mode][mr - 1][nr > 16](K, a + (int64_t)i * ars, ars, acs, b + j, ldb, c + (int64_t)i * ldc + j,
                                          ldc, nr, alpha, add ? 1.0f : 0.0f, 1);
        }
    }
}

void tg_sgemm_tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs,
                           const float *b, int64_t ldb, float *c, int64_t ldc, bool add)
{
    if (M > 0 && N > 0) tiles_avx512(M, N, K, alpha, a, ars, acs, b, ldb, c, ldc, add);
}

#else

bool tg_sgemm_kernel_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    return false;
}

void tg_sgemm_tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs,
                           const float *b, int64_t ldb, float *c, int64_t ldc, bool add)
{
    (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)ars, (void)acs, (void)b, (void)ldb, (void)c, (void)ldc;
    (void)add;
}

#endif
