/* Attention heatmaps: PNG pictures and the HTML index (see heatmap.h for
 * the colour decisions).
 *
 * The colour map is piecewise linear between five stops at t = 0, 1/4,
 * 1/2, 3/4, 1 (t = level / 255), each channel rounded. Every channel is
 * non-decreasing from stop to stop, and in each quarter some channel
 * rises by >= 64 over ~63.75 levels (> 1 per level), so rounding keeps it
 * strictly increasing: brightness strictly increases with the level. */
#include "heatmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rgb STOPS[5] = {
    {8, 8, 48},       /* 0    dark indigo */
    {72, 12, 120},    /* 1/4  purple      R +64 */
    {176, 40, 128},   /* 1/2  magenta     R +104 */
    {244, 128, 128},  /* 3/4  salmon      G +88 */
    {255, 244, 200},  /* 1    light yellow G +116 */
};

int heatmap_level(double w)
{
    if (!(w > 0)) return 0;
    if (w >= 1) return HEATMAP_LEVELS - 1;
    return (int)floor(w * (HEATMAP_LEVELS - 1) + 0.5);
}

rgb heatmap_level_colour(int level)
{
    if (level < 0) level = 0;
    if (level > HEATMAP_LEVELS - 1) level = HEATMAP_LEVELS - 1;
    double t = 4.0 * level / (HEATMAP_LEVELS - 1);
    int s = t >= 4 ? 3 : (int)t;
    double u = t - s;
    const rgb a = STOPS[s], b = STOPS[s + 1];
    return (rgb){(uint8_t)lround(a.r + u * (b.r - a.r)), (uint8_t)lround(a.g + u * (b.g - a.g)),
                 (uint8_t)lround(a.b + u * (b.b - a.b))};
}

int heatmap_cell_px(int Tq, int Tk)
{
    int n = Tq > Tk ? Tq : Tk, c = n > 0 ? 512 / n : 32;
    return c < 8 ? 8 : c > 32 ? 32 : c;
}

heatmap_layout heatmap_layout_of(int Tq, int Tk)
{
    heatmap_layout l = {0};
    l.cell = heatmap_cell_px(Tq, Tk);
    l.scale = l.cell >= 16 ? 2 : 1;
    const int gw = IMAGE_GLYPH_W * l.scale, gh = IMAGE_GLYPH_H * l.scale;
    l.title_y = HEATMAP_PAD;
    l.key_y = l.title_y + 14 + 4 + IMAGE_GLYPH_H + 8;   /* title (scale 2), the axes line (scale 1) */
    l.query_x = HEATMAP_PAD;
    l.map_x = l.query_x + gw + 4;
    l.map_y = l.key_y + gh + 4;
    l.bar_x = HEATMAP_PAD;
    l.bar_y = l.map_y + Tq * l.cell + 12;
    l.tick_y = l.bar_y + HEATMAP_BAR_H + 3;
    l.swatch_x = HEATMAP_PAD;
    l.swatch_y = l.tick_y + IMAGE_GLYPH_H + 8;
    const int legend_w = HEATMAP_LEVELS + 6 + image_text_width("weight", 1);
    const int right = l.map_x + Tk * l.cell > l.bar_x + legend_w ? l.map_x + Tk * l.cell : l.bar_x + legend_w;
    l.w = right + HEATMAP_PAD;
    l.h = l.swatch_y + HEATMAP_BAR_H + HEATMAP_PAD;
    return l;
}

