/* attention_walkthrough, parts 2 and 3: one causal self-attention layer
 * (one sequence of T tokens, d_model C, H heads of dh = C / H), forward
 * and backward, every intermediate printed.
 *
 * Forward, the tutorial's five steps:
 *   Q = X W_Q, K = X W_K, V = X W_V                          (B,T,C)
 *   split heads: reshape (B,T,H,dh), transpose -> Qh, Kh, Vh  (B,H,T,dh)
 *   S = Qh Kh^T / sqrt(dh)                                    (B,H,T,T)
 *   A = softmax_row(S + M), M_ij = 0 if j <= i, -inf if j > i (B,H,T,T)
 *   O = A Vh                                                  (B,H,T,dh)
 *   merge heads: transpose (B,T,H,dh), reshape (B,T,C); Y = O W_O
 *
 * Backward of L = sum(dY * Y), dY a fixed random tensor (so dL/dY = dY),
 * in the order the tape walks it:
 *   dW_O = O_merged^T dY,  dO_merged = dY W_O^T
 *   dO = dO_merged split into heads (reshape, transpose)      (B,H,T,dh)
 *   dVh = A^T dO,  dA = dO Vh^T       (dA is dP, the softmax's upstream)
 *   dS = A * (dA - rowsum(A * dA))
 *   dQK = dS / sqrt(dh)               (QK = Qh Kh^T, before the scale)
 *   dQh = dQK Kh,  dKh = dQK^T Qh
 *   dQ, dK, dV = dQh, dKh, dVh with the heads merged          (B,T,C)
 *   dW_Q = X^T dQ (and K, V),  dX = dQ W_Q^T + dK W_K^T + dV W_V^T
 * Every step three ways: by hand (backward_by_hand: plain loops over the
 * forward values, each step fed by the one before), by the tape (the
 * gradient tg_graph_backward left in that tensor), and by central
 * differences in f64 (the layer rerun from that tensor's stage with one
 * element nudged, layer_from); then tg_gradcheck on each weight. */
#include "walkthrough.h"

#include <math.h>
#include <stdio.h>

/* ---- the layer, built from tapegrad's ops ------------------------------ */

/* (B,T,C) -> (B,T,H,dh) -> (B,H,T,dh). The C axis holds the heads one
 * after another, so split it first and move H forward second; *mid (may
 * be NULL) gets the (B,T,H,dh) view. */
tg_tensor *split_heads(tg_graph *g, tg_tensor *t, int H, tg_tensor **mid)
{
    if (!t) return NULL;
    const int B = t->shape[0], T = t->shape[1], dh = t->shape[2] / H;
    tg_tensor *r = tg_reshape(g, t, 4, (int[]){B, T, H, dh}); /* (B,T,H,dh) */
    if (mid) *mid = r;
    return tg_transpose(g, r, 1, 2); /* (B,H,T,dh) */
}

/* The layer from stage `from` on: p's tensors before that stage are read,
 * the later ones made anew on g. wt = {X, W_Q, W_K, W_V, W_O}. The finite
 * differences rerun the layer from the stage of the tensor they nudge. */
tg_tensor *layer_from(tg_graph *g, const walk *w, stage from, tg_tensor *const wt[5], attn_parts *p)
{
    if (from <= FROM_X) {
        p->q = tg_matmul(g, wt[0], wt[1]); /* (B,T,C) */
        p->k = tg_matmul(g, wt[0], wt[2]); /* (B,T,C) */
        p->v = tg_matmul(g, wt[0], wt[3]); /* (B,T,C) */
    }
    if (from <= FROM_QKV) {
        p->qh = split_heads(g, p->q, w->H, &p->q_split); /* (B,H,T,dh) */
        p->kh = split_heads(g, p->k, w->H, NULL); /* (B,H,T,dh) */
        p->vh = split_heads(g, p->v, w->H, NULL); /* (B,H,T,dh) */
    }
    if (from <= FROM_HEADS) p->qk = tg_matmul(g, p->qh, tg_transpose(g, p->kh, 2, 3)); /* (B,H,T,T) */
    if (from <= FROM_QK) p->s = tg_scale(g, p->qk, 1 / sqrt((double)w->dh)); /* (B,H,T,T) */
    if (from <= FROM_S) p->a = tg_softmax(g, p->s, w->mask); /* (B,H,T,T) */
    if (from <= FROM_A) p->o = tg_matmul(g, p->a, p->vh); /* (B,H,T,dh) */
    if (from <= FROM_O) {
        tg_tensor *o = tg_transpose(g, p->o, 1, 2); /* (B,T,H,dh) */
        p->o_merged = tg_reshape(g, o, 3, (int[]){w->B, w->T, w->C}); /* (B,T,C) */
    }
    p->y = tg_matmul(g, p->o_merged, wt[4]); /* (B,T,C) */
    return p->y;
}

