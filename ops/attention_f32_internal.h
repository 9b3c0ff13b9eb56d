/* tapegrad ops (internal): the f32 kernels of the fused attention
 * (ops/attention_f32.c), their knobs and the plan they run: what
 * ops/attention.c (the op, the f64 reference) hands them, and what tests
 * and benchmarks call. */
#ifndef TG_ATTENTION_F32_INTERNAL_H
#define TG_ATTENTION_F32_INTERNAL_H

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
    int G; /* query heads per key/value head: head h reads kv head h / G */
    int Ckv; /* width of k and v: (H / G) dh */
    int ldq, ldk; /* row strides of q and of k, v: C and Ckv, or C + 2 Ckv inside one qkv */
    int bq, bk; /* block sizes */
    bool causal;
    int64_t q_pos; /* absolute position of query 0 (causal only) */
    double scale; /* 1/sqrt(dh) */
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

#endif
