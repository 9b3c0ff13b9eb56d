/* Elementwise binary ops with NumPy broadcasting.
 *
 *   add  y = a + b     da += dy          db += dy
 *   sub  y = a - b     da += dy          db -= dy
 *   mul  y = a * b     da += dy * b      db += dy * a
 *   div  y = a / b     da += dy / b      db -= dy * a / b^2  (= dy * y / b)
 *
 * Where an operand was broadcast, its gradient is dy summed over the
 * broadcast dimensions. The loops walk the output's index space with each
 * operand's stride (0 along a broadcast dimension), so the walk that reads
 * a broadcast value in the forward adds into it in the backward. The runs
 * are shared out among threads, except in a backward that sums over a
 * broadcast operand. */
#include "ops.h"

#include "../core/op.h"
#include "../core/parallel.h"

#define BINARY_GRAIN 16384 /* elements per thread, at least */

enum { ADD, SUB, MUL, DIV };
static const char *const NAMES[] = {"add", "sub", "mul", "div"};

/* The offsets in a and b of run r: the elements (d0, d1, d2, 0..dim[3]-1)
 * of the output's index space, r = (d0 dim[1] + d1) dim[2] + d2. */
static inline void run_start(const tg_bcast *bc, int64_t r, int64_t *oa, int64_t *ob)
{
    const int64_t d2 = r % bc->dim[2], d1 = r / bc->dim[2] % bc->dim[1];
    const int64_t d0 = r / ((int64_t)bc->dim[2] * bc->dim[1]);
    *oa = d0 * bc->stride[0][0] + d1 * bc->stride[0][1] + d2 * bc->stride[0][2];
    *ob = d0 * bc->stride[1][0] + d1 * bc->stride[1][1] + d2 * bc->stride[1][2];
}

/* dst += e over the run (j = 0..n-1), or dst = e when `store` (a new
 * gradient that this op alone writes: no zero-fill, no read) */
#define PUT(store, dst, e)                                                                                             \
    do {                                                                                                               \
        if (store)                                                                                                     \
            for (int j = 0; j < n; j++) dst = (e);                                                                     \
        else                                                                                                           \
            for (int j = 0; j < n; j++) dst += (e);                                                                    \
    } while (0)

#define T float
#define KERNEL(name) name##_f32
#include "binary_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "binary_kernels.inc"

/* One pass over the output's runs, cut across threads. */
typedef struct binary_job {
    int op;
    const tg_bcast *bc;
    tg_dtype dt;
    const void *a, *b, *y, *dy;
    void *out, *ga, *gb; /* out: y in the forward; ga, gb: gradients in the backward */
    bool sa, sb; /* store into ga / gb instead of adding (new, unbroadcast gradients) */
} binary_job;

static void binary_part(void *ctx, int64_t lo, int64_t hi)
{
    const binary_job *j = ctx;
    if (j->out && j->dt == TG_F32) forward_f32(j->op, j->bc, j->a, j->b, j->out, lo, hi);
    else if (j->out) forward_f64(j->op, j->bc, j->a, j->b, j->out, lo, hi);
    else if (j->dt == TG_F32) backward_f32(j->op, j->bc, j->a, j->b, j->y, j->dy, j->ga, j->gb, j->sa, j->sb, lo, hi);
    else backward_f64(j->op, j->bc, j->a, j->b, j->y, j->dy, j->ga, j->gb, j->sa, j->sb, lo, hi);
}

/* Runs the job over every run; in threads unless a broadcast operand's
 * gradient is being summed (two runs would add into the same elements). */
static void binary_run(binary_job *j, bool threads)
{
    const tg_bcast *bc = j->bc;
    const int64_t runs = (int64_t)bc->dim[0] * bc->dim[1] * bc->dim[2];
    if (threads) tg_parallel_for(runs, 1 + BINARY_GRAIN / bc->dim[3], binary_part, j);
    else binary_part(j, 0, runs);
}

static void binary_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *a = nd->in[0], *b = nd->in[1], *y = nd->out;
    tg_bcast bc;
    tg_broadcast(a, b, &bc);
    binary_job j = {nd->iarg[0], &bc, y->dtype, a->data, b->data, y->data, y->grad, NULL, NULL, NULL, false, false};
    /* a new gradient of an operand read once per output element (not
     * broadcast, not both operands) is stored, not added */
    const bool full_a = a->numel == y->numel, full_b = b->numel == y->numel;
    j.ga = full_a && a != b ? tg_grad_store(g, a, &j.sa) : tg_grad(g, a);
    j.gb = full_b && a != b ? tg_grad_store(g, b, &j.sb) : tg_grad(g, b);
    binary_run(&j, (!j.ga || full_a) && (!j.gb || full_b));
}

static tg_tensor *binary(tg_graph *g, int op, tg_tensor *a, tg_tensor *b)
{
    const char *name = NAMES[op];
    tg_tensor *in[2] = {a, b};
    if (!tg_op_begin(g, name, 2, in) || !tg_op_check_same_dtype(g, name, a, b)) return NULL;
    tg_bcast bc;
    if (!tg_broadcast(a, b, &bc)) {
        char sa[64], sb[64];
        return tg_fail(g, "%s: shapes do not broadcast: a %s %s, b %s %s", name, tg_dtype_name(a->dtype),
                       tg_shape_str(a, sa, sizeof sa), tg_dtype_name(b->dtype), tg_shape_str(b, sb, sizeof sb));
    }
    if (op == DIV)
        for (int64_t i = 0; i < b->numel; i++)
            if (tg_tensor_get(b, i) == 0) {
                char sb[64];
                return tg_fail(g, "div: divisor b %s is zero at element %lld", tg_shape_str(b, sb, sizeof sb),
                               (long long)i);
            }
    tg_tensor *y = tg_op_output(g, a->dtype, bc.ndim, bc.shape);
    if (!y) return NULL;
    binary_job j = {op, &bc, y->dtype, a->data, b->data, NULL, NULL, y->data, NULL, NULL, false, false};
    binary_run(&j, true);
    tg_node *nd = tg_op_record(g, name, binary_backward, y, 2, in);
    if (nd) nd->iarg[0] = op;
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_add(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, ADD, a, b); }
tg_tensor *tg_sub(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, SUB, a, b); }
tg_tensor *tg_mul(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, MUL, a, b); }
tg_tensor *tg_div(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, DIV, a, b); }
