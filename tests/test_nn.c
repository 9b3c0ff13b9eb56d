/* nn: Linear, LayerNorm, MLP, multi-head attention (masks, cross-attention,
 * KV cache), GPT (names, init, gradients, incremental decoding). */
#include "tg_test.h"

/* ---- helpers --------------------------------------------------------- */

/* Fills every parameter of a store from a seeded normal(0, scale); 1-D
 * parameters named *ln*.weight get 1 + that, so LayerNorm scales sit near 1. */
static void fill_params(tg_params *p, uint64_t seed, double scale)
{
    tg_rng r;
    tg_rng_seed(&r, seed, 11);
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *t = tg_params_at(p, i);
        bool ln_w = t->ndim == 1 && strstr(t->name, "ln") && strstr(t->name, ".weight");
        tg_rng_fill_normal(&r, t, ln_w ? 1.0 : 0.0, scale);
    }
}

static double *dptr(const tg_tensor *t) { return t ? (double *)t->data : NULL; }

/* An i32 tensor from values */
static tg_tensor *ids(tg_graph *g, int B, int T, const int32_t *v)
{
    return tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, v);
}

/* ---- the reference: multi-head attention written as loops ------------
 *
 * Head h owns channels [h*dh, (h+1)*dh) of Q, K, V (that is what reshape
 * (B,T,H,dh) then transpose means). blocked is (B,H,Tq,Tk), 1 = blocked. */
typedef struct ref_mha {
    int B, Tq, Tk, C, H;
    const double *x, *kv; /* (B,Tq,C), (B,Tk,C) */
    const double *wq, *wk, *wv, *wo; /* (C,C) each, nn.Linear layout */
    const double *bq, *bk, *bv, *bo; /* (C) each or NULL */
    const uint8_t *blocked; /* (B,H,Tq,Tk) or NULL */
} ref_mha;

static void ref_proj(int rows, int C, const double *x, const double *w, const double *b, double *y)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < C; o++) {
            double acc = b ? b[o] : 0;
            for (int i = 0; i < C; i++) acc += x[r * C + i] * w[o * C + i];
            y[r * C + o] = acc;
        }
}

/* y (B,Tq,C); A (B,H,Tq,Tk) may be NULL */
static void ref_mha_run(const ref_mha *r, double *y, double *A)
{
    const int B = r->B, Tq = r->Tq, Tk = r->Tk, C = r->C, H = r->H, dh = C / H;
    double *Q = malloc(sizeof(double) * B * Tq * C), *K = malloc(sizeof(double) * B * Tk * C);
    double *V = malloc(sizeof(double) * B * Tk * C), *O = calloc((size_t)B * Tq * C, sizeof(double));
    double *s = malloc(sizeof(double) * Tk);
    ref_proj(B * Tq, C, r->x, r->wq, r->bq, Q);
    ref_proj(B * Tk, C, r->kv, r->wk, r->bk, K);
    ref_proj(B * Tk, C, r->kv, r->wv, r->bv, V);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < Tk; j++) {
                    double d = 0;
                    for (int c = h * dh; c < (h + 1) * dh; c++) d += Q[(b * Tq + i) * C + c] * K[(b * Tk + j) * C + c];
                    s[j] = d / sqrt(dh);
                    if (r->blocked && r->blocked[((b * H + h) * Tq + i) * Tk + j]) s[j] = -INFINITY;
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j < Tk; j++) sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
                for (int j = 0; j < Tk; j++) {
                    double a = s[j] == -INFINITY ? 0 : exp(s[j] - mx) / sum;
                    if (A) A[((b * H + h) * Tq + i) * Tk + j] = a;
                    for (int c = h * dh; c < (h + 1) * dh; c++) O[(b * Tq + i) * C + c] += a * V[(b * Tk + j) * C + c];
                }
            }
    ref_proj(B * Tq, C, O, r->wo, r->bo, y);
    free(Q), free(K), free(V), free(O), free(s);
}

/* The reference's weights taken from a module's parameters. */
static void ref_from_mha(ref_mha *r, const tg_mha_mod *m)
{
    const int C = m->n_embd;
    if (m->fused) {
        const double *w = dptr(m->c_attn.weight), *b = dptr(m->c_attn.bias);
        r->wq = w, r->wk = w + C * C, r->wv = w + 2 * C * C;
        r->bq = b, r->bk = b ? b + C : NULL, r->bv = b ? b + 2 * C : NULL;
    } else {
        r->wq = dptr(m->q_proj.weight), r->wk = dptr(m->k_proj.weight), r->wv = dptr(m->v_proj.weight);
        r->bq = dptr(m->q_proj.bias), r->bk = dptr(m->k_proj.bias), r->bv = dptr(m->v_proj.bias);
    }
    r->wo = dptr(m->c_proj.weight), r->bo = dptr(m->c_proj.bias);
    r->C = C, r->H = m->n_head;
}

/* An f64 store holding one MHA named "attn", filled with normal(0, 0.5). */
static tg_params *mha_store(tg_mha_mod *m, int C, int H, bool bias, bool fused, uint64_t seed)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_error err = {0};
    ck_assert_msg(
        tg_mha_init(
            m, p, "attn",
            &(tg_mha_config){.n_embd = C, .n_head = H, .layout = fused ? TG_MHA_FUSED : TG_MHA_SEPARATE, .bias = bias},
            &err) == 0,
        "%s", err.msg);
    fill_params(p, seed, 0.5);
    return p;
}

static void assert_close_arr(const tg_tensor *t, const double *want, int64_t n, double tol, const char *what)
{
    ck_assert_int_eq(t->numel, n);
    for (int64_t i = 0; i < n; i++) {
        double a = tg_tensor_get(t, i);
        ck_assert_msg(fabs(a - want[i]) <= tol, "%s: element %lld: %.15g vs %.15g", what, (long long)i, a, want[i]);
    }
}

/* A bool tensor from 0/1 values. */
static tg_tensor *bools(tg_graph *g, int ndim, const int *shape, const uint8_t *v)
{
    return tg_tensor_from(g, TG_BOOL, ndim, shape, v);
}

/* ---- Linear, LayerNorm, MLP ------------------------------------------- */

/* tg_linear_init_uniform starts a Linear as nn.Linear does: weight then bias,
 * uniform in [-1/sqrt(in), 1/sqrt(in)) from the stream in flat order (the
 * same draws by hand here), not at zero (a model left at zero stays at
 * loss log(V): issue 21). */
START_TEST(linear_default_init_is_pytorchs)
{
    for (int d = 0; d < 2; d++) {
        const tg_dtype dt = d ? TG_F32 : TG_F64;
        tg_params *p = tg_params_new(dt, NULL);
        tg_error err = {0};
        tg_linear_mod l;
        tg_rng r, hand;
        tg_rng_seed(&r, 11, 3);
        tg_rng_seed(&hand, 11, 3);
        const int in = 40, out = 30;
        ck_assert_int_eq(tg_linear_init(&l, p, "fc", in, out, true, &err), 0);
        tg_linear_init_uniform(&l, &r);
        const double k = 1 / sqrt(40.0);
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < l.weight->numel + l.bias->numel; i++) {
            const bool w = i < l.weight->numel;
            const double want = -k + 2 * k * tg_rng_uniform(&hand);
            const double got = tg_tensor_get(w ? l.weight : l.bias, w ? i : i - l.weight->numel);
            ck_assert(got == (d ? (double)(float)want : want));
            ck_assert(got >= -k && got <= k);
            sum += got;
            sq += got * got;
        }
        const double n = (double)(in * out + out);
        ck_assert_double_lt(fabs(sum / n), 4 * k / sqrt(3 * n)); /* mean 0 */
        ck_assert_double_lt(fabs(sq / n - k * k / 3), 0.15 * k * k / 3); /* variance k^2/3 */
        ck_assert(r.state == hand.state); /* and the stream has moved by exactly those draws */
        tg_params_free(p);
    }
}
END_TEST

