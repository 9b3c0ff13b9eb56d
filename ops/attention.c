/* Fused scaled dot-product attention: O = softmax(Q K^T / sqrt(dh)) V per
 * head, with no (Tq,Tk) tensor kept: backward recomputes what it needs.
 *
 * Layout. q (B,Tq,C), k and v (B,Tk,Ckv), C = H dh, Ckv = Hkv dh. Head h
 * of batch row b is the column range [h dh, (h+1) dh) of every row,
 * exactly as the projections produce it, so a head's Q is the (Tq,dh)
 * matrix at q + b Tq C + h dh with row stride C (BLAS lda = C): nothing is
 * split, transposed or merged. The output O (B,Tq,C) has the same layout.
 * Grouped-query attention: k and v have Hkv heads, Hkv dividing H, and
 * the G = H / Hkv query heads h = kG .. kG + G - 1 read kv head k = h / G
 * (Hkv = H: multi-head attention; Hkv = 1: multi-query); no copy of k or v
 * is made. tg_attention_qkv takes one (B,T,C + 2 Ckv) tensor with q, k and
 * v side by side in each row (one fused projection): the same matrices at
 * offsets 0, C and C + Ckv with row stride C + 2 Ckv; their gradients land
 * in d qkv the same way.
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
 * everything added into the gradients (which may already hold values);
 * with groups, a kv head's dK and dV collect its G query heads' terms.
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
 * three (bq) rows and the head's packed operands (ops/attention_f32.c).
 *
 * Errors, as tg_softmax: a NaN or +inf score at a visible key names the
 * element; -inf scores get weight 0; a query row with no visible key, or
 * only -inf scores, names the row.
 *
 * The work of a range [lo,hi) of (b,h) pairs is one function with all its
 * scratch passed in; different pairs touch disjoint columns of O, L and
 * the gradients, so ranges run on different threads (core/parallel.h),
 * each with its own scratch. The f32 kernels are in ops/attention_f32.c;
 * f64 uses libm. */
#include "ops.h"

#include <math.h>
#include <stdio.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "../core/parallel_internal.h"
#include "attention_f32_internal.h"

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
        const int n = key_end(p, i, 1); /* query i sees keys [0, n) */
        double m = -INFINITY;
        for (int j = 0; j < n; j++) {
            s[j] = p->scale * dot(qi, K + (int64_t)j * p->ldk, dh); /* S_ij */
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
        for (int j = 0; j < n; j++) l += s[j] = exp(s[j] - m); /* l_i */
        for (int d = 0; d < dh; d++) oi[d] = 0;
        for (int j = 0; j < n; j++) {
            const double *vj = V + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) oi[d] += s[j] * vj[d];
        }
        for (int d = 0; d < dh; d++) oi[d] /= l; /* O_i */
        L[i] = m + log(l);
    }
    return true;
}

/* One head's gradients, added into dQ, dK, dV (NULL: not needed), laid out
 * as Q, K, V; O and dO as O. P and dS are (Tk) rows of scratch. */
static void head_backward_f64(const attn_plan *p, const double *Q, const double *K, const double *V, const double *O,
                              const double *dO, const double *L, double *dQ, double *dK, double *dV, double *P,
                              double *dS)
{
    const int dh = p->dh;
    const double a = p->scale;
    for (int i = 0; i < p->Tq; i++) {
        const double *qi = Q + (int64_t)i * p->ldq, *oi = O + (int64_t)i * p->C, *doi = dO + (int64_t)i * p->C;
        const int n = key_end(p, i, 1);
        for (int j = 0; j < n; j++) P[j] = exp(a * dot(qi, K + (int64_t)j * p->ldk, dh) - L[i]); /* P_ij */
        for (int j = 0; dV && j < n; j++) { /* dV_j += P_ij dO_i */
            double *dvj = dV + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dvj[d] += P[j] * doi[d];
        }
        if (!dQ && !dK) continue;
        const double D = dot(doi, oi, dh);
        for (int j = 0; j < n; j++) dS[j] = P[j] * (dot(doi, V + (int64_t)j * p->ldk, dh) - D); /* dS_ij */
        for (int j = 0; dQ && j < n; j++) { /* dQ_i += a dS_ij K_j */
            double *dqi = dQ + (int64_t)i * p->ldq;
            const double *kj = K + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dqi[d] += a * dS[j] * kj[d];
        }
        for (int j = 0; dK && j < n; j++) { /* dK_j += a dS_ij Q_i */
            double *dkj = dK + (int64_t)j * p->ldk;
            for (int d = 0; d < dh; d++) dkj[d] += a * dS[j] * qi[d];
        }
    }
}

