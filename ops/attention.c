/* Fused scaled dot-product attention: O = softmax(Q K^T / sqrt(dh)) V per
 * head, with no (Tq,Tk) tensor kept: backward recomputes what it needs.
 *
 * Layout. q (B,Tq,C), k and v (B,Tk,C), C = H dh. Head h of batch row b
 * is the column range [h dh, (h+1) dh) of every row, exactly as the
 * projections produce it, so a head's Q is the (Tq,dh) matrix at
 * q + b Tq C + h dh with row stride C (BLAS lda = C): nothing is split,
 * transposed or merged. The output O (B,Tq,C) has the same layout.
 * tg_attention_qkv takes one (B,T,3C) tensor with q, k and v side by side
 * in each row (one fused projection): the same matrices at offsets 0, C
 * and 2C with row stride 3C (ldq = ldk = 3C in the plan); their gradients
 * land in d qkv the same way.
 *
 * Visibility. Without TG_ATTN_CAUSAL every key is visible. With it, query
 * i sits at absolute position q_pos + i and sees key j iff j <= q_pos + i
 * (q_pos = the cache length with a KV cache: bottom-right alignment).
 *
 * Forward, per head, with a = 1/sqrt(dh), for query row i and the keys j
 * it sees (the softmax of docs/design.md, its maximum subtracted):
 *
 *   S_ij = a Q_i . K_j
 *   m_i  = max_j S_ij,   l_i = sum_j exp(S_ij - m_i)
 *   O_i  = sum_j exp(S_ij - m_i) V_j / l_i
 *   L_i  = m_i + log l_i                  the row's logsumexp, kept
 *
 * Backward, with P recomputed from L, and D from O (D_i = sum_j P_ij
 * dP_ij, since O_i = sum_j P_ij V_j):
 *
 *   P_ij  = exp(S_ij - L_i)
 *   dP_ij = dO_i . V_j,   D_i = dO_i . O_i
 *   dS_ij = P_ij (dP_ij - D_i)            the softmax backward
 *   dQ_i += a sum_j dS_ij K_j,   dK_j += a sum_i dS_ij Q_i,
 *   dV_j += sum_i P_ij dO_i
 *
 * everything added into the gradients (which may already hold values).
 * The f64 kernels below are these lines, one query row at a time: the
 * reference.
 *
 * The f32 kernels compute the same block by block. For each block of
 * query rows I (bq rows) and, in turn, each block of keys J (bk keys) up
 * to the last key any row of I sees, an online softmax:
 *
 *   S    = a Q_I K_J^T,  -inf where key j is not visible to query i
 *   m'_i = max(m_i, max_j S_ij)           running row maximum
 *   P_ij = exp(S_ij - m'_i)
 *   l_i  = exp(m_i - m'_i) l_i + sum_j P_ij            running row sum
 *   O_I  = exp(m_i - m'_i) O_I + P V_J    (row rescale, then one product)
 *   m_i  = m'_i
 *
 * and after the last key block O_i /= l_i and L_i = m_i + log l_i: the
 * forward above, whatever the block sizes. Backward, block by block:
 *
 *   P  = exp(a Q_I K_J^T - L_I)  (0 where not visible),   dP = dO_I V_J^T
 *   dS = P * (dP - D)
 *   dQ_I += a dS K_J,   dK_J += a dS^T Q_I,   dV_J += P^T dO_I
 *
 * Only O and L (B,H,Tq) are kept; the f32 scratch is two (bq,bk) tiles,
 * three (bq) rows and the head's packed operands (below).
 *
 * Products. Each head's K^T (and, backward, V^T) is packed once into the
 * worker's scratch, (dh, Tk), so that every product reads its right-hand
 * operand row by row: K^T, V^T, or rows of V, K, Q, dO where they lie
 * (or packed, see rows_f32). The products then run on tapegrad's
 * micro-kernel with nothing packed per block (tg_sgemm_tiles; the
 * transposed left operands P^T and dS^T are read through strides from
 * the tile in L1); without AVX2 they call a gemm.
 *
 * Errors, as tg_softmax: a NaN or +inf score at a visible key names the
 * element; -inf scores get weight 0; a query row with no visible key, or
 * only -inf scores, names the row. In f32 the check is one OR per score,
 * folded into the row-maximum loop.
 *
 * The work of a range [lo,hi) of (b,h) pairs is one function with all its
 * scratch passed in; different pairs touch disjoint columns of O, L and
 * the gradients, so ranges run on different threads (core/parallel.h),
 * each with its own scratch. f32 uses the
 * call-free exp of fastmath_internal.h (as the f32 softmax) in loops the
 * compiler vectorises; f64 uses libm. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

#include "../core/op.h"
#include "../core/parallel.h"
#include "attention_internal.h"
#include "fastmath_internal.h"
#include "gemm_internal.h"

static int block_q = TG_ATTN_DEFAULT_BQ, block_k = TG_ATTN_DEFAULT_BK;

void tg_attention_set_blocks(int bq, int bk)
{
    block_q = bq > 0 ? bq : TG_ATTN_DEFAULT_BQ;
    block_k = bk > 0 ? bk : TG_ATTN_DEFAULT_BK;
}

void tg_attention_get_blocks(int *bq, int *bk)
{
    *bq = block_q;
    *bk = block_k;
}

/* Everything the kernels need to know about one call. */
typedef struct attn_plan {
    int B, H, Tq, Tk, C, dh;
    int ldq, ldk;       /* row strides of q and of k, v: C, or 3C inside one qkv */
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

/* Saved on the node for backward. */
typedef struct attn_saved {
    attn_plan plan;
    void *lse;          /* (B,H,Tq) row logsumexp L */
} attn_saved;

/* Query rows [i0, i0+nq) see keys [0, key_end) at most. */
static int key_end(const attn_plan *p, int i0, int nq)
{
    if (!p->causal) return p->Tk;
    const int64_t e = p->q_pos + i0 + nq;
    return e < 0 ? 0 : e > p->Tk ? p->Tk : (int)e;
}

/* In the tile of query rows from i0 and keys from j0 (nk keys), row r sees
 * column c iff c <= lim0 + r. Clamped so that lim0 + r never overflows. */
static int vis_limit(const attn_plan *p, int i0, int j0, int nk)
{
    if (!p->causal) return nk;
    const int64_t l = p->q_pos + i0 - j0;
    return l < -(int64_t)p->bq - 1 ? -p->bq - 1 : l > nk ? nk : (int)l;
}

enum { LANES = 8 };

/* The row kernels. Row maxima and sums run in LANES partial lanes (as the
 * f32 softmax): full groups vectorise, the tail is short. */

/* One key block of the online softmax for nq rows: s (nq,nk) holds the
 * scaled scores and leaves with P; m, l are the running max and sum;
 * alpha receives each row's rescale factor exp(m_old - m_new). Returns
 * -1, or the flat index r nk + c of a NaN / +inf score at a visible key. */
TG_VEC_CLONES static int64_t block_online_f32(float *restrict s, int nq, int nk, int lim0, float *restrict m,
                                              float *restrict l, float *restrict alpha)
{
    int64_t at; /* a bad score's flat index */
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r;
        float mx[LANES];
        int bd[LANES];
        for (int k = 0; k < LANES; k++) mx[k] = -INFINITY, bd[k] = 0;
        for (int c0 = 0; c0 < nk; c0 += LANES)
            for (int k = 0; k < (c0 + LANES <= nk ? LANES : nk - c0); k++) {
                const int c = c0 + k, vis = c <= lim;
                const float x = sr[c];
                bd[k] |= vis & ((x != x) | (x == INFINITY));
                const float w = tg_fsel(vis, x, -INFINITY);
                sr[c] = w;
                mx[k] = tg_fsel(w > mx[k], w, mx[k]);
            }
        float mn = m[r];
        int bad = 0;
        for (int k = 0; k < LANES; k++) {
            mn = mx[k] > mn ? mx[k] : mn;
            bad |= bd[k];
        }
        if (bad && tg_attn_find_bad(sr, r, nk, lim, &at)) return at;
        if (mn == -INFINITY) { /* nothing visible yet */
            tg_attn_row_empty(sr, nk, &alpha[r]);
            continue;
        }
        const float a = m[r] == -INFINITY ? 0 : tg_fexp(m[r] - mn);
        float sum[LANES] = {0};
        for (int c0 = 0; c0 < nk; c0 += LANES)
            for (int k = 0; k < (c0 + LANES <= nk ? LANES : nk - c0); k++) {
                const int c = c0 + k;
                const float w = sr[c];
                const float e = tg_fsel(w != -INFINITY, tg_fexp(w - mn), 0);
                sr[c] = e;
                sum[k] += e;
            }
        float st = 0;
        for (int k = 0; k < LANES; k++) st += sum[k];
        l[r] = a * l[r] + st;
        m[r] = mn;
        alpha[r] = a;
    }
    return -1;
}

