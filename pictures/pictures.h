/* tapegrad's pictures: what a learner looks at.
 *
 *   images       an RGB pixel buffer, filled rectangles, thick lines, a
 *                small bitmap font of tapegrad's own, PNG encoding
 *   heatmaps     a weight matrix as a PNG: a colour per weight, labels on
 *                both axes, a title and the colour scale
 *   attention    a model's attention weights over a text, every layer and
 *                head, as one PNG each and one HTML page that shows them
 *                all (offline: the page loads nothing)
 *   loss plot    a run's losses against the step, from a metrics file
 *
 * Coordinates: x to the right, y down, pixel (0,0) at the top left.
 * Memory the library hands over (PNG bytes, a page, labels) is tg_malloc'd
 * (core/alloc.h): free it with tg_free. Included by tapegrad.h. */
#ifndef TG_PICTURES_H
#define TG_PICTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../nn/nn.h"
#include "../train/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- images (pictures/image.c, font.c, png.c) ----------------------------- */

typedef struct tg_rgb {
    uint8_t r, g, b;
} tg_rgb;

typedef struct tg_image {
    int w, h;
    uint8_t *px; /* w * h * 3 bytes, row-major RGB */
    int cx0, cy0, cx1, cy1; /* drawing is clipped to [cx0,cx1) x [cy0,cy1) */
} tg_image;

/* A point of a line, in pixels. */
typedef struct tg_xy {
    double x, y;
} tg_xy;

/* A w x h image filled with bg into *im, drawing unclipped. 0, or -1 with
 * a message (im zeroed): a NULL im, a size below 1 or above 2^28 pixels,
 * out of memory. */
TG_API int tg_image_init(tg_image *im, int w, int h, tg_rgb bg, tg_error *err);
/* Frees the pixels and zeroes im; accepts a zeroed im or NULL. */
TG_API void tg_image_release(tg_image *im);
/* The pixel at (x,y); black outside the image or for NULL. */
TG_API tg_rgb tg_image_get(const tg_image *im, int x, int y);
/* Restricts all drawing to [x0,x1) x [y0,y1), cut to the image;
 * tg_image_init starts with the whole image. Nothing for NULL. */
TG_API void tg_image_clip(tg_image *im, int x0, int y0, int x1, int y1);
/* Pixels [x0,x1) x [y0,y1) in colour c, clipped. Nothing for NULL. */
TG_API void tg_image_fill_rect(tg_image *im, int x0, int y0, int x1, int y1, tg_rgb c);
/* A line from a to b, `thick` pixels wide (a square brush stepped along
 * it every half pixel), clipped. Nothing for NULL, thick outside [1,
 * 2^16], a coordinate that is not finite or beyond 10^8 pixels, or a line
 * over 10^6 pixels long. */
TG_API void tg_image_line(tg_image *im, tg_xy a, tg_xy b, int thick, tg_rgb c);

/* The font: 5 x 7 pixel glyphs of tapegrad's own, characters 6 apart. */
enum { TG_GLYPH_W = 5, TG_GLYPH_H = 7, TG_GLYPH_ADVANCE = 6 };
/* Printable ASCII text (other bytes are skipped) with its top left at
 * (x,y), each font pixel a scale x scale square: a character is 5 scale
 * wide and 7 scale high, the next starts 6 scale further right. Nothing
 * for a NULL im or s, or scale < 1. */
TG_API void tg_image_text(tg_image *im, int x, int y, int scale, const char *s, tg_rgb c);
/* Width in pixels of what tg_image_text draws (no trailing blank
 * column); 0 for NULL or scale < 1. */
TG_API int tg_image_text_width(const char *s, int scale);
/* One byte as an axis label, 5 x 7 scale pixels at (x,y): printable
 * ASCII as itself, and visible marks for the rest: an open box for a
 * space, a return arrow for a newline, an arrow to a bar for a tab, and
 * an empty box for any other byte (e.g. one byte of a UTF-8 character).
 * Nothing for a NULL im or scale < 1. */
TG_API void tg_image_label_char(tg_image *im, int x, int y, int scale, uint8_t ch, tg_rgb c);

/* The image as a PNG file in memory: *png (tg_malloc'd) of *len bytes,
 * 8-bit RGB, stb_image_write's encoding. 0, or -1 with a message (*png
 * NULL): a NULL argument, an image without pixels, out of memory. */
TG_API int tg_image_png(const tg_image *im, uint8_t **png, size_t *len, tg_error *err);
/* tg_image_png written to path all or nothing (core/atomic_file.h). 0, or
 * -1 with a message naming path. */