/* ---- the op: shape checks, then running and recording (below) ----------- */

static tg_tensor *attention_run(tg_graph *g, attn_plan p, int n_in, tg_tensor **in);

/* The inputs as the messages name them: "q f32 (B,Tq,C), k f32 (B,Tk,Ckv)",
 * or "qkv f32 (B,T,C + 2 Ckv)". Written only for a message: decoding
 * calls the op once per token and layer. */
static const char *inputs_str(int n_in, tg_tensor *const *in, char *buf, size_t size)
{
    char a[64], b[64];
    if (n_in == 1) snprintf(buf, size, "qkv %s %s", tg_dtype_name(in[0]->dtype), tg_shape_str(in[0], a, sizeof a));
    else
        snprintf(buf, size, "q %s %s, k %s %s", tg_dtype_name(in[0]->dtype), tg_shape_str(in[0], a, sizeof a),
                 tg_dtype_name(in[1]->dtype), tg_shape_str(in[1], b, sizeof b));
    return buf;
}

tg_tensor *tg_attention(tg_graph *g, tg_tensor *q, tg_tensor *k, tg_tensor *v, int n_head, int flags, int q_pos)
{
    tg_tensor *in[3] = {q, k, v};
    if (!tg_op_begin(g, "attention", 3, in)) return NULL;
    char sq[64], sk[64], sv[64], what[256];
/* q, k and v as the messages show them (formatted only on an error) */
#define QKV_SHAPES                                                                                                     \
    tg_dtype_name(q->dtype), tg_shape_str(q, sq, sizeof sq), tg_dtype_name(k->dtype), tg_shape_str(k, sk, sizeof sk),  \
        tg_dtype_name(v->dtype), tg_shape_str(v, sv, sizeof sv)
    if (!tg_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return tg_fail(g, "attention: q, k and v must share one dtype, f32 or f64: q %s %s, k %s %s, v %s %s",
                       QKV_SHAPES);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3)
        return tg_fail(g,
                       "attention: q, k and v must be 3-D, q (B,Tq,C) and k, v (B,Tk,C): q %s %s, k %s %s, "
                       "v %s %s",
                       QKV_SHAPES);
    const int B = q->shape[0], Tq = q->shape[1], C = q->shape[2], Tk = k->shape[1], Ckv = k->shape[2];
    if (k->shape[0] != B || !tg_tensor_same_shape(k, v))
        return tg_fail(g, "attention: k and v must both be (B,Tk,Ckv) with q's B: q %s %s, k %s %s, v %s %s",
                       QKV_SHAPES);
#undef QKV_SHAPES
    if (n_head < 1 || C % n_head)
        return tg_fail(g, "attention: C = %d is not divisible by n_head = %d (q %s %s)", C, n_head,
                       tg_dtype_name(q->dtype), tg_shape_str(q, sq, sizeof sq));
    const int dh = C / n_head, Hkv = Ckv / dh;
    if (Ckv % dh || Hkv < 1 || n_head % Hkv)
        return tg_fail(g, "attention: k and v must have a number of heads of size %d dividing n_head = %d: %s", dh,
                       n_head, inputs_str(3, in, what, sizeof what));
    if (flags & ~TG_ATTN_CAUSAL)
        return tg_fail(g, "attention: unknown flags 0x%x (q %s %s)", (unsigned)flags, tg_dtype_name(q->dtype),
                       tg_shape_str(q, sq, sizeof sq));
    const attn_plan p = {.B = B,
                         .H = n_head,
                         .Tq = Tq,
                         .Tk = Tk,
                         .C = C,
                         .dh = dh,
                         .G = n_head / Hkv,
                         .Ckv = Ckv,
                         .ldq = C,
                         .ldk = Ckv,
                         .causal = (flags & TG_ATTN_CAUSAL) != 0,
                         .q_pos = q_pos,
                         .scale = 1.0 / sqrt((double)dh)};
    return attention_run(g, p, 3, in);
}

