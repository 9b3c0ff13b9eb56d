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
 *   for each block of C's columns      (jc)   N cut into equal blocks of
 *                                             at most NC = 768
 *     for each slice of K              (pc)   B(pc.., jc..) rounded into
 *                                             32-column panels of pairs:
 *                                             at most 256 pairs x 768
 *                                             columns, 768 KiB of the 1 MiB L2
 *       for each MR rows of C          (i)    A's 14 rows of the slice
 *                                             rounded into pairs (14 KiB): L1
 *         for each 32-column panel     (jr)   the micro-kernel; the panel
 *                                             (256 pairs x 32) streams from L2
 *
 * The slices are tg_bf16_slice_depth's (at most 512 of K, from K alone),
 * the same as the portable kernel's, so both sum the same terms in the
 * same order and give the same bits. Both operands are packed (the
 * rounding is a pass over them anyway; ops/sgemm_bf16_avx512_pack.c): B
 * once per block and slice; A once per row panel, into rows of pairs when
 * it is stored as is (a rounding pass; the kernel reads its 14 rows
 * through four row pointers) or k-major when stored transposed. The
 * packing waits on memory more than it computes: the kernels of one row
 * panel bring the next panel's A to L2 as they run, a line every 8 pairs
 * (that halved its packing's time). Packing B inside the first row
 * panel's kernels, as the f32 kernel does, gained nothing here: on Zen 4
 * the rounding and shuffles slowed those kernels by what they saved.
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

/* One mr x (16 nv) tile of C, mr, nv and arows constants where this is
 * inlined: acc = the sums over kp pairs of A's panel a and B's panel b
 * (pair p of column j at b[p NR + j]); then C[r][c] (r < mr, c < nr <= 16
 * nv) from acc as the top comment says. A's pair p of row r is at a[p MR
 * + r] (packed k-major), or with arows at a[r ars + p] (rows of pairs),
 * read through four pointers to rows 0, 4, 8 and 12 and the offsets 0,
 * ars, 2 ars and 3 ars (seven registers, where fourteen row pointers
 * would not fit). */
AVX512BF16 INLINE void tile(const int mr, const int nv, const int arows, int kp, const uint32_t *a, int64_t ars,
                            const uint32_t *b, float *c, int64_t ldc, int nr, float alpha, float beta, int first,
                            const float *pf, int64_t pfs, int pfn)
{
    const uint32_t *pa[4] = {a, a + (mr > 4 ? 4 : 0) * ars, a + (mr > 8 ? 8 : 0) * ars, a + (mr > 12 ? 12 : 0) * ars};
    const int64_t off[4] = {0, ars, 2 * ars, 3 * ars};
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
        if (arows && p) pa[0]++, pa[1]++, pa[2]++, pa[3]++;
        if (!(p & 7) && pfn > 0) { /* the next panel's A, a line every 8 pairs */
            pf1(pf, 0), pf1(pf, 13);
            pf += pfs, pfn--;
        }
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
        const __m512bh b1 = nv > 1 ? (__m512bh)_mm512_loadu_si512(b + 16) : b0;
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            if (r >= mr) break;
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)(arows ? pa[r / 4][off[r % 4]] : a[r]));
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
                v = !first ? _mm512_fmadd_ps(va, acc[r][h], old)
                           : _mm512_fmadd_ps(vb, old, _mm512_mul_ps(va, acc[r][h]));
            } else v = _mm512_mul_ps(va, acc[r][h]);
            if (whole) _mm512_storeu_ps(cr + 16 * h, v);
            else _mm512_mask_storeu_ps(cr + 16 * h, m[h], v);
        }
    }
}

typedef void kernel_fn(int kp, const uint32_t *a, int64_t ars, const uint32_t *b, float *c, int64_t ldc, int nr,
                       float alpha, float beta, int first, const float *pf, int64_t pfs, int pfn);

/* kp<rows>_<vectors>: A packed k-major; kr<rows>_<vectors>: A in rows of
 * pairs ars apart; one or two vectors of columns */
#define KERNEL(kind, arows, rows, nv)                                                                                  \
    AVX512BF16 static void kind##rows##_##nv(int kp, const uint32_t *a, int64_t ars, const uint32_t *b, float *c,      \
                                             int64_t ldc, int nr, float alpha, float beta, int first, const float *pf, \
                                             int64_t pfs, int pfn)                                                     \
    {                                                                                                                  \
        tile(rows, nv, arows, kp, a, ars, b, c, ldc, nr, alpha, beta, first, pf, pfs, pfn);                            \
    }
