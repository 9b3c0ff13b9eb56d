/* tapegrad ops (internal): the vector row steps of the f32 attention's
 * online softmax, one file per instruction set (ops/attention_avx2.c,
 * ops/attention_avx512.c), and the two scalar pieces they share with the
 * compiled steps of ops/attention_f32.c, which calls them. Named after
 * no one file: each tile file and attention_f32.c include it, and none of
 * them calls the others' header. */
#ifndef TG_ATTENTION_TILES_INTERNAL_H
#define TG_ATTENTION_TILES_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Two steps of a row of the online softmax that block_online and its AVX2
 * and AVX-512 versions share. A NaN or +inf among the visible scores
 * (c <= lim) of row r of a tile nk wide, at sr: true, with *at the flat
 * index r nk + c of the first. */
static inline bool tg_attn_find_bad(const float *sr, int r, int nk, int lim, int64_t *at)
{
    for (int c = 0; c <= lim && c < nk; c++)
        if (isnan(sr[c]) || sr[c] == INFINITY) {
            *at = (int64_t)r * nk + c;
            return true;
        }
    return false;
}

/* A row that sees nothing yet (its running maximum still -inf) stays
 * empty: P 0 (its nk scores at sr) and the rescale factor 1. */
static inline void tg_attn_row_empty(float *sr, int nk, float *alpha)
{
    for (int c = 0; c < nk; c++) sr[c] = 0;
    *alpha = 1;
}

/* The f32 online-softmax step over one (nq,nk) tile (ops/attention_avx2.c):
 * block_online of ops/attention_f32.c with AVX2 + FMA intrinsics. Only where
 * TG_AVX2_KERNELS is defined and tg_cpu_avx2() is true. */
int64_t tg_attn_block_online_avx2(float *restrict s, int nq, int nk, int lim0, float *restrict m, float *restrict l,
                                  float *restrict alpha);

/* The f32 backward step over one tile (block_grad of ops/attention_f32.c),
 * likewise: s leaves with P, dp (when not NULL) with dS = P (dP - D). */
void tg_attn_block_grad_avx2(float *restrict s, float *restrict dp, int nq, int nk, int lim0, const float *restrict L,
                             const float *restrict D);

/* The same two steps with AVX-512 (F, BW, DQ, VL) intrinsics, 16 lanes
 * and mask registers (ops/attention_avx512.c): the same bits as the AVX2
 * ones. Only where TG_AVX2_KERNELS is defined and tg_cpu_avx512() is
 * true. */
int64_t tg_attn_block_online_avx512(float *restrict s, int nq, int nk, int lim0, float *restrict m, float *restrict l,
                                    float *restrict alpha);
void tg_attn_block_grad_avx512(float *restrict s, float *restrict dp, int nq, int nk, int lim0, const float *restrict L,
                               const float *restrict D);

#endif
