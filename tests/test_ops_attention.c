/* ops: fused attention (tg_attention, and tg_attention_qkv on one qkv).
 *
 * Forward values against attention written here as plain loops; gradients
 * with tg_gradcheck in f64; forward and all three gradients against the
 * composed path (reshape, transpose, matmul, scale, masked softmax) in f64
 * (1e-12) and f32 (1e-5). Block sizes are forced small so that short
 * sequences cross many blocks, partial ones included, and also left at
 * their defaults. The f32 kernels against the f64 reference on head sizes
 * and lengths on and off the vector width and the blocks, each result
 * within a bound derived from f32 rounding. Errors name shapes, rows and
 * elements; memory grows linearly with T (no (T,T) tensor is kept). */
#include "tg_test.h"

#include "ops/attention_f32_internal.h"

/* ---- references ---------------------------------------------------------- */

/* softmax(q k^T / sqrt(dh)) v per head, in loops; q (B,Tq,C), k, v
 * (B,Tk,C), head h = columns [h dh, (h+1) dh); key j visible to query i
 * iff !causal or j <= q_pos + i. */
static void naive_attention_gqa(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, int H, bool causal,
                                int q_pos, double *out);
static void naive_attention(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, int H, bool causal, int q_pos,
                            double *out)
{
    naive_attention_gqa(q, k, v, H, causal, q_pos, out);
}

/* The same with k, v (B,Tk,Ckv) of Ckv / dh heads: query head h reads kv
 * head h / (H / Hkv), its columns [kh dh, (kh+1) dh) of k and v. */
static void naive_attention_gqa(const tg_tensor *q, const tg_tensor *k, const tg_tensor *v, int H, bool causal,
                                int q_pos, double *out)
{
    const int B = q->shape[0], Tq = q->shape[1], C = q->shape[2], Tk = k->shape[1], dh = C / H;
    const int Ckv = k->shape[2], G = H / (Ckv / dh);
    double *w = malloc(sizeof(double) * Tk);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                double mx = -INFINITY, sum = 0;
                const int kc = h / G * dh; /* the kv head's first column */
                for (int j = 0; j < Tk; j++) {
                    double d = 0;
                    for (int c = 0; c < dh; c++)
                        d += tg_tensor_get(q, ((int64_t)b * Tq + i) * C + h * dh + c) *
                            tg_tensor_get(k, ((int64_t)b * Tk + j) * Ckv + kc + c);
                    w[j] = causal && j > q_pos + i ? -INFINITY : d / sqrt((double)dh);
                    if (w[j] > mx) mx = w[j];
                }
                for (int j = 0; j < Tk; j++) sum += w[j] = exp(w[j] - mx);
                for (int c = 0; c < dh; c++) {
                    double acc = 0;
                    for (int j = 0; j < Tk; j++)
                        acc += w[j] / sum * tg_tensor_get(v, ((int64_t)b * Tk + j) * Ckv + kc + c);
                    out[((int64_t)b * Tq + i) * C + h * dh + c] = acc;
                }
            }
    free(w);
}

/* The composed path: heads split by reshape + transpose, S = Q K^T scaled,
 * softmax with a bool (Tq,Tk) causal mask, O = A V, heads merged. */
static tg_tensor *composed(tg_graph *g, tg_tensor *q, tg_tensor *k, tg_tensor *v, int H, bool causal, int q_pos)
{
    const int B = q->shape[0], Tq = q->shape[1], C = q->shape[2], Tk = k->shape[1], dh = C / H;
    tg_tensor *Q = tg_transpose(g, tg_reshape(g, q, 4, (int[]){B, Tq, H, dh}), 1, 2); /* (B,H,Tq,dh) */
    tg_tensor *K = tg_transpose(g, tg_reshape(g, k, 4, (int[]){B, Tk, H, dh}), 1, 2); /* (B,H,Tk,dh) */
    tg_tensor *V = tg_transpose(g, tg_reshape(g, v, 4, (int[]){B, Tk, H, dh}), 1, 2); /* (B,H,Tk,dh) */
    tg_tensor *S = tg_scale(g, tg_matmul(g, Q, tg_transpose(g, K, 2, 3)), 1.0 / sqrt((double)dh)); /* (B,H,Tq,Tk) */
    tg_tensor *mask = NULL;
    if (causal) {
        mask = tg_tensor_new(g, TG_BOOL, 2, (int[]){Tq, Tk}); /* (Tq,Tk) */
        for (int i = 0; i < Tq; i++)
            for (int j = 0; j < Tk; j++) ((uint8_t *)mask->data)[i * Tk + j] = j > q_pos + i;
    }
    tg_tensor *O = tg_matmul(g, tg_softmax(g, S, mask), V); /* (B,H,Tq,dh) */
    return tg_reshape(g, tg_transpose(g, O, 1, 2), 3, (int[]){B, Tq, C}); /* (B,Tq,C) */
}

/* A leaf of dtype dt filled from a seeded normal stream, requiring grad. */
static tg_tensor *randn_dt(tg_graph *g, tg_dtype dt, int ndim, const int *shape, uint64_t seed)
{
    tg_tensor *d = tt_randn(g, ndim, shape, seed);
    if (dt == TG_F64) return d;
    tg_tensor *t = tg_tensor_new(g, TG_F32, ndim, shape);
    for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)((double *)d->data)[i];
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, t, true), 0);
    return t;
}

