/* tapegrad optim: optimizers, gradient clipping, learning-rate schedules.
 *
 * Optimizers work on a whole parameter store: its flat value and gradient
 * buffers, plus state buffers (momentum, Adam moments) of the same layout,
 * so a step is a loop per parameter tensor over contiguous memory.
 *
 * Both float dtypes: updates are computed in the store's dtype (f32 or
 * f64), with the hyperparameters rounded to it as PyTorch does; only the
 * gradient norm is accumulated in double.
 *
 * An optimizer sizes its state to the store when it is made: add every
 * parameter first. If the store has grown since (tg_params_add), a step
 * does nothing and returns -1 with the reason; state is untouched.
 *
 * Every function that can refuse takes a tg_error *err last
 * (core/error.h) and writes the reason there. */
#ifndef TG_OPTIM_H
#define TG_OPTIM_H

#include "../core/error.h"
#include "../core/export.h"
#include "../core/params.h"
#include "../core/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SGD (PyTorch torch.optim.SGD, dampening 0, not Nesterov) --------
 *   g = grad + weight_decay * p
 *   b = momentum * b + g          (b = g on the first step)
 *   p -= lr * (momentum ? b : g)                                         */
typedef struct tg_sgd tg_sgd;
/* NULL, with a message in err, when p is NULL, momentum or weight_decay
 * is negative or not finite, or out of memory. The momentum buffer is
 * only allocated when momentum > 0. */
TG_API tg_sgd *tg_sgd_new(tg_params *p, double momentum, double weight_decay, tg_error *err);
/* One update of every parameter with learning rate lr, by the formula
 * above, from the gradients in the store: 0. Does nothing and returns -1
 * with the reason if the store has grown since tg_sgd_new (parameters
 * added later would never be trained), lr is not finite, or o is NULL. */
TG_API int tg_sgd_step(tg_sgd *o, double lr, tg_error *err);
TG_API void tg_sgd_free(tg_sgd *o); /* accepts NULL */

/* ---- AdamW (PyTorch torch.optim.AdamW) --------------------------------
 * Per step t (from 1), for each parameter p with gradient g:
 *   p *= 1 - lr * weight_decay             (decoupled; only decayed params)
 *   m = beta1 m + (1 - beta1) g
 *   v = beta2 v + (1 - beta2) g^2
 *   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 * Parameter groups follow nanoGPT: tensors of 2 or more dimensions decay,
 * the others (biases, LayerNorm weights) do not; tg_adamw_set_decay
 * overrides that per tensor. */
typedef struct tg_adamw_config {
    double beta1; /* 0.9 */
    double beta2; /* 0.999 (nanoGPT's small recipe uses 0.99) */
    double eps; /* 1e-8 */
    double weight_decay; /* 0.01 (nanoGPT: 0.1) */
} tg_adamw_config;
/* A tg_adamw_config value: `tg_adamw_config c = TG_ADAMW_DEFAULTS;`. In C
 * it is a compound literal (an lvalue: &TG_ADAMW_DEFAULTS works); in C++
 * a braced temporary, whose address cannot be taken (pass NULL instead). */
#ifdef __cplusplus
#define TG_ADAMW_DEFAULTS (tg_adamw_config{0.9, 0.999, 1e-8, 0.01})
#else
#define TG_ADAMW_DEFAULTS ((tg_adamw_config){0.9, 0.999, 1e-8, 0.01})
#endif

typedef struct tg_adamw tg_adamw;
/* c NULL means TG_ADAMW_DEFAULTS. NULL, with a message in err, when p is
 * NULL, a beta is outside [0, 1), eps or weight_decay is negative or not
 * finite, or out of memory. */
TG_API tg_adamw *tg_adamw_new(tg_params *p, const tg_adamw_config *c, tg_error *err);
/* An AdamW that keeps moments for elements [lo, hi) of the store's flat
 * buffers only and updates only those (ZeRO stage 1: each process of a
 * data-parallel job steps its own shard, distributed/dist.h). The elements of
 * the range get exactly tg_adamw's update, with each tensor's decay
 * group (a range may begin or end inside a tensor). tg_adamw_new is the
 * shard [0, numel). NULL, with a message in err, for tg_adamw_new's
 * reasons or a range that is not inside [0, tg_params_numel(p)]. */
