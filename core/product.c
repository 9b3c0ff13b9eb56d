/* The product table (product_internal.h) and core's plain products. */
#include "product_internal.h"

#include <stdint.h>

static tg_product in_use = {tg_product_plain_f32, tg_product_plain_f64};

const tg_product *tg_product_get(void) { return &in_use; }

void tg_product_register(const tg_product *p)
{
    in_use.gemm_f32 = p && p->gemm_f32 ? p->gemm_f32 : tg_product_plain_f32;
    in_use.gemm_f64 = p && p->gemm_f64 ? p->gemm_f64 : tg_product_plain_f64;
}

/* Element i of an f32 or f64 array, as a double. */
static double at(const void *x, bool f64, int64_t i) { return f64 ? ((const double *)x)[i] : ((const float *)x)[i]; }

/* Both types in one loop: only the loads and the store differ. */
static void plain(bool f64, bool ta, bool tb, int M, int N, int K, double alpha, const void *A, int lda, const void *B,
                  int ldb, double beta, void *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += at(A, f64, ta ? (int64_t)k * lda + i : (int64_t)i * lda + k) *
                    at(B, f64, tb ? (int64_t)j * ldb + k : (int64_t)k * ldb + j);
            const int64_t c = (int64_t)i * ldc + j;
            const double v = alpha * s + (beta != 0 ? beta * at(C, f64, c) : 0);
            if (f64) ((double *)C)[c] = v;
            else ((float *)C)[c] = (float)v;
        }
}

void tg_product_plain_f32(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                          int ldb, float beta, float *C, int ldc)
{
    plain(false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void tg_product_plain_f64(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda,
                          const double *B, int ldb, double beta, double *C, int ldc)
{
    plain(true, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