/* Backward of one tile: s (nq,nk) holds the scaled scores and leaves
 * with P = exp(s - L) (0 where not visible); dp (nq,nk), when not NULL,
 * holds dO V^T and leaves with dS = P (dP - D). */
TG_VEC_CLONES static void block_grad_f32(float *restrict s, float *restrict dp, int nq, int nk, int lim0,
                                         const float *restrict L, const float *restrict D)
{
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r;
        const float Lr = L[r];
        for (int c = 0; c < nk; c++)
            sr[c] = tg_fsel((c <= lim) & (sr[c] != -INFINITY), tg_fexp(sr[c] - Lr), 0);
        if (!dp) continue;
        float *restrict dr = dp + (int64_t)r * nk;
        const float Dr = D[r];
        for (int c = 0; c < nk; c++) dr[c] = tg_fsel(c <= lim, sr[c] * (dr[c] - Dr), 0);
    }
}

/* f32: the intrinsics versions where the CPU has AVX2 + FMA */
static int64_t online_f32(float *s, int nq, int nk, int lim0, float *m, float *l, float *alpha)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx2()) return tg_attn_block_online_avx2(s, nq, nk, lim0, m, l, alpha);
#endif
    return block_online_f32(s, nq, nk, lim0, m, l, alpha);
}