TG_API tg_adamw *tg_adamw_new_shard(tg_params *p, const tg_adamw_config *c, int64_t lo, int64_t hi, tg_error *err);
/* The optimizer's shard [lo, hi) into *lo and *hi (either may be NULL);
 * 0 and 0 for a NULL o. */
TG_API void tg_adamw_shard(const tg_adamw *o, int64_t *lo, int64_t *hi);
/* Whether param is weight-decayed. 0, or -1 with a message (nothing
 * changes) when param is not a tensor of the optimizer's store
 * (tg_params_get/_at) or o is NULL. */
TG_API int tg_adamw_set_decay(tg_adamw *o, const tg_tensor *param, bool decay, tg_error *err);
/* True when param is weight-decayed; false if it is not in the store, or
 * for a NULL o or param. */
TG_API bool tg_adamw_decays(const tg_adamw *o, const tg_tensor *param);
/* update false: AdamW leaves param alone (its values, and its moments at
 * zero), e.g. a matrix Muon updates (tg_muon_exclude); true (the
 * default) updates it again. 0, or -1 with a message (nothing changes)
 * when param is not a tensor of the optimizer's store or o is NULL. */
TG_API int tg_adamw_set_update(tg_adamw *o, const tg_tensor *param, bool update, tg_error *err);
/* True when AdamW updates param; false if it is not in the store, was
 * left to another optimizer, or for a NULL o or param. */
TG_API bool tg_adamw_updates(const tg_adamw *o, const tg_tensor *param);
/* One update of every parameter with learning rate lr (the step count
 * goes up by one first), by the formulas above, from the gradients in the
 * store: 0. Does nothing and returns -1 with the reason if the store has
 * grown since tg_adamw_new (parameters added later would never be
 * trained), lr is not finite, or o is NULL. */
TG_API int tg_adamw_step(tg_adamw *o, double lr, tg_error *err);
/* tg_adamw_step with the gradients of the shard taken from grad (hi - lo
 * elements of the store's dtype, element k for flat element lo + k)
 * instead of the store's gradient buffer: a reduce-scatter leaves each
 * process's shard of the summed gradients in a buffer of its own. A NULL
 * grad for a shard that is not empty does nothing and returns -1 with the
 * reason, as tg_adamw_step's refusals; 0 on success. */
TG_API int tg_adamw_step_grad(tg_adamw *o, double lr, const void *grad, tg_error *err);
/* State, for checkpoints: steps taken, and the moment buffers (same dtype
 * and layout as tg_params_data: tg_params_numel elements each, or the
 * shard's hi - lo from element lo on), which may be read and written.
 * Steps taken: 0 for a NULL o. */
TG_API int64_t tg_adamw_steps(const tg_adamw *o);
/* Sets the step count, e.g. when resuming; the next step is steps + 1.
 * 0, or -1 with a message (nothing changes) for a negative count or a
 * NULL o. */
TG_API int tg_adamw_set_steps(tg_adamw *o, int64_t steps, tg_error *err);
/* The first-moment buffer m; NULL for a NULL o. */
TG_API void *tg_adamw_m(tg_adamw *o);
/* The second-moment buffer v; NULL for a NULL o. */
TG_API void *tg_adamw_v(tg_adamw *o);
TG_API void tg_adamw_free(tg_adamw *o); /* accepts NULL */

#define TG_ADAMW_PREFIX_MAX 200 /* the longest prefix of the state's names, in bytes */
/* The optimizer's state into a safetensors file being written (as
 * PyTorch's optimizer.state_dict()): the moments as tensors
 * "<prefix>.m" and "<prefix>.v" (1-D, the store's dtype, all
 * tg_params_numel elements, the store's flat order) and the step count as
 * metadata "<prefix>.steps". An optimizer made for a shard holds only its
 * range of the moments: pass the whole store's in m and v (each process's
 * range gathered, e.g. with tg_dist_grads_gather_shard); NULL m and v
 * take the optimizer's own, which must then cover the store. The writer
 * reads m and v when it saves: they must stay valid until then. 0, or -1
 * (a NULL argument, a shard without m and v, or the writer's error). */
TG_API int tg_adamw_state_write(const tg_adamw *o, tg_st_writer *w, const char *prefix, const void *m, const void *v);
/* Restores what tg_adamw_state_write wrote into an optimizer on the same
 * store: the moments (a shard takes its range of them, so a run saved on
 * R processes resumes on any number) and the step count. Everything is
 * checked before anything changes: both tensors present, 1-D, the store's
 * dtype and size, every moment finite and v >= 0, the steps a whole
 * number >= 0. 0, or -1 with a message naming the tensor or key (the
 * optimizer is then unchanged). */
