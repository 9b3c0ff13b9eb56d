/* tapegrad ops (internal): the bf16 product split across the thread pool
 * (core/parallel.h), for the mixed-precision ops.
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,  op(X) = X or X^T (ta, tb)
 *
 * A and B f32, rounded to bf16 as the kernel packs them; C, alpha, beta
 * and the sums f32 (ops/sgemm_bf16.c gives the sums and their order). Cut
 * as tg_gemm_f32 cuts a product (ops/gemm.c, which defines it beside the
 * f32 and f64 ones), each chunk one tg_sgemm_bf16 call: the same bits on
 * any thread count, with the vdpbf16ps kernel or the portable one. */
#ifndef TG_GEMM_BF16_INTERNAL_H
#define TG_GEMM_BF16_INTERNAL_H

#include <stdbool.h>

void tg_gemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);

#endif