/* max |a_i - b_i| over n elements of arrays of the given dtypes (NaN sticks) */
static double max_abs_diff(tg_dtype da, const void *a, tg_dtype db, const void *b, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = da == TG_F32 ? ((const float *)a)[i] : ((const double *)a)[i];
        double y = db == TG_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
        double d = fabs(x - y);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

/* ---- cases ------------------------------------------------------------------ */

typedef struct attn_case {
    int B, Tq, Tk, C, H;
    bool causal;
    int q_pos;
    int bq, bk; /* 0: default blocks */
} attn_case;

static const attn_case CASES[] = {
    {2, 7, 7, 6, 2, true, 0, 2, 3}, /* many blocks, partial last ones */
    {1, 7, 7, 3, 1, true, 0, 5, 4}, /* one head, dh 3 */
    {3, 7, 7, 9, 3, false, 0, 2, 3}, /* three heads, B 3, every key visible */
    {2, 3, 8, 6, 3, true, 5, 2, 3}, /* KV cache: q_pos 5, Tk = q_pos + Tq */
    {2, 1, 6, 4, 2, true, 5, 2, 3}, /* one query (decoding) */
    {2, 5, 9, 4, 1, true, 2, 2, 3}, /* keys 7, 8 visible to no query */
    {1, 4, 3, 4, 2, true, 3, 1, 1}, /* every key visible to every query; 1 x 1 blocks */
    {2, 5, 11, 6, 2, false, 0, 2, 3}, /* cross-attention, Tk > Tq */
    {2, 6, 4, 6, 2, false, 0, 4, 5}, /* Tk < Tq; blocks larger than Tk */
    {2, 7, 7, 6, 3, true, 0, 0, 0}, /* default blocks (clamped to T) */
    {1, 150, 150, 4, 2, true, 0, 0, 0}, /* default blocks, two key blocks */
    {1, 150, 137, 4, 1, false, 0, 0, 0},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

static void use_blocks(const attn_case *c) { tg_attention_set_blocks(c->bq, c->bk); }

typedef struct {
    int H, flags, q_pos;
} attn_ctx;

static tg_tensor *attn_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const attn_ctx *c = ctx;
    return tg_attention(g, in[0], in[1], in[2], c->H, c->flags, c->q_pos);
}

/* ---- forward against loops ------------------------------------------------- */

START_TEST(forward_matches_loops)
{
    for (int n = 0; n < N_CASES; n++) {
        const attn_case *c = &CASES[n];
        use_blocks(c);
        for (int dt = 0; dt < 2; dt++) {
            const tg_dtype type = dt ? TG_F32 : TG_F64;
            tg_graph *g = tg_graph_new();
            tg_tensor *q = randn_dt(g, type, TT_SHAPE(c->B, c->Tq, c->C), 10 + n);
            tg_tensor *k = randn_dt(g, type, TT_SHAPE(c->B, c->Tk, c->C), 20 + n);
            tg_tensor *v = randn_dt(g, type, TT_SHAPE(c->B, c->Tk, c->C), 30 + n);
            tg_tensor *o = tg_attention(g, q, k, v, c->H, c->causal ? TG_ATTN_CAUSAL : 0, c->q_pos);
            ck_assert_msg(o != NULL, "case %d: %s", n, tg_graph_error(g));
            ck_assert_int_eq(o->dtype, type);
            ck_assert_int_eq(o->ndim, 3);
            ck_assert_int_eq(o->shape[0], c->B);
            ck_assert_int_eq(o->shape[1], c->Tq);
            ck_assert_int_eq(o->shape[2], c->C);
            double *want = malloc(sizeof(double) * o->numel);
            naive_attention(q, k, v, c->H, c->causal, c->q_pos, want);
            double err = max_abs_diff(type, o->data, TG_F64, want, o->numel);
            ck_assert_msg(err <= (type == TG_F64 ? 1e-13 : 2e-6), "case %d %s: forward off by %.3g", n,
                          tg_dtype_name(type), err);
            free(want);
            tg_graph_free(g);
        }
    }
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* Huge equal scores ([1000, 1000]-like rows) stay finite: the maximum is
 * subtracted, so the row averages its values. */
START_TEST(forward_stable_with_large_scores)
{
    tg_attention_set_blocks(2, 3);
    tg_graph *g = tg_graph_new();
    const int B = 1, T = 5, C = 2;
    tg_tensor *q = tg_tensor_new(g, TG_F32, 3, (int[]){B, T, C});
    tg_tensor *k = tg_tensor_new(g, TG_F32, 3, (int[]){B, T, C});
    tg_tensor *v = tg_tensor_new(g, TG_F32, 3, (int[]){B, T, C});
    for (int i = 0; i < T * C; i++) {
        ((float *)q->data)[i] = 40.0f; /* every score 40 * 40 * 2 / sqrt 2 = 2263 */
        ((float *)k->data)[i] = 40.0f;
        ((float *)v->data)[i] = (float)(i / C);
    }
    tg_tensor *o = tg_attention(g, q, k, v, 1, TG_ATTN_CAUSAL, 0);
    ck_assert_msg(o != NULL, "%s", tg_graph_error(g));
    for (int i = 0; i < T; i++) /* query i averages values 0..i */
        for (int c = 0; c < C; c++) ck_assert_float_eq_tol(((float *)o->data)[i * C + c], i / 2.0f, 1e-5f);
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* ---- gradients ---------------------------------------------------------------- */

START_TEST(gradcheck_cases)
{
    for (int n = 0; n < N_CASES; n++) {
        const attn_case *c = &CASES[n];
        use_blocks(c);
        tg_graph *g = tg_graph_new();
        tg_tensor *in[3] = {tt_randn(g, TT_SHAPE(c->B, c->Tq, c->C), 40 + n),
                            tt_randn(g, TT_SHAPE(c->B, c->Tk, c->C), 50 + n),
                            tt_randn(g, TT_SHAPE(c->B, c->Tk, c->C), 60 + n)};
        attn_ctx ctx = {c->H, c->causal ? TG_ATTN_CAUSAL : 0, c->q_pos};
        tt_assert_gradcheck(attn_fn, &ctx, 3, in);
        tg_graph_free(g);
    }
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* x used as q, k and v at once, and q used again after the op: the
 * gradients of every use add up. */
static tg_tensor *self_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const attn_ctx *c = ctx;
    tg_tensor *x = in[0];
    return tg_mul(g, tg_attention(g, x, x, x, c->H, c->flags, 0), x);
}

START_TEST(gradcheck_shared_inputs)
{
    tg_attention_set_blocks(2, 3);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 7, 6), 70);
    for (int flags = 0; flags < 2; flags++) {
        attn_ctx ctx = {2, flags, 0};
        tt_assert_gradcheck(self_fn, &ctx, 1, &x);
    }
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* Only some inputs need a gradient: the others get none, the rest the
 * same values as when all do. */
START_TEST(gradient_of_some_inputs)
{
    tg_attention_set_blocks(2, 3);
    tg_graph *g = tg_graph_new();
    tg_tensor *q = tt_randn(g, TT_SHAPE(2, 5, 6), 80), *k = tt_randn(g, TT_SHAPE(2, 5, 6), 81);
    tg_tensor *v = tt_randn(g, TT_SHAPE(2, 5, 6), 82);
    tg_tensor *all = tg_sum_all(g, tg_mul(g, tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, 0), q));
    ck_assert_int_eq(tg_graph_backward(g, all), 0);
    double ref[3][60];
    tg_tensor *t[3] = {q, k, v};
    for (int i = 0; i < 3; i++) memcpy(ref[i], t[i]->grad, sizeof ref[i]);
    for (int skip = 0; skip < 3; skip++) {
        for (int i = 0; i < 3; i++) {
            memset(t[i]->grad, 0, sizeof ref[i]);
            ck_assert_int_eq(tg_tensor_set_requires_grad(g, t[i], i != skip), 0);
        }
        tg_tensor *loss = tg_sum_all(g, tg_mul(g, tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, 0), q));
        ck_assert_int_eq(tg_graph_backward(g, loss), 0);
        for (int i = 0; i < 3; i++) {
            for (int e = 0; e < 60; e++) {
                const double want = i == skip ? 0.0 : ref[i][e]; /* the skipped input gets nothing */
                ck_assert_msg(fabs(((double *)t[i]->grad)[e] - want) <= 1e-14, "input %d element %d", i, e);
            }
        }
    }
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* A second backward over the same tape adds into leaf gradients: exactly
 * twice the first. */
START_TEST(gradients_accumulate)
{
    tg_attention_set_blocks(3, 2);
    tg_graph *g = tg_graph_new();
    tg_tensor *q = tt_randn(g, TT_SHAPE(1, 6, 4), 90), *k = tt_randn(g, TT_SHAPE(1, 6, 4), 91);
    tg_tensor *v = tt_randn(g, TT_SHAPE(1, 6, 4), 92);
    tg_tensor *loss = tg_sum_all(g, tg_mul(g, tg_attention(g, q, k, v, 2, TG_ATTN_CAUSAL, 0), q));
    ck_assert_int_eq(tg_graph_backward(g, loss), 0);
    double once[3][24];
    tg_tensor *t[3] = {q, k, v};
    for (int i = 0; i < 3; i++) memcpy(once[i], t[i]->grad, sizeof once[i]);
    ck_assert_int_eq(tg_graph_backward(g, loss), 0);
    for (int i = 0; i < 3; i++)
        for (int e = 0; e < 24; e++) {
            ck_assert(once[i][e] != 0);
            ck_assert_double_eq_tol(((double *)t[i]->grad)[e], 2 * once[i][e], 1e-14);
        }
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* ---- equal to the composed path ---------------------------------------------- */

/* Forward and the three gradients (seeded with the same random dO) of the
 * fused op and of the composed path, on the same leaves. */
static void compare_with_composed(const attn_case *c, tg_dtype dt, double tol, uint64_t seed)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *q = randn_dt(g, dt, TT_SHAPE(c->B, c->Tq, c->C), seed);
    tg_tensor *k = randn_dt(g, dt, TT_SHAPE(c->B, c->Tk, c->C), seed + 1);
    tg_tensor *v = randn_dt(g, dt, TT_SHAPE(c->B, c->Tk, c->C), seed + 2);
    tg_tensor *dO = randn_dt(g, dt, TT_SHAPE(c->B, c->Tq, c->C), seed + 3);
    tg_tensor *t[3] = {q, k, v};
    const size_t es = tg_dtype_size(dt);

    tg_tensor *of = tg_attention(g, q, k, v, c->H, c->causal ? TG_ATTN_CAUSAL : 0, c->q_pos);
    ck_assert_msg(of != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, of, dO->data), 0);
    void *gf[3];
    for (int i = 0; i < 3; i++) {
        gf[i] = malloc((size_t)t[i]->numel * es);
        memcpy(gf[i], t[i]->grad, (size_t)t[i]->numel * es);
        memset(t[i]->grad, 0, (size_t)t[i]->numel * es);
    }
    tg_tensor *oc = composed(g, q, k, v, c->H, c->causal, c->q_pos);
    ck_assert_msg(oc != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, oc, dO->data), 0);

    double err = max_abs_diff(dt, oc->data, dt, of->data, of->numel);
    ck_assert_msg(err <= tol, "B%d Tq%d Tk%d C%d H%d %s: forward differs by %.3g", c->B, c->Tq, c->Tk, c->C, c->H,
                  tg_dtype_name(dt), err);
    static const char *const names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        err = max_abs_diff(dt, t[i]->grad, dt, gf[i], t[i]->numel);
        ck_assert_msg(err <= tol, "B%d Tq%d Tk%d C%d H%d %s: %s differs by %.3g", c->B, c->Tq, c->Tk, c->C, c->H,
                      tg_dtype_name(dt), names[i], err);
        free(gf[i]);
    }
    tg_graph_free(g);
}

