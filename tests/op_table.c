/* The rows of TT_OPS (see op_table.h). */
#include "op_table.h"

#include "tg_test.h"

enum { R = TT_OP_R, C = TT_OP_C };

/* ---- small inputs --------------------------------------------------------- */

void tt_op_small(tg_graph *g, tg_dtype dt, uint64_t seed, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(R, C), seed);
    a->x2 = tt_randn_dt(g, dt, TT_SHAPE(R, C), seed + 1);
    a->b = tt_randn_dt(g, dt, TT_SHAPE(C), seed + 2);
    a->w = tt_randn_dt(g, dt, TT_SHAPE(C), seed + 3);
    uint8_t m[R * C] = {0};
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) m[i * C + j] = j > i + 1; /* a causal-like mask: every row sees a key */
    a->mask = tg_tensor_from(g, TG_BOOL, TT_SHAPE(R, C), m);
    a->targets = tg_tensor_from(g, TG_I32, TT_SHAPE(R), ((int32_t[]){2, -1, 5, 0}));
}

int tt_op_leaves(const tt_op_in *a, tg_tensor **out)
{
    tg_tensor *all[6] = {a->x, a->x2, a->x3, a->w, a->b, a->bias};
    int n = 0;
    for (int i = 0; i < 6; i++)
        if (all[i]) out[n++] = all[i];
    return n;
}

/* ---- the ops ---------------------------------------------------------------- */

static tg_tensor *gelu(tg_graph *g, const tt_op_in *a) { return tg_gelu(g, a->x, TG_GELU_ERF); }
static tg_tensor *gelu_tanh(tg_graph *g, const tt_op_in *a) { return tg_gelu(g, a->x, TG_GELU_TANH); }
static tg_tensor *tanh_(tg_graph *g, const tt_op_in *a) { return tg_tanh(g, a->x); }
static tg_tensor *exp_(tg_graph *g, const tt_op_in *a) { return tg_exp(g, a->x); }
static tg_tensor *relu(tg_graph *g, const tt_op_in *a) { return tg_relu(g, a->x); }
static tg_tensor *relu2(tg_graph *g, const tt_op_in *a) { return tg_relu2(g, a->x); }
static tg_tensor *softcap(tg_graph *g, const tt_op_in *a) { return tg_softcap(g, a->x, 1.5); }
static tg_tensor *neg(tg_graph *g, const tt_op_in *a) { return tg_neg(g, a->x); }
/* sqrt of positives; mul stores first */
static tg_tensor *sqrt_(tg_graph *g, const tt_op_in *a) { return tg_sqrt(g, tg_mul(g, a->x, a->x)); }
static tg_tensor *log_(tg_graph *g, const tt_op_in *a) { return tg_log(g, tg_exp(g, a->x)); }
static tg_tensor *scale(tg_graph *g, const tt_op_in *a) { return tg_scale(g, a->x, -1.5); }
static tg_tensor *add(tg_graph *g, const tt_op_in *a) { return tg_add(g, a->x, a->x2); }
static tg_tensor *sub(tg_graph *g, const tt_op_in *a) { return tg_sub(g, a->x, a->x2); }
static tg_tensor *mul(tg_graph *g, const tt_op_in *a) { return tg_mul(g, a->x, a->x2); }
static tg_tensor *div_(tg_graph *g, const tt_op_in *a) { return tg_div(g, a->x, tg_exp(g, a->x2)); }
/* b broadcast: b's gradient is summed */
static tg_tensor *add_b(tg_graph *g, const tt_op_in *a) { return tg_add(g, a->x, a->b); }
static tg_tensor *mul_b(tg_graph *g, const tt_op_in *a) { return tg_mul(g, a->x, a->b); }
static tg_tensor *softmax(tg_graph *g, const tt_op_in *a) { return tg_softmax(g, a->x, a->mask); }
/* no mask: it would give -inf outputs */
static tg_tensor *log_softmax(tg_graph *g, const tt_op_in *a) { return tg_log_softmax(g, a->x, NULL); }
static tg_tensor *layernorm(tg_graph *g, const tt_op_in *a) { return tg_layernorm(g, a->x, a->w, a->b, 1e-5); }
static tg_tensor *cross_entropy(tg_graph *g, const tt_op_in *a) { return tg_cross_entropy(g, a->x, a->targets); }
/* x2 is the weight: small, (R,C) x (R,C)^T without bias */
static tg_tensor *linear(tg_graph *g, const tt_op_in *a) { return tg_linear(g, a->x, a->x2, a->bias); }