/* Everything after the scores: softmax with the causal mask, the
 * weighted sum of values, the merge of heads, W_O. */
tg_tensor *attend(tg_graph *g, const walk *w, tg_tensor *s, tg_tensor *vh, tg_tensor *wo, attn_parts *p)
{
    p->s = s;
    p->vh = vh;
    return layer_from(g, w, FROM_S, (tg_tensor *[5]){NULL, NULL, NULL, NULL, wo}, p);
}

tg_tensor *attention(tg_graph *g, const walk *w, tg_tensor *x, tg_tensor *wq, tg_tensor *wk, tg_tensor *wv,
                     tg_tensor *wo, attn_parts *p)
{
    attn_parts scratch;
    return layer_from(g, w, FROM_X, (tg_tensor *[5]){x, wq, wk, wv, wo}, p ? p : &scratch);
}

/* A new leaf on g with src's shape and values, in dtype dt. */
tg_tensor *leaf_copy(tg_graph *g, const tg_tensor *src, tg_dtype dt, bool requires_grad)
{
    tg_tensor *t = tg_tensor_new(g, dt, src->ndim, src->shape);
    if (!t) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == TG_F32) ((float *)t->data)[i] = (float)tg_tensor_get(src, i);
        else ((double *)t->data)[i] = tg_tensor_get(src, i);
    }
    if (requires_grad) tg_tensor_set_requires_grad(g, t, true);
    return t;
}

/* ---- the softmax backward, three ways ----------------------------------- */

/* dS = P * (dP - rowsum(P * dP)) over the last axis, in double. dp holds
 * p->numel values of p's dtype. The result is an f64 tensor on g. */
tg_tensor *softmax_backward_by_hand(tg_graph *g, const tg_tensor *p, const void *dp)
{
    tg_tensor *ds = tg_tensor_new(g, TG_F64, p->ndim, p->shape);
    if (!ds) return NULL;
    const int n = p->shape[p->ndim - 1];
#define DP(i) (p->dtype == TG_F32 ? (double)((const float *)dp)[i] : ((const double *)dp)[i])
    for (int64_t row = 0; row < p->numel / n; row++) {
        double dot = 0; /* rowsum(P * dP) */
        for (int64_t i = row * n; i < (row + 1) * n; i++) dot += tg_tensor_get(p, i) * DP(i);
        for (int64_t i = row * n; i < (row + 1) * n; i++) ((double *)ds->data)[i] = tg_tensor_get(p, i) * (DP(i) - dot);
    }
#undef DP
    return ds;
}

/* ---- the backward three ways ------------------------------------------- */

/* The gradients shown, in the order the backward reaches them. */
enum { G_WO, G_OM, G_O, G_VH, G_A, G_S, G_QK, G_QH, G_KH, G_Q, G_K, G_V, G_WQ, G_WK, G_WV, G_X, N_GRADS };

/* The tensor gradient `id` belongs to, among p's and wt = {X, W_Q, W_K,
 * W_V, W_O}, and the stage a rerun that nudges it starts from. */
static tg_tensor **slot(attn_parts *p, tg_tensor **wt, int id)
{
    tg_tensor **at[N_GRADS] = {&wt[4], &p->o_merged, &p->o, &p->vh, &p->a,  &p->s,  &p->qk, &p->qh,
                               &p->kh, &p->q,        &p->k, &p->v,  &wt[1], &wt[2], &wt[3], &wt[0]};
    return at[id];
}
static const stage FROM[N_GRADS] = {FROM_MERGED, FROM_MERGED, FROM_O,   FROM_HEADS, FROM_A, FROM_S, FROM_QK, FROM_HEADS,
                                    FROM_HEADS,  FROM_QKV,    FROM_QKV, FROM_QKV,   FROM_X, FROM_X, FROM_X,  FROM_X};

