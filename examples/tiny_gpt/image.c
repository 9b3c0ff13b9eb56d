/* RGB drawing and PNG encoding for tiny_gpt's pictures (see image.h).
 *
 * Lines step a square brush along the segment every half pixel, which is
 * plenty for plots a few hundred pixels wide. Text comes from
 * stb_easy_font, which describes each glyph as axis-aligned unit
 * rectangles; each is filled scale x scale times larger. PNG encoding is
 * stb_image_write's, into a growing memory buffer so that callers decide
 * how the bytes reach the disk (see files.h: all or nothing). */
#include "image.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* the one place stb_image_write's implementation is compiled in tiny_gpt */
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"

/* stb_easy_font is all static functions: silence "unused" for the ones not
 * called here, and its table initialiser's missing braces */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#include "stb_easy_font.h"
#pragma GCC diagnostic pop

int image_new(image *im, int w, int h, rgb bg)
{
    memset(im, 0, sizeof *im);
    if (w < 1 || h < 1 || (int64_t)w * h > (int64_t)1 << 28) return -1;
    im->px = malloc((size_t)w * h * 3);
    if (!im->px) return -1;
    im->w = w;
    im->h = h;
    image_clip(im, 0, 0, w, h);
    image_fill_rect(im, 0, 0, w, h, bg);
    return 0;
}

void image_clip(image *im, int x0, int y0, int x1, int y1)
{
    im->cx0 = x0 < 0 ? 0 : x0;
    im->cy0 = y0 < 0 ? 0 : y0;
    im->cx1 = x1 > im->w ? im->w : x1;
    im->cy1 = y1 > im->h ? im->h : y1;
}

void image_free(image *im)
{
    free(im->px);
    memset(im, 0, sizeof *im);
}

void image_fill_rect(image *im, int x0, int y0, int x1, int y1, rgb c)
{
    if (x0 < im->cx0) x0 = im->cx0;
    if (y0 < im->cy0) y0 = im->cy0;
    if (x1 > im->cx1) x1 = im->cx1;
    if (y1 > im->cy1) y1 = im->cy1;
    for (int y = y0; y < y1; y++) {
        uint8_t *p = im->px + ((size_t)y * im->w + x0) * 3;
        for (int x = x0; x < x1; x++, p += 3) p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

void image_line(image *im, double x0, double y0, double x1, double y1, int thick, rgb c)
{
    if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1) || thick < 1) return;
    double len = fmax(fabs(x1 - x0), fabs(y1 - y0));
    if (len > 1e6) return;   /* far off the picture: nothing sensible to draw */
    int steps = (int)ceil(2 * len);
    for (int s = 0; s <= steps; s++) {
        double t = steps ? (double)s / steps : 0;
        int x = (int)lround(x0 + t * (x1 - x0)) - (thick - 1) / 2;
        int y = (int)lround(y0 + t * (y1 - y0)) - (thick - 1) / 2;
        image_fill_rect(im, x, y, x + thick, y + thick, c);
    }
}

/* Printable ASCII only: stb_easy_font indexes its tables by byte - 32. */
static void printable(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; *s && n + 1 < size; s++)
        if (*s >= 32 && *s < 127) out[n++] = *s;
    out[n] = 0;
}

void image_text(image *im, int x, int y, int scale, const char *s, rgb c)
{
    char text[128];
    printable(s, text, sizeof text);
    /* each character takes at most ~30 quads of 4 vertices of 16 bytes */
    static float vb[128 * 30 * 4 * 4];
    int quads = stb_easy_font_print(0, 0, text, NULL, vb, (int)sizeof vb);
    for (int q = 0; q < quads; q++) {
        const float *v = vb + q * 16;   /* vertex 0 top left, vertex 2 bottom right; 4 floats each */
        int qx0 = (int)v[0], qy0 = (int)v[1], qx1 = (int)v[8], qy1 = (int)v[9];
        image_fill_rect(im, x + qx0 * scale, y + qy0 * scale, x + qx1 * scale, y + qy1 * scale, c);
    }
}

int image_text_width(const char *s, int scale)
{
    char text[128];
    printable(s, text, sizeof text);
    return stb_easy_font_width(text) * scale;
}

/* ---- PNG ------------------------------------------------------------- */

typedef struct membuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} membuf;

static void membuf_write(void *ctx, void *data, int size)
{
    membuf *b = ctx;
    if (b->oom || size <= 0) return;
    if (b->len + (size_t)size > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)size) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, (size_t)size);
    b->len += (size_t)size;
}

int image_png(const image *im, uint8_t **png, size_t *len)
{
    membuf b = {0};
    *png = NULL;
    *len = 0;
    if (!stbi_write_png_to_func(membuf_write, &b, im->w, im->h, 3, im->px, im->w * 3) || b.oom) {
        free(b.p);
        return -1;
    }
    *png = b.p;
    *len = b.len;
    return 0;
}
