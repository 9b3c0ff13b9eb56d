/* Training to a wall-clock budget: how many steps fit (tg_budget_steps),
 * and a copy of a run's state to time steps on and then take back
 * (tg_train_snapshot), so that the steps timed leave no trace. */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"

/* Evaluations a run of n steps makes after its start: one every
 * eval_interval steps and one at the end. */
static double evals_of(int64_t n, int64_t eval_interval)
{
    return (double)(n / eval_interval) + (n % eval_interval != 0);
}

static double cost_of(const tg_budget_costs *c, int64_t n, int64_t eval_interval)
{
    return c->spent + c->fixed + (double)n * c->step + evals_of(n, eval_interval) * c->eval;
}

static bool bad_cost(double x) { return !(x >= 0) || isinf(x); }

int64_t tg_budget_steps(double budget, double margin, const tg_budget_costs *c, int64_t eval_interval,
                        int64_t max_steps)
{
    if (!c || !(budget > 0) || isinf(budget) || !(margin >= 0 && margin < 1) || eval_interval < 1 || max_steps < 1 ||
        bad_cost(c->spent) || bad_cost(c->step) || bad_cost(c->eval) || bad_cost(c->fixed))
        return -1;
    const double usable = budget * (1 - margin);
    if (cost_of(c, 1, eval_interval) > usable) return 0;
    int64_t lo = 1, hi = max_steps; /* cost_of(lo) fits; the answer is in [lo, hi] */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (cost_of(c, mid, eval_interval) <= usable) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* ---- snapshots -------------------------------------------------------------- */

struct tg_train_snapshot {
    size_t weights, moments, momentum; /* bytes of each copy */
    void *w, *m, *v, *mom;
    int64_t adamw_steps, muon_steps;
    tg_train_state ts;
};

void tg_train_snapshot_free(tg_train_snapshot *s)
{
    if (!s) return;
    free(s->w);
    free(s->m);
    free(s->v);
    free(s->mom);
    free(s);
}

/* the bytes each part of the state takes: the weights, AdamW's moments
 * (its shard), Muon's momentum */
static void sizes(tg_model *m, const tg_adamw *opt, const tg_muon *muon, size_t *w, size_t *mv, size_t *mom)
{
    const size_t es = tg_dtype_size(tg_params_dtype(m->params));
    int64_t lo = 0, hi = 0;
    tg_adamw_shard(opt, &lo, &hi);
    *w = (size_t)tg_params_numel(m->params) * es;
    *mv = (size_t)(hi - lo) * es;
    *mom = muon ? (size_t)tg_muon_numel(muon) * es : 0;
}

tg_train_snapshot *tg_train_snapshot_take(tg_model *m, tg_adamw *opt, tg_muon *muon, const tg_train_state *ts,
                                          tg_error *err)
{
    if (!m || !m->params || !opt || !ts) {
        tg_error_set(err, "train_snapshot_take: %s is NULL",
                     !m || !m->params ? "the model"
                         : !opt       ? "the optimizer"
                                      : "the training state");
        return NULL;
    }
    tg_train_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        tg_error_set(err, "train_snapshot_take: out of memory");
        return NULL;
    }
    sizes(m, opt, muon, &s->weights, &s->moments, &s->momentum);
    s->w = malloc(s->weights ? s->weights : 1);
    s->m = malloc(s->moments ? s->moments : 1);
    s->v = malloc(s->moments ? s->moments : 1);
    s->mom = malloc(s->momentum ? s->momentum : 1);
    if (!s->w || !s->m || !s->v || !s->mom) {
        tg_error_set(err,
                     "train_snapshot_take: out of memory for a copy of %zu bytes of weights and %zu of "
                     "optimizer state",
                     s->weights, 2 * s->moments + s->momentum);
        tg_train_snapshot_free(s);
        return NULL;
    }
    memcpy(s->w, tg_params_data(m->params), s->weights);
    if (s->moments) {
        memcpy(s->m, tg_adamw_m(opt), s->moments);
        memcpy(s->v, tg_adamw_v(opt), s->moments);
    }
    if (s->momentum) memcpy(s->mom, tg_muon_momentum(muon), s->momentum);
    s->adamw_steps = tg_adamw_steps(opt);
    s->muon_steps = muon ? tg_muon_steps(muon) : 0;
    s->ts = *ts;
    return s;
}

int tg_train_snapshot_restore(const tg_train_snapshot *s, tg_model *m, tg_adamw *opt, tg_muon *muon, tg_train_state *ts)
{
    if (!s || !m || !m->params || !opt || !ts) return -1;
    size_t w, mv, mom;
    sizes(m, opt, muon, &w, &mv, &mom);
    if (w != s->weights || mv != s->moments || mom != s->momentum) return -1; /* not the objects it was taken of */
    memcpy(tg_params_data(m->params), s->w, w);
    if (mv) {
        memcpy(tg_adamw_m(opt), s->m, mv);
        memcpy(tg_adamw_v(opt), s->v, mv);
    }
    if (mom) memcpy(tg_muon_momentum(muon), s->mom, mom);
    tg_adamw_set_steps(opt, s->adamw_steps, NULL); /* counts it took: never negative */
    if (muon) tg_muon_set_steps(muon, s->muon_steps, NULL);
    *ts = s->ts;
    return 0;
}
