/* The time a run has left (eta.h). */
#include "eta.h"

#include <math.h>
#include <stdio.h>

/* The step the run ends at: --stop-at when it comes first. */
static int64_t end_of(const eta_plan *p) { return p->stop_at > 0 && p->stop_at < p->steps ? p->stop_at : p->steps; }

int64_t eta_evals_left(const eta_plan *p, int64_t step)
{
    const int64_t end = end_of(p), every = p->eval_interval > 0 ? p->eval_interval : 1;
    if (step >= end) return 0;
    const int64_t at_multiples = end / every - (step > 0 ? step / every : 0);
    return at_multiples + (end == p->steps && p->steps % every != 0);
}

double eta_seconds(const eta_plan *p, int64_t step)
{
    const int64_t end = end_of(p);
    if (step >= end) return end < p->steps ? p->save_s : 0;
    const double evals = (double)eta_evals_left(p, step) * (p->eval_s > 0 ? p->eval_s : 0);
    return (double)(end - step) * p->step_s + evals + (end < p->steps ? p->save_s : 0);
}

void eta_format(const eta_plan *p, int64_t step, char *buf, size_t size)
{
    const double s = eta_seconds(p, step);
    int n;
    if (s >= 3600) n = snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) n = snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else n = snprintf(buf, size, "%.0fs", s);
    const int64_t evals = eta_evals_left(p, step);
    if (p->eval_s < 0 && evals > 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " + %lld evaluation%s", (long long)evals, evals == 1 ? "" : "s");
}
