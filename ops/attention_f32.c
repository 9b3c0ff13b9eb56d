/* The f32 kernels of the fused attention: ops/attention.c has the op,
 * its formulas (the blocks and the online softmax computed here among
 * them), the f64 reference and the recording.
 *
 * Products. Each head's K^T (and, backward, V^T) is packed once into the
 * worker's scratch, (dh, Tk), so that every product reads its right-hand
 * operand row by row: K^T, V^T, or rows of V, K, Q, dO where they lie
 * (or packed, see rows_f32). The products then run on tapegrad's
 * micro-kernel with nothing packed per block (tg_sgemm_tiles; the
 * transposed left operands P^T and dS^T are read through strides from
 * the tile in L1); without AVX2 they call a gemm.
 *
 * The check for NaN and +inf scores is one OR per score, folded into the
 * row-maximum loop. exp is the call-free one of fastmath_internal.h (as
 * the f32 softmax) in loops the compiler vectorises (the generic path),
 * or in AVX2 lanes (ops/attention_avx2.c) or AVX-512 ones
 * (ops/attention_avx512.c), whose row steps give the same bits. */
#include "attention_f32_internal.h"

#include <math.h>
#include <string.h>

#include "attention_tiles_internal.h"
#include "fastmath_internal.h"
#include "sgemm_internal.h"

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
TG_KERNEL_BODY int64_t block_online_f32_body(float *restrict s, int nq, int nk, int lim0, float *restrict m,
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
TG_ISA_CLONES(int64_t, block_online_f32,
              (float *restrict s, int nq, int nk, int lim0, float *restrict m, float *restrict l,
               float *restrict alpha),
              (s, nq, nk, lim0, m, l, alpha))

/* Backward of one tile: s (nq,nk) holds the scaled scores and leaves
 * with P = exp(s - L) (0 where not visible); dp (nq,nk), when not NULL,
 * holds dO V^T and leaves with dS = P (dP - D). */
TG_KERNEL_BODY void block_grad_f32_body(float *restrict s, float *restrict dp, int nq, int nk, int lim0,
                                        const float *restrict L, const float *restrict D)
{
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r;
        const float Lr = L[r];
        for (int c = 0; c < nk; c++) sr[c] = tg_fsel((c <= lim) & (sr[c] != -INFINITY), tg_fexp(sr[c] - Lr), 0);
        if (!dp) continue;
        float *restrict dr = dp + (int64_t)r * nk;
        const float Dr = D[r];
        for (int c = 0; c < nk; c++) dr[c] = tg_fsel(c <= lim, sr[c] * (dr[c] - Dr), 0);
    }
}
TG_ISA_CLONES_VOID(block_grad_f32,
                   (float *restrict s, float *restrict dp, int nq, int nk, int lim0, const float *restrict L,
                    const float *restrict D),
                   (s, dp, nq, nk, lim0, L, D))

/* f32: the intrinsics versions on the avx512 and avx2 paths (the same
 * bits), the compiled ones above on the generic path */
static int64_t online_f32(float *s, int nq, int nk, int lim0, float *m, float *l, float *alpha)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx512()) return tg_attn_block_online_avx512(s, nq, nk, lim0, m, l, alpha);
    if (tg_cpu_avx2()) return tg_attn_block_online_avx2(s, nq, nk, lim0, m, l, alpha);
#endif
    return block_online_f32(s, nq, nk, lim0, m, l, alpha);
}

