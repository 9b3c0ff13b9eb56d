/* The time a run has left (train/run.h), and the clock a run is timed by. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "run_internal.h"

double tg_run_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The step the run ends at: stop_at when it comes first. */
static int64_t end_of(const tg_eta_plan *p) { return p->stop_at > 0 && p->stop_at < p->steps ? p->stop_at : p->steps; }

int64_t tg_eta_evals_left(const tg_eta_plan *p, int64_t step)
{
    if (!p) return 0;
    const int64_t end = end_of(p), every = p->eval_interval > 0 ? p->eval_interval : 1;
    if (step >= end) return 0;
    const int64_t at_multiples = end / every - (step > 0 ? step / every : 0);
    return at_multiples + (end == p->steps && p->steps % every != 0);
}

double tg_eta_seconds(const tg_eta_plan *p, int64_t step)
{
    if (!p) return NAN;
    const int64_t end = end_of(p);
    if (step >= end) return end < p->steps ? p->save_s : 0;
    const double evals = (double)tg_eta_evals_left(p, step) * (p->eval_s > 0 ? p->eval_s : 0);
    return (double)(end - step) * p->step_s + evals + (end < p->steps ? p->save_s : 0);
}

int tg_eta_format(const tg_eta_plan *p, int64_t step, char *buf, size_t size)
{
    if (!p || !buf || !size) return -1;
    const double s = tg_eta_seconds(p, step);
    int n;
    if (s >= 3600) n = snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) n = snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else n = snprintf(buf, size, "%.0fs", s);
    const int64_t evals = tg_eta_evals_left(p, step);
    if (p->eval_s < 0 && evals > 0 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " + %lld evaluation%s", (long long)evals, evals == 1 ? "" : "s");
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