static void grad_f32(float *s, float *dp, int nq, int nk, int lim0, const float *L, const float *D)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx2()) {
        tg_attn_block_grad_avx2(s, dp, nq, nk, lim0, L, D);
        return;
    }
#endif
    block_grad_f32(s, dp, nq, nk, lim0, L, D);
}

/* A as a gemm sees it: transposed when acs is not 1; returns lda, at
 * least what a gemm accepts (a row or column that is never stepped over
 * may have stride 1) */
static int gemm_lda(int M, int K, int64_t ars, int64_t acs, bool *ta)
{
    *ta = acs != 1;
    const int64_t ld = *ta ? (acs > M ? acs : M) : (ars > K ? ars : K);
    return (int)(ld > 1 ? ld : 1);
}

/* One product of the ranges below, C (M,N) = alpha A B (+ C when add),
 * A(i,k) = a[i ars + k acs] with ars or acs 1 (A as stored or transposed),
 * B (K,N) at b with row stride ldb: on tapegrad's micro-kernel with
 * nothing packed per call (tg_sgemm_tiles, which reads B 16 columns wide:
 * see rows_f32), or, without AVX2, on a gemm call. */
static void tiles_f32(int M, int N, int K, float alpha, const float *a, int64_t ars, int64_t acs, const float *b,
                      int ldb, float *c, int ldc, bool add)
{
    if (tg_sgemm_tiles(M, N, K, alpha, a, ars, acs, b, ldb, c, ldc, add)) return;
    bool ta;
    const int lda = gemm_lda(M, K, ars, acs, &ta);
    tg_sgemm(ta, false, M, N, K, alpha, a, lda, b, ldb, add ? 1 : 0, c, ldc);
}

/* A head's K^T and V^T are packed once per head into the worker's
 * scratch, (dh, Tk) at row stride ld_cols(Tk): >= Tk + 16, so that 16-wide
 * reads from any key stay inside, and an odd multiple of 16 floats, so
 * that the dh rows do not fall on a few L1 sets. Rows of V, K, Q and dO
 * used as B are read in place, or packed at row stride ld_rows(dh) (dh
 * rounded up to 16, zero past dh) where 16-wide reads would leave them. */
static int ld_rows(int dh) { return (dh + 15) / 16 * 16; }
static int ld_cols(int Tk)
{
    const int l = (Tk + 16 + 15) / 16 * 16;
    return l / 16 % 2 ? l : l + 16;
}
static size_t round16(size_t n) { return (n + 15) / 16 * 16; }

/* Rows used as B are packed (a copy padded to ld_rows) only in f32 with
 * dh not a multiple of 16: f64's products are gemm calls that read N
 * columns. */
static bool rows_packed(tg_dtype dt, int dh) { return dt == TG_F32 && dh % 16 != 0; }

/* The worker's scratch, as element offsets: s (bq,bk), and dp backward;
 * three (bq) rows; K^T (dh, ld_cols), and V^T backward; when rows are
 * packed, one (Tk, ld_rows) block (V forward, K backward) and, backward,
 * two (Tq, ld_rows) blocks (Q and dO). Each rounded up to 16 elements;
 * what a pass or dtype does not use takes no room. */
typedef struct scratch_layout {
    size_t s, dp, rows, kt, vt, kv, qp, dop, total;
} scratch_layout;

static scratch_layout scratch_of(const attn_plan *p, tg_dtype dt, bool backward)
{
    const size_t tile = round16((size_t)p->bq * p->bk), t = round16((size_t)p->dh * ld_cols(p->Tk));
    const size_t r = rows_packed(dt, p->dh) ? (size_t)ld_rows(p->dh) : 0;
    scratch_layout x;
    x.s = 0, x.dp = tile, x.rows = x.dp + (backward ? tile : 0), x.kt = x.rows + round16(3 * (size_t)p->bq);
    x.vt = x.kt + t, x.kv = x.vt + (backward ? t : 0), x.qp = x.kv + round16((size_t)p->Tk * r);
    x.dop = x.qp + (backward ? round16((size_t)p->Tq * r) : 0);
    x.total = x.dop + (backward ? round16((size_t)p->Tq * r) : 0);
    return x;
}

/* Asks the CPU to start loading n rows of w elements of size es at x (row
 * stride ld elements). */
static void prefetch_rows(const void *x, int64_t ld, int n, int w, size_t es)
{
    const char *p = x;
    const size_t bytes = (size_t)w * es, stride = (size_t)ld * es;
    for (int j = 0; j < n; j++, p += stride)
        for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
}

/* Pair bh's rows of q, k, v and, when not NULL, of o and dO (elements of
 * size es): loaded while the pair before it computes. */
