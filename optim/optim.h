/* tapegrad optim: optimizers, gradient clipping, learning-rate schedules.
 *
 * Optimizers work on a whole parameter store: its flat value and gradient
 * buffers, plus state buffers (momentum, Adam moments) of the same layout,
 * so a step is a loop per parameter tensor over contiguous memory. */
#ifndef TG_OPTIM_H
#define TG_OPTIM_H

#include "../core/params.h"

/* ---- SGD (PyTorch torch.optim.SGD, dampening 0, not Nesterov) --------
 *   g = grad + weight_decay * p
 *   b = momentum * b + g          (b = g on the first step)
 *   p -= lr * (momentum ? b : g)                                         */
typedef struct tg_sgd tg_sgd;
tg_sgd *tg_sgd_new(tg_params *p, double momentum, double weight_decay);   /* NULL: out of memory */
void tg_sgd_step(tg_sgd *o, double lr);
void tg_sgd_free(tg_sgd *o);

/* ---- AdamW (PyTorch torch.optim.AdamW) --------------------------------
 * Per step t (from 1), for each parameter p with gradient g:
 *   p -= lr * weight_decay * p             (decoupled; only decayed params)
 *   m = beta1 m + (1 - beta1) g
 *   v = beta2 v + (1 - beta2) g^2
 *   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * Parameter groups follow nanoGPT: tensors of 2 or more dimensions decay,
 * the others (biases, LayerNorm weights) do not; tg_adamw_set_decay
 * overrides that per tensor. */
typedef struct tg_adamw_config {
    double beta1;          /* 0.9 */
    double beta2;          /* 0.999 (nanoGPT's small recipe uses 0.99) */
    double eps;            /* 1e-8 */
    double weight_decay;   /* 0.01 (nanoGPT: 0.1) */
} tg_adamw_config;
#define TG_ADAMW_DEFAULTS ((tg_adamw_config){0.9, 0.999, 1e-8, 0.01})

typedef struct tg_adamw tg_adamw;
tg_adamw *tg_adamw_new(tg_params *p, const tg_adamw_config *c);   /* NULL: out of memory */
void tg_adamw_set_decay(tg_adamw *o, const tg_tensor *param, bool decay);
bool tg_adamw_decays(const tg_adamw *o, const tg_tensor *param);
void tg_adamw_step(tg_adamw *o, double lr);
/* State, for checkpoints: steps taken, and the moment buffers (same dtype
 * and layout as tg_params_data). */
int64_t tg_adamw_steps(const tg_adamw *o);
void tg_adamw_set_steps(tg_adamw *o, int64_t steps);
void *tg_adamw_m(tg_adamw *o);
void *tg_adamw_v(tg_adamw *o);
void tg_adamw_free(tg_adamw *o);

/* Scales every gradient of p by max_norm / (norm + 1e-6) when the global
 * L2 norm over all of them exceeds max_norm (PyTorch clip_grad_norm_).
 * Returns the norm before clipping (computed in double); a NaN or inf
 * norm is returned as is and nothing is scaled. */
double tg_clip_grad_norm(tg_params *p, double max_norm);

/* nanoGPT's schedule: linear warmup lr * (step + 1) / (warmup + 1) for
 * step < warmup; then cosine from lr down to min_lr at step decay_steps;
 * min_lr after that. step counts from 0. */
double tg_lr_cosine(int64_t step, int64_t warmup, int64_t decay_steps, double lr, double min_lr);

#endif