START_TEST(modules_init_and_forward)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_error err = {0};
    tg_linear_mod l;
    tg_layernorm_mod ln;
    tg_mlp_mod mlp;
    ck_assert_int_eq(tg_linear_init(&l, p, "fc", 3, 2, true, &err), 0); /* zeros */
    ck_assert_int_eq(tg_layernorm_init(&ln, p, "ln", 3, true, &err), 0);
    ck_assert_int_eq(tg_mlp_init(&mlp, p, "mlp", 3, 12, NULL, &err), 0);
    const char *names[] = {"fc.weight", "fc.bias", "ln.weight", "ln.bias", "mlp.c_fc.weight", "mlp.c_proj.weight"};
    const int shapes[][2] = {{2, 3}, {2, 0}, {3, 0}, {3, 0}, {12, 3}, {3, 12}};
    ck_assert_int_eq(tg_params_count(p), 6);
    for (int i = 0; i < 6; i++) {
        tg_tensor *t = tg_params_at(p, i);
        ck_assert_str_eq(t->name, names[i]);
        ck_assert_int_eq(t->ndim, shapes[i][1] ? 2 : 1);
        ck_assert_int_eq(t->shape[0], shapes[i][0]);
        if (shapes[i][1]) ck_assert_int_eq(t->shape[1], shapes[i][1]);
        for (int64_t k = 0; k < t->numel; k++) /* linear zero-filled, LayerNorm weight 1 */
            ck_assert_double_eq(tg_tensor_get(t, k), strcmp(names[i], "ln.weight") == 0 ? 1.0 : 0.0);
    }
    ck_assert_double_eq(ln.eps, 1e-5);
    ck_assert_ptr_null(mlp.up.bias);
    ck_assert_ptr_null(mlp.gate.weight);
    /* errors name the module */
    tg_linear_mod l2;
    ck_assert_int_eq(tg_linear_init(&l2, p, "fc", 3, 2, true, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "duplicate name 'fc.weight'"));
    ck_assert_int_eq(tg_linear_init(&l2, p, "fc2", 0, 2, true, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "linear 'fc2': sizes must be >= 1, got in 0, out 2"));
    tg_mlp_mod bad;
    ck_assert_int_eq(tg_mlp_init(&bad, p, "m2", 3, 12, &(tg_mlp_options){.bias = true, .dropout = 1.0}, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "mlp 'm2': dropout must be in [0, 1), got 1"));

    /* MLP by hand: x = [1,-2,0.5], c_fc w[j][i] = (j == i), so h = gelu(x) on
     * the first 3 of 12 (0 elsewhere, gelu(0) = 0); c_proj w[o][j] = (j == o) + 1. */
    fill_params(p, 1, 0.0); /* zeros (LayerNorm weight 1) */
    double *wfc = dptr(mlp.up.weight), *wpr = dptr(mlp.down.weight);
    for (int i = 0; i < 3; i++) wfc[i * 3 + i] = 1;
    for (int o = 0; o < 3; o++)
        for (int j = 0; j < 12; j++) wpr[o * 12 + j] = (j == o) + 1;
    tg_graph *g = tg_graph_new();
    const double xv[] = {1, -2, 0.5};
    tg_tensor *x = tg_tensor_from(g, TG_F64, TT_SHAPE(1, 1, 3), xv);
    tg_tensor *y = tg_mlp_forward(g, &mlp, x);
    ck_assert_ptr_nonnull(y);
    double ge[3], sum = 0;
    for (int i = 0; i < 3; i++) ge[i] = 0.5 * xv[i] * (1 + erf(xv[i] / sqrt(2))), sum += ge[i];
    for (int o = 0; o < 3; o++) ck_assert_double_eq_tol(tg_tensor_get(y, o), sum + ge[o], 1e-14);
    /* the same module with GPT-2's tanh GELU (TG_MLP_GELU_TANH): its own values, not erf's */
    mlp.kind = TG_MLP_GELU_TANH;
    y = tg_mlp_forward(g, &mlp, x);
    ck_assert_ptr_nonnull(y);
    sum = 0;
    for (int i = 0; i < 3; i++)
        ge[i] = 0.5 * xv[i] * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (xv[i] + 0.044715 * xv[i] * xv[i] * xv[i]))),
        sum += ge[i];
    for (int o = 0; o < 3; o++) ck_assert_double_eq_tol(tg_tensor_get(y, o), sum + ge[o], 1e-14);
    ck_assert(fabs(ge[0] - 0.5 * (1 + erf(1 / sqrt(2)))) > 1e-4); /* the two forms differ here (1.5e-4) */
    mlp.kind = TG_MLP_GELU;
    /* LayerNorm with weight 1, bias 0: mean 0 */
    tg_tensor *z = tg_layernorm_forward(g, &ln, x);
    ck_assert_double_eq_tol(tg_tensor_get(z, 0) + tg_tensor_get(z, 1) + tg_tensor_get(z, 2), 0, 1e-14);
    /* Linear: weight (2,3) = [[1,2,3],[4,5,6]], bias [1,-1] */
    for (int i = 0; i < 6; i++) dptr(l.weight)[i] = i + 1;
    dptr(l.bias)[0] = 1, dptr(l.bias)[1] = -1;
    tg_tensor *u = tg_linear_forward(g, &l, x);
    ck_assert_double_eq(tg_tensor_get(u, 0), 1 - 4 + 1.5 + 1);
    ck_assert_double_eq(tg_tensor_get(u, 1), 4 - 10 + 3 - 1);
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* ---- MHA against the loop reference ------------------------------------ */

typedef struct mha_case {
    int B, Tq, Tk, C, H;
    bool bias, fused, cross, causal, padding, mask;
} mha_case;

static const mha_case MHA_CASES[] = {
    /* B Tq Tk C H  bias fused cross causal pad mask */
    {2, 5, 5, 6, 2, true, true, false, true, false, false},
    {2, 5, 5, 6, 3, false, false, false, true, true, true},
    {2, 4, 4, 6, 2, true, true, false, true, true, true},
    {1, 3, 3, 5, 1, true, true, false, false, false, false}, /* one head, odd C */
    {3, 3, 3, 3, 3, false, true, false, true, false, false}, /* dh = 1 */
    {2, 3, 5, 6, 2, true, true, true, false, true, false}, /* cross, Tk > Tq */
    {2, 4, 2, 6, 3, true, false, true, false, false, true}, /* cross, Tk < Tq */
    {2, 3, 4, 4, 2, false, true, true, false, true, true},
};

/* Builds x, kv, key padding (B,Tk) and a per-head mask (B,H,Tq,Tk) for a
 * case; blocked (B,H,Tq,Tk) gets their OR with causal, written out. No row
 * is fully blocked: key 0 is never padded, and the per-head mask leaves
 * key 0 open (it blocks (i + j + h + b) % 3 == 1 only for j > 0). */
typedef struct mha_inputs {
    tg_tensor *x, *kv, *kp, *mask;
    uint8_t *blocked;
} mha_inputs;

static mha_inputs make_inputs(tg_graph *g, const mha_case *c, uint64_t seed)
{
    mha_inputs in = {0};
    in.x = tt_randn(g, TT_SHAPE(c->B, c->Tq, c->C), seed);
    in.kv = c->cross ? tt_randn(g, TT_SHAPE(c->B, c->Tk, c->C), seed + 1) : NULL;
    const int B = c->B, H = c->H, Tq = c->Tq, Tk = c->Tk;
    uint8_t *kp = calloc((size_t)B * Tk, 1), *mk = calloc((size_t)B * H * Tq * Tk, 1);
    in.blocked = calloc((size_t)B * H * Tq * Tk, 1);
    for (int b = 0; b < B; b++)
        for (int j = 1; j < Tk; j++) kp[b * Tk + j] = (j + b) % 3 == 2;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++)
                for (int j = 0; j < Tk; j++) {
                    const int o = ((b * H + h) * Tq + i) * Tk + j;
                    mk[o] = j > 0 && (i + j + h + b) % 3 == 1;
                    in.blocked[o] = (c->causal && j > i) || (c->padding && kp[b * Tk + j]) || (c->mask && mk[o]);
                }
    if (c->padding) in.kp = bools(g, TT_SHAPE(B, Tk), kp);
    if (c->mask) in.mask = bools(g, TT_SHAPE(B, H, Tq, Tk), mk);
    free(kp), free(mk);
    return in;
}

START_TEST(mha_matches_reference)
{
    for (size_t k = 0; k < sizeof MHA_CASES / sizeof MHA_CASES[0]; k++) {
        const mha_case *c = &MHA_CASES[k];
        tg_mha_mod m;
        tg_params *p = mha_store(&m, c->C, c->H, c->bias, c->fused, 100 + k);
        tg_graph *g = tg_graph_new();
        mha_inputs in = make_inputs(g, c, 200 + 10 * k);
        tg_tensor *A = NULL;
        tg_attn_args args = {.causal = c->causal, .key_padding = in.kp, .mask = in.mask, .weights = &A};
        tg_tensor *y = tg_mha_forward(g, &m, in.x, in.kv, &args);
        ck_assert_msg(y != NULL, "case %zu: %s", k, tg_graph_error(g));
        ck_assert_int_eq(y->ndim, 3);
        ck_assert_int_eq(y->shape[0], c->B);
        ck_assert_int_eq(y->shape[1], c->Tq);
        ck_assert_int_eq(y->shape[2], c->C);
        ck_assert_ptr_nonnull(A);
        ck_assert_int_eq(A->ndim, 4);
        ck_assert_int_eq(A->shape[1], c->H);
        ck_assert_int_eq(A->shape[2], c->Tq);
        ck_assert_int_eq(A->shape[3], c->Tk);

        ref_mha r = {.B = c->B,
                     .Tq = c->Tq,
                     .Tk = c->Tk,
                     .x = dptr(in.x),
                     .kv = dptr(in.kv ? in.kv : in.x),
                     .blocked = in.blocked};
        ref_from_mha(&r, &m);
        double *yr = malloc(sizeof(double) * y->numel), *Ar = malloc(sizeof(double) * A->numel);
        ref_mha_run(&r, yr, Ar);
        assert_close_arr(y, yr, y->numel, 1e-12, "mha output vs loops");
        assert_close_arr(A, Ar, A->numel, 1e-13, "mha weights vs loops");
        /* blocked keys get exactly zero weight */
        for (int64_t i = 0; i < A->numel; i++)
            if (in.blocked[i]) ck_assert_double_eq(tg_tensor_get(A, i), 0.0);
        free(yr), free(Ar), free(in.blocked);
        tg_graph_free(g);
        tg_params_free(p);
    }
}
END_TEST

/* ---- MHA gradients ------------------------------------------------------ */

typedef struct mha_gc {
    const tg_mha_mod *m;
    tg_attn_args args;
    bool cross;
    tg_kv_cache *cache;
    int cache_len; /* reset before every call: the prefix stays a constant */
} mha_gc;

/* inputs: x, [kv], then the module's parameters */
static tg_tensor *mha_gc_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    mha_gc *c = ctx;
    tg_attn_args a = c->args;
    if (c->cache) c->cache->len = c->cache_len, a.cache = c->cache;
    return tg_mha_forward(g, c->m, in[0], c->cross ? in[1] : NULL, &a);
}