static void prefetch_pair(const attn_plan *p, int64_t bh, const void *q, const void *k, const void *v,
                          const void *o, const void *dout, size_t es)
{
    const int64_t b = bh / p->H, h = bh % p->H, dh = p->dh;
    const int64_t oq = (b * p->Tq * p->ldq + h * dh) * (int64_t)es, ok = (b * p->Tk * p->ldk + h * dh) * (int64_t)es;
    const int64_t oo = (b * p->Tq * p->C + h * dh) * (int64_t)es;
    prefetch_rows((const char *)q + oq, p->ldq, p->Tq, p->dh, es);
    prefetch_rows((const char *)k + ok, p->ldk, p->Tk, p->dh, es);
    prefetch_rows((const char *)v + ok, p->ldk, p->Tk, p->dh, es);
    if (o) prefetch_rows((const char *)o + oo, p->C, p->Tq, p->dh, es);
    if (dout) prefetch_rows((const char *)dout + oo, p->C, p->Tq, p->dh, es);
}

/* rows [0,nq) of o (row stride ld, dh wide) times f[r] */
static void rows_scale_f32(float *o, int ld, int nq, int dh, const float *f)
{
    for (int r = 0; r < nq; r++) {
        float *restrict orow = o + (int64_t)r * ld;
        const float fr = f[r];
        for (int d = 0; d < dh; d++) orow[d] *= fr;
    }
}

/* n rows (dh wide) at x, row stride ld, as a B operand: x itself, or
 * their copy in buf (row stride ld_rows(dh), zero past dh); *ldb
 * receives the row stride */
static const float *rows_f32(const float *x, int ld, int n, int dh, float *buf, int *ldb)
{
    if (!rows_packed(TG_F32, dh)) {
        *ldb = ld;
        return x;
    }
    const int l = ld_rows(dh);
    for (int j = 0; j < n; j++) {
        memcpy(buf + (int64_t)j * l, x + (int64_t)j * ld, (size_t)dh * sizeof(float));
        memset(buf + (int64_t)j * l + dh, 0, (size_t)(l - dh) * sizeof(float));
    }
    *ldb = l;
    return buf;
}

/* The forward of pairs [lo, hi). */
static int forward_range_f32(const attn_plan *p, const float *q, const float *k, const float *v, float *o,
                             float *lse, int64_t lo, int64_t hi, float *scratch, attn_fault *f)
{
    const int C = p->C, dh = p->dh, Tq = p->Tq, Tk = p->Tk, bq = p->bq, bk = p->bk;
    const int ldq = p->ldq, ldk = p->ldk, lt = ld_cols(Tk);
    const float scale = (float)p->scale;
    const scratch_layout x = scratch_of(p, TG_F32, false);
    float *s = scratch + x.s, *kt = scratch + x.kt;                 /* (bq,bk), (dh,lt) */
    float *m = scratch + x.rows, *l = m + bq, *alpha = l + bq;      /* (bq) each */
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H;
        const float *qb = q + b * Tq * ldq + h * dh;                /* (Tq,dh), ld ldq */
        float *ob = o + b * Tq * C + h * dh;                        /* (Tq,dh), ld C */
        float *Lb = lse + bh * Tq;                                  /* (Tq) */
        int lv;
        tg_sgemm_pack_t(kt, lt, k + b * Tk * ldk + h * dh, ldk, Tk, dh);                /* K^T (dh,Tk) */
        if (bh + 1 < hi) prefetch_pair(p, bh + 1, q, k, v, NULL, NULL, sizeof(float)); /* the next head */
        const float *vr = rows_f32(v + b * Tk * ldk + h * dh, ldk, Tk, dh, scratch + x.kv, &lv); /* V */
        for (int i0 = 0; i0 < Tq; i0 += bq) {
            const int nq = Tq - i0 < bq ? Tq - i0 : bq, kend = key_end(p, i0, nq);
            float *oi = ob + (int64_t)i0 * C;                           /* (nq,dh), ld C */
            for (int r = 0; r < nq; r++) m[r] = -INFINITY, l[r] = 0;
            for (int j0 = 0; j0 < kend; j0 += bk) {
                const int nk = kend - j0 < bk ? kend - j0 : bk;
                /* S (nq,nk) = scale Q_I K_J^T */
                tiles_f32(nq, nk, dh, scale, qb + (int64_t)i0 * ldq, ldq, 1, kt + j0, lt, s, nk, false);
                const int64_t at = online_f32(s, nq, nk, vis_limit(p, i0, j0, nk), m, l, alpha);
                if (at >= 0) {
                    *f = (attn_fault){ATTN_BAD_SCORE, bh, i0 + (int)(at / nk), j0 + (int)(at % nk)};
                    return f->kind;
                }
                if (j0 > 0) rows_scale_f32(oi, C, nq, dh, alpha);
                /* O_I (nq,dh) = alpha O_I + P V_J */
                tiles_f32(nq, dh, nk, 1, s, nk, 1, vr + (int64_t)j0 * lv, lv, oi, C, j0 > 0);
            }
            for (int r = 0; r < nq; r++) {
                if (m[r] == -INFINITY) {
                    *f = (attn_fault){ATTN_BLOCKED_ROW, bh, i0 + r, 0};
                    return f->kind;
                }
                Lb[i0 + r] = m[r] + logf(l[r]);
                alpha[r] = 1 / l[r];
            }
            rows_scale_f32(oi, C, nq, dh, alpha);
        }
    }
    return ATTN_OK;
}

/* The backward of pairs [lo, hi); dq, dk, dv may each be NULL (that input
 * needs no gradient) */
