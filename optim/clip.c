/* Global gradient-norm clipping (torch.nn.utils.clip_grad_norm_, L2):
 *
 *   norm = sqrt(sum over every gradient element of g^2)     (in double)
 *   coef = max_norm / (norm + 1e-6)
 *   g    = g * coef    for every gradient, only when coef < 1
 *
 * A NaN or inf norm is returned and nothing is scaled (PyTorch would scale
 * by NaN). For f64 gradients whose squares overflow although every
 * element is finite, the sum is redone scaled by the largest |g|, so the
 * norm stays finite when it is representable.
 *
 * tg_clip_grad_norm_part does the same for one process's part of a
 * gradient that several hold (distributed/): the sums of squares (and the
 * largest |g| of the rescaled sum) are combined by the caller's reduce
 * before the square root, so every part gets the same coefficient. */
#include "optim.h"

#include <math.h>

#include "../core/parallel.h"

enum { LANES = 8 }; /* partial sums, so the loop vectorises */

static double sumsq_float(const float *g, int64_t n, double scale)
{
    double s[LANES] = {0}, inv = 1 / scale, t = 0;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) s[k] += ((double)g[i + k] * inv) * ((double)g[i + k] * inv);
    for (; i < n; i++) t += ((double)g[i] * inv) * ((double)g[i] * inv);
    for (int k = 0; k < LANES; k++) t += s[k];
    return t;
}

static double sumsq_double(const double *g, int64_t n, double scale)
{
    double s[LANES] = {0}, inv = 1 / scale, t = 0;
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) s[k] += (g[i + k] * inv) * (g[i + k] * inv);
    for (; i < n; i++) t += (g[i] * inv) * (g[i] * inv);
    for (int k = 0; k < LANES; k++) t += s[k];
    return t;
}

static void scale_float(float *g, int64_t n, float coef)
{
    for (int64_t i = 0; i < n; i++) g[i] *= coef;
}

static void scale_double(double *g, int64_t n, double coef)
{
    for (int64_t i = 0; i < n; i++) g[i] *= coef;
}

static double maxabs_double(const double *g, int64_t n)
{
    double a = 0;
    for (int64_t i = 0; i < n; i++) a = fmax(a, fabs(g[i]));
    return a;
}

/* The sum of squares (or the scaling) split into parts (as many on any
 * thread count): each part writes its sum to part_sum[part], added in
 * part order after. */
typedef struct clip_job {
    bool f32, scaling; /* scaling: multiply the gradient by coef instead */
    void *g;
    double scale, coef;
    double part_sum[TG_PARALLEL_MAX_PARTS];
} clip_job;

#define CLIP_GRAIN 65536

static void clip_part(void *ctx, int64_t lo, int64_t hi)
{
    clip_job *j = ctx;
    if (j->scaling && j->f32) scale_float((float *)j->g + lo, hi - lo, (float)j->coef);
    else if (j->scaling) scale_double((double *)j->g + lo, hi - lo, j->coef);
    else if (j->f32) j->part_sum[tg_parallel_part()] = sumsq_float((float *)j->g + lo, hi - lo, j->scale);
    else j->part_sum[tg_parallel_part()] = sumsq_double((double *)j->g + lo, hi - lo, j->scale);
}

static double sumsq(clip_job *j, int64_t n, double scale)
{
    j->scale = scale;
    const int parts = tg_parallel_parts(n, CLIP_GRAIN);
    for (int i = 0; i < parts; i++) j->part_sum[i] = 0;
    tg_parallel_for(n, CLIP_GRAIN, clip_part, j);
    double s = 0;
    for (int i = 0; i < parts; i++) s += j->part_sum[i];
    return s;
}

double tg_clip_grad_norm(tg_params *p, double max_norm)
{
    if (!p) return NAN;
    return tg_clip_grad_norm_part(tg_params_grad(p), tg_params_dtype(p), tg_params_numel(p), max_norm, NULL, NULL);
}

double tg_clip_grad_norm_part(void *grad, tg_dtype dt, int64_t n, double max_norm, tg_clip_reduce_fn reduce, void *ctx)
{
    if ((!grad && n > 0) || n < 0 || !tg_dtype_is_float(dt)) return NAN;
    clip_job j = {.f32 = dt == TG_F32, .g = grad};
    double ss = sumsq(&j, n, 1);
    if (reduce) reduce(ctx, &ss, false);
    double norm = sqrt(ss);
    if (isinf(norm) && !j.f32) {
        double a = maxabs_double(j.g, n); /* inf if an element is inf */
        if (reduce) reduce(ctx, &a, true);
        if (isfinite(a)) {
            ss = sumsq(&j, n, a);
            if (reduce) reduce(ctx, &ss, false);
            norm = a * sqrt(ss);
        }
    }
    if (!isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 0 && coef < 1) { /* false for a NaN or negative max_norm */
        j.coef = coef;
        j.scaling = true;
        tg_parallel_for(n, CLIP_GRAIN, clip_part, &j);
    }
    return norm;
}