/* Every gradient of L = sum(dY * Y) by the chain rule, in plain loops in
 * double. The forward values are p's and in's (the tape's forward, in its
 * dtype); each step's upstream gradient is the step before it here, never
 * the tape's. d[id] become f64 tensors on g. */
static int backward_by_hand(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *const in[6],
                            tg_tensor *d[N_GRADS])
{
    const int T = w->T, C = w->C, H = w->H, dh = w->dh;
    const int cc[2] = {C, C}, tc[3] = {1, T, C}, hd[4] = {1, H, T, dh}, tt[4] = {1, H, T, T};
    const int *shape[N_GRADS] = {cc, tc, hd, hd, tt, tt, tt, hd, hd, tc, tc, tc, cc, cc, cc, tc};
    const int ndim[N_GRADS] = {2, 3, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 2, 2, 2, 3};
    double *v[N_GRADS];
    for (int k = 0; k < N_GRADS; k++) {
        if (!(d[k] = tg_tensor_new(g, TG_F64, ndim[k], shape[k]))) return -1;
        v[k] = d[k]->data;
    }
#define F(t, i) tg_tensor_get((t), (i))
    const tg_tensor *x = in[0], *wqkv[3] = {in[1], in[2], in[3]}, *wo = in[4], *dy = in[5];
    double *dwo = v[G_WO], *dom = v[G_OM], *dO = v[G_O], *dvh = v[G_VH], *da = v[G_A], *ds = v[G_S], *dqk = v[G_QK],
           *dqh = v[G_QH], *dkh = v[G_KH], *dx = v[G_X];
    /* Y = O_merged W_O: dW_O = O_merged^T dY, dO_merged = dY W_O^T */
    for (int k = 0; k < C; k++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int t = 0; t < T; t++) s += F(p->o_merged, t * C + k) * F(dy, t * C + c);
            dwo[k * C + c] = s;
        }
    for (int t = 0; t < T; t++)
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += F(dy, t * C + c) * F(wo, k * C + c);
            dom[t * C + k] = s;
        }
    /* the merge undone: dO[h,t,:] = dO_merged[t, h dh .. (h+1) dh) */
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int e = 0; e < dh; e++) dO[(h * T + t) * dh + e] = dom[t * C + h * dh + e];
    /* O = A Vh, per head: dVh = A^T dO, dA = dO Vh^T */
    for (int h = 0; h < H; h++)
        for (int j = 0; j < T; j++)
            for (int e = 0; e < dh; e++) {
                double s = 0;
                for (int i = 0; i < T; i++) s += F(p->a, (h * T + i) * T + j) * dO[(h * T + i) * dh + e];
                dvh[(h * T + j) * dh + e] = s;
            }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) {
                double s = 0;
                for (int e = 0; e < dh; e++) s += dO[(h * T + i) * dh + e] * F(p->vh, (h * T + j) * dh + e);
                da[(h * T + i) * T + j] = s;
            }
    /* A = softmax_row(S + M): dS = A * (dA - rowsum(A * dA)); S = QK / sqrt(dh): dQK = dS / sqrt(dh) */
    for (int r = 0; r < H * T; r++) {
        double dot = 0;
        for (int j = 0; j < T; j++) dot += F(p->a, r * T + j) * da[r * T + j];
        for (int j = 0; j < T; j++) {
            ds[r * T + j] = F(p->a, r * T + j) * (da[r * T + j] - dot);
            dqk[r * T + j] = ds[r * T + j] / sqrt((double)dh);
        }
    }
    /* QK = Qh Kh^T: dQh = dQK Kh, dKh = dQK^T Qh */
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int e = 0; e < dh; e++) {
                double sq = 0, sk = 0;
                for (int j = 0; j < T; j++) {
                    sq += dqk[(h * T + t) * T + j] * F(p->kh, (h * T + j) * dh + e);
                    sk += dqk[(h * T + j) * T + t] * F(p->qh, (h * T + j) * dh + e);
                }
                dqh[(h * T + t) * dh + e] = sq;
                dkh[(h * T + t) * dh + e] = sk;
            }
    /* the split undone: dQ[t, h dh + e] = dQh[h,t,e], and the same for K and V */
    const double *dhead[3] = {dqh, dkh, dvh};
    for (int m = 0; m < 3; m++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                for (int e = 0; e < dh; e++) v[G_Q + m][t * C + h * dh + e] = dhead[m][(h * T + t) * dh + e];
    /* Q = X W_Q (and K, V): dW_Q = X^T dQ; dX = dQ W_Q^T + dK W_K^T + dV W_V^T */
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < C; k++)
            for (int c = 0; c < C; c++) {
                double s = 0;
                for (int t = 0; t < T; t++) s += F(x, t * C + k) * v[G_Q + m][t * C + c];
                v[G_WQ + m][k * C + c] = s;
            }
    for (int t = 0; t < T; t++)
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int m = 0; m < 3; m++)
                for (int c = 0; c < C; c++) s += v[G_Q + m][t * C + c] * F(wqkv[m], k * C + c);
            dx[t * C + k] = s;
        }
