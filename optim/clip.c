/* Global gradient-norm clipping (torch.nn.utils.clip_grad_norm_, L2):
 *
 *   norm = sqrt(sum over every gradient element of g^2)     (in double)
 *   coef = max_norm / (norm + 1e-6)
 *   g    = g * coef    for every gradient, only when coef < 1
 *
 * A NaN or inf norm is returned and nothing is scaled (PyTorch would scale
 * by NaN). For f64 gradients whose squares overflow although every
 * element is finite, the sum is redone scaled by the largest |g|, so the
 * norm stays finite when it is representable. */
#include "optim.h"

#include <math.h>

#define DEFINE_CLIP(T)                                                           \
    static double sumsq_##T(const T *g, int64_t n, double scale)                 \
    {                                                                            \
        double s = 0;                                                            \
        for (int64_t i = 0; i < n; i++) {                                        \
            double x = (double)g[i] / scale;                                     \
            s += x * x;                                                          \
        }                                                                        \
        return s;                                                                \
    }                                                                            \
    static void scale_##T(T *g, int64_t n, T coef)                               \
    {                                                                            \
        for (int64_t i = 0; i < n; i++) g[i] *= coef;                            \
    }
DEFINE_CLIP(float)
DEFINE_CLIP(double)

static double maxabs_double(const double *g, int64_t n)
{
    double a = 0;
    for (int64_t i = 0; i < n; i++) a = fmax(a, fabs(g[i]));
    return a;
}

double tg_clip_grad_norm(tg_params *p, double max_norm)
{
    if (!p) return NAN;
    int64_t n = tg_params_numel(p);
    void *g = tg_params_grad(p);
    bool f32 = tg_params_dtype(p) == TG_F32;
    double norm = sqrt(f32 ? sumsq_float(g, n, 1) : sumsq_double(g, n, 1));
    if (isinf(norm) && !f32) {
        double a = maxabs_double(g, n);   /* inf if an element is inf */
        if (isfinite(a)) norm = a * sqrt(sumsq_double(g, n, a));
    }
    if (!isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 0 && coef < 1) {   /* false for a NaN or negative max_norm */
        if (f32) scale_float(g, n, (float)coef);
        else scale_double(g, n, coef);
    }
    return norm;
}
