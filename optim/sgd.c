/* SGD with momentum and coupled weight decay (torch.optim.SGD, dampening 0,
 * not Nesterov). Per step, for each element with value p, gradient grad:
 *
 *   g = grad + weight_decay * p          (skipped when weight_decay == 0)
 *   b = momentum * b + g                 (b = g on the first step)
 *   p = p - lr * (momentum > 0 ? b : g)
 *
 * Arithmetic is in the store's dtype; lr, momentum and weight_decay are
 * rounded to it first, as PyTorch does with Python scalars. */
#include "optim.h"

#include <math.h>
#include <stdio.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

struct tg_sgd {
    tg_params *p;
    double momentum, weight_decay;
    void *buf; /* momentum buffers, numel elements; NULL if momentum == 0 */
    int64_t numel; /* store size when made */
    int count; /* tensors in the store when made */
    bool started; /* a step has run: buf holds b */
};

tg_sgd *tg_sgd_new(tg_params *p, double momentum, double weight_decay, tg_error *err)
{
    if (!p) {
        tg_error_set(err, "sgd_new: params is NULL");
        return NULL;
    }
    if (!isfinite(momentum) || momentum < 0 || !isfinite(weight_decay) || weight_decay < 0) {
        tg_error_set(err, "sgd_new: momentum and weight_decay must be finite and >= 0, got %g and %g", momentum,
                     weight_decay);
        return NULL;
    }
    tg_sgd *o = tg_calloc(1, sizeof *o);
    if (!o) {
        tg_error_set(err, "sgd_new: out of memory");
        return NULL;
    }
    o->p = p;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->numel = tg_params_numel(p);
    o->count = tg_params_count(p);
    if (momentum > 0) {
        /* at least one element, so an empty store is not mistaken for OOM */
        o->buf = tg_calloc_big((size_t)(o->numel > 0 ? o->numel : 1), tg_dtype_size(tg_params_dtype(p)));
        if (!o->buf) {
            tg_error_set(err, "sgd_new: out of memory for the momentum of %lld elements", (long long)o->numel);
            tg_free(o);
            return NULL;
        }
    }
    return o;
}

#define DEFINE_SGD(T)                                                                                                  \
    static void sgd_##T(T *p, const T *grad, T *b, int64_t n, T lr, T mom, T wd, bool first)                           \
    {                                                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            T g = wd != 0 ? grad[i] + wd * p[i] : grad[i];                                                             \
            if (b) {                                                                                                   \
                b[i] = first ? g : mom * b[i] + g;                                                                     \
                g = b[i];                                                                                              \
            }                                                                                                          \
            p[i] -= lr * g;                                                                                            \
        }                                                                                                              \
    }
DEFINE_SGD(float)
DEFINE_SGD(double)

int tg_sgd_step(tg_sgd *o, double lr, tg_error *err)
{
    if (!o) return tg_error_set(err, "sgd_step: the optimizer is NULL");
    if (!isfinite(lr)) {
        tg_error_set(err, "sgd_step: lr must be finite, got %g; nothing done", lr);
        return -1;
    }
    if (tg_params_numel(o->p) != o->numel || tg_params_count(o->p) != o->count) {
        tg_error_set(err,
                     "sgd_step: the store has grown from %lld to %lld elements since the optimizer was made; "
                     "nothing done",
                     (long long)o->numel, (long long)tg_params_numel(o->p));
        return -1;
    }
    int64_t n = o->numel;
    if (tg_params_dtype(o->p) == TG_F32)
        sgd_float(tg_params_data(o->p), tg_params_grad(o->p), o->buf, n, (float)lr, (float)o->momentum,
                  (float)o->weight_decay, !o->started);
    else
        sgd_double(tg_params_data(o->p), tg_params_grad(o->p), o->buf, n, lr, o->momentum, o->weight_decay,
                   !o->started);
    o->started = true;
    return 0;
}

void tg_sgd_free(tg_sgd *o)
{
    if (!o) return;
    tg_free(o->buf);
    tg_free(o);
}
