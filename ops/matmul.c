/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_matmul(tg_graph *g, tg_tensor *a, tg_tensor *b) { (void)a; (void)b; tg_fail(g, "matmul: not implemented"); return NULL; }