static int param_inputs(tg_params *p, tg_tensor **in, int n, int cap)
{
    ck_assert_int_le(n + tg_params_count(p), cap);
    for (int i = 0; i < tg_params_count(p); i++) in[n++] = tg_params_at(p, i);
    return n;
}

START_TEST(mha_gradcheck)
{
    for (size_t k = 0; k < sizeof MHA_CASES / sizeof MHA_CASES[0]; k++) {
        const mha_case *c = &MHA_CASES[k];
        tg_mha_mod m;
        tg_params *p = mha_store(&m, c->C, c->H, c->bias, c->fused, 300 + k);
        tg_graph *g = tg_graph_new();
        mha_inputs mi = make_inputs(g, c, 400 + 10 * k);
        mha_gc ctx = {&m, {.causal = c->causal, .key_padding = mi.kp, .mask = mi.mask}, c->cross, NULL, 0};
        tg_tensor *in[16];
        int n = 0;
        in[n++] = mi.x;
        if (c->cross) in[n++] = mi.kv;
        n = param_inputs(p, in, n, 16);
        tt_assert_gradcheck(mha_gc_fn, &ctx, n, in);
        free(mi.blocked);
        tg_graph_free(g);
        tg_params_free(p);
    }
}
END_TEST

/* With 3 positions cached, the gradient of 2 new positions reaches x
 * through the new keys and values (the prefix is a constant). */
START_TEST(mha_gradcheck_with_cache)
{
    for (int fused = 0; fused < 2; fused++) {
        const int B = 2, C = 6, H = 2;
        tg_mha_mod m;
        tg_params *p = mha_store(&m, C, H, true, fused, 500 + fused);
        tg_kv_cache cache;
        ck_assert_int_eq(tg_kv_cache_init(&cache, TG_F64, B, H, C / H, 6, NULL), 0);
        tg_graph *g = tg_graph_new();
        tg_tensor *x0 = tt_randn(g, TT_SHAPE(B, 3, C), 510);
        ck_assert_ptr_nonnull(tg_mha_forward(g, &m, x0, NULL, &(tg_attn_args){.causal = true, .cache = &cache}));
        ck_assert_int_eq(cache.len, 3);
        tg_tensor *in[16] = {tt_randn(g, TT_SHAPE(B, 2, C), 520)};
        int n = param_inputs(p, in, 1, 16);
        mha_gc ctx = {&m, {.causal = true}, false, &cache, 3};
        tt_assert_gradcheck(mha_gc_fn, &ctx, n, in);
        tg_graph_free(g);
        tg_kv_cache_release(&cache);
        tg_params_free(p);
    }
}
END_TEST

/* ---- tutorial properties ---------------------------------------------- */

/* Causal weights: each row sums to 1, every future key gets exactly 0. */
START_TEST(attention_rows_and_future)
{
    const int B = 2, T = 6, C = 6, H = 3;
    tg_mha_mod m;
    tg_params *p = mha_store(&m, C, H, true, true, 1);
    fill_params(p, 2, 2.0); /* large weights: sharp rows, a real test of "exactly zero" */
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 3);
    tg_tensor *A = NULL;
    ck_assert_ptr_nonnull(tg_mha_forward(g, &m, x, NULL, &(tg_attn_args){.causal = true, .weights = &A}));
    const double *a = dptr(A);
    for (int r = 0; r < B * H * T; r++) {
        const int i = r % T;
        double sum = 0;
        for (int j = 0; j < T; j++) {
            sum += a[r * T + j];
            if (j > i) ck_assert_double_eq(a[r * T + j], 0.0);
            else ck_assert(a[r * T + j] >= 0);
        }
        ck_assert_double_eq_tol(sum, 1.0, 1e-14);
    }
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* No mask and no position embedding: attention is permutation-equivariant,
 * y(P x) = P y(x). */
START_TEST(attention_permutation_equivariant)
{
    const int B = 2, T = 5, C = 6;
    const int perm[5] = {3, 0, 4, 1, 2};
    for (int fused = 0; fused < 2; fused++) {
        tg_mha_mod m;
        tg_params *p = mha_store(&m, C, 2, true, fused, 10 + fused);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 20);
        tg_tensor *xp = tg_tensor_new(g, TG_F64, TT_SHAPE(B, T, C));
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                memcpy(dptr(xp) + (b * T + t) * C, dptr(x) + (b * T + perm[t]) * C, C * sizeof(double));
        tg_tensor *y = tg_mha_forward(g, &m, x, NULL, NULL), *yp = tg_mha_forward(g, &m, xp, NULL, NULL);
        ck_assert_ptr_nonnull(y);
        ck_assert_ptr_nonnull(yp);
        double moved = 0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int c = 0; c < C; c++) {
                    double want = dptr(y)[(b * T + perm[t]) * C + c], got = dptr(yp)[(b * T + t) * C + c];
                    ck_assert_double_eq_tol(got, want, 1e-13);
                    moved = fmax(moved, fabs(got - dptr(y)[(b * T + t) * C + c]));
                }
        ck_assert(moved > 1e-3); /* the outputs did move: the check is not vacuous */
        /* a causal mask breaks it */
        tg_tensor *yc = tg_mha_forward(g, &m, x, NULL, &(tg_attn_args){.causal = true});
        tg_tensor *ycp = tg_mha_forward(g, &m, xp, NULL, &(tg_attn_args){.causal = true});
        double diff = 0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int c = 0; c < C; c++)
                    diff = fmax(diff, fabs(dptr(ycp)[(b * T + t) * C + c] - dptr(yc)[(b * T + perm[t]) * C + c]));
        ck_assert(diff > 1e-3);
        tg_graph_free(g);
        tg_params_free(p);
    }
}
END_TEST

/* Attention composed in the test from ops, with heads split either right
 * (reshape (B,T,H,dh), transpose) or wrong (reshape straight to (B,H,T,dh));
 * the merge is the inverse of the split. */
static tg_tensor *attn_by_ops(tg_graph *g, const tg_mha_mod *m, tg_tensor *x, bool right)
{
    const int B = x->shape[0], T = x->shape[1], C = m->n_embd, H = m->n_head, dh = C / H;
    tg_tensor *qkv[3] = {tg_linear_forward(g, &m->q_proj, x), tg_linear_forward(g, &m->k_proj, x),
                         tg_linear_forward(g, &m->v_proj, x)}; /* (B,T,C) */
    for (int i = 0; i < 3; i++)
        qkv[i] = right ? tg_transpose(g, tg_reshape(g, qkv[i], 4, (int[]){B, T, H, dh}), 1, 2)
                       : tg_reshape(g, qkv[i], 4, (int[]){B, H, T, dh}); /* (B,H,T,dh) */
    tg_tensor *S = tg_scale(g, tg_matmul(g, qkv[0], tg_transpose(g, qkv[1], 2, 3)), 1 / sqrt(dh));
    tg_tensor *O = tg_matmul(g, tg_softmax(g, S, NULL), qkv[2]); /* (B,H,T,dh) */
    O = right ? tg_reshape(g, tg_transpose(g, O, 1, 2), 3, (int[]){B, T, C}) : tg_reshape(g, O, 3, (int[]){B, T, C});
    return tg_linear_forward(g, &m->c_proj, O); /* (B,T,C) */
}

START_TEST(attention_head_split_order)
{
    tg_mha_mod m;
    tg_params *p = mha_store(&m, 6, 2, true, false, 30);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 4, 6), 31);
    tg_tensor *y = tg_mha_forward(g, &m, x, NULL, NULL);
    tg_tensor *right = attn_by_ops(g, &m, x, true), *wrong = attn_by_ops(g, &m, x, false);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_nonnull(right);
    ck_assert_ptr_nonnull(wrong);
    ck_assert(tg_tensor_same_shape(wrong, y));
    double dr = 0, dw = 0;
    for (int64_t i = 0; i < y->numel; i++) {
        dr = fmax(dr, fabs(tg_tensor_get(right, i) - tg_tensor_get(y, i)));
        dw = fmax(dw, fabs(tg_tensor_get(wrong, i) - tg_tensor_get(y, i)));
    }
    ck_assert_double_le(dr, 1e-13);
    ck_assert_msg(dw > 1e-2, "the wrong split should give other numbers, max diff %g", dw);
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* The tutorial's KV-cache example: 3 cached positions, 2 new queries, every
 * score 0 (Q and K weights zero), values 10..50. Position-aligned causal:
 * query 3 averages 10..40 = 25, query 4 averages 10..50 = 30. An upper-left
 * causal mask (SDPA is_causal) would give 10 and 15. */
