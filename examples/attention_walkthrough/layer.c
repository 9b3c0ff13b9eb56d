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
 * walked by the tape in reverse:
 *   dW_O = O_merged^T dY,  dO_merged = dY W_O^T
 *   dA = dO Vh^T                      (dP, the softmax's upstream gradient)
 *   dS = A * (dA - rowsum(A * dA))    shown three ways: by hand here, by
 *                                     the tape, and by central differences
 *   dQh = dS Kh / sqrt(dh), dKh = dS^T Qh / sqrt(dh), dVh = A^T dO
 *   dW_Q = X^T dQ (dQ: dQh with the heads merged), same for K and V,
 *   each shown beside tg_gradcheck's verdict. */
#include <math.h>
#include <stdio.h>

#include "walkthrough.h"

/* ---- the layer, built from tapegrad's ops ------------------------------ */

/* (B,T,C) -> (B,T,H,dh) -> (B,H,T,dh). The C axis holds the heads one
 * after another, so split it first and move H forward second; *mid (may
 * be NULL) gets the (B,T,H,dh) view. */
tg_tensor *split_heads(tg_graph *g, tg_tensor *t, int H, tg_tensor **mid)
{
    if (!t) return NULL;
    const int B = t->shape[0], T = t->shape[1], dh = t->shape[2] / H;
    tg_tensor *r = tg_reshape(g, t, 4, (int[]){B, T, H, dh});   /* (B,T,H,dh) */
    if (mid) *mid = r;
    return tg_transpose(g, r, 1, 2);                             /* (B,H,T,dh) */
}

/* Everything after the scores: softmax with the causal mask, the
 * weighted sum of values, the merge of heads, W_O. The finite
 * differences of dS rerun exactly this. */
tg_tensor *attend(tg_graph *g, const walk *w, tg_tensor *s, tg_tensor *vh, tg_tensor *wo, attn_parts *p)
{
    p->a = tg_softmax(g, s, w->mask);                            /* (B,H,T,T) */
    p->o = tg_matmul(g, p->a, vh);                               /* (B,H,T,dh) */
    tg_tensor *o = tg_transpose(g, p->o, 1, 2);                  /* (B,T,H,dh) */
    p->o_merged = tg_reshape(g, o, 3, (int[]){w->B, w->T, w->C}); /* (B,T,C) */
    p->y = tg_matmul(g, p->o_merged, wo);                        /* (B,T,C) */
    return p->y;
}

tg_tensor *attention(tg_graph *g, const walk *w, tg_tensor *x, tg_tensor *wq, tg_tensor *wk, tg_tensor *wv,
                     tg_tensor *wo, attn_parts *p)
{
    attn_parts scratch;
    if (!p) p = &scratch;
    p->q = tg_matmul(g, x, wq);                                  /* (B,T,C) */
    p->k = tg_matmul(g, x, wk);                                  /* (B,T,C) */
    p->v = tg_matmul(g, x, wv);                                  /* (B,T,C) */
    p->qh = split_heads(g, p->q, w->H, &p->q_split);             /* (B,H,T,dh) */
    p->kh = split_heads(g, p->k, w->H, NULL);                    /* (B,H,T,dh) */
    p->vh = split_heads(g, p->v, w->H, NULL);                    /* (B,H,T,dh) */
    tg_tensor *kt = tg_transpose(g, p->kh, 2, 3);                /* (B,H,dh,T) */
    p->s = tg_scale(g, tg_matmul(g, p->qh, kt), 1 / sqrt((double)w->dh)); /* (B,H,T,T) */
    return attend(g, w, p->s, p->vh, wo, p);                     /* (B,T,C) */
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
        double dot = 0;                                       /* rowsum(P * dP) */
        for (int64_t i = row * n; i < (row + 1) * n; i++) dot += tg_tensor_get(p, i) * DP(i);
        for (int64_t i = row * n; i < (row + 1) * n; i++)
            ((double *)ds->data)[i] = tg_tensor_get(p, i) * (DP(i) - dot);
    }
#undef DP
    return ds;
}

