/* tapegrad ops (internal): the packing of the bf16 product's vdpbf16ps
 * kernel (ops/sgemm_bf16_avx512_pack.c), and the blocking it packs for
 * (ops/sgemm_bf16_avx512.c describes the whole). Included only where
 * TG_AVX2_KERNELS is defined (core/isa_internal.h).
 *
 * The packed operands are pairs: one 32-bit word holds the bf16 of k (low
 * half) and of k + 1 (high half), which is what vdpbf16ps multiplies in
 * one lane. */
#ifndef TG_SGEMM_BF16_AVX512_PACK_INTERNAL_H
#define TG_SGEMM_BF16_AVX512_PACK_INTERNAL_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/parallel_internal.h"
#include "bf16_internal.h"

#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))
#define INLINE static inline __attribute__((always_inline))

/* rows and columns of C's tile, C's widest column block; pairs of K per slice */
enum { MR = 14, NR = 32, NC = 768, KP_MAX = TG_BF16_KC_MAX / 2 };
/* the scratch, in words: B's block (KP_MAX pairs x NC columns), then A's
 * panel (MR rows of KP_MAX pairs and 16 words of slack each, the most of
 * the two layouts) */
enum { B_WORDS = KP_MAX * NC, A_WORDS = MR * (KP_MAX + 16) + 16 };
_Static_assert((B_WORDS + A_WORDS) * sizeof(uint32_t) <= TG_THREAD_SCRATCH_BYTES, "the packed blocks fit the scratch");
_Static_assert(MR <= 16 && NC % NR == 0 && TG_BF16_KC_MAX % 32 == 0, "blocking");

/* lanes [0, n) of a 16-lane mask: none for n <= 0, all for n >= 16 */
INLINE __mmask16 lanes(int n) { return (__mmask16)(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }

/* the line of p + n floats on its way to L1 (pf0) or L2 (pf1); the
 * address is computed as an integer: it may lie past the operand, which
 * a prefetch does not mind */
INLINE void pf0(const float *p, int64_t n)
{
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T0);
}
INLINE void pf1(const float *p, int64_t n)
{
    _mm_prefetch((const char *)((uintptr_t)p + (uintptr_t)n * 4), _MM_HINT_T1);
}

/* The mr <= MR rows of op(A) over kc of K, A stored transposed (a:
 * op(A)(0, 0) of the slice, op(A)(r, k) = a[k lda + r]), as pairs packed
 * k-major: dst[p MR + r] = (A(r, 2p), A(r, 2p + 1)), each rounded to
 * bf16, and a zero high half at 2p + 1 = kc. Words past mr in each pair's
 * MR are not meaningful; dst needs A_WORDS. */
AVX512BF16 void tg_bf16x512_pack_a(const float *a, int lda, int mr, int kc, uint32_t *restrict dst);

/* The same rows of A stored as is (op(A)(r, k) = a[r lda + k]) rounded
 * into rows of pairs: dst[r ds + p] = (A(r, 2p), A(r, 2p + 1)), a zero
 * high half at 2p + 1 = kc; each row is stored in whole 16-word vectors
 * (ds at least the pairs rounded up to 16). */
AVX512BF16 void tg_bf16x512_round_rows(const float *a, int lda, int mr, int kc, uint32_t *restrict dst, int64_t ds);

/* op(B) over [k0, k0 + kc) x [j0, j0 + nc) as pairs in NR-column panels:
 * panel q holds columns j0 + NR q .. as kp = ceil(kc / 2) rows of NR
 * words, word (p, j) = (B(k0 + 2p, j), B(k0 + 2p + 1, j)) rounded to
 * bf16, zero past nc and past kc. op(B)(k, j) = B[j ldb + k] (tb) or
 * B[k ldb + j]. */
AVX512BF16 void tg_bf16x512_pack_b(bool tb, const float *B, int ldb, int k0, int kc, int j0, int nc,
                                   uint32_t *restrict dst);

#endif
