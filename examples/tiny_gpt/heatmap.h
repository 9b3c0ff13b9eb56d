/* tiny_gpt attention maps: a weight matrix as a PNG heatmap, and one HTML
 * page showing every layer x head with the text's characters on the axes
 * and each weight in its cell's tooltip.
 *
 * Colours: a weight w in [0,1] is quantised to level round(255 w) and
 * looked up in a 256-entry map that runs dark indigo -> purple -> magenta
 * -> salmon -> light yellow. Every channel is non-decreasing along the map
 * and one rises by at least 1 per level, so a larger level is strictly
 * brighter by any positive mix of R, G and B. Blocked (future) positions
 * are HEATMAP_BLOCKED, a neutral grey that is no level's colour. The scale
 * is absolute (0 to 1), not stretched per map, so maps compare. */
#ifndef TINY_GPT_HEATMAP_H
#define TINY_GPT_HEATMAP_H

#include <stdint.h>

#include "files.h"
#include "image.h"

#define HEATMAP_LEVELS 256
static const rgb HEATMAP_BLOCKED = {128, 128, 128};

int heatmap_level(double w);        /* round(255 w), clamped to [0, 255]; NaN -> 0 */
rgb heatmap_level_colour(int level);
static inline rgb heatmap_colour(double w) { return heatmap_level_colour(heatmap_level(w)); }

/* Side of one cell in pixels: 512 / max(Tq, Tk), within [1, 32]. */
int heatmap_cell_px(int Tq, int Tk);

/* w (Tq,Tk) row-major, queries down the side (rows), keys across
 * (columns); blocked (Tq,Tk), nonzero = blocked, or NULL. The PNG is
 * Tk * cell wide and Tq * cell high, each cell a solid square. 0, or -1
 * when out of memory. */
int heatmap_png(const double *w, const uint8_t *blocked, int Tq, int Tk, uint8_t **png, size_t *len);

/* The map's file name within the output directory: attn_l<layer>_h<head>.png */
void heatmap_png_name(int layer, int head, char *buf, size_t size);

/* A byte as an axis label, HTML-escaped: space, newline and tab as
 * visible symbols, other bytes outside printable ASCII as \xNN. */
void heatmap_char_label(uint8_t c, char *buf, size_t size);

/* The index page for a self-attention run over text[0..T): w holds the
 * weights (L,H,T,T), blocked (T,T) the causal mask. Self-contained: inline
 * CSS, no script, no external reference; each map links its PNG (a file
 * beside the page). Appends to out (check out->oom). */
void heatmap_html(textbuf *out, const char *text, int T, int L, int H, const double *w, const uint8_t *blocked);

#endif
