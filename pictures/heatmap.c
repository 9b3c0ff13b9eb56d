/* Heatmaps: the colour map, the layout, labels and the PNG of a map (see
 * pictures.h for the colour decisions).
 *
 * The colour map is piecewise linear between five stops at t = 0, 1/4,
 * 1/2, 3/4, 1 (t = level / 255), each channel rounded. Every channel is
 * non-decreasing from stop to stop, and in each quarter some channel
 * rises by >= 64 over ~63.75 levels (> 1 per level), so rounding keeps it
 * strictly increasing: brightness strictly increases with the level. */
#include "pictures.h"

#include <math.h>
#include <string.h>

#include "../core/alloc.h"
#include "heatmap_internal.h"

static const tg_rgb STOPS[5] = {
    {8, 8, 48}, /* 0    dark indigo */
    {72, 12, 120}, /* 1/4  purple      R +64 */
    {176, 40, 128}, /* 1/2  magenta     R +104 */
    {244, 128, 128}, /* 3/4  salmon      G +88 */
    {255, 244, 200}, /* 1    light yellow G +116 */
};

int tg_heatmap_level(double w)
{
    if (!(w > 0)) return 0;
    if (w >= 1) return TG_HEATMAP_LEVELS - 1;
    return (int)floor(w * (TG_HEATMAP_LEVELS - 1) + 0.5);
}

tg_rgb tg_heatmap_level_colour(int level)
{
    if (level < 0) level = 0;
    if (level > TG_HEATMAP_LEVELS - 1) level = TG_HEATMAP_LEVELS - 1;
    double t = 4.0 * level / (TG_HEATMAP_LEVELS - 1);
    int s = t >= 4 ? 3 : (int)t;
    double u = t - s;
    const tg_rgb a = STOPS[s], b = STOPS[s + 1];
    return (tg_rgb){(uint8_t)lround(a.r + u * (b.r - a.r)), (uint8_t)lround(a.g + u * (b.g - a.g)),
                    (uint8_t)lround(a.b + u * (b.b - a.b))};
}

tg_rgb tg_heatmap_colour(double w) { return tg_heatmap_level_colour(tg_heatmap_level(w)); }

int tg_heatmap_cell_px(int Tq, int Tk)
{
    int n = Tq > Tk ? Tq : Tk, c = n > 0 ? 512 / n : 32;
    return c < 8 ? 8 : c > 32 ? 32 : c;
}

tg_heatmap_layout tg_heatmap_layout_of(int Tq, int Tk, int q_glyphs, int k_glyphs)
{
    tg_heatmap_layout l = {0};
    if (Tq < 1 || Tk < 1 || Tq > TG_HEATMAP_MAX_T || Tk > TG_HEATMAP_MAX_T) return l;
    const int qg = q_glyphs < 1              ? 1
        : q_glyphs > TG_HEATMAP_LABEL_GLYPHS ? TG_HEATMAP_LABEL_GLYPHS
                                             : q_glyphs,
              kg = k_glyphs < 1              ? 1
        : k_glyphs > TG_HEATMAP_LABEL_GLYPHS ? TG_HEATMAP_LABEL_GLYPHS
                                             : k_glyphs;
    l.cell = tg_heatmap_cell_px(Tq, Tk);
    l.scale = l.cell >= 16 ? 2 : 1;
    l.title_y = TG_HEATMAP_PAD;
    l.key_y = l.title_y + 14 + 4 + TG_GLYPH_H + 8; /* title (scale 2), the axes line (scale 1) */
    l.query_x = TG_HEATMAP_PAD;
    l.map_x = l.query_x + (qg * TG_GLYPH_ADVANCE - 1) * l.scale + 4; /* one glyph: TG_GLYPH_W wide */
    l.map_y = l.key_y + (kg * (TG_GLYPH_H + 1) - 1) * l.scale + 4; /* one glyph: TG_GLYPH_H high */
    l.bar_x = TG_HEATMAP_PAD;
    l.bar_y = l.map_y + Tq * l.cell + 12;
    l.tick_y = l.bar_y + TG_HEATMAP_BAR_H + 3;
    l.swatch_x = TG_HEATMAP_PAD;
    l.swatch_y = l.tick_y + TG_GLYPH_H + 8;
    const int legend_w = TG_HEATMAP_LEVELS + 6 + tg_image_text_width("weight", 1);
    const int right = l.map_x + Tk * l.cell > l.bar_x + legend_w ? l.map_x + Tk * l.cell : l.bar_x + legend_w;
    l.w = right + TG_HEATMAP_PAD;
    l.h = l.swatch_y + TG_HEATMAP_BAR_H + TG_HEATMAP_PAD;
    return l;
}

