/* tapegrad ops (internal): the avx512 path's f32 kernel
 * (ops/sgemm_avx512.c), which ops/sgemm.c calls when tg_cpu_avx512(). */
#ifndef TG_SGEMM_AVX512_INTERNAL_H
#define TG_SGEMM_AVX512_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* tg_sgemm_kernel, tg_sgemm_tiles and tg_sgemm call these when
 * tg_cpu_avx512(). tg_sgemm_kernel's contract (false, C
 * untouched, when the CPU or compiler has no AVX-512 path, K = 0, or the
 * scratch cannot be allocated), and tg_sgemm_tiles's (B read up to N
 * rounded up to 16, C only within its N columns), to be called only when
 * tg_cpu_avx512(). Each element of C is a k-ordered sum of fused
 * multiply-adds, one slice of K at a time (the slices chosen from K
 * alone), so any block of rows or columns gives the same bits as the
 * whole product. */
bool tg_sgemm_kernel_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc);
void tg_sgemm_tiles_avx512(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                           int64_t ldb, float *c, int64_t ldc, bool add);

#endif