TG_API int tg_adamw_state_read(tg_adamw *o, const tg_st_file *f, const char *prefix, tg_error *err);

/* ---- Muon (momentum orthogonalized by Newton-Schulz) -------------------
 * For the 2-D weight matrices of a model's blocks; AdamW takes the rest
 * (embeddings, the head, every 1-D tensor). For a matrix W (rows x cols)
 * with gradient G, momentum m, weight decay wd:
 *   buf = m buf + (1 - m) G
 *   U   = (1 - m) G + m buf                                 (Nesterov)
 *   X   = U / (||U||_F + 1e-7), transposed when rows > cols
 *   five times: A = X X^T; B = b A + c A A; X = a X + B X,
 *               (a, b, c) = (3.4445, -4.7750, 2.0315)
 *   W   = W (1 - lr wd) - lr sqrt(max(1, rows / cols)) X    (X transposed back)
 * The iteration pushes every singular value of X towards 1, keeping the
 * singular vectors: the update is about U's orthogonal factor. The
 * products go through the library's gemm (f32 and f64). There is no
 * step-count dependence: the count is kept for checkpoints only. */
typedef struct tg_muon_config {
    double momentum; /* 0.95 */
    double weight_decay; /* 0 */
} tg_muon_config;
/* A tg_muon_config value, as TG_ADAMW_DEFAULTS. */
#ifdef __cplusplus
#define TG_MUON_DEFAULTS (tg_muon_config{0.95, 0.0})
#else
#define TG_MUON_DEFAULTS ((tg_muon_config){0.95, 0.0})
#endif
#define TG_MUON_LR 0.02 /* the usual learning rate (modded-nanogpt's scale) */

typedef struct tg_muon tg_muon;
/* Whether tg_muon_new gives t to Muon: t is 2-D and its name has a part
 * between dots (or after the last) that is all digits, a numbered block
 * ("transformer.h.0.attn.c_attn.weight", "layers.3.feed_forward.w1.weight"),
 * which leaves out embeddings and heads ("transformer.wte.weight",
 * "output.weight") for any model family named that way. False for NULL. */
TG_API bool tg_muon_takes(const tg_tensor *t);
/* A Muon for the store's tensors that tg_muon_takes picks. c NULL means
 * TG_MUON_DEFAULTS. NULL, with a message in err, when p is NULL, the
 * momentum is outside [0, 1), weight_decay is negative or not finite,
 * or out of memory. The store may hold no matrix Muon takes (steps then
 * do nothing). */
TG_API tg_muon *tg_muon_new(tg_params *p, const tg_muon_config *c, tg_error *err);
/* tg_muon_new for the tensors the caller picks: take[i] for tensor i of
 * the store (tg_params_at order, tg_params_count entries); NULL take is
 * tg_muon_takes's choice. NULL, with a message, also when a picked
 * tensor is not 2-D. */
TG_API tg_muon *tg_muon_new_select(tg_params *p, const tg_muon_config *c, const bool *take, tg_error *err);
/* True when Muon updates param; false otherwise or for NULL arguments. */
TG_API bool tg_muon_updates(const tg_muon *o, const tg_tensor *param);
/* Tells a (made on the same store) to leave alone every tensor Muon
 * updates (tg_adamw_set_update false), so the two share a store: each
 * step, clip the gradients once, then step both. 0, or -1 with a message
 * (nothing changes) for a NULL argument or an a on another store. */
TG_API int tg_muon_exclude(const tg_muon *o, tg_adamw *a, tg_error *err);
/* One update of every Muon tensor with learning rate lr (the step count
 * goes up by one first), from the gradients in the store: 0. Does
 * nothing and returns -1 with the reason if the store has grown since
 * tg_muon_new, lr is not finite, or o is NULL. */
TG_API int tg_muon_step(tg_muon *o, double lr, tg_error *err);
/* tg_muon_step for the matrices of one part of `parts` only (several
 * processes sharing the work: the k-th Muon matrix in store order belongs
 * to part k % parts, tg_muon_owner); the step count goes up by one.
 * Also -1 (nothing done) when part is not in [0, parts). */
