/* The transformer MLP (nanoGPT):
 *
 *   h = GELU(x W_fc^T + b_fc)      W_fc (4C, C), exact erf GELU
 *   y = dropout(h W_proj^T + b_proj)  W_proj (C, 4C)
 *
 * Parameters <name>.c_fc.{weight,bias}, <name>.c_proj.{weight,bias}. */
#include "nn.h"

#include <stdio.h>

#include "../core/err_internal.h"
#include "../core/op.h"

int tg_mlp_init(tg_mlp *m, tg_params *p, const char *name, int C, bool bias, double dropout,
                char *err, size_t errlen)
{
    if (!m || !p || !name)
        return tg_set_err(err, errlen, "mlp_init: %s is NULL", !m ? "the module" : !p ? "params" : "name");
    m->dropout = 0;
    if (C < 1 || C > (1 << 28)) {
        tg_set_err(err, errlen, "mlp '%s': C must be in [1, 2^28], got %d", name, C);
        return -1;
    }
    if (!(dropout >= 0 && dropout < 1)) {
        tg_set_err(err, errlen, "mlp '%s': dropout must be in [0, 1), got %g", name, dropout);
        return -1;
    }
    m->dropout = dropout;
    char full[256];
    snprintf(full, sizeof full, "%s.c_fc", name);
    if (tg_linear_init(&m->c_fc, p, full, C, 4 * C, bias, err, errlen)) return -1;
    snprintf(full, sizeof full, "%s.c_proj", name);
    return tg_linear_init(&m->c_proj, p, full, 4 * C, C, bias, err, errlen);
}

tg_tensor *tg_mlp_forward(tg_graph *g, const tg_mlp *m, tg_tensor *x)
{
    if (!m) return tg_fail(g, "mlp_forward: the module is NULL");
    tg_tensor *h = tg_linear_forward(g, &m->c_fc, x);   /* (B,T,4C) */
    h = tg_gelu(g, h, TG_GELU_ERF);                      /* (B,T,4C) */
    tg_tensor *y = tg_linear_forward(g, &m->c_proj, h);  /* (B,T,C) */
    return tg_dropout(g, y, m->dropout);                 /* (B,T,C) */
}
