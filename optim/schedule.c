/* Learning-rate schedule: nanoGPT's get_lr.
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
    if (step < warmup) return lr * ((double)step + 1) / ((double)warmup + 1);   /* no int64 + 1 to overflow */
    if (step >= decay_steps) return min_lr;
    double ratio = (double)(step - warmup) / (double)(decay_steps - warmup);
    return min_lr + 0.5 * (1.0 + cos(PI * ratio)) * (lr - min_lr);
}