int heatmap_png(const double *w, const uint8_t *blocked, int Tq, int Tk, const char *qtext, const char *ktext,
                const char *title, uint8_t **png, size_t *len)
{
    const heatmap_layout l = heatmap_layout_of(Tq, Tk);
    const int cell = l.cell, gw = IMAGE_GLYPH_W * l.scale, gh = IMAGE_GLYPH_H * l.scale;
    image im;
    *png = NULL;
    *len = 0;
    if (image_new(&im, l.w, l.h, HEATMAP_PAPER)) return -1;
    image_text(&im, HEATMAP_PAD, l.title_y, 2, title, HEATMAP_INK);
    image_text(&im, HEATMAP_PAD, l.title_y + 18, 1, "rows: queries, columns: keys", HEATMAP_INK);
    for (int j = 0; j < Tk; j++)
        image_label_char(&im, l.map_x + j * cell + (cell - gw) / 2, l.key_y, l.scale, (uint8_t)ktext[j], HEATMAP_INK);
    for (int i = 0; i < Tq; i++)
        image_label_char(&im, l.query_x, l.map_y + i * cell + (cell - gh) / 2, l.scale, (uint8_t)qtext[i],
                         HEATMAP_INK);
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            size_t k = (size_t)i * Tk + j;
            rgb c = blocked && blocked[k] ? HEATMAP_BLOCKED : heatmap_colour(w[k]);
            image_fill_rect(&im, l.map_x + j * cell, l.map_y + i * cell, l.map_x + (j + 1) * cell,
                            l.map_y + (i + 1) * cell, c);
        }
    /* the colour scale, one column per level, and the blocked colour */
    for (int k = 0; k < HEATMAP_LEVELS; k++)
        image_fill_rect(&im, l.bar_x + k, l.bar_y, l.bar_x + k + 1, l.bar_y + HEATMAP_BAR_H, heatmap_level_colour(k));
    image_text(&im, l.bar_x + HEATMAP_LEVELS + 6, l.bar_y + (HEATMAP_BAR_H - IMAGE_GLYPH_H) / 2, 1, "weight",
               HEATMAP_INK);
    image_text(&im, l.bar_x, l.tick_y, 1, "0", HEATMAP_INK);
    image_text(&im, l.bar_x + (HEATMAP_LEVELS - image_text_width("0.5", 1)) / 2, l.tick_y, 1, "0.5", HEATMAP_INK);
    image_text(&im, l.bar_x + HEATMAP_LEVELS - image_text_width("1", 1), l.tick_y, 1, "1", HEATMAP_INK);
    image_fill_rect(&im, l.swatch_x, l.swatch_y, l.swatch_x + HEATMAP_BAR_H, l.swatch_y + HEATMAP_BAR_H,
                    HEATMAP_BLOCKED);
    image_text(&im, l.swatch_x + HEATMAP_BAR_H + 6, l.swatch_y + (HEATMAP_BAR_H - IMAGE_GLYPH_H) / 2, 1,
               "blocked (a future key, masked)", HEATMAP_INK);
    int rc = image_png(&im, png, len);
    image_free(&im);
    return rc;
}

void heatmap_png_name(int layer, int head, char *buf, size_t size)
{
    snprintf(buf, size, "attn_l%d_h%d.png", layer, head);
}

void heatmap_char_label(uint8_t c, char *buf, size_t size)
{
    switch (c) {
    case ' ': snprintf(buf, size, "\xe2\x90\xa3"); return;    /* U+2423 open box */
    case '\n': snprintf(buf, size, "\xe2\x86\xb5"); return;   /* U+21B5 return arrow */
    case '\t': snprintf(buf, size, "\xe2\x87\xa5"); return;   /* U+21E5 tab arrow */
    case '&': snprintf(buf, size, "&amp;"); return;
    case '<': snprintf(buf, size, "&lt;"); return;
    case '>': snprintf(buf, size, "&gt;"); return;
    case '"': snprintf(buf, size, "&quot;"); return;
    case '\'': snprintf(buf, size, "&#39;"); return;
    default:
        if (c >= 32 && c < 127) snprintf(buf, size, "%c", c);
        else snprintf(buf, size, "\\x%02x", c);
    }
}

static void colour_hex(rgb c, char buf[8]) { snprintf(buf, 8, "#%02x%02x%02x", c.r, c.g, c.b); }

