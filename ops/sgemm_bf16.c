/* One product in bf16 on the calling thread (sgemm_bf16_internal.h):
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,   row-major, op = as is or ^T,
 *
 * op(A) and op(B) rounded to bf16 (ops/bf16_internal.h), C and the sums
 * in f32: the products of mixed-precision training, as PyTorch's autocast
 * and llm.c make them.
 *
 * The sum of each element of C, the same in every kernel:
 *   K is cut into slices (tg_bf16_slice_depth: from K alone, at most 512
 *   deep, a multiple of 32 but the last). For each slice [p, p + kc):
 *     acc = 0; for each pair (k, k + 1) = (p, p + 1), (p + 2, p + 3), ...:
 *       acc = step(acc, A(i, k + 1), B(k + 1, j));   the odd one first
 *       acc = step(acc, A(i, k), B(k, j));
 *     with A(i, p + kc) = B(p + kc, j) = 0 for a slice of odd depth;
 *   then C = alpha acc (first slice, beta = 0: C not read),
 *   fma(beta, C, alpha acc) (first slice), fma(alpha, acc, C) (later ones).
 * step is one lane of vdpbf16ps (bf16_internal.h): acc + a b rounded once,
 * flushed to zero below 2^-126. A pair is what one vdpbf16ps adds to a
 * lane. Nothing in it depends on the rows or columns a call covers, so a
 * product cut into blocks (ops/gemm.c) gives the bits of one call.
 *
 * The kernels. On the avx512 path of a CPU with AVX512_BF16 (tg_isa_bf16)
 * the vdpbf16ps kernel (ops/sgemm_bf16_avx512.c) does every product.
 * Elsewhere, the portable kernel here: C compiled for each kernel path,
 * which rounds the operands as it packs them and sums them in f32. For a
 * panel whose operands are all in tg_bf16_plain's range (zero, or
 * magnitudes in [2^-56, 2^64): a training step's values nearly always)
 * the f32 sum acc + a b is already the step (its comment says why), fused
 * or not (the product is exact), so it runs in vectors; a panel with an
 * operand outside takes tg_bf16_step itself, element by element. Both give
 * the bits of the vdpbf16ps kernel, which tests/test_gemm_bf16.c checks on
 * every shape it tries. So a run in bf16 gives the same bits on a CPU
 * without AVX512_BF16, but slower than in f32 there (0.8x tapegrad's f32
 * kernel on the avx512 and avx2 paths, 0.25x OpenBLAS's f32 on the generic
 * one: bench/README.md, "bf16 products"); none of it depends on the kernel
 * path but the speed.
 *
 * The portable blocking: B's kc x 384 block packed into 16-column panels
 * (k-major, rounded, widened back to f32, zero past N and past K), A's
 * 6-row panel of the slice the same way, and a 6 x 16 tile of C summed in
 * 12 vectors of 8 (ymm registers, as the AVX2 f32 kernel's tile), or, on
 * the generic path, each half of it in 12 of 4 (xmm). */
#include "sgemm_bf16_internal.h"

#include <stdint.h>
#include <string.h>

#include "../core/isa_internal.h"
#include "../core/parallel_internal.h"
#include "bf16_internal.h"
#include "sgemm_bf16_avx512_internal.h"

enum { PMR = 6, PNR = 16, PNC = 384 };
enum { PB_FLOATS = TG_BF16_KC_MAX * PNC, PA_FLOATS = TG_BF16_KC_MAX * PMR };
_Static_assert((PB_FLOATS + PA_FLOATS) * sizeof(float) <= TG_THREAD_SCRATCH_BYTES, "the packed blocks fit the scratch");
_Static_assert(PNC % PNR == 0 && TG_BF16_KC_MAX % 2 == 0, "blocking");

/* op(A)(i, k) and op(B)(k, j) where they lie */
static inline float a_at(bool ta, const float *A, int lda, int64_t i, int64_t k)
{
    return ta ? A[k * lda + i] : A[i * lda + k];
}
static inline float b_at(bool tb, const float *B, int ldb, int64_t k, int64_t j)
{
    return tb ? B[j * ldb + k] : B[k * ldb + j];
}

static inline uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* A slice's sum added to C's element (the top comment) */
static inline float combine(float acc, const float *c, float alpha, float beta, bool first)
{
    if (!first) return fmaf(alpha, acc, *c);
    return beta != 0 ? fmaf(beta, *c, alpha * acc) : alpha * acc;
}

/* The packed panels hold the pairs' rows in the order the sums take them:
 * row 2p is k = 2p + 1 and row 2p + 1 is k = 2p (the odd one first), so
 * the kernels run down the rows in order. Row d holds k = d ^ 1, zero
 * where that is kc (the pad of a slice of odd depth). */

/* op(A) rows [i0, i0 + mr) over the slice [pc, pc + kc) rounded into
 * ap[d PMR + r] (row d: k = d ^ 1), zero past mr and at k = kc; whether
 * every value is in tg_bf16_plain's range */
