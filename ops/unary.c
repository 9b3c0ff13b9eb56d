/* STUB: not implemented yet (placeholder so the library links). */
#include "ops.h"
#include "../core/op.h"

tg_tensor *tg_scale(tg_graph *g, tg_tensor *x, double s) { (void)x; (void)s; tg_fail(g, "scale: not implemented"); return NULL; }
tg_tensor *tg_neg(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "neg: not implemented"); return NULL; }
tg_tensor *tg_exp(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "exp: not implemented"); return NULL; }
tg_tensor *tg_log(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "log: not implemented"); return NULL; }
tg_tensor *tg_tanh(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "tanh: not implemented"); return NULL; }
tg_tensor *tg_sqrt(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "sqrt: not implemented"); return NULL; }
tg_tensor *tg_relu(tg_graph *g, tg_tensor *x) { (void)x; tg_fail(g, "relu: not implemented"); return NULL; }
tg_tensor *tg_gelu(tg_graph *g, tg_tensor *x, tg_gelu_mode mode) { (void)x; (void)mode; tg_fail(g, "gelu: not implemented"); return NULL; }