TG_API int tg_muon_step_part(tg_muon *o, double lr, int part, int parts, tg_error *err);
/* The part (of `parts`) that steps param in tg_muon_step_part; -1 when
 * Muon does not update param, parts < 1, or NULL arguments. */
TG_API int tg_muon_owner(const tg_muon *o, const tg_tensor *param, int parts);
/* Steps taken; 0 for a NULL o. */
TG_API int64_t tg_muon_steps(const tg_muon *o);
/* Sets the step count. 0, or -1 with a message (nothing changes) for a
 * negative count or a NULL o. */
TG_API int tg_muon_set_steps(tg_muon *o, int64_t steps, tg_error *err);
/* The momentum buffer: tg_muon_numel elements of the store's dtype, the
 * Muon tensors' elements one after another in store order (each as
 * stored); may be read and written. NULL for a NULL o. */
TG_API void *tg_muon_momentum(tg_muon *o);
/* Elements of the Muon tensors (the momentum's size); 0 for a NULL o. */
TG_API int64_t tg_muon_numel(const tg_muon *o);
TG_API void tg_muon_free(tg_muon *o); /* accepts NULL */

#define TG_MUON_PREFIX_MAX 200 /* the longest prefix of the state's names, in bytes */
/* The state into a safetensors file being written: the momentum as
 * tensor "<prefix>.momentum" (1-D, the store's dtype, tg_muon_numel
 * elements) and the step count as metadata "<prefix>.steps". The writer
 * reads the momentum when it saves. 0, or -1 (a NULL argument, a prefix
 * too long, or the writer's error). */
TG_API int tg_muon_state_write(const tg_muon *o, tg_st_writer *w, const char *prefix);
/* Restores what tg_muon_state_write wrote into a Muon on the same store
 * with the same tensors. Everything is checked before anything changes:
 * the tensor present, 1-D, the store's dtype and tg_muon_numel elements,
 * every element finite, the steps a whole number >= 0. 0, or -1 with a
 * message naming the tensor or key (the optimizer is then unchanged). */
TG_API int tg_muon_state_read(tg_muon *o, const tg_st_file *f, const char *prefix, tg_error *err);

/* ---- weight averaging (optim/ema.c) --------------------------------------
 * An exponential moving average of a store's values, kept beside them:
 *   a = decay * a + (1 - decay) * p       (a starts as p)
 * in the store's dtype, one element at a time. Evaluate or save the
 * averages by swapping them into the store, then swap back. */
typedef struct tg_ema tg_ema;
/* NULL, with a message in err, when p is NULL, decay is outside [0, 1)
 * (or NaN), or out of memory. The averages start as p's values. */
TG_API tg_ema *tg_ema_new(tg_params *p, double decay, tg_error *err);
/* One update of every average from the store's values: 0. Does nothing
 * and returns -1 with the reason when the store has grown since the
 * average was made, or for a NULL e. */
TG_API int tg_ema_update(tg_ema *e, tg_error *err);
/* Exchanges the store's values and the averages (twice: as before). 0;
 * -1 as tg_ema_update. */
TG_API int tg_ema_swap(tg_ema *e, tg_error *err);
/* The averages start again as the store's values (as tg_ema_new starts
 * them), e.g. once a run's weights are final before its first step. 0;
 * -1 as tg_ema_update. */
TG_API int tg_ema_reset(tg_ema *e, tg_error *err);
TG_API double tg_ema_decay(const tg_ema *e); /* NAN for NULL */
/* The averages (the store's values while swapped): tg_ema_numel elements
 * of the store's dtype, in the store's layout; NULL for NULL. */
TG_API void *tg_ema_values(tg_ema *e);
TG_API int64_t tg_ema_numel(const tg_ema *e); /* 0 for NULL */
TG_API void tg_ema_free(tg_ema *e); /* accepts NULL */

#define TG_EMA_PREFIX_MAX 200 /* the longest prefix of the state's names, in bytes */
/* The state into a safetensors file being written: the averages as
 * tensor "<prefix>.values" (1-D, the store's dtype, tg_ema_numel
 * elements) and the decay as metadata "<prefix>.decay" (%.17g). 0, or -1
 * (a NULL argument, a prefix too long, or the writer's error). */
TG_API int tg_ema_state_write(const tg_ema *e, tg_st_writer *w, const char *prefix);
/* Restores what tg_ema_state_write wrote into an average of the same
 * store with the same decay. Everything is checked before anything
 * changes: the tensor present, 1-D, the store's dtype and size, every
 * element finite, the decay equal. 0, or -1 with a message naming the
 * tensor or key (the average is then unchanged). */