TG_KERNEL_BODY bool pack_a_body(bool ta, const float *A, int lda, int i0, int mr, int pc, int kc, float *restrict ap)
{
    const int kce = (kc + 1) & ~1;
    uint32_t out = 0; /* nonzero once a value is outside the range */
    for (int d = 0; d < kce; d++)
        for (int r = mr; r < PMR; r++) ap[d * PMR + r] = 0;
    if (kc < kce)
        for (int r = 0; r < mr; r++) ap[(kc ^ 1) * PMR + r] = 0;
    for (int r = 0; r < mr; r++)
        for (int k = 0; k < kc; k++) {
            const int64_t at = ta ? (int64_t)(pc + k) * lda + i0 + r : (int64_t)(i0 + r) * lda + pc + k;
            const float v = tg_bf16_rounded(A[at]);
            ap[(k ^ 1) * PMR + r] = v;
            out |= !tg_bf16_plain(bits_of(v));
        }
    return !out;
}
TG_ISA_CLONES(bool, pack_a, (bool ta, const float *A, int lda, int i0, int mr, int pc, int kc, float *restrict ap),
              (ta, A, lda, i0, mr, pc, kc, ap))

/* op(B) over [pc, pc + kc) x [jc, jc + nc) rounded into PNR-column panels
 * (panel q: kce rows of PNR floats, row d: k = d ^ 1), zero past nc and
 * at k = kc; whether every value is in tg_bf16_plain's range */
TG_KERNEL_BODY bool pack_b_body(bool tb, const float *B, int ldb, int pc, int kc, int jc, int nc, float *restrict bp)
{
    const int kce = (kc + 1) & ~1;
    uint32_t out = 0;
    for (int q = 0; q * PNR < nc; q++) {
        float *dst = bp + (int64_t)q * kce * PNR;
        const int j0 = jc + q * PNR, w = nc - q * PNR < PNR ? nc - q * PNR : PNR;
        for (int d = 0; d < kce; d++)
            for (int j = w; j < PNR; j++) dst[d * PNR + j] = 0;
        if (kc < kce)
            for (int j = 0; j < w; j++) dst[(kc ^ 1) * PNR + j] = 0;
        for (int k = 0; k < kc; k++)
            for (int j = 0; j < w; j++) {
                const int64_t at = tb ? (int64_t)(j0 + j) * ldb + pc + k : (int64_t)(pc + k) * ldb + j0 + j;
                const float v = tg_bf16_rounded(B[at]);
                dst[(k ^ 1) * PNR + j] = v;
                out |= !tg_bf16_plain(bits_of(v));
            }
    }
    return !out;
}
TG_ISA_CLONES(bool, pack_b, (bool tb, const float *B, int ldb, int pc, int kc, int jc, int nc, float *restrict bp),
              (tb, B, ldb, pc, kc, jc, nc, bp))

/* acc (PMR x PNR) = the sums of a panel of A and one of B, kce rows deep,
 * as the f32 sums acc + a b: the steps, for operands in tg_bf16_plain's
 * range. A row of B times each row's value of A, added to that row's
 * accumulators: chains of fused multiply-adds where the path has them (a
 * multiply and an add on the generic path: the same sums, the product
 * being exact). Written with GCC's vector extensions, in vectors as wide
 * as the path's registers: a wider type is not kept in registers. */
#if defined(__GNUC__)
typedef float vec8 __attribute__((vector_size(8 * sizeof(float))));
typedef float vec4 __attribute__((vector_size(4 * sizeof(float))));
_Static_assert(PNR == 16, "two vectors of 8 a row");

/* 8 floats a vector (ymm, on the avx2 and avx512 paths): 12 accumulators */
TG_KERNEL_BODY void tile8_body(int kce, const float *restrict a, const float *restrict b, float *restrict acc)
{
    vec8 t[PMR][2];
    for (int r = 0; r < PMR; r++) t[r][0] = t[r][1] = (vec8){0};
    for (int d = 0; d < kce; d++, a += PMR, b += PNR) {
        vec8 b0, b1;
        memcpy(&b0, b, sizeof b0);
        memcpy(&b1, b + 8, sizeof b1);
        for (int r = 0; r < PMR; r++) t[r][0] += a[r] * b0, t[r][1] += a[r] * b1;
    }
    memcpy(acc, t, sizeof t);
}

/* 4 floats a vector (SSE2's xmm): the tile as two halves of 8 columns, 12
 * accumulators each (16 registers) */
TG_KERNEL_BODY void tile4_body(int kce, const float *restrict a, const float *restrict b, float *restrict acc)
{
    for (int h = 0; h < 2; h++) {
        vec4 t[PMR][2];
        for (int r = 0; r < PMR; r++) t[r][0] = t[r][1] = (vec4){0};
        const float *ad = a, *bd = b + 8 * h;
        for (int d = 0; d < kce; d++, ad += PMR, bd += PNR) {
            vec4 b0, b1;
            memcpy(&b0, bd, sizeof b0);
            memcpy(&b1, bd + 4, sizeof b1);
            for (int r = 0; r < PMR; r++) t[r][0] += ad[r] * b0, t[r][1] += ad[r] * b1;
        }
        for (int r = 0; r < PMR; r++) memcpy(acc + r * PNR + 8 * h, t[r], sizeof t[r]);
    }
}
#else
TG_KERNEL_BODY void tile4_body(int kce, const float *restrict a, const float *restrict b, float *restrict acc)
{
    for (int i = 0; i < PMR * PNR; i++) acc[i] = 0;
    for (int d = 0; d < kce; d++, a += PMR, b += PNR)
        for (int r = 0; r < PMR; r++)
            for (int j = 0; j < PNR; j++) acc[r * PNR + j] += a[r] * b[j];
}
#endif

