/* The transformer's feed-forward, in nanoGPT's form or Llama's:
 *
 *   GELU     h = gelu(x W_fc^T + b_fc)           W_fc (hidden, C), exact erf GELU
 *                                                (or its tanh form: TG_MLP_GELU_TANH)
 *            y = dropout(h W_proj^T + b_proj)     W_proj (C, hidden)
 *   ReLU^2   h = relu(x W_fc^T + b_fc)^2          as GELU's, one fused op (modded-nanogpt)
 *   SwiGLU   h = silu(x W1^T) * (x W3^T)          W1, W3 (hidden, C)
 *            y = dropout(h W2^T)                  W2 (C, hidden)
 *
 * nanoGPT's hidden width is 4C; Llama's is given, or llama2.c's default
 * multiple_of * ceil(int(2 * 4C / 3) / multiple_of) (the model decides).
 * Parameters <name>.c_fc.*, <name>.c_proj.* (GELU, ReLU^2) or <name>.w1, .w2, .w3
 * (SwiGLU, registered in that order as llama2.c's model.py has them). */
#include "nn.h"

#include "../core/err_internal.h"
#include "../core/op.h"
#include "nn_internal.h"

const char *tg_ffn_kind_name(tg_ffn_kind k)
{
    static const char *const names[] = {"default", "gelu", "relu2", "swiglu"};
    return (int)k >= 0 && (int)k < 4 ? names[k] : NULL;
}

int tg_mlp_init(tg_mlp_mod *m, tg_params *p, const char *name, int C, int hidden, const tg_mlp_options *o,
                tg_error *err)
{
    if (!m || !p || !name) return tg_error_set(err, "mlp_init: %s is NULL", !m ? "the module" : !p ? "params" : "name");
    const tg_mlp_options opt = o ? *o : (tg_mlp_options){0};
    const tg_mlp_kind kind = opt.kind;
    const bool bias = opt.bias;
    const double dropout = opt.dropout;
    *m = (tg_mlp_mod){.kind = kind};
    if (C < 1 || C > (1 << 28) || hidden < 1 || hidden > (1 << 28))
        return tg_error_set(err, "mlp '%s': C and hidden must be in [1, 2^28], got %d and %d", name, C, hidden);
    if (kind != TG_MLP_GELU && kind != TG_MLP_GELU_TANH && kind != TG_MLP_SWIGLU && kind != TG_MLP_RELU2)
        return tg_error_set(err,
                            "mlp '%s': unknown kind %d (TG_MLP_GELU, TG_MLP_GELU_TANH, TG_MLP_SWIGLU or "
                            "TG_MLP_RELU2)",
                            name, (int)kind);
    if (!(dropout >= 0 && dropout < 1))
        return tg_error_set(err, "mlp '%s': dropout must be in [0, 1), got %g", name, dropout);
    m->dropout = dropout;
    const bool swiglu = kind == TG_MLP_SWIGLU;
    char full[TG_NN_NAME_MAX + 1];
    if (tg_nn_join(full, name, swiglu ? "w1" : "c_fc", "mlp_init", err)) return -1;
    if (tg_linear_init(&m->up, p, full, C, hidden, bias, err)) return -1;
    if (tg_nn_join(full, name, swiglu ? "w2" : "c_proj", "mlp_init", err)) return -1;
    if (tg_linear_init(&m->down, p, full, hidden, C, bias, err)) return -1;
    if (!swiglu) return 0;
    if (tg_nn_join(full, name, "w3", "mlp_init", err)) return -1;
    return tg_linear_init(&m->gate, p, full, C, hidden, bias, err);
}

void tg_mlp_init_normal(tg_mlp_mod *m, tg_rng *r, double std, double gate_std, double down_std)
{
    if (!m || !r) return;
    tg_linear_init_normal(&m->up, r, std);
    tg_linear_init_normal(&m->down, r, down_std);
    if (m->gate.weight) tg_linear_init_normal(&m->gate, r, gate_std);
}

tg_tensor *tg_mlp_forward(tg_graph *g, const tg_mlp_mod *m, tg_tensor *x)
{
    if (!m) return tg_fail(g, "mlp_forward: the module is NULL");
    tg_tensor *h = tg_linear_forward(g, &m->up, x); /* (B,T,hidden) */
    if (m->kind == TG_MLP_SWIGLU) h = tg_swiglu(g, h, tg_linear_forward(g, &m->gate, x)); /* (B,T,hidden) */
    else if (m->kind == TG_MLP_RELU2) h = tg_relu2(g, h); /* (B,T,hidden) */
    else h = tg_gelu(g, h, m->kind == TG_MLP_GELU_TANH ? TG_GELU_TANH : TG_GELU_ERF); /* (B,T,hidden) */
    tg_tensor *y = tg_linear_forward(g, &m->down, h); /* (B,T,C) */
    return tg_dropout(g, y, m->dropout); /* (B,T,C) */
}
