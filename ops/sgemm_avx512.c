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
 * lie, nothing packed, K unsliced: for the attention's small products.
 *
 * The micro-kernels are in ops/sgemm_avx512_kernels.c, the packing in
 * ops/sgemm_avx512_pack.c; this file is the loops that run them. */
#include "sgemm_avx512_internal.h"

#include <stdint.h>

#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include "sgemm_avx512_parts_internal.h"

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
            if (!fuse_b) tg_sgemm512_pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
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
                    tg_sgemm512_pack_a(ta, a0, lda, mr, kc, ap, wide);
                    for (; jr < nc; jr += NR) {
                        const int nr = nc - jr < NR ? nc - jr : NR;
                        (nr > 16 ? tg_sgemm512_packing_kernel_2 : tg_sgemm512_packing_kernel_1)(
                            kc, ap, b + jr, ldb, bp + (int64_t)jr * kc, c + jr, ldc, nr, alpha, beta, first);
                    }
                    continue;
                }
                if (!ta) {
                    /* A's rows in place, or copied kc + 16 floats apart */
                    const float *a = a0;
                    int64_t ars = lda;
                    if (!in_place) {
                        tg_sgemm512_copy_rows(ap, kc + 16, a0, lda, mr, kc);
                        a = ap, ars = kc + 16;
                    }
                    kernel_fn *const *kern = tg_sgemm512_kernels[1][mr - 1];
                    /* the next row panel's A on its way to L2, a share
                     * after each kernel: per of the lines of its mr2 x kc */
                    const int mr2 = panel_rows(M - i - mr), lines = (kc + 15) / 16, calls = (nc - jr + NR - 1) / NR;
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
                    tg_sgemm512_apacking[mr - 12](kc, a0, lda, ap, bp, c, ldc, nr, alpha, beta, first, wide);
                    jr = NR;
                } else tg_sgemm512_pack_a(ta, a0, lda, mr, kc, ap, wide);
                kernel_fn *const *kern = tg_sgemm512_kernels[0][mr - 1];
                for (; jr < nc; jr += NR) {
                    const int nr = nc - jr < NR ? nc - jr : NR;
                    kern[nr > 16](kc, ap, 1, MR, bp + (int64_t)jr * kc, NR, c + jr, ldc, nr, alpha, beta, first);
                }
            }
        }
    }
}

bool tg_sgemm_kernel_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc)
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
            tg_sgemm512_kernels[mode][mr - 1][nr > 16](K, a + (int64_t)i * ars, ars, acs, b + j, ldb,
                                                       c + (int64_t)i * ldc + j, ldc, nr, alpha, add ? 1.0f : 0.0f, 1);
        }
    }
}

void tg_sgemm_tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                           int64_t ldb, float *c, int64_t ldc, bool add)
{
    if (M > 0 && N > 0) tiles_avx512(M, N, K, alpha, a, ars, acs, b, ldb, c, ldc, add);
}

#else

bool tg_sgemm_kernel_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
    return false;
}

void tg_sgemm_tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                           int64_t ldb, float *c, int64_t ldc, bool add)
{
    (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)ars, (void)acs, (void)b, (void)ldb, (void)c, (void)ldc;
    (void)add;
}

#endif