#undef F
    return 0;
}

/* dL/dZ for the tensor Z of gradient `id`, by central differences in f64:
 * each element of Z nudged by +-eps in turn, the layer rerun from Z's
 * stage on a fresh graph, L = sum(dY * Y) taken. An f64 tensor on out. */
static tg_tensor *by_finite_differences(tg_graph *out, const walk *w, int id)
{
    const double eps = 1e-6;
    tg_graph *ref = tg_graph_new(), *fd = tg_graph_new();
    tg_tensor *d = NULL, *z = NULL, *wt[5];
    attn_parts p, q;
    bool ok = ref && fd;
    if (ok) {
        tg_graph_set_grad_enabled(ref, false); /* nothing here is differentiated */
        tg_graph_set_grad_enabled(fd, false);
        tg_tensor *src[5] = {w->x, w->wq, w->wk, w->wv, w->wo};
        for (int k = 0; k < 5; k++) wt[k] = leaf_copy(ref, src[k], TG_F64, false); /* the store stays put */
        ok = graph_ok(ref, "finite differences") && layer_from(ref, w, FROM_X, wt, &p) != NULL;
        z = ok ? *slot(&p, wt, id) : NULL;
        ok = ok && (d = tg_tensor_new(out, TG_F64, z->ndim, z->shape)) != NULL;
        if (!ok) graph_ok(ref, "finite differences");
    }
    for (int64_t i = 0; ok && i < z->numel; i++) {
        double *v = z->data, keep = v[i], loss[2] = {0, 0};
        for (int k = 0; k < 2 && ok; k++) {
            v[i] = keep + (k ? -eps : eps);
            tg_graph_reset(fd);
            q = p;
            tg_tensor *y = layer_from(fd, w, FROM[id], wt, &q); /* (B,T,C) */
            ok = graph_ok(fd, "finite differences");
            for (int64_t e = 0; ok && e < y->numel; e++) loss[k] += tg_tensor_get(y, e) * tg_tensor_get(w->dy, e);
        }
        v[i] = keep;
        ((double *)d->data)[i] = (loss[0] - loss[1]) / (2 * eps);
    }
    tg_graph_free(ref);
    tg_graph_free(fd);
    return ok ? d : NULL;
}

/* The layer as gradcheck sees it: inputs X, W_Q, W_K, W_V, W_O -> Y. */
static tg_tensor *layer_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    return attention(g, ctx, in[0], in[1], in[2], in[3], in[4], NULL);
}

/* ---- the walkthrough ---------------------------------------------------- */