START_TEST(equals_composed_f64)
{
    for (int n = 0; n < N_CASES; n++) {
        use_blocks(&CASES[n]);
        compare_with_composed(&CASES[n], TG_F64, 1e-12, 100 + 10 * n);
    }
    tg_attention_set_blocks(0, 0);
}
END_TEST

START_TEST(equals_composed_f32)
{
    for (int n = 0; n < N_CASES; n++) {
        use_blocks(&CASES[n]);
        compare_with_composed(&CASES[n], TG_F32, 1e-5, 300 + 10 * n);
    }
    /* the sizes of the benchmarks and models, default blocks */
    tg_attention_set_blocks(0, 0);
    static const attn_case big[] = {
        {2, 256, 256, 256, 8, true, 0, 0, 0}, {2, 64, 64, 128, 4, true, 0, 0, 0},   {1, 200, 200, 64, 1, true, 0, 0, 0},
        {2, 32, 96, 64, 4, true, 64, 0, 0},   {2, 100, 130, 48, 3, false, 0, 0, 0},
    };
    for (size_t n = 0; n < sizeof big / sizeof big[0]; n++) compare_with_composed(&big[n], TG_F32, 1e-5, 500 + n);
}
END_TEST

/* An allowed -inf score gets weight 0, as in tg_softmax: query 1's score
 * with key 0 overflows to -inf; its output is the attention over keys
 * 1..3 alone. */
START_TEST(minus_inf_score_gets_zero_weight)
{
    tg_attention_set_blocks(2, 2);
    tg_graph *g = tg_graph_new();
    tg_tensor *q = tt_randn(g, TT_SHAPE(1, 3, 2), 110), *k = tt_randn(g, TT_SHAPE(1, 4, 2), 111);
    tg_tensor *v = tt_randn(g, TT_SHAPE(1, 4, 2), 112);
    double *qd = q->data, *kd = k->data;
    for (int i = 0; i < 3; i++) qd[i * 2] = i == 1 ? 1e200 : 0; /* column 0 */
    for (int j = 0; j < 4; j++) kd[j * 2] = j == 0 ? -1e200 : 0;
    tg_tensor *o = tg_attention(g, q, k, v, 1, 0, 0);
    ck_assert_msg(o != NULL, "%s", tg_graph_error(g));
    tg_tensor *k3 = tg_slice(g, k, 1, 1, 4), *v3 = tg_slice(g, v, 1, 1, 4); /* (1,3,2) */
    tg_tensor *o3 = tg_attention(g, q, k3, v3, 1, 0, 0);
    ck_assert_msg(o3 != NULL, "%s", tg_graph_error(g));
    for (int c = 0; c < 2; c++) ck_assert_double_eq_tol(tg_tensor_get(o, 2 + c), tg_tensor_get(o3, 2 + c), 1e-15);
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* ---- memory: no (T,T) tensor ---------------------------------------------------- */

/* Arena bytes taken by a forward + backward (the inputs made before). */
static size_t bytes_for(int T, bool fused)
{
    const int B = 2, C = 32, H = 4;
    tg_graph *g = tg_graph_new();
    tg_tensor *q = randn_dt(g, TG_F32, TT_SHAPE(B, T, C), 1), *k = randn_dt(g, TG_F32, TT_SHAPE(B, T, C), 2);
    tg_tensor *v = randn_dt(g, TG_F32, TT_SHAPE(B, T, C), 3), *dO = randn_dt(g, TG_F32, TT_SHAPE(B, T, C), 4);
    const size_t before = tg_graph_arena_used(g);
    const int tape = tg_graph_tape_len(g);
    tg_tensor *o = fused ? tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0) : composed(g, q, k, v, H, true, 0);
    ck_assert_msg(o != NULL, "%s", tg_graph_error(g));
    if (fused) ck_assert_int_eq(tg_graph_tape_len(g), tape + 1); /* one node */
    ck_assert_int_eq(tg_graph_backward_seeded(g, o, dO->data), 0);
    const size_t used = tg_graph_arena_used(g) - before;
    tg_graph_free(g);
    return used;
}

