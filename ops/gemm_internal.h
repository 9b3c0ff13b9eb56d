/* tapegrad ops (internal): row-major gemm on OpenBLAS, split across the
 * thread pool (core/parallel.h).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,  op(X) = X or X^T (ta, tb)
 *
 * Large products are cut into contiguous blocks of rows of C (or of
 * columns, when C is wider than tall), one per thread; each block is one
 * single-threaded BLAS call. Every element of C is computed by one call
 * with the same inner loop whichever way it is cut, and the cut depends
 * only on the thread count. Inside a parallel loop it is one BLAS call. */
#ifndef TG_GEMM_INTERNAL_H
#define TG_GEMM_INTERNAL_H

#include <stdbool.h>

void tg_gemm_f32(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                 int ldb, float beta, float *C, int ldc);
void tg_gemm_f64(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                 const double *B, int ldb, double beta, double *C, int ldc);

#endif
