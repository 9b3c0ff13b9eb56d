/* tapegrad ops (internal): one product in bf16 on the calling thread
 * (ops/sgemm_bf16.c). ops/gemm.c cuts a product across the thread pool
 * into calls of tg_sgemm_bf16 (tg_gemm_bf16, ops/gemm_bf16_internal.h).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,  op(X) = X or X^T (ta, tb)
 *
 * A and B are f32, rounded to bf16 as they are packed (ops/bf16_internal.h);
 * C, alpha and beta are f32, and so are the sums. Row-major, with leading
 * dimensions as tg_sgemm's. */
#ifndef TG_SGEMM_BF16_INTERNAL_H
#define TG_SGEMM_BF16_INTERNAL_H

#include <stdbool.h>

/* One bf16 product: the vdpbf16ps kernel (ops/sgemm_bf16_avx512.c) when
 * tg_isa_bf16(), else the portable one; the same bits either way, and on
 * any cut of C's rows or columns into calls. K = 0 gives beta C (beta = 0:
 * zeros, C not read); M or N <= 0 does nothing. */
void tg_sgemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc);

/* The portable kernel whatever the CPU: plain C compiled for each kernel
 * path (core/isa_internal.h), the sums of ops/bf16_internal.h in the order
 * ops/sgemm_bf16.c's top comment gives. K >= 1. */
void tg_sgemm_bf16_portable(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc);

/* The same sums element by element from A and B where they lie, nothing
 * packed and no scratch (what the portable kernel falls back to when this
 * thread's scratch cannot be allocated); slow. K >= 1. */
void tg_sgemm_bf16_direct(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc);

#endif
