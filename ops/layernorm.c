/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_layernorm(tg_graph *g, tg_tensor *x, tg_tensor *w, tg_tensor *b, double eps) { (void)x; (void)w; (void)b; (void)eps; tg_fail(g, "layernorm: not implemented"); return NULL; }
