/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_reshape(tg_graph *g, tg_tensor *x, int ndim, const int *shape) { (void)x; (void)ndim; (void)shape; tg_fail(g, "reshape: not implemented"); return NULL; }
tg_tensor *tg_transpose(tg_graph *g, tg_tensor *x, int axis0, int axis1) { (void)x; (void)axis0; (void)axis1; tg_fail(g, "transpose: not implemented"); return NULL; }
tg_tensor *tg_permute(tg_graph *g, tg_tensor *x, const int *perm) { (void)x; (void)perm; tg_fail(g, "permute: not implemented"); return NULL; }
tg_tensor *tg_slice(tg_graph *g, tg_tensor *x, int axis, int start, int end) { (void)x; (void)axis; (void)start; (void)end; tg_fail(g, "slice: not implemented"); return NULL; }
int tg_split(tg_graph *g, tg_tensor *x, int axis, int n, const int *sizes, tg_tensor **out) { (void)x; (void)axis; (void)n; (void)sizes; (void)out; tg_fail(g, "split: not implemented"); return -1; }
tg_tensor *tg_concat(tg_graph *g, int n, tg_tensor *const *xs, int axis) { (void)n; (void)xs; (void)axis; tg_fail(g, "concat: not implemented"); return NULL; }
