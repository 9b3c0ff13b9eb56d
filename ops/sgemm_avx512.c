/* tapegrad's f32 gemm on the avx512 kernel path (core/cpu.h): the AVX-512
 * twin of ops/sgemm.c's AVX2 kernel, used by tg_sgemm_kernel,
 * tg_sgemm_tiles and tg_sgemm when tg_cpu_avx512() (see gemm_internal.h).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,   row-major, op = as is or ^T
 *
 * The micro-kernel keeps an MR x 32 tile of C (MR = 14 rows, two 16-lane
 * vectors per row: 28 of the 32 zmm registers); per k it loads one row of
 * B's panel (two vectors) and broadcasts A(i+r, k) for the 14 rows, 28
 * fused multiply-adds, one load per two of them. Zen 4 and 5 issue two
 * FMAs a cycle with a 4-cycle latency: 8 in flight cover it, 28 leave
 * room for the loads.
 *
 * The blocking (BLIS's loops, with the two innermost swapped as in
 * ops/sgemm.c):
 *
 *   for each NC columns of C           (jc)
 *     for each kc deep slice of K      (pc)   pack B(pc.., jc..) into 32-
 *                                             column panels, k-major: the
 *                                             block (kc x NC) stays in L2
 *       for each MR rows of C          (ir)   A's rows for this slice,
 *                                             packed k-major (MR floats a
 *                                             k) or read in place: in L1
 *         for each 32-column panel     (jr)   the micro-kernel
 *
 * kc is at most KC_MAX, chosen from K alone (K cut into equal slices), so
 * every call on the same K sums the same slices. B's block is kc x NC
 * floats (384 x 512: 768 KiB of Zen 4/5's 1 MiB L2); A's 14 rows of a
 * slice, 21 KiB, and the B panel passing through (kc x 32, 48 KiB) share
 * the 48 KiB L1, both streamed in order.
 *
 * A's rows are packed when A is stored transposed (each k's 14 floats are
 * contiguous: one masked load and one store) and, when stored as is, by
 * 16 x 16 register transposes: read in place, the 14 rows lda floats
 * apart fall into a few L1 sets when lda is near a multiple of 1024
 * floats (4 KiB); packed, they are one stream. B is packed once per block
 * (by the same transposes when it is stored transposed).
 *
 * Edges: the last panel of B is zero past N; the kernel is compiled for
 * each row count 1..14 and for one or two vectors of columns, so an edge
 * tile does only its rows and (up to 16) columns, and stores C through
 * AVX-512 masks, never past N or M.
 *
 * Sums: each element of C is alpha times a sum of fused multiply-adds over
 * k in increasing order, one kc slice at a time, added to C as in
 * ops/sgemm.c: the first slice stores alpha acc (+ beta C, one FMA, when
 * beta != 0; beta = 0 never reads C), each later one fma(alpha, acc, C).
 * Nothing depends on which rows or columns a call covers, so cutting a
 * product into blocks (ops/gemm.c) gives the same bits as one call.
 *
 * tg_sgemm_tiles_avx512 runs the same micro-kernel on A and B where they
 * lie, nothing packed, K unsliced: for the attention's small products. */
#include "gemm_internal.h"

#include <stdint.h>
#include <string.h>

#include "../core/parallel_internal.h"
#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#ifndef SG5_MR
#define SG5_MR 14
#endif
#ifndef SG5_KC
#define SG5_KC 384
#endif
#ifndef SG5_NC
#define SG5_NC 512
#endif
#ifndef SG5_MC
#define SG5_MC (8 * SG5_MR)
#endif

enum { MR = SG5_MR, NR = 32, KC_MAX = SG5_KC, NC = SG5_NC, MC = SG5_MC };
/* B's block, then A's panels (MC rows when A is stored transposed, MR
 * otherwise; plus one vector of slack: the packing stores 16 floats a k) */
enum { B_FLOATS = KC_MAX * NC, A_FLOATS = KC_MAX * MC + 16 };
_Static_assert((B_FLOATS + A_FLOATS) * sizeof(float) <= TG_THREAD_SCRATCH_BYTES, "the packed blocks fit the scratch");
_Static_assert(MR <= 16 && NC % NR == 0 && KC_MAX % 16 == 0 && MC % MR == 0, "blocking");

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
#define INLINE static inline __attribute__((always_inline))

