/* core: tg_grad_store. An op whose backward is the first to reach an
 * activation's gradient stores its contribution (no zero-fill, no read);
 * one that comes later adds. Each op runs on an intermediate u = 1 * x
 * (a non-leaf, so its gradient starts empty on every backward):
 *
 *   alone:  f = op(u)                          op's backward stores into du
 *   shared: f = sum(op(u)) + sum(tanh(u))      tanh's backward (recorded
 *                                              later, run first) stores, op adds
 *
 * Both are gradchecked in f64; the f32 kernels (their own code) are held
 * to the f64 gradients of the same numbers. */
#include "tg_test.h"

enum { N_OPS = 19 };
static const char *const NAMES[N_OPS] = {"gelu", "gelu_tanh", "tanh", "exp", "relu", "neg", "sqrt", "log",
                                         "scale", "add", "sub", "mul", "div", "add(broadcast)", "softmax",
                                         "log_softmax", "layernorm", "cross_entropy", "linear"};

typedef struct ctx {
    int op;
    bool shared;
    tg_tensor *mask, *targets, *w, *b;   /* per-op constants / leaves */
} ctx;

/* op applied to u (and, for binary ops, to a second intermediate u2) */
static tg_tensor *apply(tg_graph *g, const ctx *c, tg_tensor *u, tg_tensor *u2)
{
    switch (c->op) {
    case 0: return tg_gelu(g, u, TG_GELU_ERF);
    case 1: return tg_gelu(g, u, TG_GELU_TANH);
    case 2: return tg_tanh(g, u);
    case 3: return tg_exp(g, u);
    case 4: return tg_relu(g, u);
    case 5: return tg_neg(g, u);
    case 6: return tg_sqrt(g, tg_mul(g, u, u));   /* sqrt of positives; mul stores first */
    case 7: return tg_log(g, tg_exp(g, u));
    case 8: return tg_scale(g, u, -1.5);
    case 9: return tg_add(g, u, u2);
    case 10: return tg_sub(g, u, u2);
    case 11: return tg_mul(g, u, u2);
    case 12: return tg_div(g, u, tg_exp(g, u2));
    case 13: return tg_add(g, u, c->b);            /* b (C) broadcast: b's gradient is summed */
    case 14: return tg_softmax(g, u, c->mask);
    case 15: return tg_log_softmax(g, u, NULL);    /* a mask would give -inf outputs */
    case 16: return tg_layernorm(g, u, c->w, c->b, 1e-5);
    case 17: return tg_cross_entropy(g, u, c->targets);
    default: return tg_linear(g, u, u2, NULL);     /* (R,C) x (R,C)^T: u2 is the weight (out R, in C) */
    }
}

static tg_tensor *chain(tg_graph *g, tg_tensor **in, void *vc)
{
    const ctx *c = vc;
    tg_tensor *u = tg_scale(g, in[0], 1.0), *u2 = tg_scale(g, in[1], 1.0);   /* (R,C) intermediates */
    tg_tensor *v = apply(g, c, u, u2);
    if (!c->shared) return v;
    return tg_add(g, tg_sum_all(g, v), tg_sum_all(g, tg_tanh(g, u)));
}

enum { R = 4, C = 6 };

/* Fills the memory the graph will hand out next with NaN, so a stored
 * gradient that misses an element shows up (a new arena is zeros). */
static void poison(tg_graph *g)
{
    tg_tensor *t = tg_tensor_new(g, TG_F64, 1, (int[]){1 << 16});
    for (int64_t e = 0; e < t->numel; e++) ((double *)t->data)[e] = NAN;
    tg_graph_reset(g);
}

