/* tapegrad core (internal): the graph's fields, shared by core/graph.c and
 * core/op.c only. */
#ifndef TG_GRAPH_INTERNAL_H
#define TG_GRAPH_INTERNAL_H

#include "arena_internal.h"
#include "op.h"
#include "rng.h"

struct tg_graph {
    tg_arena arena;
    tg_node *tape;            /* stb_ds array, in recording order */
    char error[512];
    bool has_error;
    bool grad_enabled;
    bool training;
    bool in_backward;
    tg_rng rng;
};

/* Validates a shape (ndim in 0..TG_MAX_DIMS, every size >= 1, numel fits)
 * and fills t's ndim/shape/numel. Returns false with `why` set otherwise. */
bool tg_shape_set(tg_tensor *t, int ndim, const int *shape, const char **why);

#endif
