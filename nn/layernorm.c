/* LayerNorm layer over the last axis (nn.LayerNorm, eps 1e-5):
 *
 *   y = (x - mean) / sqrt(var + eps) * weight [+ bias]
 *
 * <name>.weight is filled with 1, <name>.bias (optional) with 0. */
#include "nn.h"

#include "../core/err_internal.h"
#include "../core/op.h"
#include "nn_internal.h"

int tg_layernorm_init(tg_layernorm_mod *l, tg_params *p, const char *name, int C, bool bias, tg_error *err)
{
    if (!l || !p || !name)
        return tg_error_set(err, "layernorm_init: %s is NULL", !l ? "the module" : !p ? "params" : "name");
    l->weight = l->bias = NULL;
    l->eps = TG_LAYERNORM_EPS;
    if (C < 1) {
        tg_error_set(err, "layernorm '%s': C must be >= 1, got %d", name, C);
        return -1;
    }
    char full[TG_NN_NAME_MAX + 1];
    if (tg_nn_join(full, name, "weight", "layernorm_init", err)) return -1;
    l->weight = tg_params_add(p, full, 1, (int[]){C}, err); /* (C) */
    if (!l->weight) return -1;
    for (int i = 0; i < C; i++) {
        if (l->weight->dtype == TG_F32) ((float *)l->weight->data)[i] = 1;
        else ((double *)l->weight->data)[i] = 1;
    }
    if (bias) {
        if (tg_nn_join(full, name, "bias", "layernorm_init", err)) return -1;
        l->bias = tg_params_add(p, full, 1, (int[]){C}, err); /* (C), zeros */
        if (!l->bias) return -1;
    }
    return 0;
}

tg_tensor *tg_layernorm_forward(tg_graph *g, const tg_layernorm_mod *l, tg_tensor *x)
{
    if (!l) return tg_fail(g, "layernorm_forward: the module is NULL");
    return tg_layernorm(g, x, l->weight, l->bias, l->eps);
}
