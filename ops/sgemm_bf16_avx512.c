/* The bf16 product's kernel on CPUs with AVX512_BF16 (tg_isa_bf16), which
 * tg_sgemm_bf16 calls (ops/sgemm_bf16.c gives the sums and their order):
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,   row-major, op = as is or ^T
 *
 * vdpbf16ps multiplies 16 pairs of bf16 by 16 pairs and adds each lane's
 * two products to an f32 (the odd one first, each sum rounded: the step of
 * ops/bf16_internal.h): 64 FLOP an instruction where an f32 fused
 * multiply-add does 32, at the same rate on Zen 4 and 5.
 *
 * The micro-kernel keeps an MR x 32 tile of C in registers (MR = 14 rows
 * of two 16-lane vectors: 28 of the 32 zmm registers, as the f32 kernel
 * of ops/sgemm_avx512.c); per pair of k it loads one row of B's panel
 * (32 columns of pairs: two vectors) and broadcasts A's pair of each of
 * the 14 rows: 28 vdpbf16ps, 16 loads.
 *
 * The blocking, BLIS's loops as in the f32 kernel:
 *
 *   for each NC = 512 columns of C     (jc)
 *     for each slice of K              (pc)   B(pc.., jc..) rounded into
 *                                             32-column panels of pairs:
 *                                             at most 256 pairs x 512
 *                                             columns, 512 KiB of the 1 MiB L2
 *       for each MR rows of C          (i)    A's 14 rows of the slice
 *                                             rounded into pairs (14 KiB): L1
 *         for each 32-column panel     (jr)   the micro-kernel; the panel
 *                                             (256 pairs x 32) streams from L2
 *
 * The slices are tg_bf16_slice_depth's (at most 512 of K, from K alone),
 * the same as the portable kernel's, so both sum the same terms in the
 * same order and give the same bits. Both operands are packed (rounding
 * is a pass over them anyway): ops/sgemm_bf16_avx512_pack.c.
 *
 * Edges: the kernel is compiled for each row count 1..14 and for one or
 * two vectors of columns; C is read and stored through masks, never past
 * N or M; B's panels are zero past N and A's and B's pairs past K. Rows
 * are shared evenly among row panels, as in the f32 kernel (a panel of a
 * few rows has too few chains of vdpbf16ps to cover their latency).
 *
 * C: the first slice stores alpha acc, or fma(beta, C, alpha acc) when
 * beta != 0 (beta = 0 never reads C); each later one fma(alpha, acc, C). */
#include "sgemm_bf16_avx512_internal.h"

#include "../core/cpu.h"
#include "../core/isa_internal.h"

#ifdef TG_AVX2_KERNELS
#include "sgemm_bf16_avx512_pack_internal.h"

/* The line of p + n floats on its way to L2 (an address past the operand
 * does not fault, and is computed as an integer) */
INLINE void pf1(const float *p, int64_t n) { _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T1); }

/* One mr x (16 nv) tile of C, mr and nv constants where this is inlined:
 * acc = the sums over kp pairs of A's panel a (pair p of row r at a[p MR
 * + r]) and B's panel b (pair p of column j at b[p NR + j]); then C[r][c]
 * (r < mr, c < nr <= 16 nv) from acc as the top comment says. */
AVX512BF16 INLINE void tile(const int mr, const int nv, int kp, const uint32_t *a, const uint32_t *b, float *c,
                            int64_t ldc, int nr, float alpha, float beta, int first)
{
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
    for (int p = 0; p < kp; p++, a += MR, b += NR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
        const __m512bh b1 = nv > 1 ? (__m512bh)_mm512_loadu_si512(b + 16) : b0;
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            if (r >= mr) break;
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], b0, av);
            if (nv > 1) acc[r][1] = _mm512_dpbf16_ps(acc[r][1], b1, av);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    const __mmask16 m[2] = {lanes(nr), lanes(nr - 16)};
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        float *cr = c + (int64_t)r * ldc;
#pragma GCC unroll 2
        for (int h = 0; h < nv; h++) {
            const bool whole = nr >= 16 * (h + 1);
            __m512 v;
            if (!first || beta != 0) {
                const __m512 old = whole ? _mm512_loadu_ps(cr + 16 * h) : _mm512_maskz_loadu_ps(m[h], cr + 16 * h);
                v = !first ? _mm512_fmadd_ps(va, acc[r][h], old) : _mm512_fmadd_ps(vb, old, _mm512_mul_ps(va, acc[r][h]));
            } else
                v = _mm512_mul_ps(va, acc[r][h]);
            if (whole) _mm512_storeu_ps(cr + 16 * h, v);
            else _mm512_mask_storeu_ps(cr + 16 * h, m[h], v);
        }
    }
}

