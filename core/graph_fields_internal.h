/* tapegrad core (internal): the graph's fields, and the one test on them
 * that every core file reading a tensor needs (tg_tensor_stale). It
 * declares no function of any file: graph.c (the graph's life, its modes
 * and backward) and op.c (errors, tensor headers, recording) both work on
 * these fields, and tensor.c, rng.c, params.c, gradcheck.c and the
 * safetensors files test staleness, so the fields sit below all of them.
 * ops/, nn/ and optim/ reach the graph through core/op.h. */
#ifndef TG_GRAPH_FIELDS_INTERNAL_H
#define TG_GRAPH_FIELDS_INTERNAL_H

#include "arena_internal.h"
#include "op.h"
#include "rng.h"

struct tg_graph {
    tg_arena arena; /* tensor data, gradients, saved values */
    /* Tensor headers, apart from their data: generation k's are in
     * heads[k & 1], so the header of a tensor kept across a reset is not
     * reused during the next generation and still says which generation
     * it belongs to (in the arena, the next step would make a new tensor
     * at the same address, and the stale pointer would simply be it). */
    tg_arena heads[2];
    uint32_t gen; /* generation: tg_graph_reset starts a new one */
    tg_node *tape; /* stb_ds array, in recording order */
    char error[512];
    bool has_error;
    bool grad_enabled;
    bool training;
    bool in_backward;
    tg_rng rng;
    tg_backward_hook hook; /* called after each node of backward, or NULL */
    void *hook_ctx;
};

#define TG_HEADS_CHUNK ((size_t)64 << 10) /* first chunk of each header arena */

/* True when t was made on a graph that has been reset since: its data now
 * belong to newer tensors. Parameters (graph NULL) never are. */
static inline bool tg_tensor_stale(const tg_tensor *t) { return t->graph && t->gen != t->graph->gen; }

#endif
