/* Matrix product with batch broadcasting, on the gemm driver (ops/gemm.c:
 * the tuned sgemm or OpenBLAS).
 *
 *   Y = A B          A (..., M, K), B (..., K, N), Y (..., M, N)
 *   dA += dY B^T     (M,N) @ (N,K) -> (M,K)
 *   dB += A^T dY     (K,M) @ (M,N) -> (K,N)
 *
 * Leading (batch) dimensions broadcast as in NumPy; each output batch is
 * one gemm on the matrices of A and B it reads. The transposes are BLAS
 * flags, and backward gemms run with beta = 1, so gradients accumulate in
 * place with no copy or temporary: where A or B was broadcast over output
 * batches, the gemms of those batches all add into the same gradient
 * matrix, which sums dA (or dB) over the broadcast batches.
 *
 * Fold: when B has no real batch (its leading dims are absent or 1), the
 * batches of A are consecutive (M,K) blocks, i.e. one (batch*M, K) matrix,
 * and so are those of Y and dY. Then forward is a single gemm, and so is
 * each backward product: dA (batch*M, K) += dY (batch*M, N) @ B^T and
 * dB (K,N) += A^T (K, batch*M) @ dY (batch*M, N).
 *
 * 1-D operands (NumPy): a 1-D a (K) is the row (1,K) and a 1-D b (K) the
 * column (K,1); the added dimension is left out of Y's shape. Contiguous
 * data is the same either way, so this is bookkeeping on shapes only.

 *
 * Threads: a folded product is one gemm, split by rows inside; unfolded
 * batches are shared out among threads, except in a backward where a
 * broadcast operand's gradient is summed over batches (then in order). */
#include "ops.h"

#include <limits.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "gemm_internal.h"

/* How a and b combine: the gemm sizes and the output batches. */
typedef struct mm_plan {
    int M, K, N;
    int bdim[2]; /* output batch dims, padded on the left with 1 */
    int64_t sa[2], sb[2]; /* strides of a's / b's matrices per batch dim; 0 where broadcast */
    bool fold; /* b has no real batch: a single gemm over batch*M rows */
    int ndim; /* of the output */
    int shape[TG_MAX_DIMS];
} mm_plan;

/* Fills p from the shapes; returns NULL on success or the reason they do
 * not fit. a and b have ndim >= 1. */
static const char *mm_plan_make(const tg_tensor *a, const tg_tensor *b, mm_plan *p)
{
    const int na = a->ndim, nb = b->ndim;
    p->M = na == 1 ? 1 : a->shape[na - 2];
    p->K = a->shape[na - 1];
    const int kb = nb == 1 ? b->shape[0] : b->shape[nb - 2];
    p->N = nb == 1 ? 1 : b->shape[nb - 1];
    if (kb != p->K) return "inner dimensions differ";

    /* batch dims of each operand, right-aligned in two slots */
    const int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0;
    int da[2], db[2];
    for (int i = 0; i < 2; i++) {
        da[i] = i < 2 - ba ? 1 : a->shape[i - (2 - ba)];
        db[i] = i < 2 - bb ? 1 : b->shape[i - (2 - bb)];
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1) return "batch dimensions do not broadcast";
        p->bdim[i] = da[i] > db[i] ? da[i] : db[i];
    }
    p->sa[1] = da[1] == 1 ? 0 : 1;
    p->sa[0] = da[0] == 1 ? 0 : da[1];
    p->sb[1] = db[1] == 1 ? 0 : 1;
    p->sb[0] = db[0] == 1 ? 0 : db[1];
    /* folding needs the row count batch*M to fit BLAS's int */
    p->fold = db[0] == 1 && db[1] == 1 && (int64_t)da[0] * da[1] * p->M <= INT_MAX;

    const int bo = ba > bb ? ba : bb;
    p->ndim = 0;
    for (int i = 2 - bo; i < 2; i++) p->shape[p->ndim++] = p->bdim[i];
    if (na > 1) p->shape[p->ndim++] = p->M;
    if (nb > 1) p->shape[p->ndim++] = p->N;
    for (int i = p->ndim; i < TG_MAX_DIMS; i++) p->shape[i] = 1;
    return NULL;
}

