/* Learning-rate schedules: nanoGPT's get_lr (cosine), and
 * warmup-stable-decay (tg_lr_at).
 *
 *   step < warmup        lr * (step + 1) / (warmup + 1)
 *   step >= decay_steps  min_lr
 *   otherwise            ratio = (step - warmup) / (decay_steps - warmup)
 *                        min_lr + 0.5 * (1 + cos(pi * ratio)) * (lr - min_lr)
 *
 * nanoGPT returns min_lr for step > decay_steps; at step == decay_steps
 * its cosine gives min_lr too (cos(pi) is exactly -1), so ">=" changes no
 * value and avoids 0/0 when decay_steps == warmup. */
#include "optim.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

double tg_lr_cosine(int64_t step, int64_t warmup, int64_t decay_steps, double lr, double min_lr)
{
    if (warmup < 0) warmup = 0;
    if (step < 0) step = 0;
    if (step < warmup) return lr * ((double)step + 1) / ((double)warmup + 1); /* no int64 + 1 to overflow */
    if (step >= decay_steps) return min_lr;
    double ratio = (double)(step - warmup) / (double)(decay_steps - warmup);
    return min_lr + 0.5 * (1.0 + cos(PI * ratio)) * (lr - min_lr);
}

/* Warmup-stable-decay: the warmup of the cosine, lr until the decay's
 * first step d0, then a straight line reaching min_lr at decay_steps. */
static double lr_wsd(const tg_lr_schedule *s, int64_t step)
{
    const int64_t warmup = s->warmup < 0 ? 0 : s->warmup;
    if (step < warmup) return s->lr * ((double)step + 1) / ((double)warmup + 1);
    if (step >= s->decay_steps) return s->min_lr;
    const double frac = !(s->decay_frac > 0) ? 0 : s->decay_frac > 1 ? 1 : s->decay_frac;
    int64_t d0 = s->decay_steps - (int64_t)llround(frac * (double)s->decay_steps);
    if (d0 < warmup) d0 = warmup;
    if (step < d0) return s->lr;
    return s->min_lr + (s->lr - s->min_lr) * (double)(s->decay_steps - step) / (double)(s->decay_steps - d0);
}

double tg_lr_at(const tg_lr_schedule *s, int64_t step)
{
    if (!s) return NAN;
    if (step < 0) step = 0;
    if (s->shape == TG_LR_WSD) return lr_wsd(s, step);
    return tg_lr_cosine(step, s->warmup, s->decay_steps, s->lr, s->min_lr);
}