/* x @ x2^T (x2's last two axes swapped) */
static tg_tensor *matmul(tg_graph *g, const tt_op_in *a)
{
    const int n = a->x2->ndim;
    return tg_matmul(g, a->x, tg_transpose(g, a->x2, n - 2, n - 1));
}

/* causal, 3 heads, queries x, keys x2, values x3 (or x2); (T,C) operands
 * are one batch row; the queries are the last Tq of Tk positions */
static tg_tensor *attention(tg_graph *g, const tt_op_in *a)
{
    tg_tensor *q = a->x, *k = a->x2, *v = a->x3 ? a->x3 : a->x2;
    if (q->ndim == 2) {
        q = tg_reshape(g, q, TT_SHAPE(1, q->shape[0], q->shape[1]));
        k = tg_reshape(g, k, TT_SHAPE(1, k->shape[0], k->shape[1]));
        v = tg_reshape(g, v, TT_SHAPE(1, v->shape[0], v->shape[1]));
    }
    if (!q || !k || !v) return NULL;
    return tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, k->shape[1] - q->shape[1]);
}

static tg_tensor *rmsnorm(tg_graph *g, const tt_op_in *a) { return tg_rmsnorm(g, a->x, a->w, 1e-5); }
static tg_tensor *silu(tg_graph *g, const tt_op_in *a) { return tg_silu(g, a->x); }
static tg_tensor *swiglu(tg_graph *g, const tt_op_in *a) { return tg_swiglu(g, a->x, a->x2); }

/* heads of 2 in each row of x (positions from 3 on), all but the last turned */
static tg_tensor *rope(tg_graph *g, const tt_op_in *a)
{
    const int D = a->x->shape[a->x->ndim - 1];
    return tg_rope(g, a->x, 2, D / 2 - 1, 3, 10000, TG_ROPE_INTERLEAVED);
}

/* grouped-query: 3 query heads of x read the one kv head in the first
 * third of x2's (or x3's) columns */
static tg_tensor *attention_gqa(tg_graph *g, const tt_op_in *a)
{
    tg_tensor *q = a->x, *k = a->x2, *v = a->x3 ? a->x3 : a->x2;
    const int n = k->ndim, dh = q->shape[q->ndim - 1] / 3;
    k = tg_slice(g, k, n - 1, 0, dh);
    v = tg_slice(g, v, n - 1, a->x3 ? 0 : dh, a->x3 ? dh : 2 * dh);
    if (q->ndim == 2) {
        q = tg_reshape(g, q, TT_SHAPE(1, q->shape[0], q->shape[1]));
        k = tg_reshape(g, k, TT_SHAPE(1, k->shape[0], dh));
        v = tg_reshape(g, v, TT_SHAPE(1, v->shape[0], dh));
    }
    if (!q || !k || !v) return NULL;
    return tg_attention(g, q, k, v, 3, TG_ATTN_CAUSAL, k->shape[1] - q->shape[1]);
}

/* ---- large inputs ------------------------------------------------------------ */

/* (96, 512): the generic unary kernels */
static void big_x(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(96, 512), 1);
}

/* two (8, 64, 96): a residual's shapes */
static void big_pair(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(8, 64, 96), 3);
    a->x2 = tt_randn_dt(g, dt, TT_SHAPE(8, 64, 96), 4);
}

/* (8, 64, 96) and b (96), broadcast over 512 rows */
static void big_row_b(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(8, 64, 96), 5);
    a->b = tt_randn_dt(g, dt, TT_SHAPE(96), 6);
}