START_TEST(attention_kv_cache_example)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_mha_mod m;
    tg_error err = {0};
    ck_assert_int_eq(tg_mha_init(&m, p, "attn", &(tg_mha_config){.n_embd = 1, .n_head = 1}, &err), 0);
    dptr(m.c_attn.weight)[2] = 1; /* [Wq; Wk; Wv] = [0; 0; 1]: v = x */
    dptr(m.c_proj.weight)[0] = 1;
    tg_kv_cache cache;
    ck_assert_int_eq(tg_kv_cache_init(&cache, TG_F64, 1, 1, 1, 5, NULL), 0);
    tg_graph *g = tg_graph_new();
    tg_tensor *A = NULL;
    tg_attn_args args = {.causal = true, .cache = &cache, .weights = &A};
    tg_tensor *x0 = tg_tensor_from(g, TG_F64, TT_SHAPE(1, 3, 1), (double[]){10, 20, 30});
    tg_tensor *y0 = tg_mha_forward(g, &m, x0, NULL, &args);
    ck_assert_ptr_nonnull(y0);
    assert_close_arr(y0, (double[]){10, 15, 20}, 3, 1e-12, "prefix");
    ck_assert_int_eq(cache.len, 3);

    tg_tensor *x1 = tg_tensor_from(g, TG_F64, TT_SHAPE(1, 2, 1), (double[]){40, 50});
    tg_tensor *y1 = tg_mha_forward(g, &m, x1, NULL, &args);
    ck_assert_ptr_nonnull(y1);
    assert_close_arr(y1, (double[]){25, 30}, 2, 1e-12, "position-aligned");
    ck_assert_int_eq(cache.len, 5);
    ck_assert_int_eq(A->shape[2], 2);
    ck_assert_int_eq(A->shape[3], 5);
    assert_close_arr(A, (double[]){0.25, 0.25, 0.25, 0.25, 0, 0.2, 0.2, 0.2, 0.2, 0.2}, 10, 1e-15, "weights");
    ck_assert_double_eq(tg_tensor_get(A, 4), 0.0);

    /* the cache is full: one more position is an error, and len stays */
    tg_tensor *x2 = tg_tensor_from(g, TG_F64, TT_SHAPE(1, 1, 1), (double[]){60});
    ck_assert_ptr_null(tg_mha_forward(g, &m, x2, NULL, &args));
    tt_assert_error(g, "KV cache overflow: 5 cached + 1 new positions (x (1,1,1)) exceed max_len 5");
    ck_assert_int_eq(cache.len, 5);
    tg_graph_clear_error(g);

    /* upper-left: the same two queries with an explicit triu(k=1) mask (2,5) */
    cache.len = 3;
    uint8_t ul[10];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++) ul[i * 5 + j] = j > i;
    tg_attn_args upper = {.mask = bools(g, TT_SHAPE(2, 5), ul), .cache = &cache};
    tg_tensor *y2 = tg_mha_forward(g, &m, x1, NULL, &upper);
    ck_assert_ptr_nonnull(y2);
    assert_close_arr(y2, (double[]){10, 15}, 2, 1e-12, "upper-left");
    tg_graph_free(g);
    tg_kv_cache_release(&cache);
    tg_params_free(p);
}
END_TEST

/* Chunks through the cache give the rows of full causal attention. */
START_TEST(attention_cache_matches_full)
{
    const int B = 2, T = 7, C = 6, H = 2;
    const int chunks[][5] = {{1, 1, 1, 1, 0}, {3, 2, 2}, {7}, {2, 4, 1}, {1, 5}}; /* 0: the rest */
    for (int fused = 0; fused < 2; fused++) {
        tg_mha_mod m;
        tg_params *p = mha_store(&m, C, H, true, fused, 40 + fused);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 50);
        uint8_t *blocked = calloc((size_t)B * H * T * T, 1);
        for (int i = 0; i < B * H * T * T; i++) blocked[i] = (i % T) > (i / T) % T;
        ref_mha r = {.B = B, .Tq = T, .Tk = T, .x = dptr(x), .kv = dptr(x), .blocked = blocked};
        ref_from_mha(&r, &m);
        double yr[2 * 7 * 6];
        ref_mha_run(&r, yr, NULL);
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            tg_kv_cache cache;
            ck_assert_int_eq(tg_kv_cache_init(&cache, TG_F64, B, H, C / H, T, NULL), 0);
            int t0 = 0;
            for (int s = 0; s < 5 && t0 < T; s++) {
                const int n = chunks[k][s] ? chunks[k][s] : T - t0;
                tg_tensor *xs = tg_slice(g, x, 1, t0, t0 + n); /* (B,n,C) */
                tg_tensor *y = tg_mha_forward(g, &m, xs, NULL, &(tg_attn_args){.causal = true, .cache = &cache});
                ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
                for (int b = 0; b < B; b++)
                    for (int t = 0; t < n; t++)
                        for (int c = 0; c < C; c++)
                            ck_assert_double_eq_tol(dptr(y)[(b * n + t) * C + c], yr[(b * T + t0 + t) * C + c], 1e-12);
                t0 += n;
                ck_assert_int_eq(cache.len, t0);
            }
            ck_assert_int_eq(t0, T);
            tg_kv_cache_release(&cache);
        }
        free(blocked);
        tg_graph_free(g);
        tg_params_free(p);
    }
}
END_TEST

/* The fused attention op (the default when nothing needs the weights)
 * against the composed path (m.composed = true): output and every
 * gradient (x, kv, all parameters) within 1e-12, for self- and
 * cross-attention, causal or not, with a cache prefix. The fused path
 * records fewer tape nodes, so the test knows which path ran. With
 * attention dropout in effect (training) the composed path runs either
 * way; in eval mode the fused op does. */
typedef struct path_run {
    double y[2 * 4 * 6], gx[2 * 4 * 6], gkv[2 * 5 * 6], gp[512];
    int tape;
} path_run;

static void run_path(const tg_mha_mod *m, tg_params *p, tg_tensor *x, tg_tensor *kv, const tg_attn_args *a,
                     tg_kv_cache *cache, int cache_len, path_run *out)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *dy = tt_randn(g, TT_SHAPE(x->shape[0], x->shape[1], x->shape[2]), 77);
    memset(x->grad, 0, (size_t)x->numel * sizeof(double));
    if (kv) memset(kv->grad, 0, (size_t)kv->numel * sizeof(double));
    tg_params_zero_grad(p);
    if (cache) cache->len = cache_len;
    tg_attn_args args = *a;
    args.cache = cache;
    const int tape0 = tg_graph_tape_len(g);
    tg_tensor *y = tg_mha_forward(g, m, x, kv, &args);
    ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
    out->tape = tg_graph_tape_len(g) - tape0;
    ck_assert_int_le(y->numel, 48);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, dy->data), 0);
    memcpy(out->y, y->data, (size_t)y->numel * sizeof(double));
    memcpy(out->gx, x->grad, (size_t)x->numel * sizeof(double));
    if (kv) memcpy(out->gkv, kv->grad, (size_t)kv->numel * sizeof(double));
    ck_assert_int_le(tg_params_numel(p), 512);
    memcpy(out->gp, tg_params_grad(p), (size_t)tg_params_numel(p) * sizeof(double));
    tg_graph_free(g);
}

static void assert_runs_equal(const path_run *a, const path_run *b, int64_t ny, int64_t nkv, int64_t np,
                              const char *what)
{
    for (int64_t i = 0; i < ny; i++) {
        ck_assert_msg(fabs(a->y[i] - b->y[i]) <= 1e-12, "%s: y[%lld] %.15g vs %.15g", what, (long long)i, a->y[i],
                      b->y[i]);
        ck_assert_msg(fabs(a->gx[i] - b->gx[i]) <= 1e-12, "%s: dx[%lld]", what, (long long)i);
    }
    for (int64_t i = 0; i < nkv; i++)
        ck_assert_msg(fabs(a->gkv[i] - b->gkv[i]) <= 1e-12, "%s: dkv[%lld]", what, (long long)i);
    for (int64_t i = 0; i < np; i++)
        ck_assert_msg(fabs(a->gp[i] - b->gp[i]) <= 1e-12, "%s: parameter gradient %lld: %.15g vs %.15g", what,
                      (long long)i, a->gp[i], b->gp[i]);
}

START_TEST(mha_fused_op_equals_composed)
{
    static const struct {
        int Tq, Tk, H;
        bool cross, causal, fused_proj;
        int cache_len;
    } cases[] = {
        {4, 4, 2, false, true, true, 0}, {4, 4, 3, false, false, false, 0},
        {3, 5, 2, true, false, true, 0}, {4, 2, 2, true, true, false, 0}, /* cross, causal: upper-left */
        {2, 5, 2, false, true, true, 3}, /* 3 cached positions */
        {1, 4, 3, false, true, true, 3},
    };
    const int B = 2, C = 6;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tg_mha_mod m;
        tg_params *p = mha_store(&m, C, cases[k].H, true, cases[k].fused_proj, 600 + k);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn(g, TT_SHAPE(B, cases[k].Tq, C), 610 + k);
        tg_tensor *kv = cases[k].cross ? tt_randn(g, TT_SHAPE(B, cases[k].Tk, C), 620 + k) : NULL;
        tg_kv_cache cache, *pc = NULL;
        if (cases[k].cache_len) {
            ck_assert_int_eq(tg_kv_cache_init(&cache, TG_F64, B, cases[k].H, C / cases[k].H, 8, NULL), 0);
            pc = &cache;
            tg_tensor *x0 = tt_randn(g, TT_SHAPE(B, cases[k].cache_len, C), 630 + k);
            m.composed = true; /* the prefix written by the other path */
            ck_assert_ptr_nonnull(tg_mha_forward(g, &m, x0, NULL, &(tg_attn_args){.causal = true, .cache = pc}));
        }
        tg_attn_args a = {.causal = cases[k].causal};
        path_run fused, composed;
        m.composed = false;
        run_path(&m, p, x, kv, &a, pc, cases[k].cache_len, &fused);
        m.composed = true;
        run_path(&m, p, x, kv, &a, pc, cases[k].cache_len, &composed);
        char what[32];
        snprintf(what, sizeof what, "case %zu", k);
        assert_runs_equal(&fused, &composed, x->numel, kv ? kv->numel : 0, tg_params_numel(p), what);
        ck_assert_msg(fused.tape < composed.tape, "%s: fused %d nodes, composed %d", what, fused.tape, composed.tape);
        if (pc) tg_kv_cache_release(pc);
        tg_graph_free(g);
        tg_params_free(p);
    }

    /* attention dropout: composed while training, the fused op in eval mode */
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_mha_mod m;
    tg_error err = {0};
    ck_assert_int_eq(
        tg_mha_init(&m, p, "attn", &(tg_mha_config){.n_embd = C, .n_head = 2, .bias = true, .dropout = 0.25}, &err), 0);
    fill_params(p, 640, 0.5);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(B, 4, C), 641);
    int tape[2][2]; /* [eval][composed] */
    for (int ev = 0; ev < 2; ev++)
        for (int comp = 0; comp < 2; comp++) {
            tg_graph *h = tg_graph_new();
            tg_graph_set_training(h, !ev);
            m.composed = comp;
            const int t0 = tg_graph_tape_len(h);
            ck_assert_ptr_nonnull(tg_mha_forward(h, &m, x, NULL, &(tg_attn_args){.causal = true}));
            tape[ev][comp] = tg_graph_tape_len(h) - t0;
            tg_graph_free(h);
        }
    ck_assert_int_eq(tape[0][0], tape[0][1]); /* training: the composed path both times */
    ck_assert_int_lt(tape[1][0], tape[1][1]); /* eval: the fused op unless composed */
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* tg_mha_uses_fused against what tg_mha_forward does: with grad on, the
 * fused path records fewer tape nodes than the composed one (forced by
 * m.composed) on the same call; with grad off (nothing recorded), it uses
 * less of the arena (no (B,H,T,T) scores and weights). Every combination
 * of the conditions, with fused and separate projections. */