#define KERNELS(rows) KERNEL(kp, 0, rows, 1) KERNEL(kp, 0, rows, 2) KERNEL(kr, 1, rows, 1) KERNEL(kr, 1, rows, 2)
/* rows of macro calls, which clang-format 14 reflows differently on each pass */
// clang-format off
KERNELS(1) KERNELS(2) KERNELS(3) KERNELS(4) KERNELS(5) KERNELS(6) KERNELS(7)
KERNELS(8) KERNELS(9) KERNELS(10) KERNELS(11) KERNELS(12) KERNELS(13) KERNELS(14)
#undef KERNELS
#undef KERNEL
_Static_assert(MR == 14, "one KERNELS call per row count");
// clang-format on

/* [A in rows of pairs][rows - 1][vectors - 1] */
static kernel_fn *const kernels[2][MR][2] = {
    {{kp1_1, kp1_2},
     {kp2_1, kp2_2},
     {kp3_1, kp3_2},
     {kp4_1, kp4_2},
     {kp5_1, kp5_2},
     {kp6_1, kp6_2},
     {kp7_1, kp7_2},
     {kp8_1, kp8_2},
     {kp9_1, kp9_2},
     {kp10_1, kp10_2},
     {kp11_1, kp11_2},
     {kp12_1, kp12_2},
     {kp13_1, kp13_2},
     {kp14_1, kp14_2}},
    {{kr1_1, kr1_2},
     {kr2_1, kr2_2},
     {kr3_1, kr3_2},
     {kr4_1, kr4_2},
     {kr5_1, kr5_2},
     {kr6_1, kr6_2},
     {kr7_1, kr7_2},
     {kr8_1, kr8_2},
     {kr9_1, kr9_2},
     {kr10_1, kr10_2},
     {kr11_1, kr11_2},
     {kr12_1, kr12_2},
     {kr13_1, kr13_2},
     {kr14_1, kr14_2}},
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
    /* N cut into equal blocks of at most NC columns, multiples of NR but
     * the last: 1024 = 512 + 512, not 768 + 256, whose narrow block would
     * round A again for few columns */
    const int blocks = (N + NC - 1) / NC, ncs = ((N + blocks - 1) / blocks + NR - 1) / NR * NR;
    for (int jc = 0; jc < N; jc += ncs) {
        const int nc = N - jc < ncs ? N - jc : ncs;
        for (int pc = 0; pc < K; pc += kcs) {
            const int kc = K - pc < kcs ? K - pc : kcs, kp = (kc + 1) / 2, first = pc == 0;
            /* A as stored: rounded into rows of pairs, 16 words more apart
             * than the slice's pairs rounded up to 16 (rows whose distance
             * is a multiple of 4 KiB would share one L1 set) */
            const int64_t ars = (kp + 15) / 16 * 16 + 16;
            tg_bf16x512_pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
            for (int i = 0, mr; i < M; i += mr) {
                mr = panel_rows(M - i);
                const float *a = A + (ta ? (int64_t)pc * lda + i : (int64_t)i * lda + pc);
                if (ta) tg_bf16x512_pack_a(a, lda, mr, kc, ap);
                else tg_bf16x512_round_rows(a, lda, mr, kc, ap, ars);
                kernel_fn *const *kern = kernels[!ta][mr - 1];
                float *c = C + (int64_t)i * ldc + jc;
                /* the next row panel's A on its way to L2 while these
                 * kernels run, spread over them: as stored, one row of it
                 * (kc floats) per kernel; transposed, kc rows of mr2 floats
                 * (two lines at each) shared among the kernels */
                const int mr2 = panel_rows(M - i - mr), calls = (nc + NR - 1) / NR, per = (kc + calls - 1) / calls;
                const float *next = ta ? a + mr : a + (int64_t)mr * lda;
                for (int jr = 0, q = 0; jr < nc; jr += NR, q++) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    const float *pf = ta ? next + (int64_t)q * per * lda : next + (int64_t)q * lda;
                    const int left = kc - q * per < per ? kc - q * per : per;
                    const int pfn = mr2 <= 0 ? 0 : ta ? left : q < mr2 ? (kc + 15) / 16 : 0;
                    kern[nr > 16](kp, ap, ars, bp + (int64_t)(jr / NR) * kp * NR, c + jr, ldc, nr, alpha, beta, first,
                                  pf, ta ? lda : 16, pfn);
                }
            }
        }
    }
}

bool tg_sgemm_bf16_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc)
{
    if (K <= 0 || !tg_isa_bf16()) return false;
    if (M <= 0 || N <= 0) return true;
    uint32_t *scratch = tg_thread_scratch();
    if (!scratch) return false;
    gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, scratch);
    return true;
}

#else

bool tg_sgemm_bf16_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    return false;
}

#endif
