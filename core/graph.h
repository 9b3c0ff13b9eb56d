/* tapegrad core: the graph — a per-step arena, the tape, grad mode, errors.
 *
 * Ops run eagerly. When grad mode is on and one of an op's inputs requires
 * grad, the op appends a node to the graph's tape. tg_graph_backward seeds
 * d(loss) = 1 and walks the tape in reverse; every node adds (+=) into the
 * gradients of its inputs.
 *
 * Everything an op allocates (outputs, saved values, activation gradients,
 * tape nodes) lives in the graph's arena until tg_graph_reset, which frees
 * all of it in O(1) and keeps the memory for the next step: after the first
 * step a training loop makes no call to malloc.
 *
 * Errors: an op given bad input returns NULL and records one message on
 * the graph naming the op and the shapes. The first message sticks; while
 * the graph holds an error every op returns NULL, so a forward pass can be
 * written without checks and checked once at the end.
 *
 * Generations: each tg_graph_reset starts a new generation, and every
 * tensor made on a graph keeps the generation it was made in (t->gen). A
 * tensor kept across a reset of its graph is stale: its memory now holds
 * newer tensors. An op (and backward, tg_tensor_set_requires_grad) given
 * a stale tensor, of this graph or of another, records an error naming
 * it. A live tensor of another graph is a constant there (a leaf), as a
 * parameter is. Not detected: a tensor of a graph that has been freed (its
 * graph pointer dangles), and one kept across two or more resets whose
 * header has been reused by a newer tensor, which it then is. */
#ifndef TG_GRAPH_H
#define TG_GRAPH_H

#include "export.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_graph tg_graph;

/* An empty graph: grad mode and training mode on, random stream seeded
 * with 0. The arena takes its first memory on first use. */
TG_API tg_graph *tg_graph_new(void); /* NULL only when out of memory */
/* Frees the graph, its arena (every tensor made on it) and its tape. */
TG_API void tg_graph_free(tg_graph *g); /* accepts NULL */

/* Drops every tensor, gradient and node made since the last reset (or
 * since creation), clears the error and starts a new generation. O(1);
 * keeps the arena's memory. Nothing for a NULL g. */
TG_API void tg_graph_reset(tg_graph *g);

/* The first error recorded since the last reset, or NULL (also for a
 * NULL g). The string belongs to g. */
TG_API const char *tg_graph_error(const tg_graph *g);
/* Forgets the error so that ops run again; keeps tensors and tape.
 * Nothing for a NULL g. */
TG_API void tg_graph_clear_error(tg_graph *g);

/* Grad mode (default on). Off: ops record nothing, their outputs do not
 * require grad, and dropout is the identity. Returns the old mode (false,
 * and nothing set, for a NULL g). */
TG_API bool tg_graph_set_grad_enabled(tg_graph *g, bool on);
/* The current grad mode; false for a NULL g. */
TG_API bool tg_graph_grad_enabled(const tg_graph *g);

/* Training mode (default on). Off (eval): dropout is the identity.
 * Nothing for a NULL g. */
TG_API void tg_graph_set_training(tg_graph *g, bool on);
/* The current training mode; false for a NULL g. */
TG_API bool tg_graph_training(const tg_graph *g);

/* Seeds the graph's random stream, used by dropout: the same seed gives
 * the same dropout masks. Not changed by tg_graph_reset. Nothing for a
 * NULL g. */
TG_API void tg_graph_seed(tg_graph *g, uint64_t seed);
/* The graph's random stream (for ops that draw random numbers); it
 * belongs to g. NULL for a NULL g. */
TG_API struct tg_rng *tg_graph_rng(tg_graph *g);

/* New zero-filled leaf tensor in the graph's arena, valid until the next
 * tg_graph_reset. shape has ndim entries (0 <= ndim <= 4), each >= 1; ndim
 * 0 makes a scalar. NULL with an error on g for a bad shape or dtype, or
 * when g already holds an error. */
TG_API tg_tensor *tg_tensor_new(tg_graph *g, tg_dtype dt, int ndim, const int *shape);
/* Same, copying numel elements of dt from data (NULL data is an error). */
TG_API tg_tensor *tg_tensor_from(tg_graph *g, tg_dtype dt, int ndim, const int *shape, const void *data);
/* A leaf tensor on g over memory the caller owns: data is used as it is,
 * not copied, so writes through either side show in both (a view of a
 * buffer kept across steps, such as a KV cache). The header lives until
 * the next tg_graph_reset; data must stay valid and hold numel elements of
 * dt for that long. NULL with an error on g for a bad shape or dtype or a
 * NULL data, or when g already holds an error. */
TG_API tg_tensor *tg_tensor_wrap(tg_graph *g, tg_dtype dt, int ndim, const int *shape, void *data);
/* A float scalar (ndim 0) holding value. dt must be f32 or f64 (error
 * otherwise). */
TG_API tg_tensor *tg_scalar(tg_graph *g, tg_dtype dt, double value);

/* Marks a leaf tensor as requiring grad and gives it a zeroed gradient
 * buffer in the arena that owns it. Gradients then accumulate into
 * t->grad across backward calls. Returns 0, or -1 with an error on g
 * (i32/bool tensors, tensors made by an op, a tensor made before the last
 * reset of its graph). */
TG_API int tg_tensor_set_requires_grad(tg_graph *g, tg_tensor *t, bool on);

/* Backward from a one-element float tensor: seeds its gradient with 1.
 * Returns 0, or -1 with the error on g (NULL loss, several elements, no
 * recorded op reaching it, a loss made before the last reset; -1 alone
 * for a NULL g). Gradients of activations are recomputed each call;
 * gradients of leaves and parameters accumulate. */
TG_API int tg_graph_backward(tg_graph *g, tg_tensor *loss);
/* Backward from any float tensor t with its gradient seeded by `seed`
 * (t->numel elements of t's dtype): the vector-Jacobian product with seed.
 * Returns 0, or -1 with the error on g (NULL seed or t, t not float, t
 * not reached by a recorded op or made before the last reset). */
TG_API int tg_graph_backward_seeded(tg_graph *g, tg_tensor *t, const void *seed);

/* Called by backward after each tape node, from the last node to the
 * first: `node` is the node's index on the tape (0 is the first
 * recorded), and the call comes once that node's backward has added into
 * its inputs' gradients (also for a node that was skipped, being on no
 * path to the loss). So at the call for index i, nodes i .. len-1 are
 * done: a gradient that only those nodes write is complete. distributed/ starts
 * reducing a bucket of parameter gradients across processes there, while
 * the backward of the earlier nodes goes on (distributed/dist.h). The hook must
 * not record ops on g. */
typedef void (*tg_backward_hook)(void *ctx, tg_graph *g, int node);
/* Installs fn (NULL removes it) with its ctx for every later backward on
 * g; tg_graph_reset keeps it. Costs one NULL check per node when unset.
 * Nothing for a NULL g. */
TG_API void tg_graph_set_backward_hook(tg_graph *g, tg_backward_hook fn, void *ctx);

/* Introspection: nodes on the tape since the last reset (0 for a NULL g). */
TG_API int tg_graph_tape_len(const tg_graph *g);
/* Bytes the arena holds for tensor data, gradients and saved values (the
 * tensor headers, 128 bytes each, are kept apart and not counted); 0 for
 * a NULL g. */
TG_API size_t tg_graph_arena_capacity(const tg_graph *g);
TG_API size_t tg_graph_arena_used(const tg_graph *g); /* of those, in use; 0 for NULL */

#ifdef __cplusplus
}
#endif

#endif