START_TEST(mha_uses_fused_tells_the_path)
{
    const int B = 2, T = 4, C = 6, H = 2;
    int n_fused = 0, n_composed = 0;
    for (int proj = 0; proj < 2; proj++)
        for (int bits = 0; bits < 64; bits++) {
            const bool composed = bits & 1, weights = bits & 2, pad = bits & 4, mask = bits & 8, training = bits & 16,
                       grad = bits & 32;
            tg_params *p = tg_params_new(TG_F64, NULL);
            tg_mha_mod m;
            tg_error err = {0};
            ck_assert_int_eq(tg_mha_init(&m, p, "attn",
                                         &(tg_mha_config){.n_embd = C,
                                                          .n_head = H,
                                                          .layout = proj ? TG_MHA_FUSED : TG_MHA_SEPARATE,
                                                          .dropout = 0.25},
                                         &err),
                             0);
            fill_params(p, 900 + (uint64_t)bits, 0.5);
            long long seen[2]; /* [forced composed]: tape nodes (grad on) or arena bytes (grad off) */
            bool said = false;
            for (int force = 0; force < 2; force++) {
                tg_graph *g = tg_graph_new();
                tg_graph_set_training(g, training);
                tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, C), 901);
                tg_graph_set_grad_enabled(g, grad);
                tg_tensor *w = NULL;
                tg_attn_args a = {.causal = true};
                if (weights) a.weights = &w;
                if (pad) a.key_padding = bools(g, TT_SHAPE(B, T), (uint8_t[]){0, 0, 0, 1, 0, 0, 0, 0});
                if (mask)
                    a.mask = bools(g, TT_SHAPE(T, T), (uint8_t[]){0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0});
                m.composed = composed || force;
                if (!force) said = tg_mha_uses_fused(g, &m, &a);
                const long long tape0 = tg_graph_tape_len(g), used0 = (long long)tg_graph_arena_used(g);
                ck_assert_msg(tg_mha_forward(g, &m, x, NULL, &a) != NULL, "%s", tg_graph_error(g));
                seen[force] = grad ? tg_graph_tape_len(g) - tape0 : (long long)tg_graph_arena_used(g) - used0;
                tg_graph_free(g);
            }
            const bool want = !composed && !weights && !pad && !mask && !(training && grad);
            const bool ran_fused = seen[0] < seen[1];
            ck_assert_msg(said == want, "proj %d bits %d: tg_mha_uses_fused says %d, the rule %d", proj, bits, said,
                          want);
            ck_assert_msg(ran_fused == want, "proj %d bits %d: forward %s (%lld vs %lld composed)", proj, bits,
                          ran_fused ? "took the fused op" : "was composed", seen[0], seen[1]);
            if (!ran_fused) ck_assert_int_eq(seen[0], seen[1]);
            n_fused += want, n_composed += !want;
            tg_params_free(p);
        }
    ck_assert_int_eq(n_fused, 2 * 3); /* per projection: grad off (training or not), or eval mode */
    ck_assert_int_eq(n_composed, 128 - 6);
    /* NULL args: no mask; dropout still counts */
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_mha_mod m;
    tg_error err = {0};
    ck_assert_int_eq(tg_mha_init(&m, p, "attn", &(tg_mha_config){.n_embd = C, .n_head = H, .dropout = 0.25}, &err), 0);
    tg_graph *g = tg_graph_new();
    ck_assert(!tg_mha_uses_fused(g, &m, NULL)); /* training, grad on, attention dropout 0.25 */
    tg_graph_set_training(g, false);
    ck_assert(tg_mha_uses_fused(g, &m, NULL));
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* Key padding: the values of padded keys do not reach the output at all;
 * a row whose keys are all padding is an error. */
START_TEST(attention_key_padding)
{
    const int B = 2, Tq = 3, Tk = 4, C = 4;
    tg_mha_mod m;
    tg_params *p = mha_store(&m, C, 2, true, true, 60);
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(B, Tq, C), 61), *kv = tt_randn(g, TT_SHAPE(B, Tk, C), 62);
    const uint8_t pad[] = {0, 0, 1, 1, 0, 1, 0, 1};
    tg_tensor *kp = bools(g, TT_SHAPE(B, Tk), pad);
    tg_tensor *y = tg_mha_forward(g, &m, x, kv, &(tg_attn_args){.key_padding = kp});
    ck_assert_ptr_nonnull(y);
    /* change every padded key row: the output is bit-identical */
    tg_tensor *kv2 = tg_tensor_from(g, TG_F64, 3, kv->shape, kv->data);
    for (int i = 0; i < B * Tk; i++)
        if (pad[i])
            for (int c = 0; c < C; c++) dptr(kv2)[i * C + c] += 100 + c;
    tg_tensor *y2 = tg_mha_forward(g, &m, x, kv2, &(tg_attn_args){.key_padding = kp});
    ck_assert_ptr_nonnull(y2);
    for (int64_t i = 0; i < y->numel; i++) ck_assert_double_eq(tg_tensor_get(y2, i), tg_tensor_get(y, i));
    /* without the padding it does change */
    tg_tensor *y3 = tg_mha_forward(g, &m, x, kv2, NULL);
    double diff = 0;
    for (int64_t i = 0; i < y->numel; i++) diff = fmax(diff, fabs(tg_tensor_get(y3, i) - tg_tensor_get(y, i)));
    ck_assert(diff > 1e-3);

    /* batch row 1 entirely padded: softmax refuses the row */
    tg_tensor *all = bools(g, TT_SHAPE(B, Tk), (uint8_t[]){0, 0, 1, 1, 1, 1, 1, 1});
    tg_tensor *A = (tg_tensor *)1;
    ck_assert_ptr_null(tg_mha_forward(g, &m, x, kv, &(tg_attn_args){.key_padding = all, .weights = &A}));
    tt_assert_error(g, "softmax: row 6 (index (1,0,0)) of x f64 (2,2,3,4) has every key blocked");
    ck_assert_ptr_null(A);
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

