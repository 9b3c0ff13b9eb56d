/* The loss-curve picture (see lossplot.h): parse metrics.csv, map steps and
 * losses linearly onto the plot area, draw grid, axes, tick labels, the
 * two curves and a legend into an RGB image, encode it as PNG and write it
 * atomically. Pixel y grows downwards, so a loss maps to
 * BOTTOM - (loss - ymin) / (ymax - ymin) * (BOTTOM - TOP). */
#include "lossplot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"

typedef struct point {
    double step, loss;
    size_t order;   /* row number, so that a repeated step keeps its last row */
} point;

typedef struct series {
    point *p;
    size_t n, cap;
} series;

static int series_add(series *s, double step, double loss, size_t order)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        point *p = realloc(s->p, cap * sizeof *p);
        if (!p) return -1;
        s->p = p;
        s->cap = cap;
    }
    s->p[s->n++] = (point){step, loss, order};
    return 0;
}

static int by_step_then_order(const void *a, const void *b)
{
    const point *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Sorted by step, one point per step (the last row's). */
static void series_tidy(series *s)
{
    if (!s->n) return;
    qsort(s->p, s->n, sizeof *s->p, by_step_then_order);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && s->p[k - 1].step == s->p[i].step) s->p[k - 1] = s->p[i];
        else s->p[k++] = s->p[i];
    }
    s->n = k;
}

/* A finite number filling the whole field [s, end), else NAN (empty field: NAN). */
static double field(const char *s, const char *end)
{
    if (s == end) return NAN;
    char buf[64];
    size_t n = (size_t)(end - s);
    if (n >= sizeof buf) return NAN;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    double v = strtod(buf, &e);
    return *e || !isfinite(v) ? NAN : v;
}

/* The bounds of field k (0-based) of a CSV line: [*s, *e). False when the
 * line has fewer fields. */
static bool nth_field(const char *line, int k, const char **s, const char **e)
{
    const char *p = line;
    for (int i = 0; i < k; i++) {
        p = strchr(p, ',');
        if (!p) return false;
        p++;
    }
    *s = p;
    *e = p + strcspn(p, ",\r\n");
    return true;
}

/* The index of the column called name in the header line, or -1. */
static int column(const char *header, const char *name)
{
    const char *s, *e;
    for (int k = 0; nth_field(header, k, &s, &e); k++)
        if ((size_t)(e - s) == strlen(name) && !strncmp(s, name, (size_t)(e - s))) return k;
    return -1;
}

static int read_metrics(const char *path, series *train, series *val, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, row = 0;
    int rc = 0, c_loss = -1, c_val = -1;
    while (getline(&line, &cap, fp) > 0) {
        if (row++ == 0) {   /* the header names the columns */
            c_loss = column(line, "loss");
            c_val = column(line, "val_loss");
            continue;
        }
        const char *s, *e;
        double step = nth_field(line, 0, &s, &e) ? field(s, e) : NAN;
        if (isnan(step)) continue;
        double tl = c_loss >= 0 && nth_field(line, c_loss, &s, &e) ? field(s, e) : NAN;
        double vl = c_val >= 0 && nth_field(line, c_val, &s, &e) ? field(s, e) : NAN;
        if (!isnan(tl)) rc |= series_add(train, step, tl, row);
        if (!isnan(vl)) rc |= series_add(val, step, vl, row);
        if (rc) break;
    }
    if (ferror(fp) && !rc) {
        snprintf(err, errlen, "%s: read failed: %s", path, strerror(errno));
        rc = -1;
    } else if (rc) {
        snprintf(err, errlen, "%s: out of memory", path);
    }
    free(line);
    fclose(fp);
    return rc ? -1 : 0;
}

