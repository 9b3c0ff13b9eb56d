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
 * a broadcast value in the forward adds into it in the backward. */
#include "ops.h"

#include "../core/op.h"

enum { ADD, SUB, MUL, DIV };
static const char *const NAMES[] = {"add", "sub", "mul", "div"};

/* Opens a loop over the contiguous runs of the output's last dimension:
 * inside, pa/pb/py (and pga/pgb/pdy) point at the run's first elements,
 * n is its length, xa/xb the operands' strides along it. */
#define FOR_EACH_RUN(bc)                                                        \
    for (int64_t d0 = 0, i = 0; d0 < (bc)->dim[0]; d0++)                        \
        for (int64_t d1 = 0; d1 < (bc)->dim[1]; d1++)                           \
            for (int64_t d2 = 0; d2 < (bc)->dim[2]; d2++, i += (bc)->dim[3])

#define RUN_OFFSETS(bc)                                                         \
    const int64_t oa = d0 * (bc)->stride[0][0] + d1 * (bc)->stride[0][1] + d2 * (bc)->stride[0][2]; \
    const int64_t ob = d0 * (bc)->stride[1][0] + d1 * (bc)->stride[1][1] + d2 * (bc)->stride[1][2]; \
    const int n = (bc)->dim[3];                                                 \
    const int64_t xa = (bc)->stride[0][3], xb = (bc)->stride[1][3];

#define DEFINE_BINARY(T)                                                                    \
    static void forward_##T(int op, const tg_bcast *bc, const T *a, const T *b, T *y)       \
    {                                                                                       \
        FOR_EACH_RUN(bc) {                                                                  \
            RUN_OFFSETS(bc)                                                                 \
            const T *pa = a + oa, *pb = b + ob;                                             \
            T *py = y + i;                                                                  \
            switch (op) {                                                                   \
            case ADD: for (int j = 0; j < n; j++) py[j] = pa[j * xa] + pb[j * xb]; break;   \
            case SUB: for (int j = 0; j < n; j++) py[j] = pa[j * xa] - pb[j * xb]; break;   \
            case MUL: for (int j = 0; j < n; j++) py[j] = pa[j * xa] * pb[j * xb]; break;   \
            default:  for (int j = 0; j < n; j++) py[j] = pa[j * xa] / pb[j * xb]; break;   \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    static void backward_##T(int op, const tg_bcast *bc, const T *a, const T *b,            \
                             const T *y, const T *dy, T *ga, T *gb)                         \
    {                                                                                       \
        FOR_EACH_RUN(bc) {                                                                  \
            RUN_OFFSETS(bc)                                                                 \
            const T *pa = a + oa, *pb = b + ob, *py = y + i, *pdy = dy + i;                 \
            if (ga) {                                                                       \
                T *g = ga + oa;                                                             \
                switch (op) {                                                               \
                case ADD: case SUB: for (int j = 0; j < n; j++) g[j * xa] += pdy[j]; break; \
                case MUL: for (int j = 0; j < n; j++) g[j * xa] += pdy[j] * pb[j * xb]; break; \
                default:  for (int j = 0; j < n; j++) g[j * xa] += pdy[j] / pb[j * xb]; break; \
                }                                                                           \
            }                                                                               \
            if (gb) {                                                                       \
                T *g = gb + ob;                                                             \
                switch (op) {                                                               \
                case ADD: for (int j = 0; j < n; j++) g[j * xb] += pdy[j]; break;           \
                case SUB: for (int j = 0; j < n; j++) g[j * xb] -= pdy[j]; break;           \
                case MUL: for (int j = 0; j < n; j++) g[j * xb] += pdy[j] * pa[j * xa]; break; \
                default:  for (int j = 0; j < n; j++) g[j * xb] -= pdy[j] * py[j] / pb[j * xb]; break; \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }

DEFINE_BINARY(float)
DEFINE_BINARY(double)

static void binary_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *a = nd->in[0], *b = nd->in[1], *y = nd->out;
    tg_bcast bc;
    tg_broadcast(a, b, &bc);
    void *ga = tg_grad(g, a), *gb = tg_grad(g, b);
    if (y->dtype == TG_F32) backward_float(nd->iarg[0], &bc, a->data, b->data, y->data, y->grad, ga, gb);
    else backward_double(nd->iarg[0], &bc, a->data, b->data, y->data, y->grad, ga, gb);
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
    if (y->dtype == TG_F32) forward_float(op, &bc, a->data, b->data, y->data);
    else forward_double(op, &bc, a->data, b->data, y->data);
    tg_node *nd = tg_op_record(g, name, binary_backward, y, 2, in);
    if (nd) nd->iarg[0] = op;
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_add(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, ADD, a, b); }
tg_tensor *tg_sub(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, SUB, a, b); }
tg_tensor *tg_mul(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, MUL, a, b); }
tg_tensor *tg_div(tg_graph *g, tg_tensor *a, tg_tensor *b) { return binary(g, DIV, a, b); }
