/* Row-major gemm split across the thread pool (see gemm_internal.h).
 *
 * Cutting rows of C [m0, m1) reads rows [m0, m1) of op(A): A + m0 * lda
 * when A is stored as is, A + m0 when it is stored transposed. Cutting
 * columns [n0, n1) reads columns of op(B): B + n0 untransposed, B + n0 *
 * ldb transposed. */
#include "gemm_internal.h"

#include "../core/parallel.h"

#define GEMM_BLOCK 16                 /* rows or columns per unit of work */
#define GEMM_MIN_SPLIT (64.0 * 64 * 64) /* multiply-adds below which one call is cheaper */

#define DEFINE_GEMM(T, SUFFIX, GEMM1)                                                               \
    typedef struct {                                                                               \
        bool ta, tb, by_rows;                                                                      \
        int M, N, K, lda, ldb, ldc;                                                                \
        T alpha, beta;                                                                             \
        const T *A, *B;                                                                            \
        T *C;                                                                                      \
    } gemm_job_##SUFFIX;                                                                           \
                                                                                                   \
    static void one_call_##SUFFIX(const gemm_job_##SUFFIX *j, int M, int N, const T *A, const T *B, T *C) \
    {                                                                                              \
        GEMM1(j->ta, j->tb, M, N, j->K, j->alpha, A, j->lda, B, j->ldb, j->beta, C, j->ldc);        \
    }                                                                                              \
                                                                                                   \
    static void part_##SUFFIX(void *ctx, int64_t lo, int64_t hi)                                   \
    {                                                                                              \
        const gemm_job_##SUFFIX *j = ctx;                                                          \
        const int total = j->by_rows ? j->M : j->N;                                                \
        const int s = (int)lo * GEMM_BLOCK, e = hi * GEMM_BLOCK < total ? (int)hi * GEMM_BLOCK : total; \
        if (j->by_rows)                                                                            \
            one_call_##SUFFIX(j, e - s, j->N, j->A + (j->ta ? s : (long)s * j->lda), j->B,          \
                              j->C + (long)s * j->ldc);                                            \
        else                                                                                       \
            one_call_##SUFFIX(j, j->M, e - s, j->A, j->B + (j->tb ? (long)s * j->ldb : s), j->C + s); \
    }                                                                                              \
                                                                                                   \
    void tg_gemm_##SUFFIX(bool ta, bool tb, int M, int N, int K, T alpha, const T *A, int lda, const T *B, \
                          int ldb, T beta, T *C, int ldc)                                          \
    {                                                                                              \
        gemm_job_##SUFFIX j = {ta, tb, M >= N, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C};      \
        if (M <= 0 || N <= 0) return;                                                              \
        if (tg_num_threads() == 1 || (double)M * N * K < GEMM_MIN_SPLIT) {                         \
            one_call_##SUFFIX(&j, M, N, A, B, C);                                                  \
            return;                                                                                \
        }                                                                                          \
        const int total = j.by_rows ? M : N;                                                       \
        tg_parallel_for((total + GEMM_BLOCK - 1) / GEMM_BLOCK, 1, part_##SUFFIX, &j);              \
    }

DEFINE_GEMM(float, f32, tg_sgemm)
DEFINE_GEMM(double, f64, tg_dgemm)