TG_API int tg_image_write_png(const tg_image *im, const char *path, tg_error *err);

/* ---- heatmaps (pictures/heatmap.c) -----------------------------------------
 * A weight w in [0,1] is quantised to level round(255 w) and looked up in
 * a 256-entry map that runs dark indigo -> purple -> magenta -> salmon ->
 * light yellow. Every channel is non-decreasing along the map and one
 * rises by at least 1 per level, so a larger level is strictly brighter
 * by any positive mix of R, G and B. Blocked (future) positions are
 * TG_HEATMAP_BLOCKED, a neutral grey that is no level's colour. The scale
 * is absolute (0 to 1), not stretched per map, so maps compare. */
#define TG_HEATMAP_LEVELS 256
static const tg_rgb TG_HEATMAP_BLOCKED = {128, 128, 128};
/* The background and the ink of the labels. */
static const tg_rgb TG_HEATMAP_PAPER = {255, 255, 255}, TG_HEATMAP_INK = {40, 40, 40};

/* round(255 w), clamped to [0, 255]; NaN -> 0. */
TG_API int tg_heatmap_level(double w);
/* The colour of a level (clamped to [0, 255]). */
TG_API tg_rgb tg_heatmap_level_colour(int level);
/* The colour of weight w: tg_heatmap_level_colour(tg_heatmap_level(w)). */
TG_API tg_rgb tg_heatmap_colour(double w);

/* A position's label: len bytes at s, a character of the text or a
 * token's piece, or the name of a special token that stands for no text
 * (special: "BOS"; the page marks it as such). In the pictures each
 * printable ASCII byte is its glyph, each valid UTF-8 character of more
 * bytes one empty box, and every other byte a mark (tg_image_label_char);
 * a label of more than TG_HEATMAP_LABEL_GLYPHS glyphs shows its first
 * TG_HEATMAP_LABEL_GLYPHS - 1 and an ellipsis. (The page shows every
 * label whole.) */
typedef struct tg_heatmap_label {
    const char *s;
    int len;
    bool special;
} tg_heatmap_label;
enum { TG_HEATMAP_LABEL_GLYPHS = 8 };
/* The glyphs l takes, in [0, TG_HEATMAP_LABEL_GLYPHS]; 0 for a NULL s or
 * a len below 1. */
TG_API int tg_heatmap_label_glyphs(tg_heatmap_label l);

/* A map has at most TG_HEATMAP_MAX_T rows and columns. */
#define TG_HEATMAP_MAX_T 4096
/* Side of one cell in pixels: 512 / max(Tq, Tk), within [8, 32] (8: a
 * label glyph fits beside every row and above every column); 32 when
 * both are below 1. */
TG_API int tg_heatmap_cell_px(int Tq, int Tk);

/* Where tg_heatmap_png puts things, in pixels from the top left. Around
 * the map of Tq x Tk cells (cell (i,j) is the square of side `cell` at
 * map_x + j cell, map_y + i cell): a title line at (TG_HEATMAP_PAD,
 * title_y), 14 px high, and under it a line saying which axis is which;
 * the keys' labels above the map, one per column, centred on it, written
 * top to bottom (a glyph every TG_GLYPH_H + 1 pixels, times scale) down
 * to the map from key_y at the highest; the queries' labels left of the
 * map, one per row, centred on it, written left to right and
 * right-aligned against the map, from query_x at the widest; glyphs are
 * 5 x 7 times `scale` (2 when cells are 16 px or more, else 1). Under the
 * map the colour scale: level k of the colour map is the column bar_x +
 * k, TG_HEATMAP_BAR_H high from bar_y, with "0", "0.5" and "1" under it
 * at tick_y; and under that a square of the blocked colour at (swatch_x,
 * swatch_y), TG_HEATMAP_BAR_H wide, labelled. */
enum { TG_HEATMAP_PAD = 12, TG_HEATMAP_BAR_H = 12 };
typedef struct tg_heatmap_layout {
    int w, h; /* the picture */
    int cell, scale;
    int map_x, map_y;
    int title_y, key_y, query_x;
    int bar_x, bar_y, tick_y;
    int swatch_x, swatch_y;
} tg_heatmap_layout;
/* The layout of a Tq x Tk map whose queries' labels are at most q_glyphs
 * wide and keys' at most k_glyphs long (each clamped to [1,
 * TG_HEATMAP_LABEL_GLYPHS]; 1, 1 for one byte each). All zero when Tq or
 * Tk is outside [1, TG_HEATMAP_MAX_T]. */