TG_API int tg_ema_state_read(tg_ema *e, const tg_st_file *f, const char *prefix, tg_error *err);

/* Scales every gradient of p by coef = max_norm / (norm + 1e-6) when
 * coef < 1, norm the global L2 norm over all of them (PyTorch
 * clip_grad_norm_; it multiplies by min(coef, 1), the same values).
 * Returns the norm before clipping (computed in double); a NaN or inf
 * norm is returned as is and nothing is scaled. A NaN or negative
 * max_norm scales nothing; max_norm 0 zeroes every gradient (as PyTorch).
 * NaN when p is NULL. */
TG_API double tg_clip_grad_norm(tg_params *p, double max_norm);

/* How tg_clip_grad_norm_part combines the parts of a gradient that
 * several processes hold: reduce(ctx, x, max) replaces *x on every part
 * with the sum (max false) or the maximum (max true) of all the parts'
 * *x, the same value on each. */
typedef void (*tg_clip_reduce_fn)(void *ctx, double *x, bool max);
/* tg_clip_grad_norm for one part of a gradient spread over several
 * processes (distributed/: each process's shard): grad holds n elements of dt
 * (f32 or f64); the norm is taken over every part's elements, each
 * part's sum of squares combined by reduce (NULL: this part is the whole
 * gradient), so every part is scaled by the same coefficient. The norm
 * is returned as tg_clip_grad_norm returns it; NaN for a NULL grad, a
 * negative n or a dtype that is not f32/f64 (then nothing is combined:
 * call it alike on every part). */
TG_API double tg_clip_grad_norm_part(void *grad, tg_dtype dt, int64_t n, double max_norm, tg_clip_reduce_fn reduce,
                                     void *ctx);

/* nanoGPT's schedule: linear warmup lr * (step + 1) / (warmup + 1) for
 * step < warmup; then cosine from lr down to min_lr at step decay_steps;
 * min_lr after that. step counts from 0:
 *   ratio = (step - warmup) / (decay_steps - warmup)
 *   lr_t  = min_lr + 0.5 * (1 + cos(pi * ratio)) * (lr - min_lr)
 * so lr_t = lr at step == warmup and min_lr from step == decay_steps on
 * (also when decay_steps <= warmup). A negative step or warmup counts as 0. */
TG_API double tg_lr_cosine(int64_t step, int64_t warmup, int64_t decay_steps, double lr, double min_lr);

/* The shapes of tg_lr_at's schedule after its warmup. */
typedef enum tg_lr_shape {
    TG_LR_COSINE = 0, /* nanoGPT's cosine down to min_lr at decay_steps (tg_lr_cosine) */
    TG_LR_WSD = 1 /* warmup-stable-decay: lr, then a linear decay over the last decay_frac */
} tg_lr_shape;

/* A learning-rate schedule over a run's steps (step 0 is the first). */
typedef struct tg_lr_schedule {
    tg_lr_shape shape;
    int64_t warmup; /* linear warmup steps, as tg_lr_cosine */
    int64_t decay_steps; /* the step where min_lr is reached (a run's length, or more) */
    double lr, min_lr; /* peak and final learning rate */
    double decay_frac; /* TG_LR_WSD: the fraction of decay_steps the decay takes, in [0, 1] */
} tg_lr_schedule;

/* The learning rate at step under s. Both shapes share the warmup
 * lr * (step + 1) / (warmup + 1) for step < warmup and give min_lr from
 * step decay_steps on. TG_LR_COSINE is tg_lr_cosine. TG_LR_WSD (the
 * warmup-stable-decay of modded-nanogpt and nanochat) holds lr until
 * the decay starts at D0 = decay_steps - round(decay_frac decay_steps)
 * (not before warmup), then falls linearly:
 *   lr_t = min_lr + (lr - min_lr) (decay_steps - step) / (decay_steps - D0)
 * so the last step before decay_steps trains at min_lr + (lr - min_lr) /
 * (decay_steps - D0). decay_frac outside [0, 1] (or NaN) counts as the
 * nearer end (NaN as 0); a negative step or warmup as 0; an unknown shape
 * as TG_LR_COSINE. NAN for a NULL s. */
TG_API double tg_lr_at(const tg_lr_schedule *s, int64_t step);

#ifdef __cplusplus
}
#endif

#endif