static void backward_range_f32(const attn_plan *p, const float *q, const float *k, const float *v,
                               const float *o, const float *dout, const float *lse, float *dq, float *dk, float *dv,
                               int64_t lo, int64_t hi, float *scratch)
{
    const int C = p->C, dh = p->dh, Tq = p->Tq, Tk = p->Tk, bq = p->bq, bk = p->bk;
    const int ldq = p->ldq, ldk = p->ldk, lt = ld_cols(Tk);
    const float scale = (float)p->scale;
    const bool need_ds = dq || dk;
    const scratch_layout x = scratch_of(p, TG_F32, true);
    float *s = scratch + x.s, *dp = scratch + x.dp;                 /* (bq,bk) each */
    float *D = scratch + x.rows;                                    /* (bq) */
    float *kt = scratch + x.kt, *vt = scratch + x.vt;               /* (dh,lt) each */
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H;
        const int64_t oq = b * Tq * ldq + h * dh, ok = b * Tk * ldk + h * dh, oo = b * Tq * C + h * dh;
        const float *qb = q + oq;                                   /* (Tq,dh), ld ldq */
        const float *ob = o + oo, *dob = dout + oo;                 /* (Tq,dh), ld C */
        float *dqb = dq ? dq + oq : NULL;                           /* (Tq,dh), ld ldq */
        float *dkb = dk ? dk + ok : NULL, *dvb = dv ? dv + ok : NULL; /* (Tk,dh), ld ldk */
        const float *Lb = lse + bh * Tq;                            /* (Tq) */
        int lk = 0, lq = 0, ldo = 0;
        tg_sgemm_pack_t(kt, lt, k + ok, ldk, Tk, dh);                                /* K^T (dh,Tk) */
        if (bh + 1 < hi) prefetch_pair(p, bh + 1, q, k, v, o, dout, sizeof(float)); /* the next head */
        if (need_ds) tg_sgemm_pack_t(vt, lt, v + ok, ldk, Tk, dh);                   /* V^T (dh,Tk) */
        const float *kr = dqb ? rows_f32(k + ok, ldk, Tk, dh, scratch + x.kv, &lk) : NULL;  /* K */
        const float *qr = dkb ? rows_f32(qb, ldq, Tq, dh, scratch + x.qp, &lq) : NULL;      /* Q */
        const float *dor = dvb ? rows_f32(dob, C, Tq, dh, scratch + x.dop, &ldo) : NULL;    /* dO */
        for (int i0 = 0; i0 < Tq; i0 += bq) {
            const int nq = Tq - i0 < bq ? Tq - i0 : bq, kend = key_end(p, i0, nq);
            const float *qi = qb + (int64_t)i0 * ldq, *doi = dob + (int64_t)i0 * C; /* (nq,dh) */
            if (need_ds)
                for (int r = 0; r < nq; r++) {
                    const float *xr = doi + (int64_t)r * C, *yr = ob + (int64_t)(i0 + r) * C;
                    float acc = 0;
                    for (int d = 0; d < dh; d++) acc += xr[d] * yr[d];
                    D[r] = acc;
                }
            for (int j0 = 0; j0 < kend; j0 += bk) {
                const int nk = kend - j0 < bk ? kend - j0 : bk;
                /* S (nq,nk) = scale Q_I K_J^T, as in the forward */
                tiles_f32(nq, nk, dh, scale, qi, ldq, 1, kt + j0, lt, s, nk, false);
                if (need_ds) /* dP (nq,nk) = dO_I V_J^T */
                    tiles_f32(nq, nk, dh, 1, doi, C, 1, vt + j0, lt, dp, nk, false);
                grad_f32(s, need_ds ? dp : NULL, nq, nk, vis_limit(p, i0, j0, nk), Lb + i0, D);
                if (dvb) /* dV_J (nk,dh) += P^T dO_I */
                    tiles_f32(nk, dh, nq, 1, s, 1, nk, dor + (int64_t)i0 * ldo, ldo,
                              dvb + (int64_t)j0 * ldk, ldk, true);
                if (dqb) /* dQ_I (nq,dh) += scale dS K_J */
                    tiles_f32(nq, dh, nk, scale, dp, nk, 1, kr + (int64_t)j0 * lk, lk,
                              dqb + (int64_t)i0 * ldq, ldq, true);
                if (dkb) /* dK_J (nk,dh) += scale dS^T Q_I */
                    tiles_f32(nk, dh, nq, scale, dp, 1, nk, qr + (int64_t)i0 * lq, lq,
                              dkb + (int64_t)j0 * ldk, ldk, true);
            }
        }
    }
}

/* ---- f64: the formulas at the top, one query row at a time -------------- */

static double dot(const double *x, const double *y, int n)
{
    double s = 0;
    for (int d = 0; d < n; d++) s += x[d] * y[d];
    return s;
}

/* One head: Q (Tq,dh) with row stride ldq, K and V (Tk,dh) with ldk; writes
 * O (Tq,dh), row stride C, and L (Tq). s is a (Tk) row of scratch. False,
 * with the query row and key in *f, at a bad score or a row with nothing
 * visible. */
