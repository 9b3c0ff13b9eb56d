/* The loss plot (see pictures.h): parse a metrics file, map steps and
 * losses linearly onto the plot area, draw grid, axes, tick labels, the
 * two curves and a legend into an RGB image, encode it as PNG and write it
 * atomically. Pixel y grows downwards, so a loss maps to
 * BOTTOM - (loss - ymin) / (ymax - ymin) * (BOTTOM - TOP). */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "pictures.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"

typedef struct point {
    double step, loss;
    size_t order; /* row number, so that a repeated step keeps its last row */
} point;

typedef struct series {
    point *p;
    size_t n, cap;
} series;

static int series_add(series *s, double step, double loss, size_t order)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        point *p = tg_realloc(s->p, cap * sizeof *p);
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

/* The two series of the CSV at path, columns c_train and c_val. 0, or -1
 * with a message. */
static int read_metrics(const char *path, const char *c_train, const char *c_val, series *train, series *val,
                        tg_error *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp) return tg_error_set(err, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, row = 0;
    int rc = 0, k_train = -1, k_val = -1;
    while (getline(&line, &cap, fp) > 0) {
        if (row++ == 0) { /* the header names the columns */
            k_train = column(line, c_train);
            k_val = column(line, c_val);
            continue;
        }
        const char *s, *e;
        double step = nth_field(line, 0, &s, &e) ? field(s, e) : NAN;
        if (isnan(step)) continue;
        double tl = k_train >= 0 && nth_field(line, k_train, &s, &e) ? field(s, e) : NAN;
        double vl = k_val >= 0 && nth_field(line, k_val, &s, &e) ? field(s, e) : NAN;
        if (!isnan(tl)) rc |= series_add(train, step, tl, row);
        if (!isnan(vl)) rc |= series_add(val, step, vl, row);
        if (rc) break;
    }
    if (ferror(fp) && !rc) rc = tg_error_set(err, "%s: read failed: %s", path, strerror(errno));
    else if (rc) tg_error_set(err, "%s: out of memory", path);
    free(line); /* getline's */
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
    double x0, x1, y0, y1; /* data ranges */
} frame;

static double px_x(const frame *f, double x)
{
    return TG_LOSSPLOT_LEFT + (x - f->x0) / (f->x1 - f->x0) * (TG_LOSSPLOT_RIGHT - 1 - TG_LOSSPLOT_LEFT);
}
static double px_y(const frame *f, double y)
{
    return TG_LOSSPLOT_BOTTOM - 1 - (y - f->y0) / (f->y1 - f->y0) * (TG_LOSSPLOT_BOTTOM - 1 - TG_LOSSPLOT_TOP);
}

static void draw_series(tg_image *im, const frame *f, const series *s, int thick, int marker, tg_rgb c)
{
    for (size_t i = 0; i < s->n; i++) {
        double x = px_x(f, s->p[i].step), y = px_y(f, s->p[i].loss);
        const tg_xy here = {x, y};
        if (i) tg_image_line(im, (tg_xy){px_x(f, s->p[i - 1].step), px_y(f, s->p[i - 1].loss)}, here, thick, c);
        else tg_image_line(im, here, here, thick, c); /* a lone point still shows */
        if (marker) {
            int xi = (int)lround(x), yi = (int)lround(y);
            tg_image_fill_rect(im, xi - marker / 2, yi - marker / 2, xi + marker / 2 + 1, yi + marker / 2 + 1, c);
        }
    }
}