/* (8, 64, 96) and b (64, 96), broadcast over the batch */
static void big_batch_b(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(8, 64, 96), 5);
    a->b = tt_randn_dt(g, dt, TT_SHAPE(64, 96), 6);
}

/* (8, 4, 48, 48) under a causal (48, 48) mask */
static void big_scores(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(8, 4, 48, 48), 7);
    uint8_t m[48 * 48];
    for (int i = 0; i < 48; i++)
        for (int j = 0; j < 48; j++) m[i * 48 + j] = j > i;
    a->mask = tg_tensor_from(g, TG_BOOL, TT_SHAPE(48, 48), m);
}

/* (512, 65) */
static void big_logits(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(512, 65), 8);
}

/* (2048, 40) with weight and bias (40) */
static void big_norm(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(2048, 40), 9);
    a->w = tt_randn_dt(g, dt, TT_SHAPE(40), 10);
    a->b = tt_randn_dt(g, dt, TT_SHAPE(40), 11);
}

/* (1200, 65), every seventh target ignored */
static void big_targets(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(1200, 65), 20);
    int32_t tv[1200];
    for (int r = 0; r < 1200; r++) tv[r] = r % 7 == 3 ? -1 : (r * 31) % 65;
    a->targets = tg_tensor_from(g, TG_I32, TT_SHAPE(1200), tv);
}

/* (6, 100, 72) x (130, 72)^T + b (130): folded, split by rows */
static void big_linear(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(6, 100, 72), 14);
    a->x2 = tt_randn_dt(g, dt, TT_SHAPE(130, 72), 15);
    a->bias = tt_randn_dt(g, dt, TT_SHAPE(130), 16);
}

/* batched, x2^T broadcast over the first batch axis: (3,4,70,33) @ (4,33,50) */
static void big_matmul(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(3, 4, 70, 33), 12);
    a->x2 = tt_randn_dt(g, dt, TT_SHAPE(4, 50, 33), 13);
}

/* queries (4,50,24), keys and values (4,52,24): q_pos 2 */
static void big_attention(tg_graph *g, tg_dtype dt, tt_op_in *a)
{
    memset(a, 0, sizeof *a);
    a->x = tt_randn_dt(g, dt, TT_SHAPE(4, 50, 24), 17);
    a->x2 = tt_randn_dt(g, dt, TT_SHAPE(4, 52, 24), 18);
    a->x3 = tt_randn_dt(g, dt, TT_SHAPE(4, 52, 24), 19);
}

/* ---- the table ------------------------------------------------------------------ */

const tt_op TT_OPS[] = {
    {"gelu", gelu, big_x},
    {"gelu_tanh", gelu_tanh, big_x},
    {"tanh", tanh_, big_x},
    {"exp", exp_, big_x},
    {"relu", relu, big_x},
    {"relu2", relu2, big_x},
    {"softcap", softcap, big_x},
    {"neg", neg, big_x},
    {"sqrt", sqrt_, big_x},
    {"log", log_, big_x},
    {"scale", scale, big_x},
    {"add", add, big_pair},
    {"sub", sub, big_pair},
    {"mul", mul, big_pair},
    {"div", div_, big_pair},
    {"add(broadcast)", add_b, big_row_b},
    {"softmax", softmax, big_scores},
    {"log_softmax", log_softmax, big_logits},
    {"layernorm", layernorm, big_norm},
    {"cross_entropy", cross_entropy, big_targets},
    {"linear", linear, big_linear},
    {"mul(broadcast)", mul_b, big_batch_b},
    {"matmul", matmul, big_matmul},
    {"attention", attention, big_attention},
    {"rmsnorm", rmsnorm, big_norm},
    {"silu", silu, big_x},
    {"swiglu", swiglu, big_pair},
    {"rope", rope, big_pair},
    {"attention(grouped)", attention_gqa, big_attention},
};
const int TT_N_OPS = sizeof TT_OPS / sizeof TT_OPS[0];