START_TEST(memory_linear_in_T)
{
    const int B = 2, C = 32, H = 4, T = 256;
    const size_t tt = (size_t)B * H * T * T * sizeof(float); /* one (B,H,T,T) f32 tensor */
    const size_t btc = (size_t)B * T * C * sizeof(float); /* one (B,T,C) f32 tensor */
    size_t f1 = bytes_for(T, true), f2 = bytes_for(2 * T, true);
    size_t c1 = bytes_for(T, false), c2 = bytes_for(2 * T, false);
    /* fused: O, dO, dq, dk, dv, L and a fixed scratch; composed: several (B,H,T,T) */
    ck_assert_msg(f1 < tt / 4, "fused uses %zu bytes at T=%d, a (B,H,T,T) tensor is %zu", f1, T, tt);
    ck_assert_msg(f1 <= 6 * btc + ((size_t)300 << 10), "fused uses %zu bytes at T=%d, (B,T,C) is %zu", f1, T, btc);
    ck_assert_msg(f2 <= f1 * 21 / 10, "fused: %zu bytes at T=%d, %zu at T=%d: not linear", f1, T, f2, 2 * T);
    /* the test can tell: the composed path keeps (T,T) tensors */
    ck_assert_msg(c1 > 2 * tt, "composed uses %zu bytes at T=%d", c1, T);
    ck_assert_msg(c2 > c1 * 35 / 10, "composed: %zu bytes at T=%d, %zu at T=%d", c1, T, c2, 2 * T);
}
END_TEST

/* ---- the f32 kernels against the f64 reference -------------------------------- */

/* The same inputs, f32 values, through the f32 kernels (blocks, online
 * softmax, the gemm's micro-kernel, the AVX2 row kernels where the CPU
 * has them) and through the f64 reference (ops/attention.c, a row at a
 * time), forward and backward. Each f32 result must lie within a first-
 * order bound on f32 rounding, element by element, computed from the
 * data as in test_sgemm (u = 2^-24; the f64 reference's own error, some
 * 1e-16 relative, is far below it):
 *
 *   scores   eS_ij = (dh + 1) u a sum_d |Q_id K_jd| + 2u |S_ij|   (a dh-term
 *            sum; the scale and the product rounded)
 *   P        relative error eP_ij = eS_ij + max_j eS_ij (the row maximum
 *            is a rounded score) + u (|S_ij - m_i| + max_j |S_ij - m_i|)
 *            (the argument's and the rescales' subtractions) + 6u (nb + 1)
 *            (exp within a few ulps, once per key block with its rescale)
 *   l        relative error el_i = max_j eP_ij + (n + 2 nb) u   (n visible keys)
 *   O_id     (max_j eP_ij + el_i + (n + 2 nb + 3) u) sum_j P_ij |V_jd|
 *
 * backward, with L = m + log l, P = exp(S - L), dP = dO V^T, D = dO . O:
 *
 *   eL_i     max_j eS_ij + el_i + 2u |log l_i| + u |L_i|
 *   P        relative eP'_ij = eS_ij + eL_i + u |S_ij - L_i| + 6u
 *   dP, D    (dh + 1) u sum_d |dO_id V_jd|;  (dh + 1) u sum_d |dO_id O_id|
 *            + sum_d |dO_id| (the bound on O_id)
 *   dS_ij    P_ij (eP'_ij |dP_ij - D_i| + e(dP_ij) + e(D_i) + 2u |dP_ij - D_i|)
 *   dQ_id    a sum_j (e(dS_ij) + (n + 2 nb + 3) u |dS_ij|) |K_jd|
 *   dK_jd    a sum_i (e(dS_ij) + (Tq + 2 nbq + 3) u |dS_ij|) |Q_id|
 *   dV_jd    sum_i P_ij (eP'_ij + (Tq + 2 nbq + 3) u) |dO_id|
 *
 * nb and nbq are the numbers of key and query blocks; each block's product
 * adds into what the ones before left (one more rounding each). A key
 * dropped or counted twice, a wrong visibility edge or a stale running
 * maximum moves a result by about P |V|, some 1e4 times these bounds. */

static const int REF_DH[] = {1, 3, 7, 8, 9, 16, 17, 32}, REF_T[] = {1, 5, 23, 24, 25, 49, 100};
enum { N_REF_DH = sizeof REF_DH / sizeof REF_DH[0], N_REF_T = sizeof REF_T / sizeof REF_T[0] };

typedef struct ref_case {
    int B, Tq, Tk, H, dh, q_pos, bq, bk; /* bq, bk 0: the default blocks */
    bool causal, qkv; /* qkv: one (B,T,3C) input (tg_attention_qkv) */
    bool need[3]; /* q, k, v require grad */
} ref_case;

/* Case n: head size REF_DH[n / N_REF_T], queries REF_T[n % N_REF_T]; heads,
 * batch, visibility, keys, blocks and the inputs needing a gradient vary
 * with n. */
static ref_case ref_case_of(int n)
{
    static const int blocks[][2] = {{0, 0}, {5, 7}, {7, 16}, {3, 1}};
    const int T = REF_T[n % N_REF_T];
    ref_case c = {.B = 1 + n / 2 % 2,
                  .Tq = T,
                  .Tk = T,
                  .H = 1 + n % 3,
                  .dh = REF_DH[n / N_REF_T],
                  .bq = blocks[n / 3 % 4][0],
                  .bk = blocks[n / 3 % 4][1],
                  .causal = n % 4 != 1,
                  .need = {true, true, true}};
    switch (n % 5) {
    case 0: c.qkv = true; break; /* self-attention on one qkv */
    case 1: c.Tk = T + 7, c.q_pos = c.causal ? 7 : 0; break; /* a KV cache: 7 keys before */
    case 2: c.Tk = 2 * T + 3; break; /* more keys (causal: top-left) */
    case 3: c.Tk = T > 4 ? T - 4 : T, c.q_pos = c.causal ? 2 : 0; break; /* fewer keys */
    default: c.q_pos = c.causal ? 3 : 0;
    }
    if (!c.qkv && n % 7 == 3) c.need[n % 3] = false;
    return c;
}

/* The bounds above for one call: bo like o (B,Tq,C); bq, bk, bv, zeroed by
 * the caller, laid out like q, k, v (rows ldq, ldk apart: one buffer for a
 * qkv input). q, k, v, o, dO are the f64 run's. */