/* dL/dS_i ~ (L(S + eps e_i) - L(S - eps e_i)) / (2 eps), in f64: each
 * score nudged in turn and `attend` rerun on a fresh graph. */
static tg_tensor *dS_by_finite_differences(tg_graph *out, const walk *w)
{
    const double eps = 1e-6;
    tg_graph *ref = tg_graph_new(), *fd = tg_graph_new();
    tg_tensor *ds = NULL;
    attn_parts p, q;
    bool ok = ref && fd;
    if (ok) {
        tg_graph_set_grad_enabled(ref, false);   /* nothing here is differentiated */
        tg_graph_set_grad_enabled(fd, false);
        ok = attention(ref, w, w->x, w->wq, w->wk, w->wv, w->wo, &p) != NULL;  /* f64 S and Vh */
        ok = ok && (ds = tg_tensor_new(out, TG_F64, 4, p.s->shape)) != NULL;  /* (B,H,T,T) */
        if (!ok) graph_ok(ref, "finite differences");
    }
    for (int64_t i = 0; ok && i < p.s->numel; i++) {
        double *s = p.s->data, keep = s[i], loss[2];
        for (int k = 0; k < 2 && ok; k++) {
            s[i] = keep + (k ? -eps : eps);
            tg_graph_reset(fd);
            tg_tensor *y = attend(fd, w, p.s, p.vh, w->wo, &q);              /* (B,T,C) */
            tg_tensor *l = tg_sum_all(fd, tg_mul(fd, y, w->dy));             /* () */
            ok = graph_ok(fd, "finite differences");
            loss[k] = ok ? tg_tensor_item(l) : 0;
        }
        s[i] = keep;
        ((double *)ds->data)[i] = (loss[0] - loss[1]) / (2 * eps);
    }
    tg_graph_free(ref);
    tg_graph_free(fd);
    return ok ? ds : NULL;
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
    tg_tensor *m = tg_tensor_new(g, w->dtype, 2, (int[]){T, T});          /* (T,T) */
    if (!m) return;
    for (int i = 0; i < T * T; i++) {
        double v = tg_tensor_get(w->mask, i) ? -INFINITY : 0;
        if (w->dtype == TG_F32) ((float *)m->data)[i] = (float)v;
        else ((double *)m->data)[i] = v;
    }
    bool grad_on = tg_graph_set_grad_enabled(g, false);                   /* shown, not differentiated */
    tg_tensor *sm = tg_add(g, p->s, m);                                   /* (B,H,T,T) */
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

/* Backward, dS three ways, the weights' gradients and gradcheck. */
static int show_backward(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *loss,
                         tg_tensor *const in[6])
{
    const bool f64 = w->dtype == TG_F64;
    section("backward");
    say("The loss L = sum(dY * Y) with a fixed random dY, so dL/dY = dY. tg_graph_backward walks");
    say("the tape in reverse; each op adds its inputs' gradients.");
    if (tg_graph_backward(g, loss) != 0) {
        graph_ok(g, "backward");
        return -1;
    }
    show_value("L", tg_tensor_item(loss), "the loss");
    show("dY", in[5], "dL/dY, the gradient that enters the layer from above");

    tg_tensor da = gradient_of(p->a), ds_tape = gradient_of(p->s);       /* (B,H,T,T) */
    if (!da.data || !ds_tape.data) {
        fprintf(stderr, "attention_walkthrough: no gradient reached A or S\n");
        return -1;
    }
    say("The gradient reaching the attention weights, dA = dO Vh^T (the softmax's dP):");
    show("dA", &da, "dA = dL/dA, from the tape");

    say("dA is not 0 at future keys (dO Vh^T knows nothing of the mask), but A is 0 there, and so");
    say("will dS be.%s", w->T == 1 ? " With one token A = [1] whatever the score: dS, dW_Q and dW_K are 0." : "");
    say("The softmax backward: dS = P * (dP - rowsum(P * dP)), with P = A and dP = dA. Computed");
    say("three ways: by this program's own loop, by the tape (tg_softmax's backward), and by");
    say("central differences of L, nudging one score at a time by 1e-6 (in f64).");
    tg_tensor *ds_hand = softmax_backward_by_hand(g, p->a, da.data);     /* (B,H,T,T) f64 */
    tg_tensor *ds_fd = dS_by_finite_differences(g, w);                   /* (B,H,T,T) f64 */
    if (!ds_hand || !ds_fd) return -1;
    show("dS_hand", ds_hand, "dS = A * (dA - rowsum(A * dA)), by hand");
    show("dS_tape", &ds_tape, "dS from the tape");
    show("dS_fd", ds_fd, "dS by central differences");
    const double tol_tape = f64 ? 1e-12 : 1e-6, tol_fd = f64 ? 1e-8 : 1e-5;
    double d_tape = max_abs_diff(ds_hand, &ds_tape), d_fd = max_abs_diff(ds_hand, ds_fd);
    show_value("max_abs(dS_hand-dS_tape)", d_tape, "the same formula, two implementations");
    show_value("max_abs(dS_hand-dS_fd)", d_fd, "the formula against the definition of a derivative");
    check(d_tape <= tol_tape, "dS by hand agrees with the tape's dS (%.3g <= %g)", d_tape, tol_tape);
    check(d_fd <= tol_fd, "dS by hand agrees with finite differences (%.3g <= %g)", d_fd, tol_fd);

    /* each row of dS sums to 0 (adding one number to a row's scores changes nothing);
     * blocked scores get exactly zero gradient */
    const int T = w->T;
    double worst_row = 0;
    int64_t nonzero_blocked = 0;
    for (int64_t row = 0; row < ds_hand->numel / T; row++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            sum += tg_tensor_get(ds_hand, row * T + j);
            if (j > row % T && tg_tensor_get(&ds_tape, row * T + j) != 0) nonzero_blocked++;
        }
        if (fabs(sum) > worst_row) worst_row = fabs(sum);
    }
    say("Each row of dS sums to 0: adding one number to all of a row's scores changes nothing.");
    say("Row 0 of each head is all 0: query 0 sees only key 0, whose weight is 1 whatever its score.");
    show_value("max_abs(rowsum(dS_hand))", worst_row, "the largest row sum of dS");
    check(nonzero_blocked == 0, "the tape's dS is exactly 0 at every blocked (future) key");

    section("gradients of the weights, beside gradcheck's verdict");
    say("tg_gradcheck perturbs every element of one weight (f64, eps 1e-6) and compares the change");
    say("of sum(r * Y), r random, with the tape's gradient. An element passes iff");
    say("|analytic - numeric| <= 1e-5 + 1e-3 |numeric|.%s",
        f64 ? "" : " gradcheck runs in f64, on the same numbers.");
    const char *wname[4] = {"W_Q", "W_K", "W_V", "W_O"}, *dname[4] = {"dW_Q", "dW_K", "dW_V", "dW_O"};
    tg_tensor *gc_in[5] = {w->x, w->wq, w->wk, w->wv, w->wo};
    for (int k = 0; k < 4; k++) {
        tg_tensor dw = gradient_of(in[k + 1]);                           /* (C,C) */
        show(dname[k], &dw, "dL/d%s from the tape", wname[k]);
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
        leaf_copy(g, w->x, dt, false),  leaf_copy(g, w->wq, dt, true), leaf_copy(g, w->wk, dt, true),
        leaf_copy(g, w->wv, dt, true),  leaf_copy(g, w->wo, dt, true), leaf_copy(g, w->dy, dt, false),
    };
    attn_parts p;
    tg_tensor *y = attention(g, w, in[0], in[1], in[2], in[3], in[4], &p);   /* (B,T,C) */
    tg_tensor *loss = tg_sum_all(g, tg_mul(g, y, in[5]));                    /* () */
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

    tg_graph_set_grad_enabled(g, false);   /* the mistakes are only looked at */
    rc = run_mistakes(g, w, &p, in[4]);
done:
    tg_graph_free(g);
    return rc;
}
