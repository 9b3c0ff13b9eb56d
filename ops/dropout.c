/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_dropout(tg_graph *g, tg_tensor *x, double p) { (void)x; (void)p; tg_fail(g, "dropout: not implemented"); return NULL; }