static void f32_bounds(const ref_case *c, int nbq, int nbk, const double *q, const double *k, const double *v, int ldq,
                       int ldk, const double *o, const double *dO, double *bo, double *bq, double *bk, double *bv)
{
    const double u = 0x1p-24, a = 1 / sqrt((double)c->dh);
    const int dh = c->dh, C = c->H * dh, Tq = c->Tq, Tk = c->Tk;
    const double nbu = (Tq + 2 * nbq + 3) * u;
    double *w = malloc(sizeof(double) * 4 * Tk), *S = w, *eS = w + Tk, *P = w + 2 * Tk, *dS = w + 3 * Tk;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++)
            for (int i = 0; i < Tq; i++) {
                const int64_t oq = ((int64_t)b * Tq + i) * ldq + h * dh, oo = ((int64_t)b * Tq + i) * C + h * dh;
                const int n = !c->causal ? Tk : c->q_pos + i + 1 < Tk ? c->q_pos + i + 1 : Tk;
                double m = -INFINITY, em = 0, l = 0, R = 0, eP = 0;
                for (int j = 0; j < n; j++) {
                    const double *kj = k + ((int64_t)b * Tk + j) * ldk + h * dh;
                    double s = 0, sa = 0;
                    for (int d = 0; d < dh; d++) s += q[oq + d] * kj[d], sa += fabs(q[oq + d] * kj[d]);
                    S[j] = a * s, eS[j] = (dh + 1) * u * a * sa + 2 * u * fabs(S[j]);
                    m = fmax(m, S[j]), em = fmax(em, eS[j]);
                }
                for (int j = 0; j < n; j++) l += exp(S[j] - m), R = fmax(R, m - S[j]);
                for (int j = 0; j < n; j++)
                    P[j] = exp(S[j] - m) / l, eP = fmax(eP, eS[j] + em + u * (m - S[j] + R) + 6 * u * (nbk + 1));
                const double el = eP + (n + 2 * nbk) * u, L = m + log(l);
                const double eL = em + el + 2 * u * fabs(log(l)) + u * fabs(L);
                double D = 0, eD = 0;
                for (int d = 0; d < dh; d++) {
                    double sv = 0;
                    for (int j = 0; j < n; j++) sv += P[j] * fabs(v[((int64_t)b * Tk + j) * ldk + h * dh + d]);
                    bo[oo + d] = (eP + el + (n + 2 * nbk + 3) * u) * sv;
                    D += dO[oo + d] * o[oo + d];
                    eD += (dh + 1) * u * fabs(dO[oo + d] * o[oo + d]) + fabs(dO[oo + d]) * bo[oo + d];
                }
                for (int j = 0; j < n; j++) {
                    const double *vj = v + ((int64_t)b * Tk + j) * ldk + h * dh;
                    const int64_t ok = ((int64_t)b * Tk + j) * ldk + h * dh;
                    double dp = 0, edp = 0;
                    for (int d = 0; d < dh; d++) dp += dO[oo + d] * vj[d], edp += fabs(dO[oo + d] * vj[d]);
                    const double ePj = eS[j] + eL + u * fabs(S[j] - L) + 6 * u, g = dp - D;
                    dS[j] = P[j] * g;
                    const double edS = P[j] * (ePj * fabs(g) + (dh + 1) * u * edp + eD + 2 * u * fabs(g));
                    for (int d = 0; d < dh; d++) {
                        bq[oq + d] += a * (edS + (n + 2 * nbk + 3) * u * fabs(dS[j])) * fabs(k[ok + d]);
                        bk[ok + d] += a * (edS + nbu * fabs(dS[j])) * fabs(q[oq + d]);
                        bv[ok + d] += P[j] * (ePj + nbu) * fabs(dO[oo + d]);
                    }
                }
            }
    free(w);
}

/* |got - want| <= bound for n elements (f32 got, f64 want); returns the
 * worst ratio, or fails naming the element */
static double check_bound(const char *what, int n_case, const float *got, const double *want, const double *bound,
                          int64_t n)
{
    double worst = 0;
    for (int64_t e = 0; e < n; e++) {
        const double err = fabs(got[e] - want[e]);
        if (!(err <= bound[e]))
            ck_abort_msg("case %d %s[%lld] = %.9g, f64 %.17g: off by %.3g, bound %.3g", n_case, what, (long long)e,
                         got[e], want[e], err, bound[e]);
        if (bound[e] > 0) worst = fmax(worst, err / bound[e]);
    }
    return worst;
}

static double ref_worst; /* the worst ratio to its bound, printed at the end */

START_TEST(f32_matches_f64_reference)
{
    const ref_case c = ref_case_of(_i);
    tg_attention_set_blocks(c.bq, c.bk);
    int bq, bk;
    tg_attention_get_blocks(&bq, &bk);
    const int nbq = (c.Tq + bq - 1) / bq, nbk = (c.Tk + bk - 1) / bk, C = c.H * c.dh, n_in = c.qkv ? 1 : 3;
    const int ldq = c.qkv ? 3 * C : C, ldk = ldq;
    tg_graph *g = tg_graph_new();
    tg_tensor *x[2][3], *o[2];
    for (int i = 0; i < n_in; i++) { /* f32 leaves, and f64 leaves holding the same values */
        const int T = i == 0 ? c.Tq : c.Tk;
        x[0][i] = c.qkv ? randn_dt(g, TG_F32, TT_SHAPE(c.B, c.Tq, 3 * C), 900 + _i)
                        : randn_dt(g, TG_F32, TT_SHAPE(c.B, T, C), 900 + 3 * _i + i);
        x[1][i] = tg_tensor_new(g, TG_F64, 3, x[0][i]->shape);
        for (int64_t e = 0; e < x[0][i]->numel; e++) ((double *)x[1][i]->data)[e] = ((float *)x[0][i]->data)[e];
        for (int p = 0; p < 2; p++) ck_assert_int_eq(tg_tensor_set_requires_grad(g, x[p][i], c.need[i]), 0);
    }
    tg_tensor *dO = randn_dt(g, TG_F32, TT_SHAPE(c.B, c.Tq, C), 950 + _i);
    double *dO64 = malloc(sizeof(double) * dO->numel);
    for (int64_t e = 0; e < dO->numel; e++) dO64[e] = ((float *)dO->data)[e];
    for (int p = 0; p < 2; p++) {
        o[p] = c.qkv ? tg_attention_qkv(g, x[p][0], c.H, 0, c.causal ? TG_ATTN_CAUSAL : 0)
                     : tg_attention(g, x[p][0], x[p][1], x[p][2], c.H, c.causal ? TG_ATTN_CAUSAL : 0, c.q_pos);
        ck_assert_msg(o[p] != NULL, "case %d: %s", _i, tg_graph_error(g));
        ck_assert_int_eq(tg_graph_backward_seeded(g, o[p], p ? (void *)dO64 : dO->data), 0);
    }
    /* the bounds, from the f64 run's inputs and output */
    const double *q = x[1][0]->data, *k = c.qkv ? q + C : x[1][1]->data, *v = c.qkv ? q + 2 * C : x[1][2]->data;
    double *bo = calloc((size_t)o[1]->numel, sizeof(double)), *bx[3];
    for (int i = 0; i < n_in; i++) bx[i] = calloc((size_t)x[1][i]->numel, sizeof(double));
    double *bqp = bx[0], *bkp = c.qkv ? bx[0] + C : bx[1], *bvp = c.qkv ? bx[0] + 2 * C : bx[2];
    f32_bounds(&c, nbq, nbk, q, k, v, ldq, ldk, o[1]->data, dO64, bo, bqp, bkp, bvp);
    double worst = check_bound("o", _i, o[0]->data, o[1]->data, bo, o[1]->numel);
    static const char *const names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < n_in; i++) {
        if (!c.need[i]) { /* the f32 leaf got a gradient from randn_dt: the op must leave it 0 */
            ck_assert_ptr_null(x[1][i]->grad);
            for (int64_t e = 0; e < x[0][i]->numel; e++) ck_assert(((float *)x[0][i]->grad)[e] == 0);
            continue;
        }
        worst = fmax(worst,
                     check_bound(c.qkv ? "d qkv" : names[i], _i, x[0][i]->grad, x[1][i]->grad, bx[i], x[1][i]->numel));
    }
    ref_worst = fmax(ref_worst, worst);
    if (_i == N_REF_DH * N_REF_T - 1)
        printf("f32 kernels against the f64 reference: %d cases, worst error %.3g of its bound\n", N_REF_DH * N_REF_T,
               ref_worst);
    for (int i = 0; i < n_in; i++) free(bx[i]);
    free(bo), free(dO64);
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* ---- errors -------------------------------------------------------------------- */

