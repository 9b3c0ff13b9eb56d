/* tapegrad ops (internal): the parts of the avx512 path's f32 kernel,
 * shared by its three files: the blocking, the micro-kernels
 * (ops/sgemm_avx512_kernels.c), the packing (ops/sgemm_avx512_pack.c) and
 * the driver that runs them (ops/sgemm_avx512.c, whose opening comment
 * describes the whole). Named after no one file: each of the three
 * includes it, and only the driver calls the other two. Included only
 * where TG_AVX2_KERNELS is defined (core/isa_internal.h). */
#ifndef TG_SGEMM_AVX512_PARTS_INTERNAL_H
#define TG_SGEMM_AVX512_PARTS_INTERNAL_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/parallel_internal.h"
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
INLINE void pf0(const float *p, int64_t n)
{
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T0);
}
INLINE void pf1(const float *p, int64_t n)
{
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T1);
}

/* lanes [0, n) of a 16-lane mask: none for n <= 0, all for n >= 16 */
INLINE __mmask16 lanes(int n) { return (__mmask16)(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }

/* ---- the micro-kernels (ops/sgemm_avx512_kernels.c) ---------------------- */

/* A row panel's first 32 columns while packing A stored transposed:
 * A(r, k) = a[r + k acs] (r < mr, 12 <= mr <= MR) read where it lies and
 * stored to the panel ad[k MR + r] as it is used (wide: 16 floats
 * readable at each k). b: B's first packed panel. */
typedef void apacking_fn(int kc, const float *a, int64_t acs, float *restrict ad, const float *b, float *c, int64_t ldc,
                         int nr, float alpha, float beta, int first, int wide);
/* [mr - 12] */
extern apacking_fn *const tg_sgemm512_apacking[3];

/* A block's first MR rows while packing B stored as is: row k of B read
 * where it lies (b + k ldb, columns past nr masked off) and stored to the
 * panel bc + k NR as it is used, so the pass that packs B also computes
 * (and its loads, from L3 or memory, hide behind the FMAs). a: A's packed
 * panel. One vector of columns (nr <= 16), or two. */
AVX512 void tg_sgemm512_packing_kernel_1(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                         float *c, int64_t ldc, int nr, float alpha, float beta, int first);
AVX512 void tg_sgemm512_packing_kernel_2(int kc, const float *a, const float *b, int64_t ldb, float *restrict bc,
                                         float *c, int64_t ldc, int nr, float alpha, float beta, int first);

/* The kernels, for each row count and vector count: packed or
 * column-strided A (ars = 1: A(r,k) = a[r + k acs]), and A with any
 * strides (for tg_sgemm_tiles on A as stored). C's mr x nr tile (nr <= 16
 * nv) = alpha sum_k A(r, k) B(k, c) + beta C on the first slice (beta 0:
 * C not read), fma(alpha, acc, C) on later ones; row k of B is at b + k
 * bs. */
typedef void kernel_fn(int kc, const float *a, int64_t ars, int64_t acs, const float *b, int64_t bs, float *c,
                       int64_t ldc, int nr, float alpha, float beta, int first);
/* [column-strided or packed A, row-strided A][mr - 1][nv - 1] */
extern kernel_fn *const tg_sgemm512_kernels[2][MR][2];

/* ---- the packing (ops/sgemm_avx512_pack.c) ------------------------------- */

/* mr <= MR rows of op(A) over kc of K, packed k-major: dst[k MR + r] =
 * op(A)(r, k) for r < mr, where op(A)(r, k) = a[k lda + r] (A stored
 * transposed: each k's mr floats contiguous, one masked load and store)
 * or a[r lda + k] (as stored: 16 x 16 register transposes). The rest of
 * each k's MR floats is not read; dst needs 16 floats of slack. wide:
 * 16 floats are readable at each k of A stored transposed. */
AVX512 void tg_sgemm512_pack_a(bool ta, const float *a, int lda, int mr, int kc, float *restrict dst, bool wide);

/* dst[r ds + k] = src[r ss + k] for r < n, k < kc: rows copied to a new
 * stride */
AVX512 void tg_sgemm512_copy_rows(float *restrict dst, int64_t ds, const float *src, int64_t ss, int n, int kc);

/* op(B)[k0 .. k0+kc) x [j0 .. j0+nc) into 32-column panels: panel q holds
 * columns j0 + 32 q .. as kc rows of 32 floats, zero past nc (or, for B
 * stored transposed, the second 16 not written when the panel has at most
 * 16 columns: the one-vector kernels that do it never read them). For B
 * stored as is, the packing kernels do the same as they compute; this is
 * for products of fewer than MR rows. */
AVX512 void tg_sgemm512_pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc, float *restrict dst);

#endif
