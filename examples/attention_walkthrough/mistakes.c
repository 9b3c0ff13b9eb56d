/* attention_walkthrough, part 4: three classic mistakes, each beside the
 * right version, on the example's own numbers. None of them is an error:
 * the shapes are right and the numbers are wrong.
 *
 *  1. Zeroing the future weights after the softmax instead of masking
 *     before it. Row i of the wrong A is the right row times
 *     r_i = sum_{j<=i} e^{S_ij} / sum_j e^{S_ij}, so it sums to r_i < 1
 *     (except the last row, which blocks nothing) and O_i shrinks to r_i O_i.
 *  2. Splitting heads by reshaping (B,T,C) straight to (B,H,T,dh) (and
 *     merging back by reshaping straight to (B,T,C)). Row t of "head" h
 *     is then Q's flat elements (h T + t) dh ... (h T + t + 1) dh - 1:
 *     slices of other tokens and other heads. The same only when H = 1
 *     or T = 1.
 *  3. Scaling the scores by 1/sqrt(d_model) instead of 1/sqrt(d_head):
 *     every score is multiplied by sqrt(d_head / d_model) = 1/sqrt(H), so
 *     the weights come out flatter. The same only when H = 1. */
#include "walkthrough.h"

#include <math.h>
#include <stdio.h>

static int zero_after_softmax(tg_graph *g, const walk *w, const attn_parts *p)
{
    const int T = w->T;
    section("mistake 1: zeroing the future after the softmax instead of masking before it");
    say("Right: blocked scores are -inf before the softmax. Wrong: softmax over every key, then");
    say("multiply the future weights by 0. The wrong row i is the right row times r_i, the");
    say("share of e^S the allowed keys had: rows no longer sum to 1 and O_i shrinks to r_i O_i.");
    tg_tensor *keep = tg_tensor_new(g, w->dtype, 2, (int[]){T, T}); /* (T,T) */
    if (!keep) return -1;
    for (int i = 0; i < T * T; i++) {
        double v = tg_tensor_get(w->mask, i) ? 0 : 1;
        if (w->dtype == TG_F32) ((float *)keep->data)[i] = (float)v;
        else ((double *)keep->data)[i] = v;
    }
    tg_tensor *a = tg_mul(g, tg_softmax(g, p->s, NULL), keep); /* (B,H,T,T) */
    tg_tensor *r = tg_sum(g, a, -1, false); /* (B,H,T) */
    tg_tensor *o = tg_matmul(g, a, p->vh); /* (B,H,T,dh) */
    if (!graph_ok(g, "mistake 1")) return -1;
    show_with_sums("mistake_mask.A_right", p->a, "softmax_row(S + M)");
    show_with_sums("mistake_mask.A_wrong", a, "softmax_row(S) * (1 - blocked)");
    show("mistake_mask.row_sum", r, "r_i = sum_j A_wrong_ij: A_wrong = r_i * A_right");
    show("mistake_mask.O_right", p->o, "A_right Vh");
    show("mistake_mask.O_wrong", o, "A_wrong Vh = r_i * O_right");
    show_value("mistake_mask.max_abs(A_wrong-A_right)", max_abs_diff(a, p->a), "largest weight lost");
    show_value("mistake_mask.max_abs(O_wrong-O_right)", max_abs_diff(o, p->o), "largest change of a head's output");
    return 0;
}

