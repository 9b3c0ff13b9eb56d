/* tapegrad ops (internal): row-major gemm, split across the thread pool
 * (core/parallel.h).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,  op(X) = X or X^T (ta, tb)
 *
 * Large products are cut into at most 8 chunks (4 for OpenBLAS) of rows of C (or of
 * columns, when C is wider than tall), shared out among the threads;
 * each chunk is one single-threaded call: tg_sgemm (tapegrad's kernel or
 * OpenBLAS, by size) in f32, OpenBLAS in f64. The cut depends only on the
 * product's shape, so results are the same bits on any thread count
 * (ops/gemm.c). */
#ifndef TG_GEMM_INTERNAL_H
#define TG_GEMM_INTERNAL_H

#include <stdbool.h>

void tg_gemm_f32(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);
void tg_gemm_f64(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda, const double *B,
                 int ldb, double beta, double *C, int ldc);

#endif
