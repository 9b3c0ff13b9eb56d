/* OUT/metrics.csv (see metrics.h), a tg_metrics file (train/train.h). */
#include "metrics.h"

#include <math.h>
#include <stdio.h>

#include "data.h"

metrics_row metrics_empty(int64_t step)
{
    return (metrics_row){step, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

tg_metrics *metrics_open(const char *path, int64_t resume_step, int digits, char *err, size_t errlen)
{
    char loss[16], notice[512];
    if (digits > 0) snprintf(loss, sizeof loss, "%%.%dg", digits);
    else snprintf(loss, sizeof loss, "%%.6f");
    const tg_metrics_column cols[8] = {{"loss", loss},         {"lr", "%.6g"},       {"ms_per_step", "%.3f"},
                                       {"tokens_per_s", "%.1f"}, {"train_loss", loss}, {"val_loss", loss},
                                       {"train_bpb", loss},     {"val_bpb", loss}};
    tg_metrics *m = tg_metrics_open(path, cols, 8, resume_step, notice, sizeof notice, err, errlen);
    if (m && notice[0]) fprintf(stderr, "tiny_gpt train: notice: %s\n", notice);
    return m;
}

int metrics_write(tg_metrics *m, const metrics_row *r)
{
    const double v[8] = {r->loss, r->lr, r->ms, r->tokens_per_s, r->train, r->val, r->train_bpb, r->val_bpb};
    return tg_metrics_write(m, r->step, v);
}

void metrics_eval_line(const metrics_row *r, const char *weights, char *buf, size_t size)
{
    char bpb[80];
    bpb_note(bpb, sizeof bpb, r->val_bpb);
    snprintf(buf, size, "step %lld: train loss %.4f, val loss %.4f (%s)%s%s%s", (long long)r->step, r->train, r->val,
             bpb, weights ? " of the " : "", weights ? weights : "", weights ? " weights" : "");
}
