/* The loss estimate on a split (train.h, tg_eval_loss), and reading a
 * file whole. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"

/* The model's mean loss on one micro-batch x, y (B,T) of g, then g reset:
 * the loss, or NAN with the graph's message in err. */
static double batch_loss(tg_graph *g, tg_model *m, int B, int T, int32_t *x, int32_t *y, tg_error *err)
{
    tg_tensor *xt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, x); /* (B,T) */
    tg_tensor *yt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, y); /* (B,T) */
    tg_tensor *loss = tg_model_loss(g, m, xt, yt); /* () */
    const double l = loss ? tg_tensor_item(loss) : NAN;
    if (!loss) tg_error_set(err, "%s", tg_graph_error(g));
    tg_graph_reset(g);
    return l;
}

/* s->iters batches of random windows: the sum of their micro-batches' means. */
static double random_windows(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, const tg_eval_spec *s, int32_t *x,
                             int32_t *y, tg_error *err)
{
    const int B = s->batch, A = s->accum, T = s->T;
    tg_rng rng;
    tg_rng_seed(&rng, s->seed * 1000003u + (uint64_t)s->step, val ? 2 : 3);
    double sum = 0;
    for (int64_t i = 0; i < s->iters * A && !isnan(sum); i++) {
        if (s->progress && i % A == 0) s->progress(s->ctx, i / A, s->iters);
        tg_dataset_rows(d, val, &(tg_rows){x, y, s->ranks * B, s->rank * B, B, T}, &rng);
        sum += batch_loss(g, m, B, T, x, y, err);
    }
    return sum;
}

/* Every window of the split's n tokens once: window w's inputs are tokens
 * [wT, wT + T), its targets one further, the last window holding what is
 * left; micro-batch k (windows [kB, kB + B)) is this process's when
 * k mod ranks is its rank. Missing positions have input 0 and target -1
 * (ignored; attention is causal, so they change nothing before them).
 * The sum over the targets of their losses. */
static double every_window(tg_graph *g, tg_model *m, const int32_t *tok, size_t n, const tg_eval_spec *s, int32_t *x,
                           int32_t *y, tg_error *err)
{
    const int B = s->batch, T = s->T, R = s->ranks;
    const size_t targets = n - 1, windows = (targets + (size_t)T - 1) / (size_t)T;
    const size_t batches = (windows + (size_t)B - 1) / (size_t)B;
    const int64_t mine = (int64_t)((batches + (size_t)(R - 1 - s->rank)) / (size_t)R);
    double sum = 0;
    int64_t done = 0;
    for (size_t k = (size_t)s->rank; k < batches && !isnan(sum); k += (size_t)R) {
        if (s->progress) s->progress(s->ctx, done, mine);
        size_t counted = 0;
        for (int b = 0; b < B; b++) {
            const size_t w = k * (size_t)B + (size_t)b, at = w * (size_t)T;
            const size_t len = w >= windows ? 0 : targets - at < (size_t)T ? targets - at : (size_t)T;
            int32_t *xb = x + (size_t)b * T, *yb = y + (size_t)b * T;
            memcpy(xb, tok + at, len * sizeof *xb);
            memcpy(yb, tok + at + 1, len * sizeof *yb);
            for (size_t j = len; j < (size_t)T; j++) xb[j] = 0, yb[j] = -1;
            counted += len;
        }
        sum += batch_loss(g, m, B, T, x, y, err) * (double)counted;
        done++;
    }
    return sum;
}

double tg_eval_loss(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, const tg_eval_spec *s, tg_error *err)
{
    if (!g || !m || !d || !s) {
        tg_error_set(err, "eval_loss: %s is NULL",
                     !g       ? "the graph"
                         : !m ? "the model"
                         : !d ? "the dataset"
                              : "the spec");
        return NAN;
    }
    const int B = s->batch, A = s->accum, T = s->T, R = s->ranks;
    if (B < 1 || A < 1 || T < 1 || (!s->whole && s->iters < 1) || R < 1 || s->rank < 0 || s->rank >= R) {
        tg_error_set(err,
                     "eval_loss: batch %d, accum %d, T %d, iters %lld, rank %d of %d: each must be >= 1 "
                     "and the rank below the ranks",
                     B, A, T, (long long)s->iters, s->rank, R);
        return NAN;
    }
    const size_t n = val ? d->n - d->n_train : d->n_train;
    if (s->whole ? n < 2 : n < (size_t)T + 1) {
        if (s->whole)
            tg_error_set(err, "eval_loss: the %s split's %zu tokens hold no target (a token after another)",
                         val ? "val" : "train", n);
        else
            tg_error_set(err, "eval_loss: the %s split's %zu tokens hold no window of T + 1 = %d",
                         val ? "val" : "train", n, T + 1);
        return NAN;
    }
    if (!d->tokens) {
        tg_error_set(err, "eval_loss: the dataset has no tokens");
        return NAN;
    }
    int32_t *x = malloc((size_t)B * T * sizeof *x), *y = malloc((size_t)B * T * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        tg_error_set(err, "eval_loss: out of memory for the batches");
        return NAN;
    }
    const bool grad = tg_graph_set_grad_enabled(g, false);
    const bool training = tg_graph_training(g);
    tg_graph_set_training(g, false);
    double sum = s->whole ? every_window(g, m, val ? d->tokens + d->n_train : d->tokens, n, s, x, y, err)
                          : random_windows(g, m, d, val, s, x, y, err);
    tg_graph_set_training(g, training);
    tg_graph_set_grad_enabled(g, grad);
    free(x);
    free(y);
    if (isnan(sum)) return NAN;
    if (s->sum) s->sum(s->ctx, &sum); /* every process's rows */
    return sum / (s->whole ? (double)(n - 1) : (double)(s->iters * A * R));
}