/* The element offsets of output batch `bi`'s matrices in a, b and y. */
static void batch_offsets(const mm_plan *p, int64_t bi, int64_t *oa, int64_t *ob, int64_t *oy)
{
    const int64_t i0 = bi / p->bdim[1], i1 = bi % p->bdim[1];
    *oa = (i0 * p->sa[0] + i1 * p->sa[1]) * p->M * p->K;
    *ob = (i0 * p->sb[0] + i1 * p->sb[1]) * p->K * p->N;
    *oy = bi * p->M * p->N;
}

/* One product job: the forward, or the backward's dA and dB products. */
typedef struct mm_job {
    const mm_plan *p;
    const void *a, *b, *dy;
    void *y, *ga, *gb;
} mm_job;

#define T float
#define KERNEL(name) name##_f32
#include "matmul_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "matmul_kernels.inc"

/* Runs fn over the output batches: folded, it is one call (whose gemms
 * split themselves); otherwise batches are shared out among threads when
 * no two batches write the same matrix (`own`), else run in order. */
static void run_batches(const mm_plan *p, bool own, tg_range_fn fn, mm_job *j)
{
    const int64_t nb = (int64_t)p->bdim[0] * p->bdim[1];
    if (p->fold || !own) fn(j, 0, nb);
    else tg_parallel_for(nb, 1, fn, j);
}

/* true when every output batch reads its own matrix of the operand */
static bool unbroadcast(const mm_plan *p, const int64_t s[2])
{
    return (p->bdim[0] == 1 || s[0]) && (p->bdim[1] == 1 || s[1]);
}

static void matmul_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *a = nd->in[0], *b = nd->in[1], *y = nd->out;
    mm_plan p;
    mm_plan_make(a, b, &p); /* the shapes were checked in the forward */
    mm_job j = {&p, a->data, b->data, y->grad, NULL, tg_grad(g, a), tg_grad(g, b)};
    if (!j.ga && !j.gb) return;
    const bool own = (!j.ga || unbroadcast(&p, p.sa)) && (!j.gb || unbroadcast(&p, p.sb));
    run_batches(&p, own, y->dtype == TG_F32 ? backward_f32 : backward_f64, &j);
}

tg_tensor *tg_matmul(tg_graph *g, tg_tensor *a, tg_tensor *b)
{
    tg_tensor *in[2] = {a, b};
    if (!tg_op_begin(g, "matmul", 2, in) || !tg_op_check_same_dtype(g, "matmul", a, b)) return NULL;
    char sa[64], sb[64];
    tg_shape_str(a, sa, sizeof sa);
    tg_shape_str(b, sb, sizeof sb);
    const char *dt = tg_dtype_name(a->dtype);
    if (a->ndim == 0 || b->ndim == 0)
        return tg_fail(g, "matmul: operands must have at least 1 dimension, got a scalar: a %s %s x b %s %s", dt, sa,
                       dt, sb);
    mm_plan p;
    const char *why = mm_plan_make(a, b, &p);
    if (why) return tg_fail(g, "matmul: %s: a %s %s x b %s %s", why, dt, sa, dt, sb);

    tg_tensor *y = tg_op_output(g, a->dtype, p.ndim, p.shape); /* (..., M, N) */
    if (!y) return NULL;
    mm_job j = {&p, a->data, b->data, NULL, y->data, NULL, NULL};
    run_batches(&p, true, y->dtype == TG_F32 ? forward_f32 : forward_f64, &j);
    tg_op_record(g, "matmul", matmul_backward, y, 2, in);
    return tg_graph_error(g) ? NULL : y;
}
