/* Y (M,N) = X (M,K) W^T [+ 1 b^T] for a few rows of X (gemv_internal.h).
 *
 * Each element is one dot product of a row of X with a row of W, summed
 * in one order that depends on K only: K is cut into chunks of 16 floats
 * (the last K mod 16 left over), chunk c is added lane by lane into
 * accumulator c mod 4 (four independent chains, so the multiply-adds
 * overlap); then per lane (acc0 + acc1) + (acc2 + acc3); the 16 lanes as a
 * tree (lane l + 8, then + 4, + 2, + 1); then the leftover products in
 * order; then the bias. The rows of W are read one after another, each
 * once for all M rows of X (it stays in L1 meanwhile), so the weights
 * stream through in memory order, and the lines PREFETCH floats ahead are
 * asked for while a row is summed: a decoded token reads every weight
 * once from memory, and this keeps the reads in flight (measured on the
 * stories15M shape: 1.5x faster than reading four rows side by side
 * without prefetching, and than run.c's loop at -Ofast -march=native).
 * The body is compiled per kernel path (TG_ISA_CLONES: 16 lanes are one
 * AVX-512 register, two AVX2 ones, four SSE2 ones; the v3 and v4 paths
 * fuse the multiply-adds), so the paths differ by rounding and each is
 * deterministic.
 *
 * Threads: the rows of W are cut into tg_parallel_for parts of at least
 * GEMV_MIN_PART multiply-adds, a number that depends on (M, N, K) only;
 * the cut does not change any element's sums anyway. */
#include "gemv_internal.h"

#include <stddef.h>
#include <stdint.h>

#include "../core/isa_internal.h"
#include "../core/parallel.h"

#define LANES 16
#define ACCS 4 /* accumulators per dot product */
#define PREFETCH 1536 /* floats (6 KB) ahead of the row being read */
#define GEMV_MIN_PART (32.0 * 1024) /* multiply-adds below which a part is not worth a thread */

/* x . w over K floats, in the order described at the top, plus *b */
TG_KERNEL_BODY float dot(const float *restrict w, const float *restrict x, int K, const float *b)
{
    const int nc = K / LANES;
    float a0[LANES] = {0}, a1[LANES] = {0}, a2[LANES] = {0}, a3[LANES] = {0};
    int c = 0;
    for (; c + ACCS <= nc; c += ACCS) {
        const float *restrict wc = w + c * LANES, *restrict xc = x + c * LANES;
        for (int l = 0; l < LANES; l++) {
            a0[l] += wc[l] * xc[l];
            a1[l] += wc[LANES + l] * xc[LANES + l];
            a2[l] += wc[2 * LANES + l] * xc[2 * LANES + l];
            a3[l] += wc[3 * LANES + l] * xc[3 * LANES + l];
        }
    }
    float *const acc[ACCS - 1] = {a0, a1, a2}; /* the last nc mod 4 chunks: accumulators 0, 1, 2 */
    for (int r = 0; c < nc; c++, r++)
        for (int l = 0; l < LANES; l++) acc[r][l] += w[c * LANES + l] * x[c * LANES + l];
    for (int l = 0; l < LANES; l++) a0[l] = (a0[l] + a1[l]) + (a2[l] + a3[l]);
    for (int h = LANES / 2; h > 0; h /= 2)
        for (int l = 0; l < h; l++) a0[l] += a0[l + h];
    float s = a0[0];
    for (int k = nc * LANES; k < K; k++) s += w[k] * x[k];
    return b ? s + *b : s;
}

/* rows [n0, n1) of W (N rows) against every row of X */
TG_KERNEL_BODY void gemv_rows_body(int M, int N, int K, const float *restrict X, int ldx, const float *restrict W,
                                   const float *restrict b, float *restrict Y, int ldy, int n0, int n1)
{
    const int64_t size = (int64_t)N * K;
    for (int n = n0; n < n1; n++) {
        const int64_t at = (int64_t)n * K;
        for (int64_t k = at + PREFETCH; k < at + PREFETCH + K && k < size; k += LANES) __builtin_prefetch(W + k);
        for (int m = 0; m < M; m++) Y[(int64_t)m * ldy + n] = dot(W + at, X + (int64_t)m * ldx, K, b ? b + n : NULL);
    }
}
TG_ISA_CLONES_VOID(gemv_rows,
                   (int M, int N, int K, const float *restrict X, int ldx, const float *restrict W,
                    const float *restrict b, float *restrict Y, int ldy, int n0, int n1),
                   (M, N, K, X, ldx, W, b, Y, ldy, n0, n1))

typedef struct gemv_job {
    int M, N, K, ldx, ldy;
    const float *X, *W, *b;
    float *Y;
} gemv_job;

/* rows [lo, hi) of W */
static void gemv_part(void *ctx, int64_t lo, int64_t hi)
{
    const gemv_job *j = ctx;
    gemv_rows(j->M, j->N, j->K, j->X, j->ldx, j->W, j->b, j->Y, j->ldy, (int)lo, (int)hi);
}

void tg_gemv_f32(int M, int N, int K, const float *X, int ldx, const float *W, const float *b, float *Y, int ldy)
{
    if (M <= 0 || N <= 0) return;
    gemv_job j = {M, N, K, ldx, ldy, X, W, b, Y};
    const int64_t grain = (int64_t)(GEMV_MIN_PART / ((double)M * (K > 0 ? K : 1))) + 1; /* rows per part */
    tg_parallel_for(N, grain, gemv_part, &j);
}
