/* attention_walkthrough, part 1: the tutorial's own small cases, each run
 * through tapegrad's ops on a handful of numbers.
 *
 *   readout    values [2,0] and [0,4] weighted 0.75 and 0.25 read out [1.5, 1]
 *   softmax    P = (0.5, 0.5) and a loss that reads only P_0 (dP = (1, 0)):
 *   backward   dS = P * (dP - sum(P * dP)) = (0.25, -0.25), not (0.25, 0)
 *   scaling    dot products [8, -8] in a head of 64: unscaled the second
 *              key gets ~1e-7; divided by sqrt(64) = 8 it gets 0.119
 *   mask       softmax([0, 0]) with only the first key allowed: masking
 *              before the softmax gives [1, 0], zeroing after it [0.5, 0]
 *   KV cache   queries at positions 3 and 4 over keys 0..4, all scores 0,
 *              values 10..50: key j allowed iff j <= position -> [25, 30];
 *              the upper-left alignment (j <= query row) -> [10, 15] */
#include "walkthrough.h"

#include <math.h>
#include <stdio.h>

/* A tensor of dtype dt holding the doubles v. */
static tg_tensor *vec(tg_graph *g, tg_dtype dt, int ndim, const int *shape, const double *v)
{
    tg_tensor *t = tg_tensor_new(g, dt, ndim, shape);
    if (!t) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == TG_F32) ((float *)t->data)[i] = (float)v[i];
        else ((double *)t->data)[i] = v[i];
    }
    return t;
}
#define PAIR(g, dt, a, b) vec(g, dt, 1, (int[]){2}, (double[]){a, b})

static int readout(tg_graph *g, tg_dtype dt)
{
    section("case 1: attention reads out a weighted average of the values");
    say("Two positions hold the values [2, 0] and [0, 4]. The scores [ln 3, 0] give the");
    say("weights softmax = [3/4, 1/4], and the readout is 0.75 [2, 0] + 0.25 [0, 4] = [1.5, 1].");
    tg_tensor *s = PAIR(g, dt, log(3.0), 0); /* (Tk) */
    tg_tensor *a = tg_softmax(g, s, NULL); /* (Tk) */
    tg_tensor *v = vec(g, dt, 2, (int[]){2, 2}, (double[]){2, 0, 0, 4}); /* (Tk,d) */
    tg_tensor *o = tg_matmul(g, a, v); /* (d) */
    if (!graph_ok(g, "case 1")) return -1;
    show("readout.scores", s, "scores = [ln 3, 0]");
    show("readout.A", a, "A = softmax(scores)");
    show("readout.V", v, "V, one row per position");
    show("readout.O", o, "O = A V = sum_j A_j v_j");
    return 0;
}

static int softmax_gradient(tg_graph *g, tg_dtype dt)
{
    section("case 2: the softmax backward also moves the other scores");
    say("Two scores [0, 0] give P = [0.5, 0.5]. A loss that reads only P_0 has dP = [1, 0].");
    say("Raising score 0 raises P_0; raising score 1 takes weight from P_0. So dS = (0.25, -0.25):");
    say("dS = P * (dP - sum_j P_j dP_j), one row at a time; the T x T Jacobian is never built.");
    say("Keeping only the Jacobian's diagonal, P * (1 - P) * dP, gives (0.25, 0): wrong.");
    const double up[2][2] = {{1, 0}, {1, 1}};
    const char *tag[2] = {"", "_ones"};
    for (int k = 0; k < 2; k++) {
        tg_graph_reset(g);
        if (k) say("With dP = [1, 1] (a loss that reads P_0 + P_1 = 1, a constant) dS is zero:");
        tg_tensor *s = PAIR(g, dt, 0, 0); /* (Tk) */
        tg_tensor_set_requires_grad(g, s, true);
        tg_tensor *p = tg_softmax(g, s, NULL); /* (Tk) */
        tg_tensor *dp = PAIR(g, dt, up[k][0], up[k][1]); /* (Tk) */
        if (!graph_ok(g, "case 2") || tg_graph_backward_seeded(g, p, dp->data) != 0) {
            graph_ok(g, "case 2 backward");
            return -1;
        }
        tg_tensor *hand = softmax_backward_by_hand(g, p, dp->data); /* (Tk) f64 */
        tg_tensor *diag = tg_tensor_new(g, TG_F64, 1, (int[]){2}); /* (Tk) f64 */
        if (!graph_ok(g, "case 2")) return -1;
        for (int j = 0; j < 2; j++) {
            double pj = tg_tensor_get(p, j);
            ((double *)diag->data)[j] = pj * (1 - pj) * tg_tensor_get(dp, j);
        }
        tg_tensor ds = gradient_of(s); /* (Tk) */
        char name[5][40];
        const char *base[5] = {"softgrad.P", "softgrad.dP", "softgrad.dS_tape", "softgrad.dS_hand", "softgrad.dS_diag"};
        for (int i = 0; i < 5; i++) snprintf(name[i], sizeof name[i], "%s%s", base[i], tag[k]);
        if (!k) show(name[0], p, "P = softmax([0, 0])");
        show(name[1], dp, "dP = dL/dP, the upstream gradient");
        show(name[2], &ds, "dS from the tape (tg_softmax's backward)");
        show(name[3], hand, "dS = P * (dP - sum(P * dP)), by hand");
        if (!k) show(name[4], diag, "P * (1 - P) * dP, the diagonal only: the mistake");
    }
    return 0;
}