static void draw(tg_image *im, const series *train, const series *val)
{
    const tg_rgb ink = {40, 40, 40}, grid = {228, 228, 228};
    frame f = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    const series *all[2] = {train, val};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < all[k]->n; i++) {
            const point *p = &all[k]->p[i];
            f.x0 = fmin(f.x0, p->step), f.x1 = fmax(f.x1, p->step);
            f.y0 = fmin(f.y0, p->loss), f.y1 = fmax(f.y1, p->loss);
        }
    if (!(f.x0 <= f.x1)) f.x0 = 0, f.x1 = 1, f.y0 = 0, f.y1 = 1; /* no data: empty axes */
    if (f.x1 == f.x0) f.x1 = f.x0 + 1;
    double pad = 0.05 * (f.y1 - f.y0);
    if (pad < 1e-6) pad = 0.5;
    f.y0 -= pad, f.y1 += pad;

    /* grid and tick labels */
    char lab[32];
    double ys = nice_step(f.y1 - f.y0);
    int ydec = ys >= 1 ? 0 : (int)ceil(-log10(ys) - 1e-9);
    for (int k = 0; k < 20 && isfinite(ys); k++) { /* (at most ~7 ticks; the bound guards odd ranges) */
        double y = (ceil(f.y0 / ys) + k) * ys;
        if (y > f.y1) break;
        int py = (int)lround(px_y(&f, y));
        tg_image_fill_rect(im, TG_LOSSPLOT_LEFT, py, TG_LOSSPLOT_RIGHT, py + 1, grid);
        tg_image_fill_rect(im, TG_LOSSPLOT_LEFT - 5, py, TG_LOSSPLOT_LEFT, py + 1, ink);
        snprintf(lab, sizeof lab, "%.*f", ydec, fabs(y) < ys / 2 ? 0.0 : y);
        tg_image_text(im, TG_LOSSPLOT_LEFT - 9 - tg_image_text_width(lab, 2), py - 6, 2, lab, ink);
    }
    double xs = fmax(1, nice_step(f.x1 - f.x0));
    for (int k = 0; k < 20 && isfinite(xs); k++) {
        double x = (ceil(f.x0 / xs) + k) * xs;
        if (x > f.x1) break;
        int px = (int)lround(px_x(&f, x));
        tg_image_fill_rect(im, px, TG_LOSSPLOT_TOP, px + 1, TG_LOSSPLOT_BOTTOM, grid);
        tg_image_fill_rect(im, px, TG_LOSSPLOT_BOTTOM, px + 1, TG_LOSSPLOT_BOTTOM + 5, ink);
        snprintf(lab, sizeof lab, "%.0f", x);
        tg_image_text(im, px - tg_image_text_width(lab, 2) / 2, TG_LOSSPLOT_BOTTOM + 9, 2, lab, ink);
    }
    /* axes (left and bottom edges of the plot area) */
    tg_image_fill_rect(im, TG_LOSSPLOT_LEFT - 1, TG_LOSSPLOT_TOP, TG_LOSSPLOT_LEFT, TG_LOSSPLOT_BOTTOM + 1, ink);
    tg_image_fill_rect(im, TG_LOSSPLOT_LEFT - 1, TG_LOSSPLOT_BOTTOM, TG_LOSSPLOT_RIGHT, TG_LOSSPLOT_BOTTOM + 1, ink);
    tg_image_text(im, (TG_LOSSPLOT_LEFT + TG_LOSSPLOT_RIGHT - tg_image_text_width("step", 2)) / 2, TG_LOSSPLOT_H - 18,
                  2, "step", ink);
    tg_image_text(im, 8, 10, 2, "loss", ink);

    tg_image_clip(im, TG_LOSSPLOT_LEFT, TG_LOSSPLOT_TOP, TG_LOSSPLOT_RIGHT, TG_LOSSPLOT_BOTTOM);
    draw_series(im, &f, train, 1, 0, TG_LOSSPLOT_TRAIN);
    draw_series(im, &f, val, 2, 5, TG_LOSSPLOT_VAL);
    tg_image_clip(im, 0, 0, im->w, im->h);

    /* legend, in the top margin */
    int lx = TG_LOSSPLOT_RIGHT - 230;
    tg_image_fill_rect(im, lx, 16, lx + 24, 19, TG_LOSSPLOT_TRAIN);
    tg_image_text(im, lx + 30, 10, 2, "train", ink);
    tg_image_fill_rect(im, lx + 110, 16, lx + 134, 19, TG_LOSSPLOT_VAL);
    tg_image_text(im, lx + 140, 10, 2, "val", ink);
}

/* The plot of the tidied series into *im. 0, or -1 with a message. */
static int plot(tg_image *im, series *train, series *val, tg_error *err)
{
    series_tidy(train);
    series_tidy(val);
    if (tg_image_init(im, TG_LOSSPLOT_W, TG_LOSSPLOT_H, (tg_rgb){255, 255, 255}, err)) return -1;
    draw(im, train, val);
    return 0;
}

/* The finite points of c (NULL: none) into s. 0, or -1 with a message. */
static int curve_series(const tg_loss_curve *c, const char *which, series *s, tg_error *err)
{
    if (!c || !c->n) return 0;
    if (!c->step || !c->loss)
        return tg_error_set(err, "lossplot_png: the %s curve has %zu points and a NULL %s", which, c->n,
                            c->step ? "loss" : "step");
    for (size_t i = 0; i < c->n; i++)
        if (isfinite(c->step[i]) && isfinite(c->loss[i]) && series_add(s, c->step[i], c->loss[i], i))
            return tg_error_set(err, "lossplot_png: out of memory");
    return 0;
}

int tg_lossplot_png(const tg_loss_curve *train, const tg_loss_curve *val, uint8_t **png, size_t *len, tg_error *err)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    if (!png || !len) return tg_error_set(err, "lossplot_png: png or len is NULL");
    series t = {0}, v = {0};
    tg_image im = {0};
    int rc = -1;
    if (!curve_series(train, "train", &t, err) && !curve_series(val, "val", &v, err) && !plot(&im, &t, &v, err))
        rc = tg_image_png(&im, png, len, err);
    tg_image_release(&im);
    tg_free(t.p);
    tg_free(v.p);
    return rc;
}

int tg_lossplot_write(const char *metrics_csv, const char *png_path, const tg_lossplot_options *o, tg_error *err)
{
    if (!metrics_csv || !png_path)
        return tg_error_set(err, "lossplot_write: the %s path is NULL", !metrics_csv ? "metrics" : "PNG");
    const char *c_train = o && o->train_column ? o->train_column : "loss";
    const char *c_val = o && o->val_column ? o->val_column : "val_loss";
    series train = {0}, val = {0};
    tg_image im = {0};
    int rc = -1;
    if (!read_metrics(metrics_csv, c_train, c_val, &train, &val, err) && !plot(&im, &train, &val, err))
        rc = tg_image_write_png(&im, png_path, err);
    tg_image_release(&im);
    tg_free(train.p);
    tg_free(val.p);
    return rc;
}