/* lanes [0, n) of a 16-lane mask: none for n <= 0, all for n >= 16 */
INLINE __mmask16 lanes(int n) { return (__mmask16)(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }

/* One mr x (16 nv) tile of C, mr and nv constants where this is inlined:
 * C[r][c] (r < mr, c < nr) = alpha acc + beta C on the first slice (beta =
 * 0: C not read), fma(alpha, acc, C) on later ones, where acc = sum_k
 * A(r, k) B(k, c), A(r, k) = a[r ars + k acs] and row k of B is the 16 nv
 * floats at b + k bs. Columns past nr (nr <= 16 nv) are neither read nor
 * written, rows past mr neither. */
AVX512 INLINE void tile(const int mr, const int nv, int kc, const float *a, int64_t ars, int64_t acs,
                        const float *b, int64_t bs, float *c, int64_t ldc, int nr, float alpha, float beta,
                        int first)
{
    __m512 acc[MR][2];
    /* C's tile, wanted after the loop: on its way to L2 meanwhile */
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T1);
        _mm_prefetch((const char *)(c + r * ldc + 16 * nv - 1), _MM_HINT_T1);
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++, a += acs, b += bs) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = nv > 1 ? _mm512_loadu_ps(b + 16) : b0;
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            if (r >= mr) break;
            const __m512 av = _mm512_set1_ps(a[r * ars]);
            acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
            if (nv > 1) acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
        }
    }
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

/* The kernels: packed or column-strided A (ars = 1: A(r,k) = a[r + k
 * acs]) and row-strided A (any ars and acs), for each row count and
 * vector count. */
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
        tile(mr, 1, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, beta, first);                                       \
    }                                                                                                               \
    AVX512 static void kr_##mr##_2(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs,  \
                                   float *c, int64_t ldc, int nr, float alpha, float beta, int first)             \
    {                                                                                                               \
        tile(mr, 2, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, beta, first);                                       \
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
#if SG5_MR > 12
KERNELS(13)
KERNELS(14)
#endif
#if SG5_MR > 14
KERNELS(15)
KERNELS(16)
#endif

/* [column-strided or packed A, row-strided A][mr - 1][nv - 1] */
static kernel_fn *const KERNEL[2][MR][2] = {
    {{kc_1_1, kc_1_2}, {kc_2_1, kc_2_2}, {kc_3_1, kc_3_2}, {kc_4_1, kc_4_2}, {kc_5_1, kc_5_2}, {kc_6_1, kc_6_2},
     {kc_7_1, kc_7_2}, {kc_8_1, kc_8_2}, {kc_9_1, kc_9_2}, {kc_10_1, kc_10_2}, {kc_11_1, kc_11_2},
     {kc_12_1, kc_12_2},
#if SG5_MR > 12
     {kc_13_1, kc_13_2}, {kc_14_1, kc_14_2},
#endif
#if SG5_MR > 14
     {kc_15_1, kc_15_2}, {kc_16_1, kc_16_2},
#endif
    },
    {{kr_1_1, kr_1_2}, {kr_2_1, kr_2_2}, {kr_3_1, kr_3_2}, {kr_4_1, kr_4_2}, {kr_5_1, kr_5_2}, {kr_6_1, kr_6_2},
     {kr_7_1, kr_7_2}, {kr_8_1, kr_8_2}, {kr_9_1, kr_9_2}, {kr_10_1, kr_10_2}, {kr_11_1, kr_11_2},
     {kr_12_1, kr_12_2},
#if SG5_MR > 12
     {kr_13_1, kr_13_2}, {kr_14_1, kr_14_2},
#endif
#if SG5_MR > 14
     {kr_15_1, kr_15_2}, {kr_16_1, kr_16_2},
#endif
    },
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
        for (int r = 0; r < 16; r++) x[r] = r < n ? _mm512_maskz_loadu_ps(m, src + r * ss + k0) : _mm512_setzero_ps();
        transpose16(x, t);
        if (w == 16) {
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
        } else
            for (int k = 0; k < w; k++) _mm512_storeu_ps(dst + (k0 + k) * ds, t[k]);
    }
}

