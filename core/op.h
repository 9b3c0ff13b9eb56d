/* tapegrad core: the interface for writing an op (every op in ops/ uses it,
 * and so can a user's own op — then check it with tg_gradcheck).
 *
 * The shape of an op:
 *
 *   tg_tensor *my_op(tg_graph *g, tg_tensor *x) {
 *       tg_tensor *in[1] = {x};
 *       if (!tg_op_begin(g, "my_op", 1, in)) return NULL;    // NULL/error
 *       ...check dtypes and shapes, return tg_fail(g, ...) if wrong...
 *       tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape);
 *       if (!y) return NULL;
 *       ...compute y->data...
 *       tg_node *n = tg_op_record(g, "my_op", my_op_backward, y, 1, in);
 *       if (n) { ...save what backward needs in n->saved / n->iarg... }
 *       return tg_graph_error(g) ? NULL : y;
 *   }
 *
 *   static void my_op_backward(tg_graph *g, tg_node *n) {
 *       float *gx = tg_grad(g, n->in[0]);   // NULL: input needs no grad
 *       if (gx) ...gx[i] += ... n->out->grad[i] ...
 *   }
 */
#ifndef TG_OP_H
#define TG_OP_H

#include <stdarg.h>

#include "export.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_INPUTS 4

typedef struct tg_node tg_node;
typedef void (*tg_backward_fn)(tg_graph *g, tg_node *n);

/* One entry of the tape. */
struct tg_node {
    const char *op;
    tg_backward_fn backward;
    tg_tensor *out;
    tg_tensor *in[TG_MAX_INPUTS];
    int n_in;
    void *saved; /* what backward needs, allocated in the arena */
    int iarg[4]; /* small integer arguments (axes, flags) */
    double darg[2]; /* small real arguments (eps, scale, p) */
};

/* Node i of g's tape (0 is the first recorded, tg_graph_tape_len - 1 the
 * last), for code that inspects the tape (distributed/ finds there the first
 * node that reads each parameter). Valid until the next op on g or its
 * reset; NULL for a NULL g or i outside [0, tg_graph_tape_len). */
TG_API const tg_node *tg_graph_node(const tg_graph *g, int i);

/* Records "op: message" on g unless an error is already there. Returns
 * NULL so that an op can `return tg_fail(g, ...)`. */
TG_API void *tg_fail(tg_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* False when the op must return NULL at once: g is NULL, the graph holds
 * an error, an input is NULL (then "op: input k is NULL" is recorded,
 * unless an earlier error explains it; likewise for a NULL in with n > 0),
 * or an input was made before the last tg_graph_reset of its graph ("op:
 * input k (f32 (2,3)) was made before the last tg_graph_reset of ...").
 * `n` inputs in `in`. */
TG_API bool tg_op_begin(tg_graph *g, const char *op, int n, tg_tensor *const *in);
/* For inputs that may be NULL (a bias, a mask): false, with tg_op_begin's
 * message, when one that is not NULL was made before the last reset of its
 * graph (or when g is NULL or holds an error). */
TG_API bool tg_op_check_live(tg_graph *g, const char *op, int n, tg_tensor *const *in);

/* Fails with "op: <what> must be f32 or f64, got i32 (2,3)" unless t is
 * a float tensor ("op: <what> is NULL" for a NULL t). Returns true when t
 * is a float tensor. */
TG_API bool tg_op_check_float(tg_graph *g, const char *op, const char *what, const tg_tensor *t);
/* Fails unless a and b have the same float dtype. */
TG_API bool tg_op_check_same_dtype(tg_graph *g, const char *op, const tg_tensor *a, const tg_tensor *b);

/* An uninitialised output tensor in the arena (NULL + error when out of
 * memory or when the shape is invalid; NULL for a NULL g). */
TG_API tg_tensor *tg_op_output(tg_graph *g, tg_dtype dt, int ndim, const int *shape);
/* A new tensor on g sharing x's data, dtype, shape and numel (the op then
 * gives it its own shape): a view, a leaf without grad until recorded, in
 * g's current generation. NULL for a NULL g or x, or with an error when
 * out of memory. */
TG_API tg_tensor *tg_op_view(tg_graph *g, const tg_tensor *x);

/* Arena memory for the graph's current step, 64-byte aligned. NULL with
 * an error on g when out of memory; NULL for a NULL g. tg_arena_zalloc
 * zero-fills it. */
TG_API void *tg_arena_alloc(tg_graph *g, size_t bytes);
/* tg_arena_alloc, zero-filled. */
TG_API void *tg_arena_zalloc(tg_graph *g, size_t bytes);

/* Appends a node when grad mode is on and an input needs grad, and marks
 * `out` as requiring grad. Returns the node (valid only until the next
 * record: fill it at once), or NULL when nothing was recorded (also for a
 * NULL g or in, or n < 1). Recording an op with no backward, or with a
 * NULL out, is an error. */
TG_API tg_node *tg_op_record(tg_graph *g, const char *op, tg_backward_fn backward, tg_tensor *out, int n,
                             tg_tensor *const *in);

/* True when t takes part in this graph's backward: it requires grad and
 * it is a leaf (parameter or user tensor) or was made on this graph. */
TG_API bool tg_needs_grad(const tg_graph *g, const tg_tensor *t);

/* t's gradient buffer to add into during backward (zero-filled on first
 * use), or NULL when t needs no grad (or is NULL). */
TG_API void *tg_grad(tg_graph *g, tg_tensor *t);

/* For a backward that writes every element of t's gradient in one pass:
 * like tg_grad, but when t has no gradient buffer yet it is allocated
 * without zero-filling and *store is set: the caller must then store (=)
 * its contribution to every element instead of adding (+=) it. Otherwise
 * *store is false and the caller adds as usual. Saves a pass over memory
 * for the gradients of activations that only this op reads. An op whose
 * inputs may be the same tensor twice must not use it for both. A NULL
 * store makes it tg_grad (zero-filled, add). */
TG_API void *tg_grad_store(tg_graph *g, tg_tensor *t, bool *store);

/* Broadcasting (NumPy rules), for ops with shapes up to TG_MAX_DIMS.
 * All shapes are right-aligned into TG_MAX_DIMS slots. */
typedef struct tg_bcast {
    int ndim; /* dims of the result */
    int shape[TG_MAX_DIMS]; /* result shape, first ndim entries */
    int dim[TG_MAX_DIMS]; /* result shape padded on the left with 1 */
    int64_t stride[2][TG_MAX_DIMS]; /* element strides of each operand in the
                                       padded result's index space; 0 where
                                       the operand is broadcast */
} tg_bcast;

/* Broadcasts a against b. False when they do not broadcast, or for a
 * NULL argument. */
TG_API bool tg_broadcast(const tg_tensor *a, const tg_tensor *b, tg_bcast *bc);
/* Broadcasts t to a fixed shape (t's dims must be 1 or equal). Writes the
 * padded strides of t into stride. False when it does not broadcast, for
 * ndim outside 0..TG_MAX_DIMS, or for a NULL t, stride or (ndim > 0)
 * shape. */
TG_API bool tg_broadcast_to(const tg_tensor *t, int ndim, const int *shape, int64_t stride[TG_MAX_DIMS]);

#ifdef __cplusplus
}
#endif

#endif
