/* tiny_gpt train's OUT/metrics.csv: one row per step, numbered as the
 * console numbers them. Row 0 is the model before training (an
 * evaluation only); row k is the k-th optimizer step: its batch loss,
 * learning rate and speed, and, when an evaluation ran after it, the
 * estimated train and val losses (nats per token) and both in bits per
 * byte. Empty fields mean "not measured at this step".
 *
 *   step,loss,lr,ms_per_step,tokens_per_s,train_loss,val_loss,train_bpb,val_bpb */
#ifndef TINY_GPT_METRICS_H
#define TINY_GPT_METRICS_H

#include <stdint.h>

#include "../../tapegrad.h"

#define METRICS_HEADER "step,loss,lr,ms_per_step,tokens_per_s,train_loss,val_loss,train_bpb,val_bpb"

typedef struct metrics_row {
    int64_t step;
    double loss, lr, ms, tokens_per_s;            /* NAN at step 0 */
    double train, val, train_bpb, val_bpb;        /* NAN when not evaluated */
} metrics_row;

/* A row with nothing measured yet. */
metrics_row metrics_empty(int64_t step);

/* Opens path for appending rows (tg_metrics_open with these columns: a
 * resumed run keeps the rows up to resume_step, the checkpoint's step;
 * resume_step < 0: a new file), the losses (and bits per byte) with 6
 * decimals, or with `digits` significant digits when digits > 0 (train
 * --log-digits: 17 reads an f64 back exactly, for comparing runs). What
 * the resume could not keep is a notice on stderr. NULL with a message. */
tg_metrics *metrics_open(const char *path, int64_t resume_step, int digits, char *err, size_t errlen);
/* Appends row r (flushed). 0, or -1 on a write error. */
int metrics_write(tg_metrics *m, const metrics_row *r);

/* An evaluation as train prints it and `eval --ckpt` repeats it, into
 * buf: "step N: train loss X, val loss Y (Z bits per byte)" from r's
 * step, train, val and val_bpb, then " of the ema weights" or " of the
 * raw weights" when weights is "ema" or "raw" (an --ema run evaluates
 * both: the averages and the weights trained), nothing more for NULL. */
void metrics_eval_line(const metrics_row *r, const char *weights, char *buf, size_t size);

#endif
