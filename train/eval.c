/* The loss estimate on a split (train.h, tg_eval_loss), and reading a
 * file whole. */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"

double tg_eval_loss(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, const tg_eval_spec *s, char *err,
                    size_t errlen)
{
    if (!g || !m || !d || !s) {
        tg_set_err(err, errlen, "eval_loss: %s is NULL", !g ? "the graph" : !m ? "the model" : !d ? "the dataset" : "the spec");
        return NAN;
    }
    const int B = s->batch, A = s->accum, T = s->T, R = s->ranks;
    if (B < 1 || A < 1 || T < 1 || s->iters < 1 || R < 1 || s->rank < 0 || s->rank >= R) {
        tg_set_err(err, errlen, "eval_loss: batch %d, accum %d, T %d, iters %lld, rank %d of %d: each must be >= 1 "
                   "and the rank below the ranks", B, A, T, (long long)s->iters, s->rank, R);
        return NAN;
    }
    const size_t n = val ? d->n - d->n_train : d->n_train;
    if (n < (size_t)T + 1) {
        tg_set_err(err, errlen, "eval_loss: the %s split's %zu tokens hold no window of T + 1 = %d", val ? "val" : "train",
                   n, T + 1);
        return NAN;
    }
    int32_t *x = malloc((size_t)B * T * sizeof *x), *y = malloc((size_t)B * T * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        tg_set_err(err, errlen, "eval_loss: out of memory for the batches");
        return NAN;
    }
    tg_rng rng;
    tg_rng_seed(&rng, s->seed * 1000003u + (uint64_t)s->step, val ? 2 : 3);
    const bool grad = tg_graph_set_grad_enabled(g, false);
    const bool training = tg_graph_training(g);
    tg_graph_set_training(g, false);
    double sum = 0;
    for (int64_t i = 0; i < s->iters * A; i++) {
        if (s->progress && i % A == 0) s->progress(s->ctx, i / A, s->iters);
        tg_dataset_rows(d, val, R * B, s->rank * B, B, T, &rng, x, y);
        tg_tensor *xt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, x);   /* (B,T) */
        tg_tensor *yt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, y);   /* (B,T) */
        tg_tensor *loss = tg_model_loss(g, m, xt, yt);                    /* () */
        if (!loss) {
            tg_set_err(err, errlen, "%s", tg_graph_error(g));
            sum = NAN;
            break;
        }
        sum += tg_tensor_item(loss);
        tg_graph_reset(g);
    }
    tg_graph_reset(g);
    tg_graph_set_training(g, training);
    tg_graph_set_grad_enabled(g, grad);
    free(x);
    free(y);
    if (isnan(sum)) return NAN;
    if (s->sum) s->sum(s->ctx, &sum);   /* every process's rows */
    return sum / (double)(s->iters * A * R);
}

char *tg_file_read(const char *path, size_t *len, char *err, size_t errlen)
{
    if (!path || !len) {
        tg_set_err(err, errlen, "file_read: %s is NULL", path ? "len" : "the path");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        tg_set_err(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *b = realloc(buf, cap);
            if (!b) {
                tg_set_err(err, errlen, "%s: out of memory", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        const size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (got < 65536) break;
    }
    if (ferror(f)) {
        tg_set_err(err, errlen, "%s: read error (%s)", path, strerror(errno));
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}
