/* tapegrad ops (internal): the f32 product of a few rows with a weight
 * matrix, for decoding (ops/gemv_f32.c).
 *
 *   Y (M,N) = X (M,K) W^T [+ 1 b^T]      W (N,K) row-major, b (N) or NULL
 *
 * A linear layer on one token (M = 1) is N dot products of length K, each
 * reading one row of W once: OpenBLAS's sgemm would first copy W into its
 * packed layout, three passes over the weights instead of one. Here every
 * element is one dot product summed in one fixed order (16 lanes over k,
 * then a fixed tree, then the k tail, then the bias), whatever M, the rows
 * around it or the thread that runs it; rows of W are shared out among
 * threads in parts that depend on (N, K) only. So results are the same
 * bits on any thread count (and on any cut of the rows); they differ from
 * the gemm path's by rounding. */
#ifndef TG_GEMV_INTERNAL_H
#define TG_GEMV_INTERNAL_H

#include <stdbool.h>

/* The most rows X may have for tg_gemv_f32: each row of X is its own dot
 * products, so the time grows with the rows, and on a token's products
 * (stories15M's shape) the gemm is as fast from 4 rows on. */
#define TG_GEMV_MAX_ROWS 3

/* Y = X W^T (+ b): X (M,K) with rows ldx apart, Y (M,N) with rows ldy
 * apart, 1 <= M <= TG_GEMV_MAX_ROWS; Y must not overlap X, W or b. */
void tg_gemv_f32(int M, int N, int K, const float *X, int ldx, const float *W, const float *b, float *Y, int ldy);

#endif
