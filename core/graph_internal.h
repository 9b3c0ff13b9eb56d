/* tapegrad core (internal): the graph's fields, shared by the files of
 * core/ only. Included by graph.c and op.c (the graph, its arenas, tape
 * and tensor headers), params.c (tg_shape_set), and tensor.c, rng.c,
 * gradcheck.c, safetensors_convert.c and safetensors_write.c for
 * tg_tensor_stale alone. ops/, nn/ and optim/ reach the graph through
 * core/op.h. */
#ifndef TG_GRAPH_INTERNAL_H
#define TG_GRAPH_INTERNAL_H

#include "arena_internal.h"
#include "op.h"
#include "rng.h"

struct tg_graph {
    tg_arena arena;           /* tensor data, gradients, saved values */
    /* Tensor headers, apart from their data: generation k's are in
     * heads[k & 1], so the header of a tensor kept across a reset is not
     * reused during the next generation and still says which generation
     * it belongs to (in the arena, the next step would make a new tensor
     * at the same address, and the stale pointer would simply be it). */
    tg_arena heads[2];
    uint32_t gen;             /* generation: tg_graph_reset starts a new one */
    tg_node *tape;            /* stb_ds array, in recording order */
    char error[512];
    bool has_error;
    bool grad_enabled;
    bool training;
    bool in_backward;
    tg_rng rng;
    tg_backward_hook hook;    /* called after each node of backward, or NULL */
    void *hook_ctx;
};

#define TG_HEADS_CHUNK ((size_t)64 << 10)   /* first chunk of each header arena */

/* True when t was made on a graph that has been reset since: its data now
 * belong to newer tensors. Parameters (graph NULL) never are. */
static inline bool tg_tensor_stale(const tg_tensor *t) { return t->graph && t->gen != t->graph->gen; }

/* A new tensor header in g's current generation, zeroed but for graph and
 * gen; NULL with an error on g when out of memory. */
tg_tensor *tg_tensor_header(tg_graph *g);
/* A leaf header of dtype dt and the given shape, its data not set (op.c);
 * NULL after recording "<who>: unknown dtype D" or "<who>: bad shape
 * (d0,d1) with ndim N: why" on g. */
tg_tensor *tg_leaf_header(tg_graph *g, const char *who, tg_dtype dt, int ndim, const int *shape);

/* Records on g that t, input i of op (i < 0: "the tensor"), was made
 * before its graph's last reset; returns false. */
bool tg_fail_stale(tg_graph *g, const char *op, int i, const tg_tensor *t);

/* Validates a shape (ndim in 0..TG_MAX_DIMS, every size >= 1, numel fits)
 * and fills t's ndim/shape/numel. Returns false with `why` set otherwise. */
bool tg_shape_set(tg_tensor *t, int ndim, const int *shape, const char **why);

#endif
