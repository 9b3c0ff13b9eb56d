/* RGB images: the pixel buffer, clipping, filled rectangles and thick
 * lines (see pictures.h).
 *
 * Lines step a square brush along the segment every half pixel, which is
 * plenty for plots a few hundred pixels wide. */
#include "pictures.h"

#include <math.h>
#include <string.h>

#include "../core/alloc.h"

int tg_image_init(tg_image *im, int w, int h, tg_rgb bg, tg_error *err)
{
    if (!im) return tg_error_set(err, "image_init: the image is NULL");
    memset(im, 0, sizeof *im);
    if (w < 1 || h < 1 || (int64_t)w * h > (int64_t)1 << 28)
        return tg_error_set(err,
                            "image_init: a %d x %d image: each side must be >= 1 and the whole at most 2^28 "
                            "pixels",
                            w, h);
    im->px = tg_malloc((size_t)w * h * 3);
    if (!im->px) return tg_error_set(err, "image_init: out of memory for a %d x %d image", w, h);
    im->w = w;
    im->h = h;
    tg_image_clip(im, 0, 0, w, h);
    tg_image_fill_rect(im, 0, 0, w, h, bg);
    return 0;
}

void tg_image_release(tg_image *im)
{
    if (!im) return;
    tg_free(im->px);
    memset(im, 0, sizeof *im);
}

tg_rgb tg_image_get(const tg_image *im, int x, int y)
{
    if (!im || !im->px || x < 0 || y < 0 || x >= im->w || y >= im->h) return (tg_rgb){0, 0, 0};
    const uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
    return (tg_rgb){p[0], p[1], p[2]};
}

void tg_image_clip(tg_image *im, int x0, int y0, int x1, int y1)
{
    if (!im) return;
    im->cx0 = x0 < 0 ? 0 : x0;
    im->cy0 = y0 < 0 ? 0 : y0;
    im->cx1 = x1 > im->w ? im->w : x1;
    im->cy1 = y1 > im->h ? im->h : y1;
}

void tg_image_fill_rect(tg_image *im, int x0, int y0, int x1, int y1, tg_rgb c)
{
    if (!im || !im->px) return;
    if (x0 < im->cx0) x0 = im->cx0;
    if (y0 < im->cy0) y0 = im->cy0;
    if (x1 > im->cx1) x1 = im->cx1;
    if (y1 > im->cy1) y1 = im->cy1;
    if (x0 >= x1) return;
    for (int y = y0; y < y1; y++) {
        uint8_t *p = im->px + ((size_t)y * im->w + x0) * 3;
        for (int x = x0; x < x1; x++, p += 3) p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

void tg_image_line(tg_image *im, tg_xy a, tg_xy b, int thick, tg_rgb c)
{
    if (!im || !isfinite(a.x) || !isfinite(a.y) || !isfinite(b.x) || !isfinite(b.y) || thick < 1 || thick > 1 << 16)
        return;
    /* far off the picture, or too long: nothing sensible to draw (and no int overflow below) */
    if (fmax(fmax(fabs(a.x), fabs(a.y)), fmax(fabs(b.x), fabs(b.y))) > 1e8) return;
    double len = fmax(fabs(b.x - a.x), fabs(b.y - a.y));
    if (len > 1e6) return;
    int steps = (int)ceil(2 * len);
    for (int s = 0; s <= steps; s++) {
        double t = steps ? (double)s / steps : 0;
        int x = (int)lround(a.x + t * (b.x - a.x)) - (thick - 1) / 2;
        int y = (int)lround(a.y + t * (b.y - a.y)) - (thick - 1) / 2;
        tg_image_fill_rect(im, x, y, x + thick, y + thick, c);
    }
}