/* Tick spacing of 1, 2 or 5 x 10^k giving at most ~6 intervals over range. */
static double nice_step(double range)
{
    double base = pow(10, floor(log10(range / 6)));
    const double mult[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (range / (base * mult[i]) <= 6) return base * mult[i];
    return base * 10;
}

typedef struct frame {
    double x0, x1, y0, y1;   /* data ranges */
} frame;

static double px_x(const frame *f, double x)
{
    return LOSSPLOT_LEFT + (x - f->x0) / (f->x1 - f->x0) * (LOSSPLOT_RIGHT - 1 - LOSSPLOT_LEFT);
}
static double px_y(const frame *f, double y)
{
    return LOSSPLOT_BOTTOM - 1 - (y - f->y0) / (f->y1 - f->y0) * (LOSSPLOT_BOTTOM - 1 - LOSSPLOT_TOP);
}

static void draw_series(image *im, const frame *f, const series *s, int thick, int marker, rgb c)
{
    for (size_t i = 0; i < s->n; i++) {
        double x = px_x(f, s->p[i].step), y = px_y(f, s->p[i].loss);
        if (i) image_line(im, px_x(f, s->p[i - 1].step), px_y(f, s->p[i - 1].loss), x, y, thick, c);
        else image_line(im, x, y, x, y, thick, c);   /* a lone point still shows */
        if (marker) {
            int xi = (int)lround(x), yi = (int)lround(y);
            image_fill_rect(im, xi - marker / 2, yi - marker / 2, xi + marker / 2 + 1, yi + marker / 2 + 1, c);
        }
    }
}

static void draw(image *im, const series *train, const series *val)
{
    const rgb ink = {40, 40, 40}, grid = {228, 228, 228};
    frame f = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    const series *all[2] = {train, val};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < all[k]->n; i++) {
            const point *p = &all[k]->p[i];
            f.x0 = fmin(f.x0, p->step), f.x1 = fmax(f.x1, p->step);
            f.y0 = fmin(f.y0, p->loss), f.y1 = fmax(f.y1, p->loss);
        }
    if (!(f.x0 <= f.x1)) f.x0 = 0, f.x1 = 1, f.y0 = 0, f.y1 = 1;   /* no data: empty axes */
    if (f.x1 == f.x0) f.x1 = f.x0 + 1;
    double pad = 0.05 * (f.y1 - f.y0);
    if (pad < 1e-6) pad = 0.5;
    f.y0 -= pad, f.y1 += pad;

    /* grid and tick labels */
    char lab[32];
    double ys = nice_step(f.y1 - f.y0);
    int ydec = ys >= 1 ? 0 : (int)ceil(-log10(ys) - 1e-9);
    for (int k = 0; k < 20 && isfinite(ys); k++) {   /* (at most ~7 ticks; the bound guards odd ranges) */
        double y = (ceil(f.y0 / ys) + k) * ys;
        if (y > f.y1) break;
        int py = (int)lround(px_y(&f, y));
        image_fill_rect(im, LOSSPLOT_LEFT, py, LOSSPLOT_RIGHT, py + 1, grid);
        image_fill_rect(im, LOSSPLOT_LEFT - 5, py, LOSSPLOT_LEFT, py + 1, ink);
        snprintf(lab, sizeof lab, "%.*f", ydec, fabs(y) < ys / 2 ? 0.0 : y);
        image_text(im, LOSSPLOT_LEFT - 9 - image_text_width(lab, 2), py - 6, 2, lab, ink);
    }
    double xs = fmax(1, nice_step(f.x1 - f.x0));
    for (int k = 0; k < 20 && isfinite(xs); k++) {
        double x = (ceil(f.x0 / xs) + k) * xs;
        if (x > f.x1) break;
        int px = (int)lround(px_x(&f, x));
        image_fill_rect(im, px, LOSSPLOT_TOP, px + 1, LOSSPLOT_BOTTOM, grid);
        image_fill_rect(im, px, LOSSPLOT_BOTTOM, px + 1, LOSSPLOT_BOTTOM + 5, ink);
        snprintf(lab, sizeof lab, "%.0f", x);
        image_text(im, px - image_text_width(lab, 2) / 2, LOSSPLOT_BOTTOM + 9, 2, lab, ink);
    }
    /* axes (left and bottom edges of the plot area) */
    image_fill_rect(im, LOSSPLOT_LEFT - 1, LOSSPLOT_TOP, LOSSPLOT_LEFT, LOSSPLOT_BOTTOM + 1, ink);
    image_fill_rect(im, LOSSPLOT_LEFT - 1, LOSSPLOT_BOTTOM, LOSSPLOT_RIGHT, LOSSPLOT_BOTTOM + 1, ink);
    image_text(im, (LOSSPLOT_LEFT + LOSSPLOT_RIGHT - image_text_width("step", 2)) / 2, LOSSPLOT_H - 18, 2, "step", ink);
    image_text(im, 8, 10, 2, "loss", ink);

    image_clip(im, LOSSPLOT_LEFT, LOSSPLOT_TOP, LOSSPLOT_RIGHT, LOSSPLOT_BOTTOM);
    draw_series(im, &f, train, 1, 0, LOSSPLOT_TRAIN);
    draw_series(im, &f, val, 2, 5, LOSSPLOT_VAL);
    image_clip(im, 0, 0, im->w, im->h);

    /* legend, in the top margin */
    int lx = LOSSPLOT_RIGHT - 230;
    image_fill_rect(im, lx, 16, lx + 24, 19, LOSSPLOT_TRAIN);
    image_text(im, lx + 30, 10, 2, "train", ink);
    image_fill_rect(im, lx + 110, 16, lx + 134, 19, LOSSPLOT_VAL);
    image_text(im, lx + 140, 10, 2, "val", ink);
}

int lossplot_write(const char *metrics_csv, const char *png_path, char *err, size_t errlen)
{
    series train = {0}, val = {0};
    image im = {0};
    uint8_t *png = NULL;
    size_t len = 0;
    int rc = -1;
    if (read_metrics(metrics_csv, &train, &val, err, errlen)) goto done;
    series_tidy(&train);
    series_tidy(&val);
    if (image_new(&im, LOSSPLOT_W, LOSSPLOT_H, (rgb){255, 255, 255})) {
        snprintf(err, errlen, "%s: out of memory", png_path);
        goto done;
    }
    draw(&im, &train, &val);
    if (image_png(&im, &png, &len)) {
        snprintf(err, errlen, "%s: out of memory encoding the PNG", png_path);
        goto done;
    }
    rc = write_file_atomic(png_path, png, len, err, errlen);
done:
    free(png);
    image_free(&im);
    free(train.p);
    free(val.p);
    return rc;
}
