/* tiny_gpt attention maps: a weight matrix as a PNG heatmap with its
 * title, the text's characters on both axes and a colour scale, and one
 * HTML page showing every layer x head, each weight on hover.
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

#include <stdbool.h>
#include <stdint.h>

#include "files.h"
#include "image.h"

#define HEATMAP_LEVELS 256
static const rgb HEATMAP_BLOCKED = {128, 128, 128};

int heatmap_level(double w);        /* round(255 w), clamped to [0, 255]; NaN -> 0 */
rgb heatmap_level_colour(int level);
static inline rgb heatmap_colour(double w) { return heatmap_level_colour(heatmap_level(w)); }

/* A position's label: len bytes at s, a character of the text or a
 * token's piece, or the name of a special token that stands for no text
 * (special: "BOS"; the page marks it as such). In the pictures each
 * printable ASCII byte is its glyph, each valid UTF-8 character of more
 * bytes one empty box, and every other byte a mark (image_label_char); a
 * label of more than HEATMAP_LABEL_GLYPHS glyphs shows its first
 * HEATMAP_LABEL_GLYPHS - 1 and an ellipsis. (The page shows every label
 * whole.) */
typedef struct heatmap_label {
    const char *s;
    int len;
    bool special;
} heatmap_label;
enum { HEATMAP_LABEL_GLYPHS = 8 };
/* The glyphs l takes, in [0, HEATMAP_LABEL_GLYPHS]. */
int heatmap_label_glyphs(heatmap_label l);

/* Side of one cell in pixels: 512 / max(Tq, Tk), within [8, 32] (8: a
 * label glyph fits beside every row and above every column). */
int heatmap_cell_px(int Tq, int Tk);

/* Where heatmap_png puts things, in pixels from the top left. Around the
 * map of Tq x Tk cells (cell (i,j) is the square of side `cell` at
 * map_x + j cell, map_y + i cell): a title line at (HEATMAP_PAD,
 * title_y), 14 px high, and under it a line saying which axis is which;
 * the keys' characters along the top, one per column, centred on it, at
 * key_y; the queries' characters down the left side, one per row,
 * centred on it, at query_x; glyphs are 5 x 7 times `scale` (2 when cells
 * are 16 px or more, else 1). Under the map the colour scale: level k of
 * the colour map is the column bar_x + k, HEATMAP_BAR_H high from bar_y,
 * with "0", "0.5" and "1" under it at tick_y; and under that a square of
 * the blocked colour at (swatch_x, swatch_y), HEATMAP_BAR_H wide, labelled. */
enum { HEATMAP_PAD = 12, HEATMAP_BAR_H = 12 };
typedef struct heatmap_layout {
    int w, h;              /* the picture */
    int cell, scale;
    int map_x, map_y;
    int title_y, key_y, query_x;
    int bar_x, bar_y, tick_y;
    int swatch_x, swatch_y;
} heatmap_layout;
heatmap_layout heatmap_layout_of(int Tq, int Tk);
/* The same for labels of several glyphs: the queries' labels, at most
 * q_glyphs wide, written left to right and right-aligned against the
 * map; the keys', at most k_glyphs long, written top to bottom (a glyph
 * every IMAGE_GLYPH_H + 1 pixels, times scale) down to the map. With one
 * glyph each (clamped to [1, HEATMAP_LABEL_GLYPHS]) it is
 * heatmap_layout_of. */
heatmap_layout heatmap_layout_labels(int Tq, int Tk, int q_glyphs, int k_glyphs);

/* Background and ink of the labels. */
static const rgb HEATMAP_PAPER = {255, 255, 255}, HEATMAP_INK = {40, 40, 40};

/* w (Tq,Tk) row-major, queries down the side (rows), keys across
 * (columns); blocked (Tq,Tk), nonzero = blocked, or NULL. qtext and
 * ktext hold the Tq and Tk bytes that label the rows and the columns
 * (image_label_char's marks for a space and for bytes outside printable
 * ASCII); title is the top line (printable ASCII). Laid out as
 * heatmap_layout_of says, on HEATMAP_PAPER: each cell a solid square of
 * its weight's colour, blocked cells HEATMAP_BLOCKED. 0, or -1 when out
 * of memory. */
int heatmap_png(const double *w, const uint8_t *blocked, int Tq, int Tk, const char *qtext, const char *ktext,
                const char *title, uint8_t **png, size_t *len);
/* heatmap_png with a label per row and column (a token's piece), laid out
 * as heatmap_layout_labels says for the longest of each. */
int heatmap_png_labels(const double *w, const uint8_t *blocked, int Tq, int Tk, const heatmap_label *q,
                       const heatmap_label *k, const char *title, uint8_t **png, size_t *len);

/* The map's file name within the output directory: attn_l<layer>_h<head>.png */
void heatmap_png_name(int layer, int head, char *buf, size_t size);

/* A byte as an axis label, HTML-escaped: space, newline and tab as
 * visible symbols, other bytes outside printable ASCII as \xNN. */
void heatmap_char_label(uint8_t c, char *buf, size_t size);
/* A label for the page: heatmap_char_label's form of every ASCII byte,
 * each valid UTF-8 character as itself, every other byte as \xNN. */
void heatmap_label_html(textbuf *out, heatmap_label l);

/* The index page for a self-attention run over text[0..T): w holds the
 * weights (L,H,T,T), blocked (T,T) the causal mask (or NULL). One file
 * that loads nothing: inline CSS, and an inline script that draws each
 * map on a canvas, every character or label in full on both axes (the
 * keys' upright, or turned to read upwards when one is wider than a
 * cell), and the weight under the pointer; the maps sit in a grid of
 * columns as wide as a map with readable labels needs, and a map wider
 * than the window scrolls sideways in its box. Each caption links the
 * map's PNG (a file beside the page). The weights are stored once, each
 * visible cell as heatmap_cell_code in 4 characters of HEATMAP_B64 (most
 * significant first, row by row, blocked cells skipped) in a hidden
 * <pre id="w<l*H+h>">; the mask as bits, 6 to a character, in
 * #data's data-mask. Appends to out (check out->oom). */
void heatmap_html(textbuf *out, const char *text, int T, int L, int H, const double *w, const uint8_t *blocked);
/* The same page for T positions labelled lab (a token's piece each, shown
 * whole in the text line, on the axes and on hover; a special label is
 * marked, with a line saying what BOS is); unit names what a position is
 * in the text line ("character", "token"; made plural by an s when T is
 * not 1). */
void heatmap_html_labels(textbuf *out, const heatmap_label *lab, int T, const char *unit, int L, int H, const double *w,
                         const uint8_t *blocked);

/* The page shows weights to HEATMAP_DIGITS decimal places. */
#define HEATMAP_DIGITS 4
#define HEATMAP_DIGITS_STR "4"
#define HEATMAP_DIGITS_SCALE 10000
#define HEATMAP_DIGITS_SCALE_STR "10000"
/* The 64 digits of the page's encoding (base64url's alphabet). */
extern const char HEATMAP_B64[65];
/* A weight as the page stores it: heatmap_level(w) << 14 | round(w 10^4),
 * w clamped to [0, 1] (NaN as 0): 22 bits. */
uint32_t heatmap_cell_code(double w);

#endif