static int scaling(tg_graph *g, tg_dtype dt)
{
    section("case 3: why the scores are divided by sqrt(d_head)");
    say("A query's dot products with two keys are [8, -8] in a head of size 64.");
    say("Unscaled, the softmax puts all but ~1e-7 of the weight on the first key; divided by");
    say("sqrt(64) = 8 the scores are [1, -1] and the second key still takes part (0.119).");
    say("Use the head size: with 8 heads of 64, sqrt(d_model) = sqrt(512) flattens them too much.");
    say("Subtracting the same number from every score changes nothing: [1000, 1000] -> [0.5, 0.5].");
    tg_tensor *dots = PAIR(g, dt, 8, -8); /* (Tk) */
    tg_tensor *unscaled = tg_softmax(g, dots, NULL); /* (Tk) */
    tg_tensor *scaled = tg_softmax(g, tg_scale(g, dots, 1 / sqrt(64.0)), NULL); /* (Tk) */
    tg_tensor *dmodel = tg_softmax(g, tg_scale(g, dots, 1 / sqrt(512.0)), NULL); /* (Tk) */
    tg_tensor *large = tg_softmax(g, PAIR(g, dt, 1000, 1000), NULL); /* (Tk) */
    if (!graph_ok(g, "case 3")) return -1;
    show("scaling.dots", dots, "q . k_j for two keys, d_head = 64");
    show("scaling.A_unscaled", unscaled, "softmax(dots)");
    show("scaling.A_scaled", scaled, "softmax(dots / sqrt(64))");
    show("scaling.A_dmodel", dmodel, "softmax(dots / sqrt(512)): d_model instead of d_head, the mistake");
    show("scaling.A_large", large, "softmax([1000, 1000]): the row maximum is subtracted first");
    return 0;
}

static int mask_before(tg_graph *g, tg_dtype dt)
{
    section("case 4: mask before the softmax, never zero after it");
    say("softmax([0, 0]) = [0.5, 0.5]. With only the first key allowed, masking before the");
    say("softmax (the blocked score becomes -inf) gives [1, 0]; zeroing the weight after it");
    say("gives [0.5, 0], whose sum is 0.5: the readout shrinks by half.");
    tg_tensor *s = PAIR(g, dt, 0, 0); /* (Tk) */
    tg_tensor *m = tg_tensor_from(g, TG_BOOL, 1, (int[]){2}, (uint8_t[]){0, 1}); /* (Tk) */
    tg_tensor *keep = PAIR(g, dt, 1, 0); /* (Tk) */
    tg_tensor *before = tg_softmax(g, s, m); /* (Tk) */
    tg_tensor *after = tg_mul(g, tg_softmax(g, s, NULL), keep); /* (Tk) */
    if (!graph_ok(g, "case 4")) return -1;
    show("mask.blocked", m, "1 = blocked key");
    show_with_sums("mask.A_before", before, "softmax(S with blocked scores -inf): right");
    show_with_sums("mask.A_after", after, "softmax(S) * [1, 0]: wrong, the row no longer sums to 1");
    return 0;
}

static int kv_cache(tg_graph *g, tg_dtype dt)
{
    section("case 5: a KV cache shifts where the causal mask starts");
    say("Positions 0, 1, 2 are cached; a chunk adds positions 3 and 4. The 2 new queries read");
    say("all 5 keys. Query row i sits at position 3 + i and may see key j iff j <= 3 + i");
    say("(bottom-right alignment). All scores are 0 and the values are 10, 20, 30, 40, 50, so");
    say("each output is the mean of the values it may see: [25, 30]. Aligning the mask at the");
    say("upper left (j <= i, what SDPA's is_causal=True does) gives [10, 15]: wrong here.");
    uint8_t aligned[10], upper_left[10];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++) {
            aligned[i * 5 + j] = j > 3 + i;
            upper_left[i * 5 + j] = j > i;
        }
    tg_tensor *s = tg_tensor_new(g, dt, 2, (int[]){2, 5}); /* (Tq,Tk) zeros */
    tg_tensor *v = vec(g, dt, 2, (int[]){5, 1}, (double[]){10, 20, 30, 40, 50}); /* (Tk,1) */
    tg_tensor *ma = tg_tensor_from(g, TG_BOOL, 2, (int[]){2, 5}, aligned); /* (Tq,Tk) */
    tg_tensor *mu = tg_tensor_from(g, TG_BOOL, 2, (int[]){2, 5}, upper_left); /* (Tq,Tk) */
    tg_tensor *aa = tg_softmax(g, s, ma), *au = tg_softmax(g, s, mu); /* (Tq,Tk) */
    tg_tensor *oa = tg_matmul(g, aa, v), *ou = tg_matmul(g, au, v); /* (Tq,1) */
    if (!graph_ok(g, "case 5")) return -1;
    show("kv.V", v, "values of keys 0..4");
    show("kv.blocked_aligned", ma, "1 = blocked: key j > 3 + i");
    show_with_sums("kv.A_aligned", aa, "softmax(0 with blocked -inf)");
    show("kv.O_aligned", oa, "O = A V: right");
    show("kv.blocked_upper_left", mu, "1 = blocked: key j > i");
    show_with_sums("kv.A_upper_left", au, "softmax(0 with blocked -inf)");
    show("kv.O_upper_left", ou, "O = A V: wrong for a cache");
    return 0;
}

int run_tutorial_cases(tg_dtype dt)
{
    tg_graph *g = tg_graph_new();
    if (!g) return -1;
    int (*const cases[])(tg_graph *, tg_dtype) = {readout, softmax_gradient, scaling, mask_before, kv_cache};
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases && rc == 0; i++) {
        tg_graph_reset(g);
        rc = cases[i](g, dt);
    }
    tg_graph_free(g);
    return rc;
}
