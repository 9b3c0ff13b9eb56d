/* tapegrad's own single-precision gemm for the shapes a small transformer
 * makes (see sgemm_internal.h for where it is used instead of OpenBLAS).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,   row-major, op = as is or ^T
 *
 * Why: OpenBLAS copies ("packs") both operands of every call into its own
 * layout and, for beta = 0, first zeroes C in a separate pass. With the
 * inner dimensions of a small model (64 to 512) those copies are a large
 * share of a product: 20-35% of OpenBLAS's time in configs S and M.
 * Here B is packed (into 16-column panels); A is read where it lies when
 * stored as is, and packed into 6-row panels only when stored transposed
 * (read in place, each k's six floats would sit lda floats apart, a
 * stride that maps them onto a few L1 sets); C is written once, with
 * alpha and beta applied as it is stored.
 *
 * The blocking (the usual one for a register-tiled gemm):
 *
 *   for each NC columns of C           (jc)
 *     for each KC deep slice of K      (pc)   pack B(pc.., jc..) into
 *                                             NR-column panels, k-major
 *       for each MC rows of C          (ic)   those rows of A stay in L2
 *                                             (packed here if transposed)
 *         for each MR rows             (ir)   their slice of A stays in L1
 *           for each NR-column panel   (jr)   the micro-kernel: an MR x NR
 *                                             tile of C in 12 registers
 *
 * The micro-kernel keeps C's 6 x 16 tile in twelve 8-lane AVX2 registers;
 * per k it loads one panel row (16 floats) and broadcasts A(i+r, k) for
 * the 6 rows, 12 fused multiply-adds. A(i+r, k) is p[r][k cs]: p[r] points
 * at row i+r of A (cs = 1) or at row r of A's packed panel (cs = 6). Rows
 * past M reuse the last valid row and their results are dropped, so
 * nothing outside A is read.
 *
 * Each element of C is a sum over k in increasing order, one KC slice at
 * a time, the same whichever rows or columns a call covers: cutting a
 * product into blocks (ops/gemm.c) gives the same bits.
 *
 * tg_sgemm_tiles calls the micro-kernel directly, nothing packed, for
 * small products whose operands the caller keeps in L1 in a layout the
 * kernel can read (the attention's tiles); tiles whose rows or columns
 * run past C's edge are stored through masks.
 *
 * On the avx512 kernel path (core/cpu.h) tg_sgemm_kernel, tg_sgemm_tiles
 * and tg_sgemm go to ops/sgemm_avx512.c instead, which takes every
 * product (tg_sgemm_picks_kernel). Without AVX2 + FMA (checked at run
 * time) or off x86-64 GCC, the call goes to cblas_sgemm. */
#include "sgemm_internal.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/parallel_internal.h"
#include "fastmath_internal.h"
#include "sgemm_avx512_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>
#endif

enum { SMALL_DIM = 128 };

/* dst[d ldd + j] = src[j ld + d] for rows j in [j0, j1) and columns d in
 * [d0, d1) of src: the transpose one float at a time */
static void transpose_part(float *restrict dst, int64_t ldd, const float *restrict src, int64_t ld, int j0, int j1,
                           int d0, int d1)
{
    for (int j = j0; j < j1; j++)
        for (int d = d0; d < d1; d++) dst[d * ldd + j] = src[j * ld + d];
}

/* columns n .. ldd-1 of dst's w rows (stride ldd) = 0 */
static void zero_past(float *dst, int64_t ldd, int n, int w)
{
    for (int d = 0; d < w; d++)
        for (int64_t j = n; j < ldd; j++) dst[d * ldd + j] = 0;
}

#ifdef TG_AVX2_KERNELS

enum { MR = 6, NR = 16, KC = 256, NC = 128, MC = 96 };
_Static_assert((KC * NC + KC * MC) * sizeof(float) <= TG_THREAD_SCRATCH_BYTES, "the packed blocks fit the scratch");

#define AVX2 __attribute__((target("avx2,fma")))

/* Lanes [0, n) of an 8-lane mask, n in 0..8. */
AVX2 static inline __m256i lane_mask(int n)
{
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1};
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - n));
}

