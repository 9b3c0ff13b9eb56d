/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_embedding(tg_graph *g, tg_tensor *weight, tg_tensor *ids) { (void)weight; (void)ids; tg_fail(g, "embedding: not implemented"); return NULL; }