static void expect_fail(tg_graph *g, tg_tensor *y, const char *needle, const char *needle2)
{
    ck_assert_ptr_null(y);
    tt_assert_error(g, needle);
    if (needle2) tt_assert_error(g, needle2);
    tg_graph_clear_error(g);
}

/* ---- one qkv tensor (tg_attention_qkv) ---------------------------------------- */

typedef struct {
    int H, flags;
} qkv_ctx;

static tg_tensor *qkv_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const qkv_ctx *c = ctx;
    return tg_attention_qkv(g, in[0], c->H, 0, c->flags);
}

/* the same through a split into three (B,T,C) tensors and tg_attention */
static tg_tensor *split_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const qkv_ctx *c = ctx;
    tg_tensor *p[3];
    const int C = in[0]->shape[2] / 3;
    if (tg_split(g, in[0], 2, 3, (int[]){C, C, C}, p) != 0) return NULL;
    return tg_attention(g, p[0], p[1], p[2], c->H, c->flags, 0);
}

/* Self-attention cases: B, T, C, H, causal, blocks (0: default). */
static const int QKV_CASES[][7] = {
    {2, 7, 6, 2, 1, 2, 3}, {1, 7, 3, 1, 1, 5, 4},   {3, 5, 9, 3, 0, 2, 3},
    {2, 1, 4, 2, 1, 0, 0}, {1, 150, 4, 2, 1, 0, 0}, {2, 9, 8, 4, 0, 4, 5},
};

START_TEST(qkv_gradcheck)
{
    const int *c = QKV_CASES[_i];
    tg_attention_set_blocks(c[5], c[6]);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(c[0], c[1], 3 * c[2]), 50 + (uint64_t)_i);
    qkv_ctx ctx = {c[3], c[4] ? TG_ATTN_CAUSAL : 0};
    tt_assert_gradcheck(qkv_fn, &ctx, 1, &x);
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* Output and d qkv equal the split path's in f64 and f32, with dO random
 * and d qkv already holding a gradient (everything adds). */
START_TEST(qkv_equals_split)
{
    const int *c = QKV_CASES[_i / 2];
    const tg_dtype dt = _i % 2 ? TG_F32 : TG_F64;
    const double tol = dt == TG_F32 ? 1e-6 : 1e-13;
    tg_attention_set_blocks(c[5], c[6]);
    qkv_ctx ctx = {c[3], c[4] ? TG_ATTN_CAUSAL : 0};
    void *out[2] = {0}, *grad[2] = {0};
    int64_t n_out = 0, n_in = 0;
    for (int path = 0; path < 2; path++) {
        tg_graph *g = tg_graph_new();
        tg_tensor *x = randn_dt(g, dt, TT_SHAPE(c[0], c[1], 3 * c[2]), 60 + (uint64_t)_i);
        tg_tensor *u = tg_scale(g, x, 1.0); /* an intermediate: its gradient starts empty */
        tg_tensor *y = path ? split_fn(g, &u, &ctx) : qkv_fn(g, &u, &ctx);
        tg_tensor *dy = randn_dt(g, dt, y->ndim, y->shape, 70);
        tg_tensor *f = tg_add(g, tg_sum_all(g, tg_mul(g, y, dy)), tg_sum_all(g, tg_mul(g, u, u)));
        ck_assert_msg(f && tg_graph_backward(g, f) == 0, "%s", tg_graph_error(g));
        const size_t es = tg_dtype_size(dt);
        n_out = y->numel, n_in = x->numel;
        out[path] = malloc((size_t)n_out * es), grad[path] = malloc((size_t)n_in * es);
        memcpy(out[path], y->data, (size_t)n_out * es);
        memcpy(grad[path], x->grad, (size_t)n_in * es);
        tg_graph_free(g);
    }
    const double eo = max_abs_diff(dt, out[0], dt, out[1], n_out), eg = max_abs_diff(dt, grad[0], dt, grad[1], n_in);
    ck_assert_msg(eo <= tol && eg <= tol, "case %d %s: output differs by %g, d qkv by %g", _i / 2, tg_dtype_name(dt),
                  eo, eg);
    for (int p = 0; p < 2; p++) free(out[p]), free(grad[p]);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* ---- grouped-query attention: k, v with fewer heads ----------------------- */

typedef struct gqa_case {
    int B, Tq, Tk, H, Hkv, dh;
    bool causal;
    int q_pos, bq, bk;
} gqa_case;

static const gqa_case GQA_CASES[] = {
    {2, 7, 7, 4, 2, 3, true, 0, 2, 3}, /* groups of 2, blocks crossed */
    {1, 5, 9, 6, 1, 2, false, 0, 2, 4}, /* multi-query: one kv head for 6 */
    {2, 3, 8, 6, 3, 4, true, 5, 0, 0}, /* KV-cache offset, default blocks */
    {3, 30, 30, 8, 2, 16, true, 0, 0, 0}, /* groups of 4, dh on the vector width */
    {1, 25, 25, 4, 4, 5, true, 0, 7, 16}, /* Hkv = H: multi-head attention */
};
enum { N_GQA = sizeof GQA_CASES / sizeof GQA_CASES[0] };

/* forward against the loops (f64 and f32), and gradcheck in f64: a kv
 * head's gradients collect its G query heads' terms */
START_TEST(gqa_matches_loops_and_gradchecks)
{
    const gqa_case *c = &GQA_CASES[_i];
    tg_attention_set_blocks(c->bq, c->bk);
    tg_graph *g = tg_graph_new();
    for (int dt = 0; dt < 2; dt++) {
        const tg_dtype d = dt ? TG_F32 : TG_F64;
        tg_tensor *in[3] = {randn_dt(g, d, TT_SHAPE(c->B, c->Tq, c->H * c->dh), 1),
                            randn_dt(g, d, TT_SHAPE(c->B, c->Tk, c->Hkv * c->dh), 2),
                            randn_dt(g, d, TT_SHAPE(c->B, c->Tk, c->Hkv * c->dh), 3)};
        attn_ctx ctx = {c->H, c->causal ? TG_ATTN_CAUSAL : 0, c->q_pos};
        tg_tensor *o = attn_fn(g, in, &ctx);
        ck_assert_msg(o != NULL, "%s", tg_graph_error(g));
        double *want = malloc(sizeof(double) * (size_t)o->numel);
        naive_attention_gqa(in[0], in[1], in[2], c->H, c->causal, c->q_pos, want);
        const double err = max_abs_diff(d, o->data, TG_F64, want, o->numel);
        ck_assert_msg(err <= (dt ? 2e-6 : 1e-13), "gqa case %d %s: max |o - loops| %g", _i, dt ? "f32" : "f64", err);
        free(want);
        if (!dt) tt_assert_gradcheck(attn_fn, &ctx, 3, in);
    }
    tg_graph_free(g);
    tg_attention_set_blocks(0, 0);
}
END_TEST

/* GQA is MHA whose kv heads repeat each group's head: the same output, and
 * the repeats' gradients sum to the grouped one (f64); and one qkv
 * (B,T,C + 2 Ckv) gives the bits of q, k, v apart; and 1 and 2 threads
 * give the same bits (the backward's parts hold whole groups) */
START_TEST(gqa_equals_repeated_heads_and_threads)
{
    /* one group of 8 query heads over 8 pairs: 2 threads would cut it in two */
    const int B = 1, T = 48, H = 8, Hkv = 1, dh = 8, C = H * dh, Ckv = Hkv * dh, G = H / Hkv;
    tg_graph *g = tg_graph_new();
    tg_tensor *q = tt_randn(g, TT_SHAPE(B, T, C), 1), *k = tt_randn(g, TT_SHAPE(B, T, Ckv), 2);
    tg_tensor *v = tt_randn(g, TT_SHAPE(B, T, Ckv), 3);
    tg_tensor *kr = tg_tensor_new(g, TG_F64, 3, (int[]){B, T, C}), *vr = tg_tensor_new(g, TG_F64, 3, (int[]){B, T, C});
    for (int r = 0; r < B * T; r++)
        for (int h = 0; h < H; h++)
            for (int e = 0; e < dh; e++) {
                ((double *)kr->data)[r * C + h * dh + e] = ((double *)k->data)[r * Ckv + h / G * dh + e];
                ((double *)vr->data)[r * C + h * dh + e] = ((double *)v->data)[r * Ckv + h / G * dh + e];
            }
    tg_tensor_set_requires_grad(g, kr, true);
    tg_tensor_set_requires_grad(g, vr, true);
    tg_tensor *o1 = tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0),
              *o2 = tg_attention(g, q, kr, vr, H, TG_ATTN_CAUSAL, 0);
    ck_assert_msg(o1 && o2, "%s", tg_graph_error(g));
    ck_assert_double_le(max_abs_diff(TG_F64, o1->data, TG_F64, o2->data, o1->numel), 1e-15);
    ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_add(g, o1, o2))), 0);
    for (int r = 0; r < B * T; r++)
        for (int kh = 0; kh < Hkv; kh++)
            for (int e = 0; e < dh; e++) {
                double sk = 0, sv = 0;
                for (int rep = 0; rep < G; rep++) {
                    sk += ((double *)kr->grad)[r * C + (kh * G + rep) * dh + e];
                    sv += ((double *)vr->grad)[r * C + (kh * G + rep) * dh + e];
                }
                ck_assert_double_eq_tol(((double *)k->grad)[r * Ckv + kh * dh + e], sk, 1e-13);
                ck_assert_double_eq_tol(((double *)v->grad)[r * Ckv + kh * dh + e], sv, 1e-13);
            }
    /* one qkv against q, k, v apart; f32, 1 and 2 threads */
    float out[2][2][B * T * C], grad[2][2][B * T * (C + 2 * Ckv)];
    for (int th = 1; th <= 2; th++) {
        tg_set_num_threads(th);
        for (int fused = 0; fused < 2; fused++) {
            tg_graph *h = tg_graph_new();
            tg_tensor *x = randn_dt(h, TG_F32, TT_SHAPE(B, T, C + 2 * Ckv), 7); /* q | k | v */
            tg_tensor *o;
            if (fused) {
                o = tg_attention_qkv(h, x, H, Hkv, TG_ATTN_CAUSAL);
            } else {
                tg_tensor *parts[3];
                tg_split(h, x, 2, 3, (int[]){C, Ckv, Ckv}, parts);
                o = tg_attention(h, parts[0], parts[1], parts[2], H, TG_ATTN_CAUSAL, 0);
            }
            ck_assert_msg(o != NULL, "%s", tg_graph_error(h));
            ck_assert_int_eq(tg_graph_backward(h, tg_sum_all(h, tg_mul(h, o, o))), 0);
            memcpy(out[th - 1][fused], o->data, sizeof out[0][0]);
            memcpy(grad[th - 1][fused], x->grad, sizeof grad[0][0]);
            tg_graph_free(h);
        }
    }
    tg_set_num_threads(1);
    ck_assert_mem_eq(out[0][0], out[0][1], sizeof out[0][0]); /* qkv in place = apart */
    ck_assert_mem_eq(grad[0][0], grad[0][1], sizeof grad[0][0]);
    ck_assert_mem_eq(out[0][1], out[1][1], sizeof out[0][0]); /* 1 thread = 2 threads */
    ck_assert_mem_eq(grad[0][1], grad[1][1], sizeof grad[0][0]);
    tg_graph_free(g);
}
END_TEST

