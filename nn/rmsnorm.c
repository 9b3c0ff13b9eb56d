/* RMSNorm layer over the last axis (Llama's):
 *
 *   y = x / sqrt(mean(x^2) + eps) * weight
 *
 * <name>.weight is filled with 1. */
#include "nn.h"

#include "../core/err_internal.h"
#include "../core/op.h"
#include "nn_internal.h"

int tg_rmsnorm_init(tg_rmsnorm_mod *l, tg_params *p, const char *name, int C, double eps, tg_error *err)
{
    if (!l || !p || !name)
        return tg_error_set(err, "rmsnorm_init: %s is NULL", !l ? "the module" : !p ? "params" : "name");
    l->weight = NULL;
    l->eps = eps;
    if (C < 1) return tg_error_set(err, "rmsnorm '%s': C must be >= 1, got %d", name, C);
    if (!(eps > 0 && eps <= 1)) return tg_error_set(err, "rmsnorm '%s': eps must be in (0, 1], got %g", name, eps);
    char full[TG_NN_NAME_MAX + 1];
    if (tg_nn_join(full, name, "weight", "rmsnorm_init", err)) return -1;
    l->weight = tg_params_add(p, full, 1, (int[]){C}, err); /* (C) */
    if (!l->weight) return -1;
    for (int i = 0; i < C; i++) {
        if (l->weight->dtype == TG_F32) ((float *)l->weight->data)[i] = 1;
        else ((double *)l->weight->data)[i] = 1;
    }
    return 0;
}

tg_tensor *tg_rmsnorm_forward(tg_graph *g, const tg_rmsnorm_mod *l, tg_tensor *x)
{
    if (!l) return tg_fail(g, "rmsnorm_forward: the module is NULL");
    return tg_rmsnorm(g, x, l->weight, l->eps);
}
