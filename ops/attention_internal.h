/* tapegrad ops (internal): the fused attention op's knobs, and its
 * pieces shared by ops/attention.c (the op, the f64 reference) and its
 * f32 kernels (ops/attention_f32.c, ops/attention_avx2.c,
 * ops/attention_avx512.c), which tests and benchmarks also call. */
#ifndef TG_ATTENTION_INTERNAL_H
#define TG_ATTENTION_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Query rows (bq) and keys (bk) per block of the f32 kernels in later
 * tg_attention calls (f64 works a row at a time); a value <= 0 restores
 * that size's default. Tests force small blocks so that a short sequence
 * crosses many blocks, partial ones included. Process-wide, not
 * thread-safe: set it before running graphs (ops/attention_f32.c). */
void tg_attention_set_blocks(int bq, int bk);
void tg_attention_get_blocks(int *bq, int *bk);

#define TG_ATTN_DEFAULT_BQ 24
#define TG_ATTN_DEFAULT_BK 128

/* Everything the kernels need to know about one call. */
typedef struct attn_plan {
    int B, H, Tq, Tk, C, dh;
    int G;              /* query heads per key/value head: head h reads kv head h / G */
    int Ckv;            /* width of k and v: (H / G) dh */
    int ldq, ldk;       /* row strides of q and of k, v: C and Ckv, or C + 2 Ckv inside one qkv */
    int bq, bk;         /* block sizes */
    bool causal;
    int64_t q_pos;      /* absolute position of query 0 (causal only) */
    double scale;       /* 1/sqrt(dh) */
} attn_plan;

enum { ATTN_OK, ATTN_BAD_SCORE, ATTN_BLOCKED_ROW };

/* Where a forward failed: pair bh = b H + h, query row i, key j. */
typedef struct attn_fault {
    int kind;
    int64_t bh;
    int i, j;
} attn_fault;

/* Column of kv head of query head h in a row of k or v. */
static inline int64_t kv_col(const attn_plan *p, int64_t h) { return h / p->G * p->dh; }

/* Query rows [i0, i0+nq) see keys [0, key_end) at most. */
static inline int key_end(const attn_plan *p, int i0, int nq)
{
    if (!p->causal) return p->Tk;
    const int64_t e = p->q_pos + i0 + nq;
    return e < 0 ? 0 : e > p->Tk ? p->Tk : (int)e;
}

/* ---- the f32 kernels (ops/attention_f32.c) ------------------------------ */

/* The f32 forward of pairs [lo, hi) (pair bh = b H + h): writes their
 * columns of o (B,Tq,C) and rows of lse (B,H,Tq); returns ATTN_OK, or the
 * kind of the first fault with *f filled. scratch: the part's own
 * tg_attn_scratch_f32(p, false) bytes. */
int tg_attn_forward_f32(const attn_plan *p, const float *q, const float *k, const float *v, float *o, float *lse,
                        int64_t lo, int64_t hi, float *scratch, attn_fault *f);

/* The f32 backward of pairs [lo, hi): adds into dq, dk, dv, each NULL when
 * that input needs no gradient; scratch of tg_attn_scratch_f32(p, true)
 * bytes. A range holds whole groups of G query heads (they add into one
 * kv head's dk, dv), so ranges on different threads never write the same
 * gradient. */
void tg_attn_backward_f32(const attn_plan *p, const float *q, const float *k, const float *v, const float *o,
                          const float *dout, const float *lse, float *dq, float *dk, float *dv, int64_t lo, int64_t hi,
                          float *scratch);

/* Bytes of one part's scratch for the f32 forward or backward of p. */
size_t tg_attn_scratch_f32(const attn_plan *p, bool backward);

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
int64_t tg_attn_block_online_avx512(float *restrict s, int nq, int nk, int lim0, float *restrict m,
                                    float *restrict l, float *restrict alpha);
void tg_attn_block_grad_avx512(float *restrict s, float *restrict dp, int nq, int nk, int lim0,
                               const float *restrict L, const float *restrict D);

#endif
