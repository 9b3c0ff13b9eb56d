/* tapegrad ops (internal): the bf16 product's vdpbf16ps kernel
 * (ops/sgemm_bf16_avx512.c), which tg_sgemm_bf16 calls when tg_isa_bf16(). */
#ifndef TG_SGEMM_BF16_AVX512_INTERNAL_H
#define TG_SGEMM_BF16_AVX512_INTERNAL_H

#include <stdbool.h>

/* tg_sgemm_bf16's product (ops/sgemm_bf16.c: the sums, in their order)
 * with AVX-512 BF16; false, C untouched, when this CPU or compiler has no
 * such kernel (tg_isa_bf16() is false), K <= 0, or this thread's scratch
 * cannot be allocated. M or N <= 0 does nothing (true). */
bool tg_sgemm_bf16_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc);

#endif
