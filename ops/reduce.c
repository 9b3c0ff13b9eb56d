/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_sum(tg_graph *g, tg_tensor *x, int axis, bool keepdim) { (void)x; (void)axis; (void)keepdim; tg_fail(g, "sum: not implemented"); return NULL; }
tg_tensor *tg_mean(tg_graph *g, tg_tensor *x, int axis, bool keepdim) { (void)x; (void)axis; (void)keepdim; tg_fail(g, "mean: not implemented"); return NULL; }
tg_tensor *tg_sum_all(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "sum_all: not implemented"); return NULL; }
tg_tensor *tg_mean_all(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "mean_all: not implemented"); return NULL; }
