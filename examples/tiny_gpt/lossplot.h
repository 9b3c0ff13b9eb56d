/* tiny_gpt train's loss curve: OUT/loss.png drawn from OUT/metrics.csv.
 *
 * Two series against the step: the batch loss of every step (the "loss"
 * column) and the val loss of every evaluation (the "val_loss" column;
 * columns are found by the header's names, metrics.h). When a step appears twice, the
 * later row wins. Axes are linear: x from the first to the last step, y
 * over both series' range padded by 5%, with tick labels. */
#ifndef TINY_GPT_LOSSPLOT_H
#define TINY_GPT_LOSSPLOT_H

#include <stddef.h>

#include "image.h"

#define LOSSPLOT_W 800
#define LOSSPLOT_H 480
/* the plot area [LEFT, RIGHT) x [TOP, BOTTOM): curves are drawn only here,
 * axis labels and the legend only outside it */
#define LOSSPLOT_LEFT 72
#define LOSSPLOT_RIGHT (LOSSPLOT_W - 24)
#define LOSSPLOT_TOP 40
#define LOSSPLOT_BOTTOM (LOSSPLOT_H - 48)

static const rgb LOSSPLOT_TRAIN = {31, 119, 180};   /* blue */
static const rgb LOSSPLOT_VAL = {230, 97, 1};       /* orange */

/* Reads metrics_csv (tiny_gpt train's columns, metrics.h)
 * and writes the picture to png_path atomically. 0, or -1 with a message. */
int lossplot_write(const char *metrics_csv, const char *png_path, char *err, size_t errlen);

#endif