int tg_heatmap_label_unit(const uint8_t *s, int len, int i, uint8_t *g)
{
    const uint8_t c = s[i];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 1;
    if (n > 1 && i + n <= len) { /* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
        const uint8_t lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80, hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        bool ok = s[i + 1] >= lo && s[i + 1] <= hi;
        for (int k = 2; k < n; k++) ok &= s[i + k] >= 0x80 && s[i + k] <= 0xbf;
        if (ok) {
            *g = 0x80;
            return n;
        }
    }
    *g = c;
    return 1;
}

/* Glyphs of a label, uncut */
static int label_units(tg_heatmap_label l)
{
    if (!l.s || l.len < 1) return 0;
    int n = 0;
    uint8_t g;
    for (int i = 0; i < l.len; n++) i += tg_heatmap_label_unit((const uint8_t *)l.s, l.len, i, &g);
    return n;
}

int tg_heatmap_label_glyphs(tg_heatmap_label l)
{
    const int n = label_units(l);
    return n < TG_HEATMAP_LABEL_GLYPHS ? n : TG_HEATMAP_LABEL_GLYPHS;
}

/* Draws label l from (x,y), each glyph dx, dy further: at most
 * TG_HEATMAP_LABEL_GLYPHS glyphs, the last an ellipsis when l is longer. */
static void draw_label(tg_image *im, int x, int y, int dx, int dy, int scale, tg_heatmap_label l)
{
    if (!l.s) return;
    const int cut = label_units(l) > TG_HEATMAP_LABEL_GLYPHS ? TG_HEATMAP_LABEL_GLYPHS - 1 : TG_HEATMAP_LABEL_GLYPHS;
    int n = 0;
    uint8_t g;
    for (int i = 0; i < l.len && n < cut; n++, x += dx, y += dy) {
        i += tg_heatmap_label_unit((const uint8_t *)l.s, l.len, i, &g);
        tg_image_label_char(im, x, y, scale, g, TG_HEATMAP_INK);
    }
    if (n == cut && cut < TG_HEATMAP_LABEL_GLYPHS) /* three dots on the bottom row */
        for (int d = 0; d < 3; d++)
            tg_image_fill_rect(im, x + 2 * d * scale, y + (TG_GLYPH_H - 1) * scale, x + (2 * d + 1) * scale,
                               y + TG_GLYPH_H * scale, TG_HEATMAP_INK);
}

/* The widest of n labels, in glyphs (at least 1). */
static int widest(const tg_heatmap_label *lab, int n)
{
    int g = 1;
    for (int i = 0; i < n; i++) g = tg_heatmap_label_glyphs(lab[i]) > g ? tg_heatmap_label_glyphs(lab[i]) : g;
    return g;
}

/* Draws map m, whose labels are q and k, into im laid out as l. */
static void draw_map(tg_image *im, const tg_heatmap *m, const tg_heatmap_label *q, const tg_heatmap_label *k,
                     const tg_heatmap_layout *l)
{
    const int Tq = m->Tq, Tk = m->Tk, cell = l->cell, sc = l->scale, gw = TG_GLYPH_W * sc, gh = TG_GLYPH_H * sc;
    const int adv = TG_GLYPH_ADVANCE * sc, down = (TG_GLYPH_H + 1) * sc;
    char title[sizeof m->title];
    memcpy(title, m->title, sizeof title);
    title[sizeof title - 1] = 0;
    tg_image_text(im, TG_HEATMAP_PAD, l->title_y, 2, title, TG_HEATMAP_INK);
    tg_image_text(im, TG_HEATMAP_PAD, l->title_y + 18, 1, "rows: queries, columns: keys", TG_HEATMAP_INK);
    for (int j = 0; j < Tk; j++) /* top to bottom, ending above the map */
        draw_label(im, l->map_x + j * cell + (cell - gw) / 2,
                   l->map_y - 4 - gh - (tg_heatmap_label_glyphs(k[j]) - 1) * down, 0, down, sc, k[j]);
    for (int i = 0; i < Tq; i++) /* left to right, ending beside the map */
        draw_label(im, l->map_x - 4 - gw - (tg_heatmap_label_glyphs(q[i]) - 1) * adv,
                   l->map_y + i * cell + (cell - gh) / 2, adv, 0, sc, q[i]);
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            size_t c = (size_t)i * Tk + j;
            tg_rgb col = m->blocked && m->blocked[c] ? TG_HEATMAP_BLOCKED : tg_heatmap_colour(m->w[c]);
            tg_image_fill_rect(im, l->map_x + j * cell, l->map_y + i * cell, l->map_x + (j + 1) * cell,
                               l->map_y + (i + 1) * cell, col);
        }
    /* the colour scale, one column per level, and the blocked colour */
    for (int c = 0; c < TG_HEATMAP_LEVELS; c++)
        tg_image_fill_rect(im, l->bar_x + c, l->bar_y, l->bar_x + c + 1, l->bar_y + TG_HEATMAP_BAR_H,
                           tg_heatmap_level_colour(c));
    tg_image_text(im, l->bar_x + TG_HEATMAP_LEVELS + 6, l->bar_y + (TG_HEATMAP_BAR_H - TG_GLYPH_H) / 2, 1, "weight",
                  TG_HEATMAP_INK);
    tg_image_text(im, l->bar_x, l->tick_y, 1, "0", TG_HEATMAP_INK);
    tg_image_text(im, l->bar_x + (TG_HEATMAP_LEVELS - tg_image_text_width("0.5", 1)) / 2, l->tick_y, 1, "0.5",
                  TG_HEATMAP_INK);
    tg_image_text(im, l->bar_x + TG_HEATMAP_LEVELS - tg_image_text_width("1", 1), l->tick_y, 1, "1", TG_HEATMAP_INK);
    tg_image_fill_rect(im, l->swatch_x, l->swatch_y, l->swatch_x + TG_HEATMAP_BAR_H, l->swatch_y + TG_HEATMAP_BAR_H,
                       TG_HEATMAP_BLOCKED);
    tg_image_text(im, l->swatch_x + TG_HEATMAP_BAR_H + 6, l->swatch_y + (TG_HEATMAP_BAR_H - TG_GLYPH_H) / 2, 1,
                  "blocked (a future key, masked)", TG_HEATMAP_INK);
}

/* n labels of one byte each, of text; NULL with a message when out of memory. */
static tg_heatmap_label *byte_labels(const char *text, int n, tg_error *err)
{
    tg_heatmap_label *lab = tg_malloc((size_t)n * sizeof *lab);
    if (!lab) tg_error_set(err, "heatmap_png: out of memory");
    for (int i = 0; lab && i < n; i++) lab[i] = (tg_heatmap_label){text + i, 1, false};
    return lab;
}

int tg_heatmap_png(const tg_heatmap *m, uint8_t **png, size_t *len, tg_error *err)
{
    if (png) *png = NULL;
    if (len) *len = 0;
    if (!m || !png || !len) return tg_error_set(err, "heatmap_png: a NULL argument (the map, png or len)");
    if (m->Tq < 1 || m->Tk < 1 || m->Tq > TG_HEATMAP_MAX_T || m->Tk > TG_HEATMAP_MAX_T)
        return tg_error_set(err, "heatmap_png: a %d x %d map: each side must be in [1, %d]", m->Tq, m->Tk,
                            TG_HEATMAP_MAX_T);
    if (!m->w) return tg_error_set(err, "heatmap_png: the map has no weights (w is NULL)");
    if ((!m->q && !m->qtext) || (!m->k && !m->ktext))
        return tg_error_set(err, "heatmap_png: the map's %s have no labels (both the labels and the text are NULL)",
                            !m->q && !m->qtext ? "rows" : "columns");
    tg_heatmap_label *qb = m->q ? NULL : byte_labels(m->qtext, m->Tq, err);
    tg_heatmap_label *kb = m->k ? NULL : byte_labels(m->ktext, m->Tk, err);
    const tg_heatmap_label *q = m->q ? m->q : qb, *k = m->k ? m->k : kb;
    int rc = -1;
    tg_image im = {0};
    if (q && k) {
        const tg_heatmap_layout l = tg_heatmap_layout_of(m->Tq, m->Tk, widest(q, m->Tq), widest(k, m->Tk));
        if (tg_image_init(&im, l.w, l.h, TG_HEATMAP_PAPER, err) == 0) {
            draw_map(&im, m, q, k, &l);
            rc = tg_image_png(&im, png, len, err);
        }
        if (rc) tg_error_prefix(err, "heatmap_png");
    }
    tg_image_release(&im);
    tg_free(qb);
    tg_free(kb);
    return rc;
}
