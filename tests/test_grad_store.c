/* core: tg_grad_store. An op whose backward is the first to reach an
 * activation's gradient stores its contribution (no zero-fill, no read);
 * one that comes later adds. Each op of the table (op_table.h) runs on
 * intermediates u = 1 * x, u2 = 1 * x2 (non-leaves, so their gradients
 * start empty on every backward):
 *
 *   alone:  f = op(u)                          op's backward stores into du
 *   shared: f = sum(op(u)) + sum(tanh(u))      tanh's backward (recorded
 *                                              later, run first) stores, op adds
 *
 * Both are gradchecked in f64; the f32 kernels (their own code) are held
 * to the f64 gradients of the same numbers. */
#include "tg_test.h"

#include "op_table.h"

enum { R = TT_OP_R, C = TT_OP_C };

typedef struct ctx {
    const tt_op *op;
    bool shared;
    tt_op_in in; /* the op's small inputs; x and x2 replaced by intermediates */
} ctx;

static tg_tensor *chain(tg_graph *g, tg_tensor **in, void *vc)
{
    const ctx *c = vc;
    tt_op_in a = c->in;
    a.x = tg_scale(g, in[0], 1.0), a.x2 = tg_scale(g, in[1], 1.0); /* (R,C) intermediates */
    tg_tensor *v = c->op->apply(g, &a);
    if (!c->shared) return v;
    return tg_add(g, tg_sum_all(g, v), tg_sum_all(g, tg_tanh(g, a.x)));
}

/* Fills the memory the graph will hand out next with NaN, so a stored
 * gradient that misses an element shows up (a new arena is zeros). */
static void poison(tg_graph *g)
{
    tg_tensor *t = tg_tensor_new(g, TG_F64, 1, (int[]){1 << 16});
    for (int64_t e = 0; e < t->numel; e++) ((double *)t->data)[e] = NAN;
    tg_graph_reset(g);
}

/* Op k's small inputs of dtype dt; in[] gets the leaves x, x2. */
static void setup(tg_graph *g, tg_dtype dt, int k, ctx *c, tg_tensor **in, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->op = &TT_OPS[k];
    tt_op_small(g, dt, seed, &c->in);
    in[0] = c->in.x, in[1] = c->in.x2;
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
    tg_tensor *inputs[4] = {in[0], in[1], c.in.w, c.in.b};
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
        ck_assert_msg(f && tg_graph_backward(g, f) == 0, "%s: %s", TT_OPS[op].name, tg_graph_error(g));
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
                                  "%s%s: d input %d [%d]: f32 %.9g, f64 %.9g", TT_OPS[op].name,
                                  c.shared ? " (shared)" : "", k, e, got, ref);
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
                   TT_TESTS(TT_LOOP(store_then_add_gradcheck, 2 * TT_N_OPS), TT_LOOP(store_then_add_f32, 2 * TT_N_OPS),
                            same_tensor_twice));
}
