/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_cross_entropy(tg_graph *g, tg_tensor *logits, tg_tensor *targets) { (void)logits; (void)targets; tg_fail(g, "cross_entropy: not implemented"); return NULL; }