static void grad_f32(float *s, float *dp, int nq, int nk, int lim0, const float *L, const float *D)
{
#ifdef TG_AVX2_KERNELS
    if (tg_cpu_avx512()) {
        tg_attn_block_grad_avx512(s, dp, nq, nk, lim0, L, D);
        return;
    }
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

/* Rows used as B are packed (a copy padded to ld_rows) only when dh is
 * not a multiple of 16. */
static bool rows_packed(int dh) { return dh % 16 != 0; }

/* The worker's scratch, as element offsets: s (bq,bk), and dp backward;
 * three (bq) rows; K^T (dh, ld_cols), and V^T backward; when rows are
 * packed, one (Tk, ld_rows) block (V forward, K backward) and, backward,
 * two (Tq, ld_rows) blocks (Q and dO). Each rounded up to 16 elements;
 * what a pass does not use takes no room. */
typedef struct scratch_layout {
    size_t s, dp, rows, kt, vt, kv, qp, dop, total;
} scratch_layout;

static scratch_layout scratch_of(const attn_plan *p, bool backward)
{
    const size_t tile = round16((size_t)p->bq * p->bk), t = round16((size_t)p->dh * ld_cols(p->Tk));
    const size_t r = rows_packed(p->dh) ? (size_t)ld_rows(p->dh) : 0;
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
static void prefetch_pair(const attn_plan *p, int64_t bh, const void *q, const void *k, const void *v, const void *o,
                          const void *dout, size_t es)
{
    const int64_t b = bh / p->H, h = bh % p->H, dh = p->dh;
    const int64_t oq = (b * p->Tq * p->ldq + h * dh) * (int64_t)es;
    const int64_t ok = (b * p->Tk * p->ldk + kv_col(p, h)) * (int64_t)es;
    const int64_t oo = (b * p->Tq * p->C + h * dh) * (int64_t)es;
    prefetch_rows((const char *)q + oq, p->ldq, p->Tq, p->dh, es);
    prefetch_rows((const char *)k + ok, p->ldk, p->Tk, p->dh, es);
    prefetch_rows((const char *)v + ok, p->ldk, p->Tk, p->dh, es);
    if (o) prefetch_rows((const char *)o + oo, p->C, p->Tq, p->dh, es);
    if (dout) prefetch_rows((const char *)dout + oo, p->C, p->Tq, p->dh, es);
}

/* D[r] = sum_d x[r][d] y[r][d] for nq rows (row stride ld, dh wide), each
 * a float sum in d order; 8 rows side by side, so the adds of one row
 * wait on each other while the others' run (the same sums: dh = 48 took
 * about 1% of a Llama training step one row at a time) */
static void rows_dot_f32(int nq, int dh, const float *x, const float *y, int ld, float *D)
{
    enum { R = 8 };
    int r = 0;
    for (; r + R <= nq; r += R) {
        float acc[R] = {0};
        for (int d = 0; d < dh; d++)
            for (int k = 0; k < R; k++) acc[k] += x[(int64_t)(r + k) * ld + d] * y[(int64_t)(r + k) * ld + d];
        for (int k = 0; k < R; k++) D[r + k] = acc[k];
    }
    for (; r < nq; r++) {
        float acc = 0;
        for (int d = 0; d < dh; d++) acc += x[(int64_t)r * ld + d] * y[(int64_t)r * ld + d];
        D[r] = acc;
    }
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
    if (!rows_packed(dh)) {
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
int tg_attn_forward_f32(const attn_plan *p, const float *q, const float *k, const float *v, float *o, float *lse,
                        int64_t lo, int64_t hi, float *scratch, attn_fault *f)
{
    const int C = p->C, dh = p->dh, Tq = p->Tq, Tk = p->Tk, bq = p->bq, bk = p->bk;
    const int ldq = p->ldq, ldk = p->ldk, lt = ld_cols(Tk);
    const float scale = (float)p->scale;
    const scratch_layout x = scratch_of(p, false);
    float *s = scratch + x.s, *kt = scratch + x.kt; /* (bq,bk), (dh,lt) */
    float *m = scratch + x.rows, *l = m + bq, *alpha = l + bq; /* (bq) each */
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H;
        const float *qb = q + b * Tq * ldq + h * dh; /* (Tq,dh), ld ldq */
        float *ob = o + b * Tq * C + h * dh; /* (Tq,dh), ld C */
        float *Lb = lse + bh * Tq; /* (Tq) */
        int lv;
        tg_sgemm_pack_t(kt, lt, k + b * Tk * ldk + kv_col(p, h), ldk, Tk, dh); /* K^T (dh,Tk) */
        if (bh + 1 < hi) prefetch_pair(p, bh + 1, q, k, v, NULL, NULL, sizeof(float)); /* the next head */
        const float *vr = rows_f32(v + b * Tk * ldk + kv_col(p, h), ldk, Tk, dh, scratch + x.kv, &lv); /* V */
        for (int i0 = 0; i0 < Tq; i0 += bq) {
            const int nq = Tq - i0 < bq ? Tq - i0 : bq, kend = key_end(p, i0, nq);
            float *oi = ob + (int64_t)i0 * C; /* (nq,dh), ld C */
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
void tg_attn_backward_f32(const attn_plan *p, const float *q, const float *k, const float *v, const float *o,
                          const float *dout, const float *lse, float *dq, float *dk, float *dv, int64_t lo, int64_t hi,
                          float *scratch)
{
    const int C = p->C, dh = p->dh, Tq = p->Tq, Tk = p->Tk, bq = p->bq, bk = p->bk;
    const int ldq = p->ldq, ldk = p->ldk, lt = ld_cols(Tk);
    const float scale = (float)p->scale;
    const bool need_ds = dq || dk;
    const scratch_layout x = scratch_of(p, true);
    float *s = scratch + x.s, *dp = scratch + x.dp; /* (bq,bk) each */
    float *D = scratch + x.rows; /* (bq) */
    float *kt = scratch + x.kt, *vt = scratch + x.vt; /* (dh,lt) each */
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H;
        const int64_t oq = b * Tq * ldq + h * dh, ok = b * Tk * ldk + kv_col(p, h), oo = b * Tq * C + h * dh;
        const float *qb = q + oq; /* (Tq,dh), ld ldq */
        const float *ob = o + oo, *dob = dout + oo; /* (Tq,dh), ld C */
        float *dqb = dq ? dq + oq : NULL; /* (Tq,dh), ld ldq */
        float *dkb = dk ? dk + ok : NULL, *dvb = dv ? dv + ok : NULL; /* (Tk,dh), ld ldk */
        const float *Lb = lse + bh * Tq; /* (Tq) */
        int lk = 0, lq = 0, ldo = 0;
        tg_sgemm_pack_t(kt, lt, k + ok, ldk, Tk, dh); /* K^T (dh,Tk) */
        if (bh + 1 < hi) prefetch_pair(p, bh + 1, q, k, v, o, dout, sizeof(float)); /* the next head */
        if (need_ds) tg_sgemm_pack_t(vt, lt, v + ok, ldk, Tk, dh); /* V^T (dh,Tk) */
        const float *kr = dqb ? rows_f32(k + ok, ldk, Tk, dh, scratch + x.kv, &lk) : NULL; /* K */
        const float *qr = dkb ? rows_f32(qb, ldq, Tq, dh, scratch + x.qp, &lq) : NULL; /* Q */
        const float *dor = dvb ? rows_f32(dob, C, Tq, dh, scratch + x.dop, &ldo) : NULL; /* dO */
        for (int i0 = 0; i0 < Tq; i0 += bq) {
            const int nq = Tq - i0 < bq ? Tq - i0 : bq, kend = key_end(p, i0, nq);
            const float *qi = qb + (int64_t)i0 * ldq, *doi = dob + (int64_t)i0 * C; /* (nq,dh) */
            if (need_ds) rows_dot_f32(nq, dh, doi, ob + (int64_t)i0 * C, C, D);
            for (int j0 = 0; j0 < kend; j0 += bk) {
                const int nk = kend - j0 < bk ? kend - j0 : bk;
                /* S (nq,nk) = scale Q_I K_J^T, as in the forward */
                tiles_f32(nq, nk, dh, scale, qi, ldq, 1, kt + j0, lt, s, nk, false);
                if (need_ds) /* dP (nq,nk) = dO_I V_J^T */
                    tiles_f32(nq, nk, dh, 1, doi, C, 1, vt + j0, lt, dp, nk, false);
                grad_f32(s, need_ds ? dp : NULL, nq, nk, vis_limit(p, i0, j0, nk), Lb + i0, D);
                if (dvb) /* dV_J (nk,dh) += P^T dO_I */
                    tiles_f32(nk, dh, nq, 1, s, 1, nk, dor + (int64_t)i0 * ldo, ldo, dvb + (int64_t)j0 * ldk, ldk,
                              true);
                if (dqb) /* dQ_I (nq,dh) += scale dS K_J */
                    tiles_f32(nq, dh, nk, scale, dp, nk, 1, kr + (int64_t)j0 * lk, lk, dqb + (int64_t)i0 * ldq, ldq,
                              true);
                if (dkb) /* dK_J (nk,dh) += scale dS^T Q_I */
                    tiles_f32(nk, dh, nq, scale, dp, 1, nk, qr + (int64_t)i0 * lq, lq, dkb + (int64_t)j0 * ldk, ldk,
                              true);
            }
        }
    }
}

size_t tg_attn_scratch_f32(const attn_plan *p, bool backward) { return scratch_of(p, backward).total * sizeof(float); }