/* One MR x NR tile: C[r][c] (r < mr, c < nr) = alpha acc + beta C, where
 * acc = sum_k A(r, k) B(k, c) and row k of B is the NR floats at
 * b + k bs (bs = NR in a packed panel). first: this is the first K slice,
 * so beta applies (beta = 0: C is not read); later slices add. Columns
 * past nr are neither read nor written (masked), rows past mr neither. */
AVX2 static void micro_kernel(int kc, const float *const p[MR], int64_t cs, const float *restrict b, int64_t bs,
                              float *c, int64_t ldc, int mr, int nr, float alpha, float beta, int first)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3], *p4 = p[4], *p5 = p[5];
    int64_t off = 0;
    for (int k = 0; k < kc; k++, off += cs, b += bs) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        __m256 a = _mm256_broadcast_ss(p0 + off);
        c00 = _mm256_fmadd_ps(a, b0, c00);
        c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(p1 + off);
        c10 = _mm256_fmadd_ps(a, b0, c10);
        c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(p2 + off);
        c20 = _mm256_fmadd_ps(a, b0, c20);
        c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(p3 + off);
        c30 = _mm256_fmadd_ps(a, b0, c30);
        c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(p4 + off);
        c40 = _mm256_fmadd_ps(a, b0, c40);
        c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(p5 + off);
        c50 = _mm256_fmadd_ps(a, b0, c50);
        c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    const __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (nr == NR) {
        for (int r = 0; r < mr; r++) {
            float *cr = c + (int64_t)r * ldc;
            for (int h = 0; h < 2; h++) {
                __m256 v = _mm256_mul_ps(va, acc[r][h]);
                if (!first) v = _mm256_add_ps(v, _mm256_loadu_ps(cr + 8 * h));
                else if (beta != 0) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8 * h), v);
                _mm256_storeu_ps(cr + 8 * h, v);
            }
        }
        return;
    }
    const __m256i mask[2] = {lane_mask(nr < 8 ? nr : 8), lane_mask(nr > 8 ? nr - 8 : 0)};
    for (int r = 0; r < mr; r++) {
        float *cr = c + (int64_t)r * ldc;
        for (int h = 0; h < 2 && 8 * h < nr; h++) {
            __m256 v = _mm256_mul_ps(va, acc[r][h]);
            if (!first) v = _mm256_add_ps(v, _mm256_maskload_ps(cr + 8 * h, mask[h]));
            else if (beta != 0) v = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cr + 8 * h, mask[h]), v);
            _mm256_maskstore_ps(cr + 8 * h, mask[h], v);
        }
    }
}

/* dst rows 0..7 (stride ds) = columns 0..7 of the 8 x 8 block at src
 * (stride ss): the transpose, in registers. */
AVX2 static void transpose8(const float *src, int64_t ss, float *dst, int64_t ds)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ss), r2 = _mm256_loadu_ps(src + 2 * ss),
           r3 = _mm256_loadu_ps(src + 3 * ss), r4 = _mm256_loadu_ps(src + 4 * ss), r5 = _mm256_loadu_ps(src + 5 * ss),
           r6 = _mm256_loadu_ps(src + 6 * ss), r7 = _mm256_loadu_ps(src + 7 * ss);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
           t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
           t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    r0 = _mm256_shuffle_ps(t0, t2, 0x44);
    r1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    r2 = _mm256_shuffle_ps(t1, t3, 0x44);
    r3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    r4 = _mm256_shuffle_ps(t4, t6, 0x44);
    r5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    r6 = _mm256_shuffle_ps(t5, t7, 0x44);
    r7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(r0, r4, 0x20));
    _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(r1, r5, 0x20));
    _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(r2, r6, 0x20));
    _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(r3, r7, 0x20));
    _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(r0, r4, 0x31));
    _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(r1, r5, 0x31));
    _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(r2, r6, 0x31));
    _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(r3, r7, 0x31));
}

/* dst (w, ldd) = the transpose of src's n rows of w floats (row stride ld),
 * columns n .. ldd-1 zero: 8 x 8 blocks by transpose8, the edges by
 * transpose_part (tg_sgemm_pack_t, and pack_b for a transposed B) */