static int reshape_straight_to_heads(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *wo)
{
    const int B = w->B, T = w->T, C = w->C, H = w->H, dh = w->dh;
    section("mistake 2: splitting heads by reshaping straight to (B,H,T,dh)");
    say("Right: reshape (B,T,C) -> (B,T,H,dh), then transpose to (B,H,T,dh). Wrong: reshape");
    say("(B,T,C) -> (B,H,T,dh) at once (and back to (B,T,C) at once to merge). The shape is");
    say("right, no error is raised, and each wrong \"head\" is a run of Q's memory (the same");
    say("as the right split only with one head or one token):");
    for (int h = 0; h < H; h++) {
        char line[512];
        int len = snprintf(line, sizeof line, "wrong head %d, rows 0..%d:", h, T - 1);
        for (int t = 0; t < T && len < (int)sizeof line - 40; t++) {
            int flat = (h * T + t) * dh; /* first element of the row in Q's memory */
            len += snprintf(line + len, sizeof line - len, "%s token %d [%d:%d]", t ? "," : "", flat / C, flat % C,
                            flat % C + dh);
        }
        say("  %s", line);
    }
    say("(token t [a:b] = features a..b-1 of token t; the right head h, row t is token t [%d h:%d (h+1)]).", dh, dh);
    tg_tensor *qw = tg_reshape(g, p->q, 4, (int[]){B, H, T, dh}); /* (B,H,T,dh) wrong */
    tg_tensor *kw = tg_reshape(g, p->k, 4, (int[]){B, H, T, dh}); /* (B,H,T,dh) wrong */
    tg_tensor *vw = tg_reshape(g, p->v, 4, (int[]){B, H, T, dh}); /* (B,H,T,dh) wrong */
    tg_tensor *s = tg_scale(g, tg_matmul(g, qw, tg_transpose(g, kw, 2, 3)), 1 / sqrt((double)dh)); /* (B,H,T,T) */
    tg_tensor *o = tg_matmul(g, tg_softmax(g, s, w->mask), vw); /* (B,H,T,dh) */
    tg_tensor *y = tg_matmul(g, tg_reshape(g, o, 3, (int[]){B, T, C}), wo); /* (B,T,C) */
    if (!graph_ok(g, "mistake 2")) return -1;
    show("mistake_split.Qh_right", p->qh, "transpose(reshape(Q, (B,T,H,dh)), 1, 2)");
    show("mistake_split.Qh_wrong", qw, "reshape(Q, (B,H,T,dh))");
    show("mistake_split.Y_right", p->y, "the layer's output");
    show("mistake_split.Y_wrong", y, "the layer with the wrong split and merge");
    show_value("mistake_split.max_abs(Qh_wrong-Qh_right)", max_abs_diff(qw, p->qh), "the queries the heads see");
    show_value("mistake_split.max_abs(Y_wrong-Y_right)", max_abs_diff(y, p->y), "the layer's output%s",
               H == 1 || T == 1 ? " (one head or one token: both splits are the same)" : "");
    return 0;
}

static int scale_by_d_model(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *wo)
{
    const int C = w->C, H = w->H, dh = w->dh;
    section("mistake 3: scaling by sqrt(d_model) instead of sqrt(d_head)");
    say("The dot products are over d_head = %d features, so divide by sqrt(%d), not by", dh, dh);
    say("sqrt(d_model) = sqrt(%d). The wrong scores are the right ones times sqrt(d_head / d_model)", C);
    say("= 1/sqrt(H), and the weights come out flatter.");
    tg_tensor *kt = tg_transpose(g, p->kh, 2, 3); /* (B,H,dh,T) */
    tg_tensor *s = tg_scale(g, tg_matmul(g, p->qh, kt), 1 / sqrt((double)C)); /* (B,H,T,T) */
    attn_parts q;
    tg_tensor *y = attend(g, w, s, p->vh, wo, &q); /* (B,T,C) */
    if (!y || !graph_ok(g, "mistake 3")) return -1;
    show("mistake_scale.S_right", p->s, "Qh Kh^T / sqrt(d_head)");
    show("mistake_scale.S_wrong", s, "Qh Kh^T / sqrt(d_model)");
    show_value("mistake_scale.factor", sqrt((double)dh / C), "S_wrong / S_right = sqrt(%d / %d) = 1/sqrt(%d)", dh, C,
               H);
    show_with_sums("mistake_scale.A_right", p->a, "softmax_row(S_right + M)");
    show_with_sums("mistake_scale.A_wrong", q.a, "softmax_row(S_wrong + M)");
    show_value("mistake_scale.max_abs(A_wrong-A_right)", max_abs_diff(q.a, p->a), "the weights");
    show_value("mistake_scale.max_abs(Y_wrong-Y_right)", max_abs_diff(y, p->y), "the layer's output%s",
               H == 1 ? " (one head: d_head = d_model)" : "");
    return 0;
}

int run_mistakes(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *wo)
{
    if (zero_after_softmax(g, w, p) || reshape_straight_to_heads(g, w, p, wo) || scale_by_d_model(g, w, p, wo))
        return -1;
    return 0;
}