static bool head_forward_f64(const attn_plan *p, const double *Q, const double *K, const double *V, double *O,
                             double *L, double *s, attn_fault *f)
{
    const int dh = p->dh;
    for (int i = 0; i < p->Tq; i++) {
        const double *qi = Q + (int64_t)i * p->ldq;
        double *oi = O + (int64_t)i * p->C;
        const int n = key_end(p, i, 1);   /* query i sees keys [0, n) */
        double m = -INFINITY;
        for (int j = 0; j < n; j++) {
            s[j] = p->scale * dot(qi, K + (int64_t)j * p->ldk, dh);   /* S_ij */
            if (isnan(s[j]) || s[j] == INFINITY) {
                *f = (attn_fault){ATTN_BAD_SCORE, 0, i, j};
                return false;
            }
            if (s[j] > m) m = s[j];
        }
        if (m == -INFINITY) {
            *f = (attn_fault){ATTN_BLOCKED_ROW, 0, i, 0};
            return false;
        }
        double l = 0;
        for (int j = 0; j < n; j++) l += s[j] = exp(s[j] - m);   /* l_i */
        for (int d = 0; d < dh; d++) oi[d] = 0;
        for (int j = 0; j < n; j++) {
            const double *vj = V + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) oi[d] += s[j] * vj[d];
        }
        for (int d = 0; d < dh; d++) oi[d] /= l;   /* O_i */
        L[i] = m + log(l);
    }
    return true;
}

/* One head's gradients, added into dQ, dK, dV (NULL: not needed), laid out
 * as Q, K, V; O and dO as O. P and dS are (Tk) rows of scratch. */
static void head_backward_f64(const attn_plan *p, const double *Q, const double *K, const double *V,
                              const double *O, const double *dO, const double *L, double *dQ, double *dK,
                              double *dV, double *P, double *dS)
{
    const int dh = p->dh;
    const double a = p->scale;
    for (int i = 0; i < p->Tq; i++) {
        const double *qi = Q + (int64_t)i * p->ldq, *oi = O + (int64_t)i * p->C, *doi = dO + (int64_t)i * p->C;
        const int n = key_end(p, i, 1);
        for (int j = 0; j < n; j++) P[j] = exp(a * dot(qi, K + (int64_t)j * p->ldk, dh) - L[i]);   /* P_ij */
        for (int j = 0; dV && j < n; j++) {   /* dV_j += P_ij dO_i */
            double *dvj = dV + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dvj[d] += P[j] * doi[d];
        }
        if (!dQ && !dK) continue;
        const double D = dot(doi, oi, dh);
        for (int j = 0; j < n; j++) dS[j] = P[j] * (dot(doi, V + (int64_t)j * p->ldk, dh) - D);   /* dS_ij */
        for (int j = 0; dQ && j < n; j++) {   /* dQ_i += a dS_ij K_j */
            double *dqi = dQ + (int64_t)i * p->ldq;
            const double *kj = K + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dqi[d] += a * dS[j] * kj[d];
        }
        for (int j = 0; dK && j < n; j++) {   /* dK_j += a dS_ij Q_i */
            double *dkj = dK + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dkj[d] += a * dS[j] * qi[d];
        }
    }
}

/* The pairs [lo, hi), as the f32 ranges: scratch is a (Tk) row forward,
 * two backward. */
static int forward_range_f64(const attn_plan *p, const double *q, const double *k, const double *v, double *o,
                             double *lse, int64_t lo, int64_t hi, double *s, attn_fault *f)
{
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H, oq = b * p->Tq * p->ldq + h * p->dh;
        const int64_t ok = b * p->Tk * p->ldk + h * p->dh, oo = b * p->Tq * p->C + h * p->dh;
        if (!head_forward_f64(p, q + oq, k + ok, v + ok, o + oo, lse + bh * p->Tq, s, f)) {
            f->bh = bh;
            return f->kind;
        }
    }
    return ATTN_OK;
}

static void backward_range_f64(const attn_plan *p, const double *q, const double *k, const double *v,
                               const double *o, const double *dout, const double *lse, double *dq, double *dk,
                               double *dv, int64_t lo, int64_t hi, double *scratch)
{
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H, oq = b * p->Tq * p->ldq + h * p->dh;
        const int64_t ok = b * p->Tk * p->ldk + h * p->dh, oo = b * p->Tq * p->C + h * p->dh;
        head_backward_f64(p, q + oq, k + ok, v + ok, o + oo, dout + oo, lse + bh * p->Tq, dq ? dq + oq : NULL,
                          dk ? dk + ok : NULL, dv ? dv + ok : NULL, scratch, scratch + p->Tk);
    }
}

/* Bytes of one part's scratch. */
static size_t part_scratch(const attn_plan *p, tg_dtype dt, bool backward)
{
    if (dt == TG_F64) return (backward ? 2 : 1) * (size_t)p->Tk * sizeof(double);
    return scratch_of(p, dt, backward).total * sizeof(float);
}

/* One call's pairs, shared out among threads: each part has its own
 * scratch (scratch + part * scratch_bytes) and its own fault slot. */
