/* tiny_gpt train's progress line: the time a run has left, its steps and
 * its evaluations (each with its saves) at what they were measured to
 * cost. */
#ifndef TINY_GPT_ETA_H
#define TINY_GPT_ETA_H

#include <stddef.h>
#include <stdint.h>

typedef struct eta_plan {
    int64_t steps;           /* the run's steps */
    int64_t stop_at;         /* --stop-at (0: none): the run ends there when it comes before steps */
    int64_t eval_interval;   /* an evaluation after every eval_interval-th step, and one after the last */
    double step_s;           /* a step, in seconds */
    double eval_s;           /* an evaluation with its saves; < 0 while none has been timed (a resume) */
    double save_s;           /* the save a stop at stop_at makes */
} eta_plan;

/* The evaluations a run at `step` (steps done) still makes: after each
 * step in (step, end] that eval_interval divides, end the step it ends
 * at (stop_at before steps, else steps), and after step `steps` when the
 * run gets there and eval_interval does not divide it. */
int64_t eta_evals_left(const eta_plan *p, int64_t step);
/* The seconds a run at `step` has left: its steps to the end at step_s,
 * its evaluations left at eval_s (0 while untimed), and a stop's save. */
double eta_seconds(const eta_plan *p, int64_t step);
/* eta_seconds as the line shows it ("45s", "3m07s", "2h05m"), followed by
 * " + N evaluations" while their cost is untimed. */
void eta_format(const eta_plan *p, int64_t step, char *buf, size_t size);

#endif