AVX2 static void transpose_rows(float *restrict dst, int64_t ldd, const float *restrict src, int64_t ld, int n, int w)
{
    const int n8 = n & ~7, w8 = w & ~7;
    for (int j = 0; j < n8; j += 8)
        for (int d = 0; d < w8; d += 8) transpose8(src + j * ld + d, ld, dst + d * ldd + j, ldd);
    transpose_part(dst, ldd, src, ld, 0, n8, w8, w);
    transpose_part(dst, ldd, src, ld, n8, n, 0, w);
    zero_past(dst, ldd, n, w);
}

/* Packs op(B)[k0 .. k0+kc) x [j0 .. j0+nc) into NR-column panels: panel q
 * holds columns j0 + q NR .. as kc rows of NR floats, zero past N. */
AVX2 static void pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict dst)
{
    for (int q = 0; q < nc; q += NR, dst += (int64_t)kc * NR) {
        const int w = nc - q < NR ? nc - q : NR;
        if (!tb) { /* B (K,N): row k of the panel is contiguous */
            const float *src = B + (int64_t)k0 * ldb + j0 + q;
            for (int k = 0; k < kc; k++, src += ldb) {
                float *d = dst + (int64_t)k * NR;
                if (w == NR) {
                    _mm256_store_ps(d, _mm256_loadu_ps(src));
                    _mm256_store_ps(d + 8, _mm256_loadu_ps(src + 8));
                } else
                    for (int j = 0; j < NR; j++) d[j] = j < w ? src[j] : 0;
            }
            continue;
        }
        /* B stored (N,K): column j of op(B) is row j of B, so the panel
         * (kc, NR) is the transpose of w rows of B, zero past them */
        transpose_rows(dst, NR, B + (int64_t)(j0 + q) * ldb + k0, ldb, w, kc);
    }
}

/* Packs op(A)[i0 .. i0+mc) x [k0 .. k0+kc) for A stored transposed (K,M)
 * into MR-row panels: panel q holds rows i0 + q MR .. as kc columns of MR
 * floats (k-major), the rows past mc repeating the last one. Read in
 * place, such an A would put each k's six floats on a new cache line,
 * lda floats apart: a stride that maps them onto a few L1 sets. */
AVX2 static void pack_a_t(const float *A, int lda, int i0, int mc, int k0, int kc, float *restrict dst)
{
    const int full = mc / MR * MR; /* rows in whole panels */
    const int64_t ps = (int64_t)kc * MR; /* floats per panel */
    /* row k of the block is contiguous in A: read it once, front to back,
     * and deal its floats out to the panels, 6 at a time */
    for (int k = 0; k < kc; k++) {
        const float *src = A + (int64_t)(k0 + k) * lda + i0;
        float *d = dst + (int64_t)k * MR;
        for (int q = 0; q < full; q += MR, d += ps) memcpy(d, src + q, MR * sizeof(float));
        if (full < mc)
            for (int r = 0; r < MR; r++) d[r] = src[full + (full + r < mc ? r : mc - full - 1)];
    }
}

/* packed: B's slice in NR-column panels (KC * NC floats); apacked: A's
 * rows in MR-row panels when A is stored transposed (KC * MC floats) */
AVX2 static void sgemm_avx2(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc, float *restrict packed, float *restrict apacked)
{
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            pack_b(tb, B, ldb, pc, kc, jc, nc, packed);
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                if (ta) pack_a_t(A, lda, ic, mc, pc, kc, apacked);
                for (int ir = 0; ir < mc; ir += MR) {
                    const int i = ic + ir, mr = mc - ir < MR ? mc - ir : MR;
                    const float *p[MR];
                    int64_t cs;
                    if (ta) { /* A(i+r, pc+k) = the panel's [k MR + r] */
                        for (int r = 0; r < MR; r++) p[r] = apacked + (int64_t)(ir / MR) * kc * MR + r;
                        cs = MR;
                    } else { /* A(i+r, pc+k) = A[(i+r) lda + pc + k] */
                        for (int r = 0; r < MR; r++) p[r] = A + (int64_t)(i + (r < mr ? r : mr - 1)) * lda + pc;
                        cs = 1;
                    }
                    for (int jr = 0; jr < nc; jr += NR)
                        micro_kernel(kc, p, cs, packed + (int64_t)(jr / NR) * kc * NR, NR,
                                     C + (int64_t)i * ldc + jc + jr, ldc, mr, nc - jr < NR ? nc - jr : NR, alpha, beta,
                                     pc == 0);
                }
            }
        }
    }
}