START_TEST(qkv_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 18), 1);
    ck_assert_ptr_nonnull(tg_attention_qkv(g, x, 3, 0, TG_ATTN_CAUSAL));
    expect_fail(
        g, tg_attention_qkv(g, tt_randn(g, TT_SHAPE(2, 3, 10), 2), 1, 0, 0),
        "attention: qkv must be 3-D (B,T,C + 2 Ckv), q, k and v side by side (3 heads of one size), got f64 (2,3,10)",
        NULL);
    expect_fail(g, tg_attention_qkv(g, tt_randn(g, TT_SHAPE(6, 18), 3), 1, 0, 0), "must be 3-D (B,T,C + 2 Ckv)",
                "got f64 (6,18)");
    expect_fail(g, tg_attention_qkv(g, x, 4, 0, 0), "(12 heads of one size), got f64 (2,3,18)", NULL);
    expect_fail(g, tg_attention_qkv(g, x, 4, 3, 0),
                "attention: n_kv_head = 3 must divide n_head = 4 (qkv f64 (2,3,18))", NULL);
    expect_fail(g, tg_attention_qkv(g, x, 3, 0, 2), "attention: unknown flags 0x2 (qkv f64 (2,3,18))", NULL);
    expect_fail(g, tg_attention_qkv(g, tg_tensor_new(g, TG_I32, 3, (int[]){2, 3, 18}), 3, 0, 0),
                "attention: qkv must be f32 or f64, got i32 (2,3,18)", NULL);
    expect_fail(g, tg_attention_qkv(g, NULL, 3, 0, 0), "attention: input 0 is NULL", NULL);
    /* a NaN score names the element and the qkv tensor */
    ((double *)x->data)[3 * 18 + 6 + 1] = NAN; /* batch row 1, token 0, k column 1 (head 0) */
    expect_fail(g, tg_attention_qkv(g, x, 3, 0, TG_ATTN_CAUSAL),
                "score of query 0 and key 0 in batch row 1, head 0 is NaN or +inf", "qkv f64 (2,3,18)");
    tg_graph_free(g);
}
END_TEST