typedef struct attn_job {
    const attn_plan *p;
    tg_dtype dt;
    const void *q, *k, *v, *o, *dout;
    void *out, *lse, *dq, *dk, *dv;
    char *scratch;
    size_t scratch_bytes;
    attn_fault *faults;   /* forward: one per part */
} attn_job;

static void attn_part(void *ctx, int64_t lo, int64_t hi)
{
    const attn_job *j = ctx;
    const int part = tg_parallel_part();
    void *scr = j->scratch + (size_t)part * j->scratch_bytes;
    if (j->faults && j->dt == TG_F32)
        forward_range_f32(j->p, j->q, j->k, j->v, j->out, j->lse, lo, hi, scr, &j->faults[part]);
    else if (j->faults)
        forward_range_f64(j->p, j->q, j->k, j->v, j->out, j->lse, lo, hi, scr, &j->faults[part]);
    else if (j->dt == TG_F32)
        backward_range_f32(j->p, j->q, j->k, j->v, j->o, j->dout, j->lse, j->dq, j->dk, j->dv, lo, hi, scr);
    else
        backward_range_f64(j->p, j->q, j->k, j->v, j->o, j->dout, j->lse, j->dq, j->dk, j->dv, lo, hi, scr);
}

/* q, k, v of a call on n_in inputs: three tensors, or one qkv (B,T,3C)
 * holding them side by side at column offsets 0, C, 2C; and, when gx is
 * not NULL, their gradients likewise (NULL where none is needed). */
static void qkv_of(tg_graph *g, int n_in, tg_tensor *const *in, size_t C, const void *x[3], void *gx[3])
{
    const size_t es = tg_dtype_size(in[0]->dtype);
    for (int i = 0; i < 3; i++) {
        tg_tensor *t = in[n_in == 1 ? 0 : i];
        const size_t off = n_in == 1 ? i * C * es : 0;
        x[i] = (const char *)t->data + off;
        if (!gx) continue;
        void *gr = tg_grad(g, t);
        gx[i] = gr ? (char *)gr + off : NULL;
    }
}

static void attention_backward(tg_graph *g, tg_node *nd)
{
    const attn_saved *sv = nd->saved;
    const attn_plan *p = &sv->plan;
    tg_tensor *o = nd->out;
    const void *x[3];
    void *gx[3];
    qkv_of(g, nd->n_in, nd->in, (size_t)p->C, x, gx);
    attn_job j = {.p = p, .dt = o->dtype, .q = x[0], .k = x[1], .v = x[2], .o = o->data, .dout = o->grad,
                  .lse = sv->lse, .dq = gx[0], .dk = gx[1], .dv = gx[2],
                  .scratch_bytes = part_scratch(p, o->dtype, true)};
    if (!j.dq && !j.dk && !j.dv) return;
    j.scratch = tg_arena_alloc(g, (size_t)tg_num_threads() * j.scratch_bytes);   /* (threads, scratch) */
    if (!j.scratch) return;
    tg_parallel_for((int64_t)p->B * p->H, 1, attn_part, &j);
}

/* Runs the forward of plan p on the n_in inputs (q, k, v, or one qkv) and
 * records it; `what` names the inputs in error messages. */
static tg_tensor *attention_run(tg_graph *g, attn_plan p, int n_in, tg_tensor **in, const char *what)
{
    /* blocks no larger than the sequences: less scratch, same results */
    if (p.bq > p.Tq) p.bq = p.Tq;
    if (p.bk > p.Tk) p.bk = p.Tk;
    const tg_dtype dt = in[0]->dtype;
    const size_t es = tg_dtype_size(dt);
    const int nt = tg_num_threads(), B = p.B, H = p.H;
    tg_tensor *o = tg_op_output(g, dt, 3, (int[]){B, p.Tq, p.C});           /* (B,Tq,C) */
    void *lse = o ? tg_arena_alloc(g, (size_t)B * H * p.Tq * es) : NULL;    /* (B,H,Tq) */
    attn_fault *faults = lse ? tg_arena_zalloc(g, (size_t)nt * sizeof *faults) : NULL; /* (nt) ATTN_OK */
    const void *x[3];
    qkv_of(g, n_in, in, (size_t)p.C, x, NULL);
    attn_job j = {.p = &p, .dt = dt, .q = x[0], .k = x[1], .v = x[2], .out = o ? o->data : NULL, .lse = lse,
                  .faults = faults, .scratch_bytes = part_scratch(&p, dt, false)};
    j.scratch = faults ? tg_arena_alloc(g, (size_t)nt * j.scratch_bytes) : NULL;   /* (nt, scratch) */
    if (!j.scratch) return NULL;
    tg_parallel_for((int64_t)B * H, 1, attn_part, &j);
    /* parts run in pair order: the first part that failed has the first bad pair */
    attn_fault f = {ATTN_OK, 0, 0, 0};
    for (int i = 0; i < nt && f.kind == ATTN_OK; i++) f = faults[i];
    const int fb = (int)(f.bh / H), fh = (int)(f.bh % H);
    if (f.kind == ATTN_BAD_SCORE)
        return tg_fail(g, "attention: score of query %d and key %d in batch row %d, head %d is NaN or +inf "
                          "(scores must be finite or -inf): %s",
                       f.i, f.j, fb, fh, what);
    if (f.kind == ATTN_BLOCKED_ROW) {
        if (p.causal && p.q_pos + f.i < 0)
            return tg_fail(g, "attention: query row %d (batch row %d, head %d) sees no key: causal with q_pos %lld "
                              "puts it at position %lld: %s",
                           f.i, fb, fh, (long long)p.q_pos, (long long)(p.q_pos + f.i), what);
        return tg_fail(g, "attention: query row %d (batch row %d, head %d) has every visible score -inf: %s", f.i,
                       fb, fh, what);
    }
    tg_node *nd = tg_op_record(g, "attention", attention_backward, o, n_in, in);
    if (nd) {
        attn_saved *s = tg_arena_alloc(g, sizeof *s);
        if (!s) return NULL;
        *s = (attn_saved){.plan = p, .lse = lse};
        nd->saved = s;   /* an arena allocation records nothing: nd is still valid */
    }
    return tg_graph_error(g) ? NULL : o;
}

