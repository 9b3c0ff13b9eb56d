/* tiny_gpt train's loss curve, OUT/loss.png from OUT/metrics.csv: the
 * library's tg_lossplot_write (pictures/pictures.h) with its default
 * columns, "loss" and "val_loss" (metrics.h), and the message into
 * err. 0, or -1 with a message. */
#ifndef TINY_GPT_LOSSPLOT_H
#define TINY_GPT_LOSSPLOT_H

#include <string.h>

#include "../../tapegrad.h"

static inline int lossplot_write(const char *metrics_csv, const char *png_path, char *err, size_t errlen)
{
    tg_error e = {0};
    if (tg_lossplot_write(metrics_csv, png_path, NULL, &e) == 0) return 0;
    const size_t n = errlen ? strnlen(e.msg, errlen - 1) : 0;   /* the message, cut to errlen */
    if (errlen) memcpy(err, e.msg, n), err[n] = 0;
    return -1;
}

#endif