START_TEST(attention_errors)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_mha_mod m;
    tg_error err = {0};
    ck_assert_int_eq(tg_mha_init(&m, p, "bad", &(tg_mha_config){.n_embd = 6, .n_head = 4, .bias = true}, &err), -1);
    ck_assert_str_eq(err.msg, "mha 'bad': n_embd 6 is not divisible by n_head 4");
    ck_assert_int_eq(tg_params_count(p), 0);
    ck_assert_int_eq(
        tg_mha_init(&m, p, "bad", &(tg_mha_config){.n_embd = 6, .n_head = 2, .bias = true, .dropout = -0.1}, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "dropout must be in [0, 1), got -0.1"));
    ck_assert_int_eq(tg_mha_init(&m, p, "attn", &(tg_mha_config){.n_embd = 6, .n_head = 2, .bias = true}, &err), 0);
    tg_kv_cache cache, cache3;
    ck_assert_int_eq(tg_kv_cache_init(&cache, TG_F64, 2, 2, 3, 4, NULL), 0);
    ck_assert_int_eq(tg_kv_cache_init(&cache3, TG_F64, 3, 2, 3, 4, NULL), 0);
    ck_assert_int_eq(tg_kv_cache_init(&(tg_kv_cache){0}, TG_I32, 3, 2, 3, 4, &err), -1);
    ck_assert_str_eq(err.msg, "kv_cache_init: dtype must be f32 or f64, got i32");

    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2, 3, 6), 1), *kv = tt_randn(g, TT_SHAPE(2, 5, 6), 2);
    struct {
        tg_tensor *x, *kv;
        tg_attn_args a;
        const char *needle;
    } cases[] = {
        {tt_randn(g, TT_SHAPE(2, 3, 5), 3),
         NULL,
         {0},
         "mha: x must be (B,T,C) with C = n_embd = 6 and x's B, got f64 (2,3,5)"},
        {tt_randn(g, TT_SHAPE(3, 6), 3), NULL, {0}, "x must be (B,T,C) with C = n_embd = 6 and x's B, got f64 (3,6)"},
        {x,
         tt_randn(g, TT_SHAPE(1, 5, 6), 3),
         {0},
         "mha: kv must be (B,T,C) with C = n_embd = 6 and x's B, got f64 (1,5,6) (x f64 (2,3,6))"},
        {x, tg_tensor_new(g, TG_F32, TT_SHAPE(2, 5, 6)), {0}, "mha: kv must be f32 or f64 like x, got f32 (2,5,6)"},
        {tg_tensor_new(g, TG_I32, TT_SHAPE(2, 3, 6)), NULL, {0}, "mha: x must be f32 or f64, got i32 (2,3,6)"},
        {x,
         kv,
         {.key_padding = bools(g, TT_SHAPE(2, 3), (uint8_t[6]){0})},
         "mha: key_padding must be bool (B,Tk) = (2,5), got bool (2,3)"},
        {x,
         kv,
         {.key_padding = tg_tensor_new(g, TG_I32, TT_SHAPE(2, 5))},
         "key_padding must be bool (B,Tk) = (2,5), got i32 (2,5)"},
        {x,
         kv,
         {.mask = bools(g, TT_SHAPE(3, 3), (uint8_t[9]){0})},
         "mha: mask must be bool and broadcast to (B,H,Tq,Tk) = (2,2,3,5), got bool (3,3)"},
        {x,
         kv,
         {.mask = tg_tensor_new(g, TG_F64, TT_SHAPE(3, 5))},
         "mask must be bool and broadcast to (B,H,Tq,Tk) = (2,2,3,5), got f64 (3,5)"},
        {x, kv, {.cache = &cache}, "mha: a KV cache works with self-attention only, but kv was given"},
        {x, NULL, {.cache = &cache3}, "mha: KV cache (f64, batch 3, n_head 2, head_dim 3) does not fit x f64 (2,3,6)"},
        {NULL, NULL, {0}, "mha: input 0 is NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_ptr_null(tg_graph_error(g));
        ck_assert_ptr_null(tg_mha_forward(g, &m, cases[i].x, cases[i].kv, &cases[i].a));
        tt_assert_error(g, cases[i].needle);
        tg_graph_clear_error(g);
    }
    ck_assert_int_eq(cache.len, 0);
    /* a module whose sizes were broken after init: an error, not an assert */
    tg_mha_mod broken = m;
    broken.n_head = 4;
    ck_assert_ptr_null(tg_mha_forward(g, &broken, x, NULL, NULL));
    tt_assert_error(g, "mha: n_embd 6 is not divisible by n_head 4");
    tg_graph_free(g);
    tg_kv_cache_release(&cache);
    tg_kv_cache_release(&cache3);
    tg_params_free(p);
}
END_TEST

/* ---- GPT ---------------------------------------------------------------- */

START_TEST(gpt_names_and_init)
{
    for (int bias = 0; bias < 2; bias++) {
        tg_model_config cfg = {
            .arch = "gpt", .n_layer = 3, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 50, .bias = bias};
        tg_error err = {0};
        tg_model m_model;
        tg_gpt *m = tg_model_init(&m_model, &cfg, TG_F32, 7, &err) ? NULL : m_model.impl;
        ck_assert_msg(m != NULL, "%s", err.msg);
        /* the expected list, written out */
        char want[64][64];
        int wshape[64][2], n = 0;
#define WANT(nm, a, b) (snprintf(want[n], 64, "%s", nm), wshape[n][0] = (a), wshape[n][1] = (b), n++)
        WANT("transformer.wte.weight", 50, 16);
        WANT("transformer.wpe.weight", 8, 16);
        for (int i = 0; i < 3; i++) {
            const char *parts[] = {"ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"};
            const int rows[] = {16, 48, 16, 16, 64, 16}, cols[] = {0, 16, 16, 0, 16, 64};
            for (int k = 0; k < 6; k++) {
                char nm[64];
                snprintf(nm, sizeof nm, "transformer.h.%d.%s.weight", i, parts[k]);
                WANT(nm, rows[k], cols[k]);
                if (bias) {
                    snprintf(nm, sizeof nm, "transformer.h.%d.%s.bias", i, parts[k]);
                    WANT(nm, rows[k], 0);
                }
            }
        }
        WANT("transformer.ln_f.weight", 16, 0);
        if (bias) WANT("transformer.ln_f.bias", 16, 0);
#undef WANT
        ck_assert_int_eq(tg_params_count(m->params), n);
        for (int i = 0; i < n; i++) {
            tg_tensor *t = tg_params_at(m->params, i);
            ck_assert_str_eq(t->name, want[i]);
            ck_assert_int_eq(t->ndim, wshape[i][1] ? 2 : 1);
            ck_assert_int_eq(t->shape[0], wshape[i][0]);
            if (wshape[i][1]) ck_assert_int_eq(t->shape[1], wshape[i][1]);
            /* init: LayerNorm weights 1, biases 0, matrices normal with nanoGPT's std */
            if (t->ndim == 1) {
                double v = strstr(t->name, ".weight") ? 1.0 : 0.0;
                for (int64_t k = 0; k < t->numel; k++) ck_assert_double_eq(tg_tensor_get(t, k), v);
            } else {
                double s = 0, s2 = 0;
                for (int64_t k = 0; k < t->numel; k++) s += tg_tensor_get(t, k), s2 += pow(tg_tensor_get(t, k), 2);
                double mean = s / t->numel, sd = sqrt(s2 / t->numel - mean * mean);
                double want_sd = strstr(t->name, "c_proj.weight") ? 0.02 / sqrt(6.0) : 0.02;
                /* >= 128 samples: the sample sd is within 20% with overwhelming probability */
                ck_assert_msg(fabs(sd / want_sd - 1) < 0.2, "%s: sd %g, want %g", t->name, sd, want_sd);
                ck_assert_msg(fabs(mean) < 4 * want_sd / sqrt((double)t->numel), "%s: mean %g", t->name, mean);
            }
        }
        ck_assert_ptr_eq(m->wte, tg_params_get(m->params, "transformer.wte.weight"));
        ck_assert_ptr_eq(m->h[2].mlp.down.weight, tg_params_get(m->params, "transformer.h.2.mlp.c_proj.weight"));
        /* same seed, same numbers; another seed, others */
        tg_model m2_model, m3_model;
        ck_assert_int_eq(tg_model_init(&m2_model, &cfg, TG_F32, 7, &err), 0);
        ck_assert_int_eq(tg_model_init(&m3_model, &cfg, TG_F32, 8, &err), 0);
        const tg_gpt *m2 = m2_model.impl, *m3 = m3_model.impl;
        const size_t bytes = (size_t)tg_params_numel(m->params) * sizeof(float);
        ck_assert_int_eq(memcmp(tg_params_data(m->params), tg_params_data(m2->params), bytes), 0);
        ck_assert_int_ne(memcmp(tg_params_data(m->params), tg_params_data(m3->params), bytes), 0);
        tg_model_release(&m_model), tg_model_release(&m2_model), tg_model_release(&m3_model);
        /* TG_NO_INIT draws nothing: weights, embeddings and biases zero, LayerNorm weights 1 */
        tg_model m0_model;
        tg_gpt *m0 = tg_model_init(&m0_model, &cfg, TG_F32, TG_NO_INIT, &err) ? NULL : m0_model.impl;
        ck_assert_msg(m0 != NULL, "%s", err.msg);
        for (int i = 0; i < tg_params_count(m0->params); i++) {
            const tg_tensor *t = tg_params_at(m0->params, i);
            const double v = t->ndim == 1 && strstr(t->name, ".weight") ? 1.0 : 0.0;
            for (int64_t k = 0; k < t->numel; k++) ck_assert_double_eq(tg_tensor_get(t, k), v);
        }
        tg_model_release(&m0_model);
    }
}
END_TEST

START_TEST(gpt_config_errors)
{
    tg_error err = {0};
    tg_model m;
    tg_model_config cfg = {.arch = "gpt", .n_layer = 2, .n_head = 4, .n_embd = 6, .block_size = 8, .vocab_size = 10};
    ck_assert_int_eq(tg_model_init(&m, &cfg, TG_F32, 1, &err), -1);
    ck_assert_str_eq(err.msg, "gpt: n_embd 6 is not divisible by n_head 4");
    cfg.n_head = 2, cfg.block_size = 0;
    ck_assert_int_eq(tg_model_init(&m, &cfg, TG_F32, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "every size must be >= 1"));
    ck_assert_ptr_nonnull(strstr(err.msg, "block_size 0"));
    cfg.block_size = 8, cfg.dropout = 1;
    ck_assert_int_eq(tg_model_init(&m, &cfg, TG_F32, 1, &err), -1);
    ck_assert_str_eq(err.msg, "gpt: dropout must be in [0, 1), got 1");
    cfg.dropout = 0;
    ck_assert_int_eq(tg_model_init(&m, &cfg, TG_I32, 1, &err), -1);
    ck_assert_str_eq(err.msg, "gpt: dtype must be f32 or f64, got i32");
    tg_model_release(NULL);
}
END_TEST

/* tg_model_num_params counts, without building a GPT, what tg_model_init
 * registers: for odd sizes, one head, with and without biases; and -1 for
 * what it refuses or cannot count. */
