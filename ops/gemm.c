/* Row-major gemm split across the thread pool (see gemm_internal.h).
 *
 * Where C is cut depends on the product's shape only, never on the thread
 * count: a product of at least GEMM_MIN_SPLIT multiply-adds is cut into
 * at most GEMM_CHUNKS chunks (GEMM_BLAS_CHUNKS for OpenBLAS) of whole
 * GEMM_BLOCKs of rows (or columns, when C is wider than tall), each one
 * call, on one thread or many. So
 * every element of C is computed by the same call on 1 or 64 threads, and
 * results are the same bits on any thread count (OpenBLAS's kernels sum
 * differently in differently sized calls). A product that tapegrad's own
 * kernel takes whole is the exception that costs nothing: that kernel
 * sums each element in the same order whatever a call covers
 * (ops/sgemm.c), so its chunks are shared out as one run of consecutive
 * chunks per thread, each run one call, which packs B once per thread
 * instead of once per chunk (on one thread: the whole product, one call).
 *
 * The bf16 products (tg_gemm_bf16) are cut the same way, each chunk one
 * tg_sgemm_bf16 call; both of its kernels sum each element the same
 * whatever a call covers, so they too run one run of chunks per thread.
 *
 * Cutting rows of C [m0, m1) reads rows [m0, m1) of op(A): A + m0 * lda
 * when A is stored as is, A + m0 when it is stored transposed. Cutting
 * columns [n0, n1) reads columns of op(B): B + n0 untransposed, B + n0 *
 * ldb transposed. */
#include "gemm_internal.h"

#include "../core/parallel.h"
#include "../core/product_internal.h"
#include "gemm_bf16_internal.h"
#include "sgemm_bf16_internal.h"
#include "sgemm_internal.h"

#define GEMM_BLOCK 16 /* chunks are whole blocks of this many rows or columns */
#define GEMM_CHUNKS 8 /* at most, whatever the thread count ... */
#define GEMM_BLAS_CHUNKS 4 /* ... and for OpenBLAS, which packs its B again in each */
#define GEMM_MIN_SPLIT (64.0 * 64 * 64) /* multiply-adds below which one call is cheaper */

/* the operands' type: f32, f64, or f32 rounded to bf16 */
typedef enum gemm_kind { GEMM_F32, GEMM_F64, GEMM_BF16 } gemm_kind;

/* A product and how it is cut. alpha and beta are doubles for every
 * type (a float converts to double and back exactly). */
typedef struct gemm_job {
    gemm_kind kind;
    bool ta, tb, by_rows;
    bool merge; /* consecutive chunks may be one call (tapegrad's kernel) */
    int M, N, K, lda, ldb, ldc;
    int chunk; /* rows (or columns) of C per chunk */
    double alpha, beta;
    const void *A, *B;
    void *C;
} gemm_job;

/* C's (M,N) block at element offset c, from A + a and B + b, in one call
 * on this thread */
static void one_call(const gemm_job *j, int M, int N, int64_t a, int64_t b, int64_t c)
{
    if (j->kind == GEMM_F64)
        tg_dgemm(j->ta, j->tb, M, N, j->K, j->alpha, (const double *)j->A + a, j->lda, (const double *)j->B + b, j->ldb,
                 j->beta, (double *)j->C + c, j->ldc);
    else if (j->kind == GEMM_BF16)
        tg_sgemm_bf16(j->ta, j->tb, M, N, j->K, (float)j->alpha, (const float *)j->A + a, j->lda,
                      (const float *)j->B + b, j->ldb, (float)j->beta, (float *)j->C + c, j->ldc);
    else
        tg_sgemm(j->ta, j->tb, M, N, j->K, (float)j->alpha, (const float *)j->A + a, j->lda, (const float *)j->B + b,
                 j->ldb, (float)j->beta, (float *)j->C + c, j->ldc);
}

/* Chunks [lo, hi) of C, one call each */
static void part(void *ctx, int64_t lo, int64_t hi)
{
    const gemm_job *j = ctx;
    const int total = j->by_rows ? j->M : j->N;
    const int64_t step = j->merge ? hi - lo : 1;
    for (int64_t k = lo; k < hi; k += step) {
        const int s = (int)k * j->chunk, e = (k + step) * j->chunk < total ? (int)(k + step) * j->chunk : total;
        if (j->by_rows) one_call(j, e - s, j->N, j->ta ? s : (int64_t)s * j->lda, 0, (int64_t)s * j->ldc);
        else one_call(j, j->M, e - s, 0, j->tb ? (int64_t)s * j->ldb : s, s);
    }
}

/* The whole product: one call, or its chunks shared out among threads */
static void gemm(gemm_job *j)
{
    if (j->M <= 0 || j->N <= 0) return;
    const int total = j->by_rows ? j->M : j->N, blocks = (total + GEMM_BLOCK - 1) / GEMM_BLOCK;
    if ((double)j->M * j->N * j->K < GEMM_MIN_SPLIT || blocks == 1) {
        one_call(j, j->M, j->N, 0, 0, 0);
        return;
    }
    /* a part of the whole product goes where the whole goes (tg_sgemm_picks_kernel
     * holds for a narrower N whenever it holds for the whole N) */
    j->merge = j->kind == GEMM_BF16 || (j->kind == GEMM_F32 && tg_sgemm_picks_kernel(j->ta, j->tb, j->N, j->K));
    const int most = j->merge ? GEMM_CHUNKS : GEMM_BLAS_CHUNKS;
    j->chunk = (blocks + most - 1) / most * GEMM_BLOCK;
    const int64_t chunks = (total + j->chunk - 1) / j->chunk, nt = tg_num_threads();
    /* chunks for tapegrad's kernel are cut-proof: about one run of them per
     * thread (one call on one thread); BLAS's, one call each */
    tg_parallel_for(chunks, j->merge ? (chunks + nt - 1) / nt : 1, part, j);
}

void tg_gemm_f32(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc)
{
    gemm(&(gemm_job){GEMM_F32, ta, tb, M >= N, false, M, N, K, lda, ldb, ldc, 0, alpha, beta, A, B, C});
}

void tg_gemm_f64(bool ta, bool tb, int M, int N, int K, double alpha, const double *A, int lda, const double *B,
                 int ldb, double beta, double *C, int ldc)
{
    gemm(&(gemm_job){GEMM_F64, ta, tb, M >= N, false, M, N, K, lda, ldb, ldc, 0, alpha, beta, A, B, C});
}

void tg_gemm_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    gemm(&(gemm_job){GEMM_BF16, ta, tb, M >= N, false, M, N, K, lda, ldb, ldc, 0, alpha, beta, A, B, C});
}

/* The layers that may use core alone (optim/) reach these through core's
 * table: filled when the program starts, before any of them runs. */
__attribute__((constructor)) static void register_products(void)
{
    tg_product_register(&(tg_product){tg_gemm_f32, tg_gemm_f64});
}
