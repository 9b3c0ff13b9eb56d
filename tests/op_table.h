/* The ops of the cross-cutting tests, one row each. test_grad_store,
 * test_parallel and test_memory loop over TT_OPS, so an op joins all three
 * by adding one row to op_table.c:
 *
 *   test_grad_store  apply on the small inputs (tt_op_small) whose x and x2
 *                    are intermediates: gradcheck in f64, f32 held to f64,
 *                    alone and after another op stored the gradient
 *   test_parallel    apply on the row's large inputs: 3 threads give the
 *                    1-thread results, and the same bits on every run
 *   test_memory      a steady-state step (small inputs, apply, backward,
 *                    reset) allocates nothing
 *
 * Adding a row: an apply that reads the tensors of tt_op_in it needs (and
 * works on the small inputs as they are: x and x2 (R,C) = (4,6), w and b
 * (C)), and a large builder that makes those tensors big enough for
 * every threaded kernel of the op to split its work (float leaves from
 * tt_randn_dt, each with a seed of its own). Rows 0-18 keep the order (and
 * so the seeds, 100 + row) test_grad_store had; new rows go at the end. */
#ifndef TT_OP_TABLE_H
#define TT_OP_TABLE_H

#include "tapegrad.h"

/* The tensors an op is applied to; each row reads the ones it needs. */
typedef struct tt_op_in {
    tg_tensor *x, *x2; /* float operands (intermediates in test_grad_store) */
    tg_tensor *x3; /* a third float operand (attention's values), or NULL: x2 serves */
    tg_tensor *w, *b; /* float leaves: layernorm's weight and bias, a broadcast operand */
    tg_tensor *bias; /* linear's bias, or NULL */
    tg_tensor *mask; /* bool (softmax) */
    tg_tensor *targets; /* i32 (cross-entropy) */
} tt_op_in;

typedef struct tt_op {
    const char *name;
    /* the op (with what it needs around it, e.g. sqrt of x * x) on a */
    tg_tensor *(*apply)(tg_graph *g, const tt_op_in *a);
    /* fills a (zeroed first) with the op's large inputs of dtype dt */
    void (*large)(tg_graph *g, tg_dtype dt, tt_op_in *a);
} tt_op;

extern const tt_op TT_OPS[];
extern const int TT_N_OPS;

enum { TT_OP_R = 4, TT_OP_C = 6 };

/* The small inputs every row takes, of dtype dt (tt_randn's numbers,
 * rounded for f32): x, x2 (R,C) from seeds seed and seed + 1, b and w (C)
 * from seed + 2 and seed + 3, all requiring grad; a causal-like mask (R,C)
 * under which every row sees a key; targets (R) {2, -1, 5, 0}. */
void tt_op_small(tg_graph *g, tg_dtype dt, uint64_t seed, tt_op_in *a);

/* a's float tensors that are set, in the order x, x2, x3, w, b, bias,
 * into out (room for 6); returns how many. */
int tt_op_leaves(const tt_op_in *a, tg_tensor **out);

#endif