TG_API tg_heatmap_layout tg_heatmap_layout_of(int Tq, int Tk, int q_glyphs, int k_glyphs);

/* A map to draw. The rows are queries, the columns keys. */
typedef struct tg_heatmap {
    const double *w; /* (Tq,Tk) row-major */
    const uint8_t *blocked; /* (Tq,Tk), nonzero = blocked, or NULL */
    int Tq, Tk; /* in [1, TG_HEATMAP_MAX_T] */
    const tg_heatmap_label *q, *k; /* Tq and Tk labels, or NULL: then ... */
    const char *qtext, *ktext; /* ... Tq and Tk bytes label them, one each */
    char title[64]; /* the top line (printable ASCII) */
} tg_heatmap;
/* The map as a PNG (tg_image_png), laid out as tg_heatmap_layout_of says
 * for its longest labels, on TG_HEATMAP_PAPER: each cell a solid square
 * of its weight's colour, blocked cells TG_HEATMAP_BLOCKED. 0, or -1 with
 * a message (*png NULL): a NULL argument, no weights, no labels, a size
 * outside [1, TG_HEATMAP_MAX_T], out of memory. */
TG_API int tg_heatmap_png(const tg_heatmap *map, uint8_t **png, size_t *len, tg_error *err);

/* ---- attention maps (pictures/attn.c, page.c) ------------------------------
 * A self-attention's weights over T positions, every layer and head. */
typedef struct tg_attn_maps {
    int n_layer, n_head, T;
    double *w; /* (n_layer,n_head,T,T): map (l,h) from w + (l n_head + h) T T */
    uint8_t *blocked; /* (T,T), nonzero = blocked (the causal mask: key j > query i), or NULL */
} tg_attn_maps;

/* The attention weights of model m reading ids[0..T) as one sequence
 * (1,T), in eval mode without grad, each layer's softmax weights
 * (1,n_head,T,T) as tg_model_forward hands them back (the composed path,
 * for any family), into *a with the causal mask. A caller may also fill a
 * tg_attn_maps with weights of its own (and not release it here). 0, or
 * -1 with a message (a zeroed): a NULL argument, T outside [1, the
 * model's block_size], the forward's error (an id outside the
 * vocabulary), a layer without weights, out of memory. */
TG_API int tg_attn_maps_init(tg_attn_maps *a, tg_model *m, const int32_t *ids, int T, tg_error *err);
/* Frees the weights and the mask tg_attn_maps_init made, and zeroes a;
 * accepts a zeroed a or NULL. */
TG_API void tg_attn_maps_release(tg_attn_maps *a);

/* A label for each of the n ids of a text as a model of vocabulary v
 * reads it (tg_prompt_ids): "BOS", special, for a Llama's first id when
 * it is the BOS; for a tokenizer, its piece; for a model of token ids
 * (TG_VOCAB_IDS), the k-th number as the text writes it (text, len: the
 * ids in decimal separated by spaces, tabs or newlines); for the byte
 * vocabularies the byte the id stands for (an id that stands for none:
 * byte 0). The labels point into v's tokenizer, into text and into the
 * library's constants: valid while v and text are. A tg_malloc'd array,
 * or NULL with a message: a NULL argument, n < 1, an id outside v, text
 * with fewer numbers than n, out of memory. */
TG_API tg_heatmap_label *tg_attn_labels(const tg_vocab *v, const int32_t *ids, int64_t n, const char *text, size_t len,
                                        tg_error *err);

/* Map (layer, head) of a as a tg_heatmap: labelled by labels (a->T of
 * them) on both axes, titled "layer L, head H". All zero (which
 * tg_heatmap_png refuses) for a NULL a or labels or a layer or head out
 * of range. */
TG_API tg_heatmap tg_attn_heatmap(const tg_attn_maps *a, int layer, int head, const tg_heatmap_label *labels);
/* The file name of map (layer, head) beside the page,
 * "attn_l<layer>_h<head>.png", into buf (size bytes, NUL-terminated;
 * returned). NULL for a NULL buf or size 0. */
TG_API const char *tg_attn_png_name(int layer, int head, char *buf, size_t size);

/* The page shows weights to TG_ATTN_PAGE_DIGITS decimal places, stored as
 * tg_attn_page_code in 4 digits of TG_ATTN_PAGE_B64 (base64url's
 * alphabet), the most significant first. */
#define TG_ATTN_PAGE_DIGITS 4
#define TG_ATTN_PAGE_B64 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
/* A weight as the page stores it: tg_heatmap_level(w) << 14 | round(w
 * 10^4), w clamped to [0, 1] (NaN as 0): 22 bits. */