tg_tensor *tg_attention_qkv(tg_graph *g, tg_tensor *qkv, int n_head, int n_kv_head, int flags)
{
    tg_tensor *in[1] = {qkv};
    if (!tg_op_begin(g, "attention", 1, in)) return NULL;
    char sx[64];
#define X_SHAPE tg_dtype_name(qkv->dtype), tg_shape_str(qkv, sx, sizeof sx) /* only for a message */
    if (!tg_dtype_is_float(qkv->dtype)) return tg_fail(g, "attention: qkv must be f32 or f64, got %s %s", X_SHAPE);
    if (!n_kv_head) n_kv_head = n_head;
    if (n_head < 1 || n_kv_head < 1 || n_head % n_kv_head)
        return tg_fail(g, "attention: n_kv_head = %d must divide n_head = %d (qkv %s %s)", n_kv_head, n_head, X_SHAPE);
    /* head-sized column blocks of a row, in int64: n_head + 2 n_kv_head can pass INT_MAX */
    const int64_t parts = n_head + 2 * (int64_t)n_kv_head;
    if (qkv->ndim != 3 || qkv->shape[2] % parts)
        return tg_fail(g,
                       "attention: qkv must be 3-D (B,T,C + 2 Ckv), q, k and v side by side (%lld heads of one "
                       "size), got %s %s",
                       (long long)parts, X_SHAPE);
    const int B = qkv->shape[0], T = qkv->shape[1], dh = (int)(qkv->shape[2] / parts), C = n_head * dh;
    if (flags & ~TG_ATTN_CAUSAL)
        return tg_fail(g, "attention: unknown flags 0x%x (qkv %s %s)", (unsigned)flags, X_SHAPE);
#undef X_SHAPE
    const int ld = qkv->shape[2];
    const attn_plan p = {.B = B,
                         .H = n_head,
                         .Tq = T,
                         .Tk = T,
                         .C = C,
                         .dh = dh,
                         .G = n_head / n_kv_head,
                         .Ckv = n_kv_head * dh,
                         .ldq = ld,
                         .ldk = ld,
                         .causal = (flags & TG_ATTN_CAUSAL) != 0,
                         .q_pos = 0,
                         .scale = 1.0 / sqrt((double)dh)};
    return attention_run(g, p, 1, in);
}

/* ---- running the kernels, recording, backward --------------------------- */

/* Saved on the node for backward. */
typedef struct attn_saved {
    attn_plan plan;
    void *lse; /* (B,H,Tq) row logsumexp L */
} attn_saved;

/* The pairs [lo, hi), as the f32 ranges: scratch is a (Tk) row forward,
 * two backward. */
static int forward_range_f64(const attn_plan *p, const double *q, const double *k, const double *v, double *o,
                             double *lse, int64_t lo, int64_t hi, double *s, attn_fault *f)
{
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H, oq = b * p->Tq * p->ldq + h * p->dh;
        const int64_t ok = b * p->Tk * p->ldk + kv_col(p, h), oo = b * p->Tq * p->C + h * p->dh;
        if (!head_forward_f64(p, q + oq, k + ok, v + ok, o + oo, lse + bh * p->Tq, s, f)) {
            f->bh = bh;
            return f->kind;
        }
    }
    return ATTN_OK;
}

