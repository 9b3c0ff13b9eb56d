/* tiny_gpt pictures: an RGB pixel buffer, the few drawing primitives the
 * attention maps and the loss curve need (filled rectangles, thick lines,
 * a small bitmap font of tiny_gpt's own for numbers and labels), and PNG
 * encoding in memory (stb_image_write). Coordinates: x to the right, y
 * down, pixel (0,0) at the top left. */
#ifndef TINY_GPT_IMAGE_H
#define TINY_GPT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rgb {
    uint8_t r, g, b;
} rgb;

typedef struct image {
    int w, h;
    uint8_t *px;              /* w * h * 3 bytes, row-major RGB, malloc'd */
    int cx0, cy0, cx1, cy1;   /* drawing is clipped to [cx0,cx1) x [cy0,cy1) */
} image;

/* A w x h image filled with bg. 0, or -1 when out of memory or a size is
 * below 1 or too large (w * h over 2^28 pixels). */
int image_new(image *im, int w, int h, rgb bg);
void image_free(image *im);

static inline rgb image_get(const image *im, int x, int y)
{
    const uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
    return (rgb){p[0], p[1], p[2]};
}

/* Restricts all drawing to [x0,x1) x [y0,y1) (within the image);
 * image_new starts with the whole image. */
void image_clip(image *im, int x0, int y0, int x1, int y1);
/* Pixels [x0,x1) x [y0,y1), clipped. */
void image_fill_rect(image *im, int x0, int y0, int x1, int y1, rgb c);
/* A line from (x0,y0) to (x1,y1), `thick` pixels wide (a square brush
 * stepped along it), clipped. */
void image_line(image *im, double x0, double y0, double x1, double y1, int thick, rgb c);
/* The font: tiny_gpt's own 5 x 7 pixel glyphs, characters 6 apart. */
enum { IMAGE_GLYPH_W = 5, IMAGE_GLYPH_H = 7, IMAGE_GLYPH_ADVANCE = 6 };

/* Printable ASCII text (other bytes are skipped) with its top left at
 * (x,y), each font pixel a scale x scale square: a character is 5 scale
 * wide and 7 scale high, the next starts 6 scale further right. */
void image_text(image *im, int x, int y, int scale, const char *s, rgb c);
/* Width in pixels of what image_text draws (no trailing blank column). */
int image_text_width(const char *s, int scale);
/* One byte as an axis label, 5 x 7 scale pixels at (x,y): printable
 * ASCII as itself, and visible marks for the rest: an open box for a
 * space, a return arrow for a newline, an arrow to a bar for a tab, and
 * an empty box for any other byte (e.g. one byte of a UTF-8 character). */
void image_label_char(image *im, int x, int y, int scale, uint8_t ch, rgb c);

/* The image as a PNG file in memory (*png malloc'd, *len bytes). 0, or -1
 * when out of memory. */
int image_png(const image *im, uint8_t **png, size_t *len);

#endif
