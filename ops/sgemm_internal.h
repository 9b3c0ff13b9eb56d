/* tapegrad ops (internal): one f32 or f64 product on the calling thread
 * (ops/sgemm.c): tapegrad's micro-kernels or OpenBLAS, the rule that
 * picks between them, the kernel on operands laid out by the caller, and
 * the transpose that packs. ops/gemm.c cuts a product across the thread
 * pool into calls of these. */
#ifndef TG_SGEMM_INTERNAL_H
#define TG_SGEMM_INTERNAL_H

#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>

/* One f32 product on the calling thread (ops/sgemm.c): on the avx512
 * kernel path, tapegrad's AVX-512 kernel (ops/sgemm_avx512.c) for every
 * product; on the avx2 path its AVX2 kernel for the small inner sizes
 * where it is faster, cblas_sgemm otherwise and for the weight gradients'
 * long products with A transposed; on the generic path cblas_sgemm. */
void tg_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

/* One f64 product on the calling thread: cblas_dgemm, row-major. */
static inline void tg_dgemm(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                            const double *B, int ldb, double beta, double *C, int ldc)
{
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

/* Whether tg_sgemm gives a product of these sizes to tapegrad's kernel
 * (the rule measured against OpenBLAS, the CPU, TG_SGEMM=openblas). M
 * plays no part, so the row blocks ops/gemm.c cuts all go the same way;
 * a column block narrower than the whole product may go to the kernel
 * where the whole would not (its chunks are fixed by shape, so results
 * still do not depend on the thread count). The rule must stay true for
 * every narrower N whenever it is true for N: ops/gemm.c then runs several
 * chunks of a product as one call. On the avx512 path every product
 * (K > 0) goes to the kernel. */
bool tg_sgemm_picks_kernel(bool ta, bool tb, int N, int K);

/* tapegrad's own kernel whatever the sizes (the AVX-512 one on the
 * avx512 path, else the AVX2 one); false (C untouched) when this CPU or
 * compiler has no AVX2 + FMA path, K = 0, or this thread's scratch
 * (core/parallel_internal.h, where it packs) cannot be allocated. */
bool tg_sgemm_kernel(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                     int ldb, float beta, float *C, int ldc);

/* C (M,N) = alpha A B, or C + alpha A B when add, on the calling thread
 * with tapegrad's micro-kernel and nothing packed: for small products
 * whose operands the caller has laid out for it (the attention's tiles).
 * A(i,k) = a[i ars + k acs]; row k of B starts at b + k ldb and is read 16
 * floats wide, so B must be readable up to N rounded up to a multiple of
 * 16 (what lies past N only feeds columns that are not stored); row i of
 * C starts at c + i ldc, and only its N columns are read (when add) and
 * written. K = 0 gives C = 0 (or C unchanged when add). false, with C
 * untouched, when this CPU or compiler has no AVX2 + FMA path. (The
 * AVX-512 one reads B in 32-column tiles, but only 16 columns wide where
 * fewer than 17 remain, so the same rounding to 16 holds.) */
bool tg_sgemm_tiles(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                    int64_t ldb, float *c, int64_t ldc, bool add);

/* dst (w, ldd) = the transpose of src's n rows of w floats (row stride
 * ld): dst[d ldd + j] = src[j ld + d], and columns n .. ldd-1 of dst zero
 * (ldd >= n). 8 x 8 blocks are transposed in registers where the CPU has
 * AVX2. */
void tg_sgemm_pack_t(float *restrict dst, int64_t ldd, const float *restrict src, int64_t ld, int n, int w);

#endif