START_TEST(gpt_num_params_matches_the_model)
{
    const tg_model_config cases[] = {
#define GC(L, H, C, T, V, b, d, gl)                                                                                    \
    {.arch = "gpt",                                                                                                    \
     .n_layer = L,                                                                                                     \
     .n_head = H,                                                                                                      \
     .n_embd = C,                                                                                                      \
     .block_size = T,                                                                                                  \
     .vocab_size = V,                                                                                                  \
     .bias = b,                                                                                                        \
     .dropout = d,                                                                                                     \
     .gelu = gl}
        GC(1, 1, 1, 1, 1, false, 0, TG_GELU_ERF),     GC(2, 3, 9, 5, 7, true, 0, TG_GELU_TANH),
        GC(3, 2, 10, 17, 65, false, 0, TG_GELU_ERF),  GC(1, 4, 12, 3, 300, true, 0.1, TG_GELU_TANH),
        GC(4, 4, 128, 64, 65, false, 0, TG_GELU_ERF),
#undef GC
    };
    tg_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_model m_model;
        tg_gpt *m = tg_model_init(&m_model, &cases[i], TG_F32, 1, &err) ? NULL : m_model.impl;
        ck_assert_msg(m != NULL, "%s", err.msg);
        ck_assert_int_eq(tg_model_num_params(&cases[i]), tg_params_numel(m->params));
        tg_model_release(&m_model);
    }
    tg_model_config c = cases[1];
    c.n_embd = 10; /* not divisible by 3 heads */
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    c = cases[0];
    c.vocab_size = 0;
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    ck_assert_int_eq(tg_model_num_params(NULL), -1);
    c = (tg_model_config){.arch = "gpt",
                          .n_layer = 1 << 30,
                          .n_head = 1,
                          .n_embd = 1 << 30,
                          .block_size = 1,
                          .vocab_size = 1,
                          .bias = true}; /* 12 C^2 L overflows 2^62 */
    ck_assert_int_eq(tg_model_num_params(&c), -1);
    c.n_layer = 1 << 24, c.n_embd = 16;
    ck_assert_int_eq(tg_model_num_params(&c), (int64_t)(1 << 24) * (12 * 16 * 16 + 13 * 16) + 16 * (1 + 1 + 2));
}
END_TEST

/* At init (weights std 0.02) the logits are small, so the loss is near
 * ln V: with M = max |logit|, logsumexp lies in [ln V - M, ln V + M], so
 * |loss - ln V| <= 2 M. (M is about 0.1 here, not ~0.02: the tied head
 * scores the input token's own row, |wte_i|^2 / sd(x) ~ 8 * 0.02^2 / 0.028.)
 * The mean over counted targets ignores -1. */
START_TEST(gpt_loss_at_init)
{
    tg_model_config cfg = {
        .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 8, .block_size = 6, .vocab_size = 11, .bias = true};
    tg_error err = {0};
    tg_model m_model;
    ck_assert_msg(tg_model_init(&m_model, &cfg, TG_F64, 3, &err) == 0, "%s", err.msg);
    tg_graph *g = tg_graph_new();
    const int32_t iv[] = {1, 5, 2, 7, 3, 0, 10, 9, 4, 4, 6, 8};
    const int32_t tv[] = {5, 2, 7, 3, 0, -1, 9, 4, 4, 6, 8, -1};
    tg_tensor *logits = tg_model_forward(g, &m_model, ids(g, 2, 6, iv), NULL);
    ck_assert_ptr_nonnull(logits);
    ck_assert_int_eq(logits->ndim, 3);
    ck_assert_int_eq(logits->shape[0], 2);
    ck_assert_int_eq(logits->shape[1], 6);
    ck_assert_int_eq(logits->shape[2], 11);
    tg_tensor *loss = tg_model_loss(g, &m_model, ids(g, 2, 6, iv), ids(g, 2, 6, tv));
    ck_assert_ptr_nonnull(loss);
    ck_assert_int_eq(loss->ndim, 0);
    double M = 0;
    for (int64_t i = 0; i < logits->numel; i++) M = fmax(M, fabs(tg_tensor_get(logits, i)));
    ck_assert_double_lt(M, 0.3);
    ck_assert_double_le(fabs(tg_tensor_item(loss) - log(11.0)), 2 * M);
    /* the same mean written out from the logits */
    double want = 0;
    for (int r = 0; r < 12; r++) {
        if (tv[r] < 0) continue;
        const double *l = dptr(logits) + r * 11;
        double mx = -INFINITY, s = 0;
        for (int v = 0; v < 11; v++) mx = fmax(mx, l[v]);
        for (int v = 0; v < 11; v++) s += exp(l[v] - mx);
        want += (mx + log(s) - l[tv[r]]) / 10;
    }
    ck_assert_double_eq_tol(tg_tensor_item(loss), want, 1e-13);
    tg_graph_free(g);
    tg_model_release(&m_model);
}
END_TEST

typedef struct gpt_gc {
    tg_model *m;
    tg_tensor *idx, *targets;
} gpt_gc;

static tg_tensor *gpt_gc_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)in; /* the inputs are the model's own parameters */
    gpt_gc *c = ctx;
    return tg_model_loss(g, c->m, c->idx, c->targets);
}

/* The whole loss against every parameter tensor, in f64: biases on and off,
 * the tied head (wte gets embedding + head gradients), targets -1, and
 * dropout (gradcheck repeats the masks). */
START_TEST(gpt_gradcheck)
{
    const struct {
        bool bias;
        double dropout;
        int C;
    } cfgs[] = {{true, 0, 4}, {false, 0, 4}, {true, 0.2, 4}};
    for (int k = 0; k < 3; k++) {
        tg_model_config cfg = {.arch = "gpt",
                               .n_layer = 2,
                               .n_head = 2,
                               .n_embd = cfgs[k].C,
                               .block_size = 5,
                               .vocab_size = 7,
                               .bias = cfgs[k].bias,
                               .dropout = cfgs[k].dropout};
        tg_error err = {0};
        tg_model m_model;
        tg_gpt *m = tg_model_init(&m_model, &cfg, TG_F64, 10 + k, &err) ? NULL : m_model.impl;
        ck_assert_msg(m != NULL, "%s", err.msg);
        fill_params(m->params, 20 + k, 0.4); /* away from the tiny init: every path matters */
        tg_graph *g = tg_graph_new();
        const int T = k == 1 ? 5 : 4;
        const int32_t iv[] = {1, 6, 6, 0, 3, 2, 5, 4, 1, 1};
        const int32_t tv[] = {6, -1, 0, 3, 2, 5, 4, -1, 1, 0};
        gpt_gc ctx = {&m_model, ids(g, 2, T, iv), ids(g, 2, T, tv)};
        tg_tensor *in[64];
        int n = param_inputs(m->params, in, 0, 64);
        tt_assert_gradcheck(gpt_gc_fn, &ctx, n, in);
        tg_graph_free(g);
        tg_model_release(&m_model);
    }
}
END_TEST

/* Feeding the tokens through the cache (one at a time, or in chunks) gives
 * the logits of the full forward, in f64 within 1e-12. */