static void show_forward(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *const in[6])
{
    const int T = w->T, C = w->C, H = w->H, dh = w->dh;
    section("forward: one causal self-attention layer");
    say("One sequence (B = 1) of T = %d tokens, d_model C = %d, H = %d heads of d_head = C / H = %d.", T, C, H, dh);
    say("X and the weights are random (seed %llu); every number below is printed by tapegrad's ops.",
        (unsigned long long)w->seed);
    show("X", in[0], "token vectors, one row per token");
    const char *wname[4] = {"W_Q", "W_K", "W_V", "W_O"};
    for (int i = 0; i < 4; i++) show(wname[i], in[i + 1], "(d_model, d_model), normal with std 1/sqrt(d_model)");

    say("Step 0: three projections of the same X (self-attention).");
    show("Q", p->q, "Q = X W_Q");
    show("K", p->k, "K = X W_K");
    show("V", p->v, "V = X W_V");

    say("Split heads: a token's %d features are %d heads of %d, one after the other. So first", C, H, dh);
    say("reshape (B,T,C) -> (B,T,H,dh), then transpose axes 1 and 2 -> (B,H,T,dh).");
    show("Q_split", p->q_split, "reshape(Q, (B,T,H,dh)): row [b,t,h,:] is head h's slice of token t");
    show("Qh", p->qh, "transpose(Q_split, 1, 2): row [b,h,t,:] is token t in head h");
    show("Kh", p->kh, "K split the same way");
    show("Vh", p->vh, "V split the same way");

    say("Step 1: one score per (query i, key j) pair, per head.");
    show("S", p->s, "S = Qh Kh^T / sqrt(d_head), d_head = %d", dh);

    say("Step 2: the causal mask. Query i may read keys j <= i (itself and the past), never the");
    say("future. tg_softmax takes it as a bool mask (1 = blocked) and adds M for you:");
    tg_tensor *m = tg_tensor_new(g, w->dtype, 2, (int[]){T, T}); /* (T,T) */
    if (!m) return;
    for (int i = 0; i < T * T; i++) {
        double v = tg_tensor_get(w->mask, i) ? -INFINITY : 0;
        if (w->dtype == TG_F32) ((float *)m->data)[i] = (float)v;
        else ((double *)m->data)[i] = v;
    }
    bool grad_on = tg_graph_set_grad_enabled(g, false); /* shown, not differentiated */
    tg_tensor *sm = tg_add(g, p->s, m); /* (B,H,T,T) */
    tg_graph_set_grad_enabled(g, grad_on);
    show("blocked", w->mask, "the bool mask, 1 where key j > query i");
    show("M", m, "M_ij = 0 if j <= i, -inf if j > i");
    if (sm) show("S+M", sm, "what the softmax sees");

    say("Step 3: softmax along each row. e^-inf = 0, so the future gets weight exactly 0, and");
    say("every row sums to 1.");
    show_with_sums("A", p->a, "A = softmax_row(S + M)");

    say("Step 4: each query reads a weighted average of the values.");
    show("O", p->o, "O = A Vh, per head");

    say("Step 5: the heads side by side again (transpose back to (B,T,H,dh), reshape to");
    say("(B,T,C)), then the output projection.");
    show("O_merged", p->o_merged, "reshape(transpose(O, 1, 2), (B,T,C))");
    show("Y", p->y, "Y = O_merged W_O");
}

/* One step of the backward: the gradient by hand, by the tape and by
 * finite differences, and the two comparisons. Each check allows tol
 * times (1 + the largest |element| of the hand gradient). */
static void show_step(const walk *w, const char *name, tg_tensor *const d[3], const char *formula)
{
    const bool f64 = w->dtype == TG_F64;
    const double tol_tape = f64 ? 1e-12 : 1e-6, tol_fd = f64 ? 1e-8 : 1e-5;
    static const char *const how[3] = {"by hand", "from the tape", "by central differences"};
    static const char *const tag[3] = {"hand", "tape", "fd"};
    char n[3][48];
    for (int k = 0; k < 3; k++) {
        snprintf(n[k], sizeof n[k], "%s_%s", name, tag[k]);
        if (k == 0) show(n[k], d[k], "%s, by hand", formula);
        else show(n[k], d[k], "%s %s", name, how[k]);
    }
    double big = 0;
    for (int64_t i = 0; i < d[0]->numel; i++) big = fmax(big, fabs(tg_tensor_get(d[0], i)));
    for (int k = 1; k < 3; k++) {
        char what[112];
        snprintf(what, sizeof what, "max_abs(%s-%s)", n[0], n[k]);
        const double diff = max_abs_diff(d[0], d[k]), tol = k == 1 ? tol_tape : tol_fd;
        show_value(what, diff, "%s",
                   k == 1 ? "the chain rule by hand against the tape" : "against the definition of a derivative");
        check(diff <= tol * (1 + big), "%s by hand agrees %s (%.3g <= %g (1 + %.3g))", name,
              k == 1 ? "with the tape" : "with finite differences", diff, tol, big);
    }
}

/* The backward, every step by hand, by the tape and by finite differences;
 * then gradcheck on each weight. */