tg_tensor *tg_attention(tg_graph *g, tg_tensor *q, tg_tensor *k, tg_tensor *v, int n_head, int flags, int q_pos)
{
    tg_tensor *in[3] = {q, k, v};
    if (!tg_op_begin(g, "attention", 3, in)) return NULL;
    char sq[64], sk[64], sv[64], what[256];
    tg_shape_str(q, sq, sizeof sq);
    tg_shape_str(k, sk, sizeof sk);
    tg_shape_str(v, sv, sizeof sv);
    const char *tq = tg_dtype_name(q->dtype), *tk = tg_dtype_name(k->dtype), *tv = tg_dtype_name(v->dtype);
    if (!tg_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return tg_fail(g, "attention: q, k and v must share one dtype, f32 or f64: q %s %s, k %s %s, v %s %s", tq,
                       sq, tk, sk, tv, sv);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3)
        return tg_fail(g, "attention: q, k and v must be 3-D, q (B,Tq,C) and k, v (B,Tk,C): q %s %s, k %s %s, "
                          "v %s %s", tq, sq, tk, sk, tv, sv);
    const int B = q->shape[0], Tq = q->shape[1], C = q->shape[2], Tk = k->shape[1];
    if (k->shape[0] != B || k->shape[2] != C || !tg_tensor_same_shape(k, v))
        return tg_fail(g, "attention: k and v must both be (B,Tk,C) with q's B and C: q %s %s, k %s %s, v %s %s",
                       tq, sq, tk, sk, tv, sv);
    if (n_head < 1 || C % n_head)
        return tg_fail(g, "attention: C = %d is not divisible by n_head = %d (q %s %s)", C, n_head, tq, sq);
    if (flags & ~TG_ATTN_CAUSAL)
        return tg_fail(g, "attention: unknown flags 0x%x (q %s %s)", (unsigned)flags, tq, sq);
    snprintf(what, sizeof what, "q %s %s, k %s %s", tq, sq, tk, sk);
    const int dh = C / n_head;
    const attn_plan p = {.B = B, .H = n_head, .Tq = Tq, .Tk = Tk, .C = C, .dh = dh, .ldq = C, .ldk = C,
                         .bq = block_q, .bk = block_k, .causal = (flags & TG_ATTN_CAUSAL) != 0, .q_pos = q_pos,
                         .scale = 1.0 / sqrt((double)dh)};
    return attention_run(g, p, 3, in, what);
}

tg_tensor *tg_attention_qkv(tg_graph *g, tg_tensor *qkv, int n_head, int flags)
{
    tg_tensor *in[1] = {qkv};
    if (!tg_op_begin(g, "attention", 1, in)) return NULL;
    char sx[64], what[128];
    tg_shape_str(qkv, sx, sizeof sx);
    const char *tx = tg_dtype_name(qkv->dtype);
    if (!tg_dtype_is_float(qkv->dtype))
        return tg_fail(g, "attention: qkv must be f32 or f64, got %s %s", tx, sx);
    if (qkv->ndim != 3 || qkv->shape[2] % 3)
        return tg_fail(g, "attention: qkv must be 3-D (B,T,3C), q, k and v side by side, got %s %s", tx, sx);
    const int B = qkv->shape[0], T = qkv->shape[1], C = qkv->shape[2] / 3;
    if (n_head < 1 || C % n_head)
        return tg_fail(g, "attention: C = %d is not divisible by n_head = %d (qkv %s %s)", C, n_head, tx, sx);
    if (flags & ~TG_ATTN_CAUSAL)
        return tg_fail(g, "attention: unknown flags 0x%x (qkv %s %s)", (unsigned)flags, tx, sx);
    snprintf(what, sizeof what, "qkv %s %s", tx, sx);
    const int dh = C / n_head;
    const attn_plan p = {.B = B, .H = n_head, .Tq = T, .Tk = T, .C = C, .dh = dh, .ldq = 3 * C, .ldk = 3 * C,
                         .bq = block_q, .bk = block_k, .causal = (flags & TG_ATTN_CAUSAL) != 0, .q_pos = 0,
                         .scale = 1.0 / sqrt((double)dh)};
    return attention_run(g, p, 1, in, what);
}