/* A's rows i .. i+mr (mr <= MR) of the slice [k0, k0+kc), A stored as
 * is, packed k-major: dst[k MR + r] = A(i+r, k0+k) for r < mr (the rest
 * of each k's MR floats is not read) */
AVX512 static void pack_a(const float *A, int lda, int i, int mr, int k0, int kc, float *restrict dst)
{
    transpose_rows16(dst, MR, A + (int64_t)i * lda + k0, lda, mr, kc);
}

/* Rows i0 .. i0+mc of op(A) over [k0, k0+kc), A stored transposed (K,M),
 * into MR-row panels: panel q at dst + q kc MR holds rows i0 + q MR ..
 * k-major (dst[q kc MR + k MR + r] = A[(k0+k) lda + i0 + q MR + r]). Row k
 * of the block is contiguous in A: read once, front to back, and dealt
 * out to the panels (read panel by panel, each k would be a new line,
 * lda floats on). */
AVX512 static void pack_a_t(const float *A, int lda, int i0, int mc, int k0, int kc, float *restrict dst)
{
    const int64_t ps = (int64_t)kc * MR; /* floats per panel */
    const int full = mc / MR * MR;
    const __mmask16 m = lanes(MR), me = lanes(mc - full);
    for (int k = 0; k < kc; k++) {
        const float *src = A + (int64_t)(k0 + k) * lda + i0;
        float *d = dst + (int64_t)k * MR;
        for (int q = 0; q < full; q += MR, d += ps) _mm512_mask_storeu_ps(d, m, _mm512_maskz_loadu_ps(m, src + q));
        if (full < mc) _mm512_mask_storeu_ps(d, me, _mm512_maskz_loadu_ps(me, src + full));
    }
}

/* op(B)[k0 .. k0+kc) x [j0 .. j0+nc) into 32-column panels: panel q holds
 * columns j0 + 32 q .. as kc rows of 32 floats, zero past N (nc). */
AVX512 static void pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict dst)
{
    const int64_t ps = (int64_t)kc * NR; /* floats per panel */
    if (!tb) { /* B (K,N): row k of the block is contiguous, read front to back */
        const int full = nc / NR * NR, w = nc - full;
        const __mmask16 m0 = lanes(w), m1 = lanes(w - 16);
        for (int k = 0; k < kc; k++) {
            const float *src = B + (int64_t)(k0 + k) * ldb + j0;
            float *d = dst + (int64_t)k * NR;
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
        else
            for (int k = 0; k < kc; k++) _mm512_store_ps(dst + k * NR + 16, _mm512_setzero_ps());
    }
}

/* the slice depth for K: K cut into equal slices of at most KC_MAX, a
 * multiple of 16 but the last. Depends on K alone. */
static int slice_depth(int K)
{
    const int n = (K + KC_MAX - 1) / KC_MAX, kc = (K + n - 1) / n;
    return (kc + 15) / 16 * 16;
}

/* scratch: B's block (B_FLOATS), then A's panels (A_FLOATS), 64-byte
 * aligned */
AVX512 static void sgemm_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc, float *restrict scratch)
{
    float *const bp = scratch, *const ap = scratch + B_FLOATS;
    const int kcs = slice_depth(K);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += kcs) {
            const int kc = K - pc < kcs ? K - pc : kcs;
            pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                if (ta) pack_a_t(A, lda, ic, mc, pc, kc, ap);
                for (int ir = 0; ir < mc; ir += MR) {
                    const int i = ic + ir, mr = mc - ir < MR ? mc - ir : MR;
                    const float *a = ap + (int64_t)(ir / MR) * kc * MR;
                    if (!ta) pack_a(A, lda, i, mr, pc, kc, ap), a = ap;
                    float *c = C + (int64_t)i * ldc + jc;
                    kernel_fn *const *kern = KERNEL[0][mr - 1];
                    for (int jr = 0; jr < nc; jr += NR) {
                        const int nr = nc - jr < NR ? nc - jr : NR;
                        kern[nr > 16](kc, a, 1, MR, bp + (int64_t)jr * kc, NR, c + jr, ldc, nr, alpha, beta, pc == 0);
                    }
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
        for (int i = 0; i < M; i += MR) {
            const int mr = M - i < MR ? M - i : MR;
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