static int show_backward(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *loss, tg_tensor *const in[6])
{
    const bool f64 = w->dtype == TG_F64;
    const int T = w->T, dh = w->dh;
    section("backward");
    say("The loss L = sum(dY * Y) with a fixed random dY, so dL/dY = dY. tg_graph_backward walks");
    say("the tape in reverse; each op adds its inputs' gradients. Below, each step's gradient is");
    say("shown three ways: _hand, this program's own loops over the forward values, taking each");
    say("step's upstream gradient from the step before (the chain rule, by hand); _tape, what");
    say("tg_graph_backward left in that tensor's gradient; _fd, central differences of L in f64,");
    say("nudging one element of that tensor by 1e-6 at a time and rerunning the rest of the layer.");
    if (tg_graph_backward(g, loss) != 0) {
        graph_ok(g, "backward");
        return -1;
    }
    show_value("L", tg_tensor_item(loss), "the loss");
    show("dY", in[5], "dL/dY, the gradient that enters the layer from above");

    tg_tensor *hand[N_GRADS], tape[N_GRADS], *fd[N_GRADS];
    attn_parts parts = *p;
    tg_tensor *wt[5] = {in[0], in[1], in[2], in[3], in[4]};
    if (backward_by_hand(g, w, p, in, hand) != 0) {
        graph_ok(g, "backward by hand");
        return -1;
    }
    for (int k = 0; k < N_GRADS; k++) {
        tape[k] = gradient_of(*slot(&parts, wt, k));
        fd[k] = by_finite_differences(g, w, k);
        if (!tape[k].data || !fd[k]) {
            fprintf(stderr, "attention_walkthrough: no gradient for step %d\n", k);
            return -1;
        }
    }
#define STEP(id, name, ...) show_step(w, name, (tg_tensor *[3]){hand[id], &tape[id], fd[id]}, __VA_ARGS__)
    say("Step 5 backward, the output projection Y = O_merged W_O: a product's gradient is the");
    say("upstream gradient times the other factor, transposed.");
    STEP(G_WO, "dW_O", "dW_O = O_merged^T dY");
    STEP(G_OM, "dO_merged", "dO_merged = dY W_O^T");
    say("The merge undone: dO_merged's row t holds every head's slice of token t, so it is split");
    say("like Q was (reshape (B,T,H,dh), transpose axes 1 and 2). No arithmetic, only moves.");
    STEP(G_O, "dO", "dO = transpose(reshape(dO_merged, (B,T,H,dh)), 1, 2)");
    say("Step 4 backward, O = A Vh per head: the values get dVh = A^T dO (value j collects from");
    say("every query that read it, by its weight), the weights get dA = dO Vh^T.");
    STEP(G_VH, "dVh", "dVh = A^T dO");
    STEP(G_A, "dA", "dA = dO Vh^T");
    say("dA is not 0 at future keys (dO Vh^T knows nothing of the mask), but A is 0 there, and so");
    say("will dS be.%s", T == 1 ? " With one token A = [1] whatever the score: dS, dW_Q and dW_K are 0." : "");
    say("Step 3 backward, the softmax: dS = P * (dP - rowsum(P * dP)), with P = A and dP = dA, one");
    say("row at a time (the T x T Jacobian of a row is never built).");
    STEP(G_S, "dS", "dS = A * (dA - rowsum(A * dA))");

    /* each row of dS sums to 0 (adding one number to a row's scores changes nothing);
     * blocked scores get exactly zero gradient */
    double worst_row = 0;
    int64_t nonzero_blocked = 0;
    for (int64_t row = 0; row < hand[G_S]->numel / T; row++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            sum += tg_tensor_get(hand[G_S], row * T + j);
            if (j > row % T && tg_tensor_get(&tape[G_S], row * T + j) != 0) nonzero_blocked++;
        }
        if (fabs(sum) > worst_row) worst_row = fabs(sum);
    }
    say("Each row of dS sums to 0: adding one number to all of a row's scores changes nothing.");
    say("Row 0 of each head is all 0: query 0 sees only key 0, whose weight is 1 whatever its score.");
    show_value("max_abs(rowsum(dS_hand))", worst_row, "the largest row sum of dS");
    check(nonzero_blocked == 0, "the tape's dS is exactly 0 at every blocked (future) key");

    say("The scale, S = QK / sqrt(d_head) with QK = Qh Kh^T: dQK = dS / sqrt(%d).", dh);
    STEP(G_QK, "dQK", "dQK = dS / sqrt(d_head)");
    say("Step 1 backward, QK = Qh Kh^T per head: query i collects dQK's row i over the keys, key j");
    say("its column j over the queries.");
    STEP(G_QH, "dQh", "dQh = dQK Kh = dS Kh / sqrt(d_head)");
    STEP(G_KH, "dKh", "dKh = dQK^T Qh = dS^T Qh / sqrt(d_head)");
    say("The split undone: each head's gradient goes back to its slice of the token's C features");
    say("(transpose axes 1 and 2, reshape (B,T,C)). Vh's gradient, from step 4, goes back the same way.");
    STEP(G_Q, "dQ", "dQ = reshape(transpose(dQh, 1, 2), (B,T,C))");
    STEP(G_K, "dK", "dK = reshape(transpose(dKh, 1, 2), (B,T,C))");
    STEP(G_V, "dV", "dV = reshape(transpose(dVh, 1, 2), (B,T,C))");
    say("Step 0 backward, the projections Q = X W_Q, K = X W_K, V = X W_V: each weight gets X^T");
    say("times its projection's gradient, and X, which feeds all three, gets the sum of three terms.");
    STEP(G_WQ, "dW_Q", "dW_Q = X^T dQ");
    STEP(G_WK, "dW_K", "dW_K = X^T dK");
    STEP(G_WV, "dW_V", "dW_V = X^T dV");
    STEP(G_X, "dX", "dX = dQ W_Q^T + dK W_K^T + dV W_V^T");
