/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask) { (void)x; (void)mask; tg_fail(g, "softmax: not implemented"); return NULL; }
tg_tensor *tg_softmax_ex(tg_graph *g, tg_tensor *x, tg_tensor *mask, int flags) { (void)x; (void)mask; (void)flags; tg_fail(g, "softmax_ex: not implemented"); return NULL; }
tg_tensor *tg_log_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask) { (void)x; (void)mask; tg_fail(g, "log_softmax: not implemented"); return NULL; }