START_TEST(gpt_incremental_decoding)
{
    tg_model_config cfg = {
        .arch = "gpt", .n_layer = 2, .n_head = 3, .n_embd = 9, .block_size = 6, .vocab_size = 13, .bias = true};
    tg_error err = {0};
    tg_model m_model;
    tg_gpt *m = tg_model_init(&m_model, &cfg, TG_F64, 5, &err) ? NULL : m_model.impl;
    fill_params(m->params, 6, 0.5);
    tg_graph *g = tg_graph_new();
    const int B = 2, T = 6, V = 13;
    const int32_t iv[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    tg_tensor *full = tg_model_forward(g, &m_model, ids(g, B, T, iv), NULL); /* (B,T,V) */
    ck_assert_ptr_nonnull(full);
    const int chunks[][6] = {{1, 1, 1, 1, 1, 1}, {2, 3, 1}, {6}, {1, 4, 1}};
    ck_assert_int_eq(tg_model_cache_enable(&m_model, B, &err), 0);
    for (int k = 0; k < 4; k++) {
        tg_model_cache_clear(&m_model);
        tg_graph_set_grad_enabled(g, k % 2 == 0); /* with and without the tape */
        for (int t0 = 0, s = 0; t0 < T; s++) {
            const int n = chunks[k][s];
            int32_t cv[12];
            for (int b = 0; b < B; b++)
                for (int t = 0; t < n; t++) cv[b * n + t] = iv[b * T + t0 + t];
            tg_tensor *lg = tg_model_forward(g, &m_model, ids(g, B, n, cv), NULL);
            ck_assert_msg(lg != NULL, "%s", tg_graph_error(g));
            for (int b = 0; b < B; b++)
                for (int t = 0; t < n; t++)
                    for (int v = 0; v < V; v++)
                        ck_assert_double_eq_tol(dptr(lg)[(b * n + t) * V + v], dptr(full)[(b * T + t0 + t) * V + v],
                                                1e-12);
            t0 += n;
            ck_assert_int_eq(m->cache[1].len, t0);
        }
    }
    /* the cache is full: one more token is an error naming block_size, and
     * the cache keeps its length */
    ck_assert_ptr_null(tg_model_forward(g, &m_model, ids(g, B, 1, (int32_t[]){1, 2}), NULL));
    tt_assert_error(g, "gpt: idx i32 (2,1): T = 1 with 6 cached positions exceeds block_size 6");
    ck_assert_int_eq(m->cache[0].len, 6);
    tg_graph_clear_error(g);
    /* the batch must match the cache's */
    tg_model_cache_clear(&m_model);
    ck_assert_ptr_null(tg_model_forward(g, &m_model, ids(g, 1, 1, (int32_t[]){1}), NULL));
    tt_assert_error(g, "gpt: idx i32 (1,1) has batch 1, but the KV cache was enabled for batch 2");
    tg_graph_clear_error(g);
    ck_assert_int_eq(tg_model_cache_enable(&m_model, 0, &err), -1);
    ck_assert_str_eq(err.msg, "gpt_cache_enable: batch must be >= 1, got 0");
    ck_assert_ptr_null(m->cache);
    /* the refused enable left no caches: the full forward again */
    tg_tensor *again = tg_model_forward(g, &m_model, ids(g, B, T, iv), NULL);
    for (int64_t i = 0; i < full->numel; i++) ck_assert_double_eq(tg_tensor_get(again, i), tg_tensor_get(full, i));
    tg_graph_free(g);
    tg_model_release(&m_model);
}
END_TEST

/* tg_model_forward with slots for the weights: the same logits as
 * without (bit for bit on the composed path it takes to return weights;
 * within 1e-12 of the fused path), and per layer the attention weights
 * (B,H,T,T); layer 0's against the loop reference fed
 * with ln_1(wte[idx] + wpe[t]) computed here; with the cache, a chunk's
 * weights are the full forward's rows; a failed forward clears the slots. */
START_TEST(gpt_forward_attention_weights)
{
    tg_model_config cfg = {
        .arch = "gpt", .n_layer = 2, .n_head = 3, .n_embd = 9, .block_size = 6, .vocab_size = 13, .bias = true};
    tg_error err = {0};
    tg_model m_model;
    tg_gpt *m = tg_model_init(&m_model, &cfg, TG_F64, 5, &err) ? NULL : m_model.impl;
    ck_assert_msg(m != NULL, "%s", err.msg);
    fill_params(m->params, 8, 0.5);
    tg_graph *g = tg_graph_new();
    const int B = 2, T = 6, C = 9, H = 3, L = 2;
    const int32_t iv[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    tg_tensor *fused = tg_model_forward(g, &m_model, ids(g, B, T, iv), NULL); /* (B,T,V) */
    tg_model_set_composed(&m_model, true);
    tg_tensor *plain = tg_model_forward(g, &m_model, ids(g, B, T, iv), NULL); /* (B,T,V) */
    tg_model_set_composed(&m_model, false);
    tg_tensor *w[2];
    tg_tensor *lg = tg_model_forward(g, &m_model, ids(g, B, T, iv), w); /* (B,T,V) */
    ck_assert_msg(fused && plain && lg, "%s", tg_graph_error(g));
    for (int64_t i = 0; i < lg->numel; i++) {
        ck_assert_double_eq(dptr(lg)[i], dptr(plain)[i]);
        ck_assert_double_eq_tol(dptr(lg)[i], dptr(fused)[i], 1e-12);
    }
    for (int l = 0; l < L; l++) {
        ck_assert_ptr_nonnull(w[l]);
        ck_assert_int_eq(w[l]->ndim, 4);
        ck_assert_int_eq(w[l]->shape[0], B);
        ck_assert_int_eq(w[l]->shape[1], H);
        ck_assert_int_eq(w[l]->shape[2], T);
        ck_assert_int_eq(w[l]->shape[3], T);
    }
    /* layer 0 by hand: x0 = wte[idx] + wpe[t], LayerNorm (eps 1e-5), attention */
    double x0[2 * 6 * 9], want[2 * 3 * 6 * 6];
    const double *wte = dptr(m->wte), *wpe = dptr(m->wpe);
    const double *lw = dptr(m->h[0].ln_1.weight), *lb = dptr(m->h[0].ln_1.bias);
    for (int r = 0; r < B * T; r++) {
        double mean = 0, var = 0, v[9];
        for (int c = 0; c < C; c++) v[c] = wte[iv[r] * C + c] + wpe[(r % T) * C + c], mean += v[c] / C;
        for (int c = 0; c < C; c++) var += (v[c] - mean) * (v[c] - mean) / C;
        for (int c = 0; c < C; c++) x0[r * C + c] = (v[c] - mean) / sqrt(var + 1e-5) * lw[c] + lb[c];
    }
    uint8_t blocked[2 * 3 * 6 * 6];
    for (int k = 0; k < B * H * T * T; k++) blocked[k] = k % T > (k / T) % T;
    ref_mha r = {.B = B, .Tq = T, .Tk = T, .x = x0, .kv = x0, .blocked = blocked};
    ref_from_mha(&r, &m->h[0].attn);
    double *y = malloc(sizeof(double) * B * T * C);
    ref_mha_run(&r, y, want);
    free(y);
    assert_close_arr(w[0], want, B * H * T * T, 1e-12, "layer 0 weights");
    /* the weights are not near uniform (the check above could not pass by accident) */
    double spread = 0;
    for (int k = 0; k < B * H * T * T; k++)
        if (!blocked[k]) spread = fmax(spread, fabs(want[k] - 1.0 / ((k / T) % T + 1)));
    ck_assert_msg(spread > 0.2, "max distance from uniform %g", spread);
    /* layer 1: its own weights (not layer 0's); rows sum to 1, the future gets exactly 0 */
    double diff = 0;
    for (int k = 0; k < B * H * T * T; k++) diff = fmax(diff, fabs(dptr(w[1])[k] - want[k]));
    ck_assert_msg(diff > 0.05, "layer 1's weights are layer 0's (max difference %g)", diff);
    for (int row = 0; row < B * H * T; row++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            double a = dptr(w[1])[row * T + j];
            if (j > row % T) ck_assert_double_eq(a, 0.0);
            sum += a;
        }
        ck_assert_double_eq_tol(sum, 1.0, 1e-12);
    }
    /* with the cache: chunk [2,6) attends over 6 keys; its rows are rows 2..5 */
    double full1[2 * 3 * 6 * 6];
    memcpy(full1, dptr(w[1]), sizeof full1);
    ck_assert_int_eq(tg_model_cache_enable(&m_model, B, &err), 0);
    int32_t a[4], b4[8];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < 2; t++) a[b * 2 + t] = iv[b * T + t];
        for (int t = 0; t < 4; t++) b4[b * 4 + t] = iv[b * T + 2 + t];
    }
    ck_assert_ptr_nonnull(tg_model_forward(g, &m_model, ids(g, B, 2, a), NULL));
    ck_assert_ptr_nonnull(tg_model_forward(g, &m_model, ids(g, B, 4, b4), w));
    ck_assert_int_eq(w[1]->shape[2], 4);
    ck_assert_int_eq(w[1]->shape[3], 6);
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < T; j++)
                ck_assert_double_eq_tol(dptr(w[1])[(bh * 4 + i) * T + j], full1[(bh * T + 2 + i) * T + j], 1e-12);
    /* a failed forward leaves no stale tensors behind */
    tg_model_cache_clear(&m_model);
    ck_assert_ptr_null(tg_model_forward(g, &m_model, ids(g, B, 2, (int32_t[]){1, 13, 1, 13}), w));
    tt_assert_error(g, "token id 13");
    ck_assert_ptr_null(w[0]);
    ck_assert_ptr_null(w[1]);
    tg_graph_free(g);
    tg_model_release(&m_model);
}
END_TEST

START_TEST(gpt_input_errors)
{
    tg_model_config cfg = {.arch = "gpt", .n_layer = 1, .n_head = 1, .n_embd = 4, .block_size = 4, .vocab_size = 5};
    tg_error err = {0};
    tg_model m_model;
    ck_assert_msg(tg_model_init(&m_model, &cfg, TG_F32, 1, &err) == 0, "%s", err.msg);
    tg_graph *g = tg_graph_new();
    const int32_t iv[10] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    struct {
        tg_tensor *idx, *tgt;
        const char *needle;
    } cases[] = {
        {tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)), NULL, "gpt: idx must be i32 (B,T), got f32 (2,3)"},
        {tg_tensor_from(g, TG_I32, TT_SHAPE(4), iv), NULL, "gpt: idx must be i32 (B,T), got i32 (4)"},
        {ids(g, 2, 5, iv), NULL, "gpt: idx i32 (2,5): T = 5 with 0 cached positions exceeds block_size 4"},
        {ids(g, 1, 3, (int32_t[]){0, 5, 1}), NULL,
         "gpt: idx i32 (1,3): token id 5 at flat position 1 is outside [0, 5)"},
        {ids(g, 1, 3, (int32_t[]){0, 1, -1}), NULL, "token id -1 at flat position 2 is outside [0, 5)"},
        {NULL, NULL, "gpt: input 0 is NULL"},
        {ids(g, 2, 3, iv), ids(g, 3, 2, iv),
         "gpt_loss: targets must be i32 shaped like idx: targets i32 (3,2), idx i32 (2,3)"},
        {ids(g, 2, 3, iv), tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3)),
         "gpt_loss: targets must be i32 shaped like idx: targets f32 (2,3)"},
        {ids(g, 2, 3, iv), ids(g, 2, 3, (int32_t[]){-1, -1, -1, -1, -1, -1}), "every target is -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_ptr_null(tg_graph_error(g));
        tg_tensor *r = cases[i].tgt ? tg_model_loss(g, &m_model, cases[i].idx, cases[i].tgt)
                                    : tg_model_forward(g, &m_model, cases[i].idx, NULL);
        ck_assert_ptr_null(r);
        tt_assert_error(g, cases[i].needle);
        tg_graph_clear_error(g);
    }
    tg_graph_free(g);
    tg_model_release(&m_model);
}
END_TEST

int main(void)
{
    return tt_main("nn", "nn", 60,
                   TT_TESTS(linear_default_init_is_pytorchs, modules_init_and_forward, mha_matches_reference,
                            mha_gradcheck, mha_gradcheck_with_cache, attention_rows_and_future,
                            attention_permutation_equivariant, attention_head_split_order, attention_kv_cache_example,
                            attention_cache_matches_full, mha_fused_op_equals_composed, mha_uses_fused_tells_the_path,
                            attention_key_padding, attention_errors, gpt_names_and_init, gpt_config_errors,
                            gpt_num_params_matches_the_model, gpt_loss_at_init, gpt_gradcheck, gpt_incremental_decoding,
                            gpt_forward_attention_weights, gpt_input_errors));
}