static void backward_range_f64(const attn_plan *p, const double *q, const double *k, const double *v, const double *o,
                               const double *dout, const double *lse, double *dq, double *dk, double *dv, int64_t lo,
                               int64_t hi, double *scratch)
{
    for (int64_t bh = lo; bh < hi; bh++) {
        const int64_t b = bh / p->H, h = bh % p->H, oq = b * p->Tq * p->ldq + h * p->dh;
        const int64_t ok = b * p->Tk * p->ldk + kv_col(p, h), oo = b * p->Tq * p->C + h * p->dh;
        head_backward_f64(p, q + oq, k + ok, v + ok, o + oo, dout + oo, lse + bh * p->Tq, dq ? dq + oq : NULL,
                          dk ? dk + ok : NULL, dv ? dv + ok : NULL, scratch, scratch + p->Tk);
    }
}

/* Bytes of one thread's scratch. */
static size_t part_scratch(const attn_plan *p, tg_dtype dt, bool backward)
{
    if (dt == TG_F64) return (backward ? 2 : 1) * (size_t)p->Tk * sizeof(double);
    return tg_attn_scratch_f32(p, backward);
}

/* One call's pairs, shared out among threads: each thread has its own
 * scratch (scratch + thread * scratch_bytes), each part its own fault
 * slot. */
typedef struct attn_job {
    const attn_plan *p;
    tg_dtype dt;
    const void *q, *k, *v, *o, *dout;
    void *out, *lse, *dq, *dk, *dv;
    char *scratch;
    size_t scratch_bytes;
    attn_fault *faults; /* forward: one per part */
} attn_job;

static void attn_part(void *ctx, int64_t lo, int64_t hi)
{
    const attn_job *j = ctx;
    if (!j->faults) lo *= j->p->G, hi *= j->p->G; /* backward runs in groups of pairs */
    const int part = tg_parallel_part();
    void *scr = j->scratch + (size_t)tg_parallel_thread() * j->scratch_bytes;
    if (j->faults && j->dt == TG_F32)
        tg_attn_forward_f32(j->p, j->q, j->k, j->v, j->out, j->lse, lo, hi, scr, &j->faults[part]);
    else if (j->faults) forward_range_f64(j->p, j->q, j->k, j->v, j->out, j->lse, lo, hi, scr, &j->faults[part]);
    else if (j->dt == TG_F32)
        tg_attn_backward_f32(j->p, j->q, j->k, j->v, j->o, j->dout, j->lse, j->dq, j->dk, j->dv, lo, hi, scr);
    else backward_range_f64(j->p, j->q, j->k, j->v, j->o, j->dout, j->lse, j->dq, j->dk, j->dv, lo, hi, scr);
}

/* q, k, v of a call on n_in inputs: three tensors, or one qkv (B,T,C +
 * 2 Ckv) holding them side by side at column offsets 0, C, C + Ckv; and,
 * when gx is not NULL, their gradients likewise (NULL where none is
 * needed). */