typedef void kernel_fn(int kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int nr, float alpha,
                       float beta, int first);

/* k<rows>_1 and k<rows>_2: the tile of that many rows, one or two vectors */
#define KERNELS(rows)                                                                                             \
    AVX512BF16 static void k##rows##_1(int kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int nr, \
                                       float alpha, float beta, int first)                                        \
    {                                                                                                             \
        tile(rows, 1, kp, a, b, c, ldc, nr, alpha, beta, first);                                                  \
    }                                                                                                             \
    AVX512BF16 static void k##rows##_2(int kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int nr, \
                                       float alpha, float beta, int first)                                        \
    {                                                                                                             \
        tile(rows, 2, kp, a, b, c, ldc, nr, alpha, beta, first);                                                  \
    }
KERNELS(1) KERNELS(2) KERNELS(3) KERNELS(4) KERNELS(5) KERNELS(6) KERNELS(7)
KERNELS(8) KERNELS(9) KERNELS(10) KERNELS(11) KERNELS(12) KERNELS(13) KERNELS(14)
#undef KERNELS
_Static_assert(MR == 14, "one KERNELS line per row count");

/* [rows - 1][vectors - 1] */
static kernel_fn *const kernels[MR][2] = {
    {k1_1, k1_2},   {k2_1, k2_2},   {k3_1, k3_2},   {k4_1, k4_2},   {k5_1, k5_2},
    {k6_1, k6_2},   {k7_1, k7_2},   {k8_1, k8_2},   {k9_1, k9_2},   {k10_1, k10_2},
    {k11_1, k11_2}, {k12_1, k12_2}, {k13_1, k13_2}, {k14_1, k14_2},
};

/* Rows of the row panel that starts with rem rows left: all of them if at
 * most MR, else rem shared evenly among the fewest panels of at most MR */
static int panel_rows(int rem)
{
    if (rem <= MR) return rem;
    const int panels = (rem + MR - 1) / MR;
    return (rem + panels - 1) / panels;
}

/* scratch: B's block (B_WORDS), then A's panel (A_WORDS) */
AVX512BF16 static void gemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                                 const float *B, int ldb, float beta, float *C, int ldc, uint32_t *restrict scratch)
{
    uint32_t *const bp = scratch, *const ap = scratch + B_WORDS;
    const int kcs = tg_bf16_slice_depth(K);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += kcs) {
            const int kc = K - pc < kcs ? K - pc : kcs, kp = (kc + 1) / 2, first = pc == 0;
            tg_bf16x512_pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
            for (int i = 0, mr; i < M; i += mr) {
                mr = panel_rows(M - i);
                tg_bf16x512_pack_a(ta, A + (ta ? (int64_t)pc * lda + i : (int64_t)i * lda + pc), lda, mr, kc, ap);
                kernel_fn *const *kern = kernels[mr - 1];
                float *c = C + (int64_t)i * ldc + jc;
                for (int jr = 0; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    kern[nr > 16](kp, ap, bp + (int64_t)(jr / NR) * kp * NR, c + jr, ldc, nr, alpha, beta, first);
                }
            }
        }
    }
}

bool tg_sgemm_bf16_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    if (K <= 0 || !tg_isa_bf16()) return false;
    if (M <= 0 || N <= 0) return true;
    uint32_t *scratch = tg_thread_scratch();
    if (!scratch) return false;
    gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, scratch);
    return true;
}

#else

bool tg_sgemm_bf16_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    return false;
}

#endif