/* One map as a table: key labels across the top, query labels down the side. */
static void html_map(textbuf *o, const char *text, int T, int l, int h, const double *w, const uint8_t *blocked)
{
    char name[64], lab[16], lab2[16], hex[8];
    heatmap_png_name(l, h, name, sizeof name);
    tb_printf(o, "<figure id=\"l%dh%d\"><figcaption>layer %d, head %d <a href=\"%s\">%s</a></figcaption>\n", l, h, l,
              h, name, name);
    tb_puts(o, "<table class=\"m\"><tr><th class=\"c\">q\\k</th>");
    for (int j = 0; j < T; j++) {
        heatmap_char_label((uint8_t)text[j], lab, sizeof lab);
        tb_printf(o, "<th>%s</th>", lab);
    }
    tb_puts(o, "</tr>\n");
    for (int i = 0; i < T; i++) {
        heatmap_char_label((uint8_t)text[i], lab, sizeof lab);
        tb_printf(o, "<tr><th>%s</th>", lab);
        for (int j = 0; j < T; j++) {
            size_t k = (size_t)i * T + j;
            if (blocked && blocked[k]) {
                tb_puts(o, "<td class=\"x\" title=\"blocked\"></td>");
                continue;
            }
            heatmap_char_label((uint8_t)text[j], lab2, sizeof lab2);
            colour_hex(heatmap_colour(w[k]), hex);
            tb_printf(o, "<td style=\"background:%s\" title=\"q%d %s \xe2\x86\x92 k%d %s: %.4f\"></td>", hex, i, lab, j, lab2,
                      w[k]);
        }
        tb_puts(o, "</tr>\n");
    }
    tb_puts(o, "</table></figure>\n");
}

void heatmap_html(textbuf *o, const char *text, int T, int L, int H, const double *w, const uint8_t *blocked)
{
    char hex[8], lab[16];
    tb_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<title>tiny_gpt attention maps</title>\n<style>\n"
               "body{font-family:sans-serif;margin:16px;color:#222;background:#fff}\n"
               "code{background:#f0f0f0;padding:2px 4px;white-space:pre-wrap}\n");
    tb_printf(o, ".grid{display:grid;grid-template-columns:repeat(%d,max-content);gap:20px;align-items:start}\n", H);
    colour_hex(HEATMAP_BLOCKED, hex);
    tb_printf(o, "figure{margin:0}figcaption{font-weight:bold;margin-bottom:4px}\n"
                 "table.m{border-collapse:collapse}\n"
                 "table.m td,table.m th{min-width:14px;height:14px;padding:0 1px;font:11px monospace;"
                 "text-align:center}\n"
                 "table.m th{font-weight:normal;color:#444}th.c{color:#999}\n"
                 "table.m td.x{background:%s}\n"
                 "table.m td:hover{outline:2px solid #0a0;position:relative}\n"
                 ".bar td{width:22px;height:14px;font:10px monospace}\n"
                 "</style></head><body>\n<h1>Attention weights</h1>\n<p>Text (%d characters): <code>",
              hex, T);
    for (int i = 0; i < T; i++) {
        heatmap_char_label((uint8_t)text[i], lab, sizeof lab);
        tb_puts(o, lab);
    }
    tb_printf(o, "</code></p>\n<p>%d layers &times; %d heads. In each map the rows are queries and the columns "
                 "keys: row i shows how position i spreads its attention over positions 0..i (each row sums to 1). "
                 "Grey cells are future positions, blocked by the causal mask. Hover over a cell for its weight. "
                 "Colour scale (0 to 1, the same for every map):</p>\n<table class=\"bar\"><tr>",
              L, H);
    for (int k = 0; k <= 10; k++) {
        colour_hex(heatmap_colour(k / 10.0), hex);
        tb_printf(o, "<td style=\"background:%s\" title=\"%.1f\"></td>", hex, k / 10.0);
    }
    tb_puts(o, "</tr><tr><td>0</td><td colspan=\"9\"></td><td>1</td></tr></table>\n<div class=\"grid\">\n");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) html_map(o, text, T, l, h, w + ((size_t)l * H + h) * T * T, blocked);
    tb_puts(o, "</div>\n</body></html>\n");
}
