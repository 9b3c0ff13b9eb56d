/* Linear layer: y = x W^T + b (nn.Linear), W (out, in), b (out) optional.
 *
 * The parameters are <name>.weight and <name>.bias in the store, drawn
 * here as nn.Linear draws them (uniform in +-1/sqrt(in)), or left at zero
 * when the caller passes no stream and initialises them itself:
 * tg_linear_init_normal draws the weight from a normal distribution (the
 * models call it for each layer in registration order). */
#include "nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"
#include "../core/op.h"
#include "nn_internal.h"

int tg_nn_join(char *out, const char *name, const char *part, const char *who, tg_error *err)
{
    const int n = snprintf(out, TG_NN_NAME_MAX + 1, "%s.%s", name, part);
    if (n >= 0 && n <= TG_NN_NAME_MAX) return 0;
    return tg_error_set(err, "%s: the name is %zu bytes, and '<name>.%s' is over TG_NN_NAME_MAX (%d)", who,
                        strlen(name), part, TG_NN_NAME_MAX);
}

int tg_linear_init(tg_linear_mod *l, tg_params *p, const char *name, int in, int out, bool bias, tg_error *err)
{
    if (!l || !p || !name)
        return tg_error_set(err, "linear_init: %s is NULL", !l ? "the module" : !p ? "params" : "name");
    l->weight = l->bias = NULL;
    if (in < 1 || out < 1) {
        tg_error_set(err, "linear '%s': sizes must be >= 1, got in %d, out %d", name, in, out);
        return -1;
    }
    char full[TG_NN_NAME_MAX + 1];
    if (tg_nn_join(full, name, "weight", "linear_init", err)) return -1;
    l->weight = tg_params_add(p, full, 2, (int[]){out, in}, err); /* (out, in) */
    if (!l->weight) return -1;
    if (bias) {
        if (tg_nn_join(full, name, "bias", "linear_init", err)) return -1;
        l->bias = tg_params_add(p, full, 1, (int[]){out}, err); /* (out) */
        if (!l->bias) return -1;
    }
    return 0;
}

void tg_linear_init_uniform(tg_linear_mod *l, tg_rng *r)
{
    if (!l || !l->weight || !r) return;
    /* nn.Linear's reset_parameters: kaiming_uniform(a = sqrt(5)) is U(+-1/sqrt(in)), the bias too */
    const double k = 1 / sqrt((double)l->weight->shape[1]);
    tg_rng_fill_uniform(r, l->weight, -k, k);
    if (l->bias) tg_rng_fill_uniform(r, l->bias, -k, k);
}

void tg_linear_init_normal(tg_linear_mod *l, tg_rng *r, double std)
{
    if (!l || !r) return;
    tg_rng_fill_normal(r, l->weight, 0.0, std);
    if (l->bias) memset(l->bias->data, 0, (size_t)l->bias->numel * tg_dtype_size(l->bias->dtype)); /* no draws */
}

tg_tensor *tg_linear_forward(tg_graph *g, const tg_linear_mod *l, tg_tensor *x)
{
    if (!l) return tg_fail(g, "linear_forward: the module is NULL");
    return tg_linear(g, x, l->weight, l->bias); /* (..., in) -> (..., out) */
}