TG_API uint32_t tg_attn_page_code(double w);

/* The HTML page of the maps a, its positions labelled by labels (a->T;
 * shown whole in the text line, on the axes and on hover; a special
 * label is marked, with a line saying what BOS is); unit names what a
 * position is in the text line ("character", "token"; made plural by an
 * s when T is not 1). One file that loads nothing: inline CSS, and an
 * inline script that draws each map on a canvas, every label in full on
 * both axes (the keys' upright, or turned to read upwards when one is
 * wider than a cell), and the weight under the pointer; the maps sit in
 * a grid of columns as wide as a map with readable labels needs, and a
 * map wider than the window scrolls sideways in its box. Each caption
 * links the map's PNG (tg_attn_png_name, a file beside the page). The
 * weights are stored once, each visible cell as tg_attn_page_code (row
 * by row, blocked cells skipped) in a hidden <pre id="w<l*H+h>">; the
 * mask as bits, 6 to a character, in #data's data-mask. The page's bytes
 * (NUL-terminated, tg_malloc'd; *len without the NUL), or NULL with a
 * message: a NULL argument, a size below 1, a page of more than 2^31
 * cells, out of memory. */
TG_API char *tg_attn_page_html(const tg_attn_maps *a, const tg_heatmap_label *labels, const char *unit, size_t *len,
                               tg_error *err);

/* Every map of a as its PNG (tg_heatmap_png of tg_attn_heatmap) and the
 * page as index.html, into the directory dir (which must exist), all or
 * nothing: each file is written to a temporary beside its name, and only
 * once all are whole are they renamed into place (core/atomic_file.h). 0,
 * or -1 with a message naming the file: tg_attn_page_html's and
 * tg_heatmap_png's errors, a file that cannot be written (the temporaries
 * are then removed and no name is touched; a rename that fails part way
 * leaves the files before it renamed). */
TG_API int tg_attn_write(const tg_attn_maps *a, const tg_heatmap_label *labels, const char *unit, const char *dir,
                         tg_error *err);

/* ---- the loss plot (pictures/lossplot.c) -----------------------------------
 * Two series against the step: the batch loss of every step and the val
 * loss of every evaluation. When a step appears twice, the later point
 * wins. Axes are linear: x from the first to the last step, y over both
 * series' range padded by 5%, with tick labels; the curves are drawn only
 * inside the plot area [LEFT, RIGHT) x [TOP, BOTTOM), the axis labels and
 * the legend only outside it. */
#define TG_LOSSPLOT_W 800
#define TG_LOSSPLOT_H 480
#define TG_LOSSPLOT_LEFT 72
#define TG_LOSSPLOT_RIGHT (TG_LOSSPLOT_W - 24)
#define TG_LOSSPLOT_TOP 40
#define TG_LOSSPLOT_BOTTOM (TG_LOSSPLOT_H - 48)
static const tg_rgb TG_LOSSPLOT_TRAIN = {31, 119, 180}; /* blue */
static const tg_rgb TG_LOSSPLOT_VAL = {230, 97, 1}; /* orange */

/* n points (step[i], loss[i]) in any order; a point that is not finite
 * is left out. */
typedef struct tg_loss_curve {
    const double *step, *loss;
    size_t n;
} tg_loss_curve;
/* The plot of train (thin) and val (thick, with a marker at each point)
 * as a PNG (tg_image_png); either may be NULL or empty, and with no point
 * at all the picture is the empty axes. 0, or -1 with a message: a NULL
 * png or len, a curve with n > 0 and a NULL array, out of memory. */
TG_API int tg_lossplot_png(const tg_loss_curve *train, const tg_loss_curve *val, uint8_t **png, size_t *len,
                           tg_error *err);

/* Which columns of a metrics file (train/train.h's tg_metrics: the step
 * first, then named columns) hold the two series; NULL for a name, or a
 * NULL options, means the default. */
typedef struct tg_lossplot_options {
    const char *train_column; /* NULL: "loss" */
    const char *val_column; /* NULL: "val_loss" */
} tg_lossplot_options;
/* Reads the CSV metrics_csv (a header line naming the columns, then one
 * row per step, the step in the first field; an empty or unreadable
 * field is no point, a missing column no series) and writes the plot of
 * its two series (tg_lossplot_png) to png_path all or nothing. 0, or -1
 * with a message naming the file: a NULL path, a file that cannot be
 * read, out of memory, a PNG that cannot be written. */
TG_API int tg_lossplot_write(const char *metrics_csv, const char *png_path, const tg_lossplot_options *o,
                             tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