#undef STEP

    section("gradients of the weights, beside gradcheck's verdict");
    say("tg_gradcheck perturbs every element of one weight (f64, eps 1e-6) and compares the change");
    say("of sum(r * Y), r random, with the tape's gradient. An element passes iff");
    say("|analytic - numeric| <= 1e-5 + 1e-3 |numeric|.%s", f64 ? "" : " gradcheck runs in f64, on the same numbers.");
    const char *wname[4] = {"W_Q", "W_K", "W_V", "W_O"};
    tg_tensor *gc_in[5] = {w->x, w->wq, w->wk, w->wv, w->wo};
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < 5; j++) tg_tensor_set_requires_grad(w->store, gc_in[j], j == k + 1);
        tg_gradcheck_result res;
        tg_gradcheck(layer_fn, (void *)w, 5, gc_in, NULL, &res);
        check(res.ok, "gradcheck %s: %s", wname[k], res.message);
    }
    for (int j = 0; j < 5; j++) tg_tensor_set_requires_grad(w->store, gc_in[j], false);
    return 0;
}

int run_layer(const walk *w)
{
    tg_graph *g = tg_graph_new();
    if (!g) return -1;
    const tg_dtype dt = w->dtype;
    tg_tensor *in[6] = {
        leaf_copy(g, w->x, dt, true),  leaf_copy(g, w->wq, dt, true), leaf_copy(g, w->wk, dt, true),
        leaf_copy(g, w->wv, dt, true), leaf_copy(g, w->wo, dt, true), leaf_copy(g, w->dy, dt, false),
    };
    attn_parts p;
    tg_tensor *y = attention(g, w, in[0], in[1], in[2], in[3], in[4], &p); /* (B,T,C) */
    tg_tensor *loss = tg_sum_all(g, tg_mul(g, y, in[5])); /* () */
    int rc = -1;
    if (!graph_ok(g, "forward")) goto done;
    show_forward(g, w, &p, in);

    /* the checks anyone can make on the forward: rows sum to 1, the future weighs 0 */
    const int T = w->T;
    double worst = 0;
    int64_t future = 0;
    for (int64_t row = 0; row < p.a->numel / T; row++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            double a = tg_tensor_get(p.a, row * T + j);
            sum += a;
            if (j > row % T && a != 0) future++;
        }
        if (fabs(sum - 1) > worst) worst = fabs(sum - 1);
    }
    const double tol = dt == TG_F64 ? 1e-12 : 1e-6;
    check(worst <= tol, "every row of A sums to 1 (max |sum - 1| = %.3g <= %g)", worst, tol);
    check(future == 0, "every weight on a future key is exactly 0");

    if (show_backward(g, w, &p, loss, in) != 0) goto done;

    tg_graph_set_grad_enabled(g, false); /* the mistakes are only looked at */
    rc = run_mistakes(g, w, &p, in[4]);
done:
    tg_graph_free(g);
    return rc;
}