#ifdef TG_AVX2_KERNELS
TG_TARGET_AVX512 static void tile_plain_avx512(int kce, const float *restrict a, const float *restrict b,
                                               float *restrict acc)
{
    tile8_body(kce, a, b, acc);
}
TG_TARGET_AVX2 static void tile_plain_avx2(int kce, const float *restrict a, const float *restrict b,
                                           float *restrict acc)
{
    tile8_body(kce, a, b, acc);
}
#endif
static void tile_plain(int kce, const float *restrict a, const float *restrict b, float *restrict acc)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx512()) tile_plain_avx512(kce, a, b, acc);
    else if (tg_cpu_avx2()) tile_plain_avx2(kce, a, b, acc);
    else
#endif
        tile4_body(kce, a, b, acc);
}

/* the same with tg_bf16_step, for operands of any magnitude */
static void tile_exact(int kce, const float *a, const float *b, float *acc)
{
    for (int r = 0; r < PMR; r++)
        for (int j = 0; j < PNR; j++) {
            float s = 0;
            for (int d = 0; d < kce; d++) s = tg_bf16_step(s, a[d * PMR + r], b[d * PNR + j]);
            acc[r * PNR + j] = s;
        }
}

/* C's mr x nr tile from acc (rows PNR apart) */
TG_KERNEL_BODY void store_tile_body(const float *restrict acc, float *c, int64_t ldc, int mr, int nr, float alpha,
                                    float beta, bool first)
{
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) c[r * ldc + j] = combine(acc[r * PNR + j], c + r * ldc + j, alpha, beta, first);
}
TG_ISA_CLONES_VOID(store_tile,
                   (const float *restrict acc, float *c, int64_t ldc, int mr, int nr, float alpha, float beta,
                    bool first),
                   (acc, c, ldc, mr, nr, alpha, beta, first))

void tg_sgemm_bf16_direct(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc)
{
    const int kcs = tg_bf16_slice_depth(K);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            for (int pc = 0; pc < K; pc += kcs) {
                const int kc = K - pc < kcs ? K - pc : kcs;
                float s = 0;
                for (int k = pc; k < pc + kc; k += 2) {
                    const bool odd = k + 1 < pc + kc; /* else the pad: a zero pair */
                    s = tg_bf16_step(s, odd ? tg_bf16_rounded(a_at(ta, A, lda, i, k + 1)) : 0.0f,
                                     odd ? tg_bf16_rounded(b_at(tb, B, ldb, k + 1, j)) : 0.0f);
                    s = tg_bf16_step(s, tg_bf16_rounded(a_at(ta, A, lda, i, k)),
                                     tg_bf16_rounded(b_at(tb, B, ldb, k, j)));
                }
                float *c = C + (int64_t)i * ldc + j;
                *c = combine(s, c, alpha, beta, pc == 0);
            }
}

void tg_sgemm_bf16_portable(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc)
{
    float *const scratch = tg_thread_scratch();
    if (!scratch) {
        tg_sgemm_bf16_direct(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    float *const bp = scratch, *const ap = scratch + PB_FLOATS;
    const int kcs = tg_bf16_slice_depth(K);
    for (int jc = 0; jc < N; jc += PNC) {
        const int nc = N - jc < PNC ? N - jc : PNC;
        for (int pc = 0; pc < K; pc += kcs) {
            const int kc = K - pc < kcs ? K - pc : kcs, kce = (kc + 1) & ~1;
            const bool first = pc == 0, plain_b = pack_b(tb, B, ldb, pc, kc, jc, nc, bp);
            for (int i = 0; i < M; i += PMR) {
                const int mr = M - i < PMR ? M - i : PMR;
                const bool plain = pack_a(ta, A, lda, i, mr, pc, kc, ap) && plain_b;
                for (int jr = 0; jr < nc; jr += PNR) {
                    const int nr = nc - jr < PNR ? nc - jr : PNR;
                    const float *b = bp + (int64_t)(jr / PNR) * kce * PNR;
                    float acc[PMR * PNR];
                    if (plain) tile_plain(kce, ap, b, acc);
                    else tile_exact(kce, ap, b, acc);
                    store_tile(acc, C + (int64_t)i * ldc + jc + jr, ldc, mr, nr, alpha, beta, first);
                }
            }
        }
    }
}

void tg_sgemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                float *c = C + (int64_t)i * ldc + j;
                *c = beta != 0 ? beta * *c : 0.0f;
            }
        return;
    }
    if (tg_isa_bf16() && tg_sgemm_bf16_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    tg_sgemm_bf16_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