/* Leaves and constants of dtype dt for op `op` (inputs x, x2 first). */
static void setup(tg_graph *g, tg_dtype dt, int op, ctx *c, tg_tensor **in, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    tg_tensor *x = tt_randn(g, TT_SHAPE(R, C), seed), *x2 = tt_randn(g, TT_SHAPE(R, C), seed + 1);
    tg_tensor *b = tt_randn(g, TT_SHAPE(C), seed + 2), *w = tt_randn(g, TT_SHAPE(C), seed + 3);
    if (dt == TG_F32) { /* the same numbers, rounded to f32 */
        tg_tensor *src[4] = {x, x2, b, w}, *dst[4];
        for (int k = 0; k < 4; k++) {
            dst[k] = tg_tensor_new(g, TG_F32, src[k]->ndim, src[k]->shape);
            for (int64_t e = 0; e < src[k]->numel; e++)
                ((float *)dst[k]->data)[e] = (float)((double *)src[k]->data)[e];
            tg_tensor_set_requires_grad(g, dst[k], true);
        }
        x = dst[0], x2 = dst[1], b = dst[2], w = dst[3];
    }
    uint8_t m[R * C] = {0};
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) m[i * C + j] = j > i + 1;   /* a causal-like mask: every row sees a key */
    c->mask = tg_tensor_from(g, TG_BOOL, TT_SHAPE(R, C), m);
    c->targets = tg_tensor_from(g, TG_I32, TT_SHAPE(R), ((int32_t[]){2, -1, 5, 0}));
    c->b = b, c->w = w;
    in[0] = x, in[1] = x2;
}

START_TEST(store_then_add_gradcheck)
{
    const int op = _i / 2;
    tg_graph *g = tg_graph_new();
    poison(g);
    ctx c;
    tg_tensor *in[2];
    setup(g, TG_F64, op, &c, in, 100 + (uint64_t)op);
    c.shared = _i % 2;
    tg_tensor *inputs[4] = {in[0], in[1], c.w, c.b};
    tt_assert_gradcheck(chain, &c, 4, inputs);
    tg_graph_free(g);
}
END_TEST

/* The f32 backward (stored and added) against f64 on the same numbers. */
START_TEST(store_then_add_f32)
{
    const int op = _i / 2;
    double *want[2] = {0};
    for (int d = 0; d < 2; d++) {
        const tg_dtype dt = d ? TG_F32 : TG_F64;
        tg_graph *g = tg_graph_new();
        poison(g);
        ctx c;
        tg_tensor *in[2];
        setup(g, dt, op, &c, in, 100 + (uint64_t)op);
        c.shared = _i % 2;
        tg_tensor *f = tg_sum_all(g, chain(g, in, &c));
        ck_assert_msg(f && tg_graph_backward(g, f) == 0, "%s: %s", NAMES[op], tg_graph_error(g));
        if (!d) {
            for (int k = 0; k < 2; k++) {
                want[k] = malloc(R * C * sizeof(double));
                memcpy(want[k], in[k]->grad, R * C * sizeof(double));
            }
        } else {
            for (int k = 0; k < 2; k++)
                for (int e = 0; e < R * C; e++) {
                    const double got = ((float *)in[k]->grad)[e], ref = want[k][e];
                    ck_assert_msg(fabs(got - ref) <= 2e-5 * (1 + fabs(ref)),
                                  "%s%s: d input %d [%d]: f32 %.9g, f64 %.9g", NAMES[op], c.shared ? " (shared)" : "",
                                  k, e, got, ref);
                }
        }
        tg_graph_free(g);
    }
    free(want[0]), free(want[1]);
}
END_TEST

/* x + x: both gradients are one buffer, so neither side may store */
static tg_tensor *twice(tg_graph *g, tg_tensor **in, void *c)
{
    (void)c;
    tg_tensor *u = tg_scale(g, in[0], 1.0);
    return tg_mul(g, tg_add(g, u, u), tg_sub(g, u, tg_scale(g, u, 3.0)));
}

/* linear(u, u): x is also the weight; dX is stored first, then dW adds to it */
static tg_tensor *self_linear(tg_graph *g, tg_tensor **in, void *c)
{
    (void)c;
    tg_tensor *u = tg_scale(g, in[0], 1.0);
    return tg_linear(g, u, u, NULL);
}

START_TEST(same_tensor_twice)
{
    tg_graph *g = tg_graph_new();
    poison(g);
    tg_tensor *x = tt_randn(g, TT_SHAPE(R, C), 7);
    tt_assert_gradcheck(twice, NULL, 1, &x);
    tt_assert_gradcheck(self_linear, NULL, 1, &x);
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("grad_store", "grad_store", 0,
                   TT_TESTS(TT_LOOP(store_then_add_gradcheck, 2 * N_OPS), TT_LOOP(store_then_add_f32, 2 * N_OPS),
                            same_tensor_twice));
}