/* tg_sgemm_tiles on this CPU: MR-row strips of A read in place, B's rows
 * in place, one NR-column sliver of B at a time (it stays in L1 while the
 * strips pass). */
AVX2 static void tiles_avx2(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                            int64_t ldb, float *c, int64_t ldc, bool add)
{
    for (int j = 0; j < N; j += NR)
        for (int i = 0; i < M; i += MR) {
            const int mr = M - i < MR ? M - i : MR;
            const float *p[MR];
            for (int r = 0; r < MR; r++) p[r] = a + (int64_t)(i + (r < mr ? r : mr - 1)) * ars;
            micro_kernel(K, p, acs, b + j, ldb, c + (int64_t)i * ldc + j, ldc, mr, N - j < NR ? N - j : NR, alpha,
                         add ? 1.0f : 0.0f, 1);
        }
}

#endif

void tg_sgemm_pack_t(float *restrict dst, int64_t ldd, const float *restrict src, int64_t ld, int n, int w)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx2()) {
        transpose_rows(dst, ldd, src, ld, n, w);
        return;
    }
#endif
    transpose_part(dst, ldd, src, ld, 0, n, 0, w);
    zero_past(dst, ldd, n, w);
}

bool tg_sgemm_tiles(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                    int64_t ldb, float *c, int64_t ldc, bool add)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx512()) { /* ops/sgemm_avx512.c */
        tg_sgemm_tiles_avx512(M, N, K, alpha, a, ars, acs, b, ldb, c, ldc, add);
        return true;
    }
    if (tg_cpu_avx2()) {
        if (M > 0 && N > 0) tiles_avx2(M, N, K, alpha, a, ars, acs, b, ldb, c, ldc, add);
        return true;
    }
#else
    (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)ars, (void)acs, (void)b, (void)ldb, (void)c, (void)ldc;
    (void)add;
#endif
    return false;
}

bool tg_sgemm_kernel(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                     int ldb, float beta, float *C, int ldc)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx512()) return tg_sgemm_kernel_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (K > 0 && tg_cpu_avx2()) {
        if (M <= 0 || N <= 0) return true;
        /* the packed blocks, 224 KiB, would not fit on a small thread stack */
        float *packed = tg_thread_scratch();
        if (!packed) return false;
        sgemm_avx2(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, packed, packed + KC * NC);
        return true;
    }
#else
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta;
    (void)C, (void)ldc;
#endif
    return false;
}

/* TG_SGEMM=openblas in the environment sends every product to OpenBLAS
 * (for side-by-side timings); read once. */
static bool blas_only(void)
{
    static atomic_int mode = -1;
    int m = atomic_load_explicit(&mode, memory_order_relaxed);
    if (m < 0) {
        const char *e = getenv("TG_SGEMM");
        m = e && strcmp(e, "openblas") == 0;
        atomic_store_explicit(&mode, m, memory_order_relaxed);
    }
    return m;
}

bool tg_sgemm_picks_kernel(bool ta, bool tb, int N, int K)
{
    if (K <= 0 || blas_only()) return false;
    /* the avx512 path's kernel (ops/sgemm_avx512.c) measured ahead of
     * OpenBLAS on every shape of a training step, 1024^3 and the weight
     * gradients included (docs/decisions.md): it takes every product */
    if (tg_cpu_avx512()) return true;
    /* measured (docs/decisions.md): ahead of OpenBLAS while N or K is at
     * most SMALL_DIM, behind it (by 5-15%) on larger squares, and behind
     * it (by 7-10% in a training step) on a long product with A stored
     * transposed: a linear layer's dW = dY^T X. (M does not decide, and
     * N only against SMALL_DIM: see sgemm_internal.h.) */
    const bool weight_grad = ta && !tb && K > SMALL_DIM;
    return (N <= SMALL_DIM || K <= SMALL_DIM) && !weight_grad && K > 0 && !blas_only() && tg_cpu_avx2();
}

void tg_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (tg_sgemm_picks_kernel(ta, tb, N, K) && tg_sgemm_kernel(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
}