static void qkv_of(tg_graph *g, int n_in, tg_tensor *const *in, const attn_plan *p, const void *x[3], void *gx[3])
{
    const size_t es = tg_dtype_size(in[0]->dtype), offs[3] = {0, (size_t)p->C, (size_t)p->C + (size_t)p->Ckv};
    for (int i = 0; i < 3; i++) {
        tg_tensor *t = in[n_in == 1 ? 0 : i];
        const size_t off = n_in == 1 ? offs[i] * es : 0;
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
    qkv_of(g, nd->n_in, nd->in, p, x, gx);
    attn_job j = {.p = p,
                  .dt = o->dtype,
                  .q = x[0],
                  .k = x[1],
                  .v = x[2],
                  .o = o->data,
                  .dout = o->grad,
                  .lse = sv->lse,
                  .dq = gx[0],
                  .dk = gx[1],
                  .dv = gx[2],
                  .scratch_bytes = part_scratch(p, o->dtype, true)};
    if (!j.dq && !j.dk && !j.dv) return;
    j.scratch = tg_arena_alloc(g, (size_t)tg_num_threads() * j.scratch_bytes); /* (threads, scratch) */
    if (!j.scratch) return;
    /* by groups of G consecutive pairs, which share one kv head's dk and dv */
    tg_parallel_for((int64_t)p->B * p->H / p->G, 1, attn_part, &j);
}

/* Runs the forward of plan p on the n_in inputs (q, k, v, or one qkv) and
 * records it; error messages name the inputs (inputs_str). */
static tg_tensor *attention_run(tg_graph *g, attn_plan p, int n_in, tg_tensor **in)
{
    char what[256];
    /* the f32 kernels' blocks, no larger than the sequences: less scratch,
     * same results */
    tg_attention_get_blocks(&p.bq, &p.bk);
    if (p.bq > p.Tq) p.bq = p.Tq;
    if (p.bk > p.Tk) p.bk = p.Tk;
    const tg_dtype dt = in[0]->dtype;
    const size_t es = tg_dtype_size(dt);
    const int B = p.B, H = p.H, nt = tg_parallel_parts((int64_t)B * H, 1);
    tg_tensor *o = tg_op_output(g, dt, 3, (int[]){B, p.Tq, p.C}); /* (B,Tq,C) */
    void *lse = o ? tg_arena_alloc(g, (size_t)B * H * p.Tq * es) : NULL; /* (B,H,Tq) */
    attn_fault *faults = lse ? tg_arena_zalloc(g, (size_t)nt * sizeof *faults) : NULL; /* (parts) ATTN_OK */
    const void *x[3];
    qkv_of(g, n_in, in, &p, x, NULL);
    attn_job j = {.p = &p,
                  .dt = dt,
                  .q = x[0],
                  .k = x[1],
                  .v = x[2],
                  .out = o ? o->data : NULL,
                  .lse = lse,
                  .faults = faults,
                  .scratch_bytes = part_scratch(&p, dt, false)};
    j.scratch = faults ? tg_arena_alloc(g, (size_t)tg_num_threads() * j.scratch_bytes) : NULL; /* (threads, scratch) */
    if (!j.scratch) return NULL;
    tg_parallel_for((int64_t)B * H, 1, attn_part, &j);
    /* parts run in pair order: the first part that failed has the first bad pair */
    attn_fault f = {ATTN_OK, 0, 0, 0};
    for (int i = 0; i < nt && f.kind == ATTN_OK; i++) f = faults[i];
    const int fb = (int)(f.bh / H), fh = (int)(f.bh % H);
    if (f.kind == ATTN_BAD_SCORE)
        return tg_fail(g,
                       "attention: score of query %d and key %d in batch row %d, head %d is NaN or +inf "
                       "(scores must be finite or -inf): %s",
                       f.i, f.j, fb, fh, inputs_str(n_in, in, what, sizeof what));
    if (f.kind == ATTN_BLOCKED_ROW) {
        if (p.causal && p.q_pos + f.i < 0)
            return tg_fail(g,
                           "attention: query row %d (batch row %d, head %d) sees no key: causal with q_pos %lld "
                           "puts it at position %lld: %s",
                           f.i, fb, fh, (long long)p.q_pos, (long long)(p.q_pos + f.i),
                           inputs_str(n_in, in, what, sizeof what));
        return tg_fail(g, "attention: query row %d (batch row %d, head %d) has every visible score -inf: %s", f.i, fb,
                       fh, inputs_str(n_in, in, what, sizeof what));
    }
    tg_node *nd = tg_op_record(g, "attention", attention_backward, o, n_in, in);
    if (nd) {
        attn_saved *s = tg_arena_alloc(g, sizeof *s);
        if (!s) return NULL;
        *s = (attn_saved){.plan = p, .lse = lse};
        nd->saved = s; /* an arena allocation records nothing: nd is still valid */
    }
    return tg_graph_error(g) ? NULL : o;
}
