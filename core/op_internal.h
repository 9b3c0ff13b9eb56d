/* tapegrad core (internal): the pieces of op.c that the rest of core
 * uses (graph.c for the tensors a user makes, params.c for shapes) but
 * that a writer of an op does not need (core/op.h has those). */
#ifndef TG_OP_INTERNAL_H
#define TG_OP_INTERNAL_H

#include "op.h"

/* A new tensor header in g's current generation, zeroed but for graph and
 * gen; NULL with an error on g when out of memory. */
tg_tensor *tg_tensor_header(tg_graph *g);
/* A leaf header of dtype dt and the given shape, its data not set; NULL
 * after recording "<who>: unknown dtype D" or "<who>: bad shape (d0,d1)
 * with ndim N: why" on g. */
tg_tensor *tg_leaf_header(tg_graph *g, const char *who, tg_dtype dt, int ndim, const int *shape);

/* Records on g that t, input i of op (i < 0: "the tensor"), was made
 * before its graph's last reset; returns false. */
bool tg_fail_stale(tg_graph *g, const char *op, int i, const tg_tensor *t);

/* Validates a shape (ndim in 0..TG_MAX_DIMS, every size >= 1, numel fits)
 * and fills t's ndim/shape/numel. Returns false with `why` set otherwise. */
bool tg_shape_set(tg_tensor *t, int ndim, const int *shape, const char **why);

#endif