START_TEST(attention_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *q = tt_randn(g, TT_SHAPE(2, 3, 6), 1), *k = tt_randn(g, TT_SHAPE(2, 5, 6), 2);
    tg_tensor *v = tt_randn(g, TT_SHAPE(2, 5, 6), 3);
    tg_tensor *q32 = tg_tensor_new(g, TG_F32, 3, (int[]){2, 3, 6});
    tg_tensor *ids = tg_tensor_new(g, TG_I32, 3, (int[]){2, 3, 6});
    ck_assert_ptr_nonnull(tg_attention(g, q, k, v, 3, 0, 0));

    expect_fail(g, tg_attention(g, q32, k, v, 3, 0, 0),
                "attention: q, k and v must share one dtype, f32 or f64: q f32 (2,3,6), k f64 (2,5,6), v f64 (2,5,6)",
                NULL);
    expect_fail(g, tg_attention(g, ids, ids, ids, 3, 0, 0), "must share one dtype, f32 or f64: q i32 (2,3,6)", NULL);
    expect_fail(g, tg_attention(g, tg_reshape(g, q, 2, (int[]){6, 6}), k, v, 3, 0, 0),
                "must be 3-D, q (B,Tq,C) and k, v (B,Tk,C): q f64 (6,6), k f64 (2,5,6)", NULL);
    expect_fail(g, tg_attention(g, q, tt_randn(g, TT_SHAPE(2, 4, 6), 4), v, 3, 0, 0),
                "k and v must both be (B,Tk,Ckv) with q's B: q f64 (2,3,6), k f64 (2,4,6), v f64 (2,5,6)", NULL);
    expect_fail(g, tg_attention(g, q, tt_randn(g, TT_SHAPE(1, 5, 6), 5), tt_randn(g, TT_SHAPE(1, 5, 6), 6), 3, 0, 0),
                "with q's B: q f64 (2,3,6), k f64 (1,5,6)", NULL);
    expect_fail(g, tg_attention(g, q, tt_randn(g, TT_SHAPE(2, 5, 4), 7), tt_randn(g, TT_SHAPE(2, 5, 4), 8), 2, 0, 0),
                "k and v must have a number of heads of size 3 dividing n_head = 2: q f64 (2,3,6), k f64 (2,5,4)",
                NULL);
    expect_fail(g, tg_attention(g, q, k, v, 4, 0, 0), "attention: C = 6 is not divisible by n_head = 4 (q f64 (2,3,6))",
                NULL);
    expect_fail(g, tg_attention(g, q, k, v, 0, 0, 0), "not divisible by n_head = 0", NULL);
    expect_fail(g, tg_attention(g, q, k, v, 3, 6, 0), "attention: unknown flags 0x6 (q f64 (2,3,6))", NULL);
    expect_fail(g, tg_attention(g, NULL, k, v, 3, 0, 0), "attention: input 0 is NULL", NULL);
    expect_fail(g, tg_attention(g, q, k, NULL, 3, 0, 0), "attention: input 2 is NULL", NULL);

    /* a query row with no visible key: causal with q_pos -2 puts rows 0, 1 before key 0 */
    expect_fail(g, tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, -2),
                "attention: query row 0 (batch row 0, head 0) sees no key: causal with q_pos -2 puts it at position -2",
                "q f64 (2,3,6), k f64 (2,5,6)");
    /* with q_pos -1 only row 0 sees nothing, also with one-row blocks */
    tg_attention_set_blocks(1, 2);
    expect_fail(g, tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, -1), "query row 0 (batch row 0, head 0) sees no key",
                NULL);
    ck_assert_ptr_nonnull(tg_attention(g, q, k, v, 3, 0, -1)); /* q_pos unused without the flag */
    tg_attention_set_blocks(0, 0);
    tg_graph_free(g);
}
END_TEST

/* NaN and +inf scores are errors naming the element, in both dtypes; a
 * row whose visible scores are all -inf names the row. */
START_TEST(bad_score_errors)
{
    for (int dt = 0; dt < 2; dt++) {
        const tg_dtype type = dt ? TG_F32 : TG_F64;
        const double huge = dt ? 1e30 : 1e200;
        tg_attention_set_blocks(2, 2);
        tg_graph *g = tg_graph_new();
        const int B = 2, Tq = 4, Tk = 5, C = 4, H = 2;
        tg_tensor *q = randn_dt(g, type, TT_SHAPE(B, Tq, C), 1), *k = randn_dt(g, type, TT_SHAPE(B, Tk, C), 2);
        tg_tensor *v = randn_dt(g, type, TT_SHAPE(B, Tk, C), 3);
#define SET(t, i, x)                                                                                                   \
    ((t)->dtype == TG_F32 ? (void)(((float *)(t)->data)[i] = (float)(x)) : (void)(((double *)(t)->data)[i] = (x)))
        /* NaN in q at batch row 1, query 2, head 1 (column 3) */
        SET(q, (1 * Tq + 2) * C + 3, NAN);
        expect_fail(g, tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0),
                    "attention: score of query 2 and key 0 in batch row 1, head 1 is NaN or +inf", "q ");
        SET(q, (1 * Tq + 2) * C + 3, 0.5);
        /* +inf: key 3 of batch row 0, head 0, against query 3 (which sees it) */
        SET(q, (0 * Tq + 3) * C + 1, huge);
        SET(k, (0 * Tk + 3) * C + 1, huge);
        expect_fail(g, tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0),
                    "attention: score of query 3 and key 3 in batch row 0, head 0 is NaN or +inf", NULL);
        /* a key no query sees may hold anything: key 4 with causal q_pos 0 */
        SET(k, (0 * Tk + 3) * C + 1, 0.5);
        SET(k, (0 * Tk + 4) * C + 1, NAN);
        ck_assert_msg(tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0) != NULL, "%s", tg_graph_error(g));
        SET(k, (0 * Tk + 4) * C + 1, 0.5);
        /* every visible score of query 1 in batch row 0, head 0 is -inf */
        for (int j = 0; j < Tk; j++) SET(k, (0 * Tk + j) * C + 1, j <= 1 ? -huge : 0.0);
        for (int i = 0; i < Tq; i++) SET(q, (0 * Tq + i) * C + 1, i == 1 ? huge : 0.0);
        SET(q, (0 * Tq + 1) * C + 0, 0.0);
        SET(k, (0 * Tk + 0) * C + 0, 0.0);
        SET(k, (0 * Tk + 1) * C + 0, 0.0);
        expect_fail(g, tg_attention(g, q, k, v, H, TG_ATTN_CAUSAL, 0),
                    "attention: query row 1 (batch row 0, head 0) has every visible score -inf", NULL);
#undef SET
        tg_graph_free(g);
    }
    tg_attention_set_blocks(0, 0);
}
END_TEST

int main(void)
{
    const int n_qkv = (int)(sizeof QKV_CASES / sizeof QKV_CASES[0]);
    return tt_main("ops_attention", "attention", 120,
                   TT_TESTS(forward_matches_loops, forward_stable_with_large_scores, gradcheck_cases,
                            gradcheck_shared_inputs, gradient_of_some_inputs, gradients_accumulate, equals_composed_f64,
                            equals_composed_f32, minus_inf_score_gets_zero_weight, memory_linear_in_T, attention_errors,
                            bad_score_errors, TT_LOOP(qkv_gradcheck, n_qkv), TT_LOOP(qkv_equals_split, 2 * n_qkv),
                            qkv_errors, TT_LOOP(gqa_matches_loops_and_gradchecks, N_GQA),
                            gqa_equals_repeated_heads_and_threads,
                            TT_LOOP(f32_matches_f64_reference, N_REF_DH * N_REF_T)));
}
