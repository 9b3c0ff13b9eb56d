/* tapegrad core (internal): the matrix product, for the layers that may
 * use core alone (optim/: Muon's Newton-Schulz iteration).
 *
 *   C (M,N) = alpha op(A) op(B) + beta C,  op(X) = X or X^T (ta, tb),
 *   row-major, C not read when beta is 0 (as BLAS)
 *
 * The products are ops/'s, the gemm every op runs (ops/gemm.c: tapegrad's
 * kernels or OpenBLAS, cut across the thread pool by shape only): ops/
 * registers them in this table when the program starts, so a caller here
 * gets the bits of the kernel path in use, on any thread count. Until
 * something registers (a program linked with the static library that
 * runs no op at all), the table holds core's plain products below:
 * correct, summed in double, but slower and not the same bits. */
#ifndef TG_PRODUCT_INTERNAL_H
#define TG_PRODUCT_INTERNAL_H

#include <stdbool.h>

typedef void tg_gemm_f32_fn(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, float *C, int ldc);
typedef void tg_gemm_f64_fn(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                            const double *B, int ldb, double beta, double *C, int ldc);

typedef struct tg_product {
    tg_gemm_f32_fn *gemm_f32;
    tg_gemm_f64_fn *gemm_f64;
} tg_product;

/* The products in use: the registered ones, or the plain ones. */
const tg_product *tg_product_get(void);

/* Makes p's products the ones in use (a NULL entry, or a NULL p, keeps the
 * plain one). Called before anything runs (ops/gemm.c registers from a
 * constructor): the table is not guarded against a product running. */
void tg_product_register(const tg_product *p);

/* The plain products: each element of C one sum over k in double. */
void tg_product_plain_f32(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc);
void tg_product_plain_f64(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                          const double *B, int ldb, double beta, double *C, int ldc);

#endif
