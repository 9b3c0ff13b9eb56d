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

heatmap_layout heatmap_layout_of(int Tq, int Tk) { return heatmap_layout_labels(Tq, Tk, 1, 1); }

heatmap_layout heatmap_layout_labels(int Tq, int Tk, int q_glyphs, int k_glyphs)
{
    heatmap_layout l = {0};
    const int qg = q_glyphs < 1 ? 1 : q_glyphs > HEATMAP_LABEL_GLYPHS ? HEATMAP_LABEL_GLYPHS : q_glyphs,
              kg = k_glyphs < 1 ? 1 : k_glyphs > HEATMAP_LABEL_GLYPHS ? HEATMAP_LABEL_GLYPHS : k_glyphs;
    l.cell = heatmap_cell_px(Tq, Tk);
    l.scale = l.cell >= 16 ? 2 : 1;
    l.title_y = HEATMAP_PAD;
    l.key_y = l.title_y + 14 + 4 + IMAGE_GLYPH_H + 8;   /* title (scale 2), the axes line (scale 1) */
    l.query_x = HEATMAP_PAD;
    l.map_x = l.query_x + (qg * IMAGE_GLYPH_ADVANCE - 1) * l.scale + 4;   /* one glyph: IMAGE_GLYPH_W wide */
    l.map_y = l.key_y + (kg * (IMAGE_GLYPH_H + 1) - 1) * l.scale + 4;     /* one glyph: IMAGE_GLYPH_H high */
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

/* Bytes [i, i + n) of a label that make one glyph: a valid UTF-8
 * character of 2 to 4 bytes (drawn as one box; *g 0x80), else byte i
 * (*g that byte). Returns n. */
static int label_unit(const uint8_t *s, int len, int i, uint8_t *g)
{
    const uint8_t c = s[i];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 1;
    if (n > 1 && i + n <= len) {   /* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
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
static int label_units(heatmap_label l)
{
    int n = 0;
    uint8_t g;
    for (int i = 0; i < l.len; n++) i += label_unit((const uint8_t *)l.s, l.len, i, &g);
    return n;
}

int heatmap_label_glyphs(heatmap_label l)
{
    const int n = label_units(l);
    return n < HEATMAP_LABEL_GLYPHS ? n : HEATMAP_LABEL_GLYPHS;
}

/* Draws label l from (x,y), each glyph dx, dy further: at most
 * HEATMAP_LABEL_GLYPHS glyphs, the last an ellipsis when l is longer. */
static void draw_label(image *im, int x, int y, int dx, int dy, int scale, heatmap_label l)
{
    const int cut = label_units(l) > HEATMAP_LABEL_GLYPHS ? HEATMAP_LABEL_GLYPHS - 1 : HEATMAP_LABEL_GLYPHS;
    int n = 0;
    uint8_t g;
    for (int i = 0; i < l.len && n < cut; n++, x += dx, y += dy) {
        i += label_unit((const uint8_t *)l.s, l.len, i, &g);
        image_label_char(im, x, y, scale, g, HEATMAP_INK);
    }
    if (n == cut && cut < HEATMAP_LABEL_GLYPHS)   /* three dots on the bottom row */
        for (int d = 0; d < 3; d++)
            image_fill_rect(im, x + 2 * d * scale, y + (IMAGE_GLYPH_H - 1) * scale, x + (2 * d + 1) * scale,
                            y + IMAGE_GLYPH_H * scale, HEATMAP_INK);
}

int heatmap_png_labels(const double *w, const uint8_t *blocked, int Tq, int Tk, const heatmap_label *q,
                       const heatmap_label *k, const char *title, uint8_t **png, size_t *len)
{
    int qg = 1, kg = 1;
    for (int i = 0; i < Tq; i++) qg = heatmap_label_glyphs(q[i]) > qg ? heatmap_label_glyphs(q[i]) : qg;
    for (int j = 0; j < Tk; j++) kg = heatmap_label_glyphs(k[j]) > kg ? heatmap_label_glyphs(k[j]) : kg;
    const heatmap_layout l = heatmap_layout_labels(Tq, Tk, qg, kg);
    const int cell = l.cell, sc = l.scale, gw = IMAGE_GLYPH_W * sc, gh = IMAGE_GLYPH_H * sc;
    const int adv = IMAGE_GLYPH_ADVANCE * sc, down = (IMAGE_GLYPH_H + 1) * sc;
    image im;
    *png = NULL;
    *len = 0;
    if (image_new(&im, l.w, l.h, HEATMAP_PAPER)) return -1;
    image_text(&im, HEATMAP_PAD, l.title_y, 2, title, HEATMAP_INK);
    image_text(&im, HEATMAP_PAD, l.title_y + 18, 1, "rows: queries, columns: keys", HEATMAP_INK);
    for (int j = 0; j < Tk; j++)   /* top to bottom, ending above the map */
        draw_label(&im, l.map_x + j * cell + (cell - gw) / 2,
                   l.map_y - 4 - gh - (heatmap_label_glyphs(k[j]) - 1) * down, 0, down, sc, k[j]);
    for (int i = 0; i < Tq; i++)   /* left to right, ending beside the map */
        draw_label(&im, l.map_x - 4 - gw - (heatmap_label_glyphs(q[i]) - 1) * adv, l.map_y + i * cell + (cell - gh) / 2,
                   adv, 0, sc, q[i]);
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            size_t c = (size_t)i * Tk + j;
            rgb col = blocked && blocked[c] ? HEATMAP_BLOCKED : heatmap_colour(w[c]);
            image_fill_rect(&im, l.map_x + j * cell, l.map_y + i * cell, l.map_x + (j + 1) * cell,
                            l.map_y + (i + 1) * cell, col);
        }
    /* the colour scale, one column per level, and the blocked colour */
    for (int c = 0; c < HEATMAP_LEVELS; c++)
        image_fill_rect(&im, l.bar_x + c, l.bar_y, l.bar_x + c + 1, l.bar_y + HEATMAP_BAR_H, heatmap_level_colour(c));
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

/* One label per byte of text. NULL when out of memory. */
static heatmap_label *byte_labels(const char *text, int T)
{
    heatmap_label *lab = malloc((size_t)(T > 0 ? T : 1) * sizeof *lab);
    for (int i = 0; lab && i < T; i++) lab[i] = (heatmap_label){text + i, 1, false};
    return lab;
}

int heatmap_png(const double *w, const uint8_t *blocked, int Tq, int Tk, const char *qtext, const char *ktext,
                const char *title, uint8_t **png, size_t *len)
{
    heatmap_label *q = byte_labels(qtext, Tq), *k = byte_labels(ktext, Tk);
    *png = NULL;
    *len = 0;
    int rc = q && k ? heatmap_png_labels(w, blocked, Tq, Tk, q, k, title, png, len) : -1;
    free(q);
    free(k);
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

void heatmap_label_html(textbuf *o, heatmap_label l)
{
    char lab[16];
    uint8_t g;
    for (int i = 0, n; i < l.len; i += n) {
        n = label_unit((const uint8_t *)l.s, l.len, i, &g);
        if (n > 1) {
            tb_put(o, l.s + i, (size_t)n);   /* a whole UTF-8 character: the page is UTF-8 */
        } else {
            heatmap_char_label(g, lab, sizeof lab);
            tb_puts(o, lab);
        }
    }
}

static void colour_hex(rgb c, char buf[8]) { snprintf(buf, 8, "#%02x%02x%02x", c.r, c.g, c.b); }

const char HEATMAP_B64[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

uint32_t heatmap_cell_code(double w)
{
    const double c = w > 0 ? (w < 1 ? w : 1) : 0;   /* NaN -> 0, as heatmap_level */
    return (uint32_t)heatmap_level(w) << 14 | (uint32_t)floor(c * HEATMAP_DIGITS_SCALE + 0.5);
}

/* The page's script: it decodes the weights, draws each map on its canvas
 * (again when the window is resized) with every label in full, and shows
 * the weight under the pointer. It reads nothing but this page. A map is
 * drawn again when its box changes width (the grid reflows as the maps
 * take their heights, a scroll bar comes or goes), and the pointer is read
 * against the geometry it was last drawn with.
 *
 * The labels are HEATMAP_FONT_PX monospace: the queries' right-aligned in
 * a band left of the map as wide as the widest label; the keys' above the
 * map, upright and centred on their columns when the widest fits a cell,
 * else turned a quarter to read upwards, in a band as high as the widest.
 * So none is cut. A cell is at least HEATMAP_FONT_PX + 1 pixels, so that
 * neighbouring labels never overlap; the grid's columns are made as wide
 * as such a map needs (or the window, when it needs more: the map then
 * scrolls sideways in its box and the page keeps the window's width). */
#define HEATMAP_FONT_PX_STR "10"
static const char PAGE_SCRIPT[] =
    "(function(){\n"
    "var D=document,R=D.getElementById('data').dataset,T=+R.t,L=+R.l,H=+R.h,A=R.alphabet,PAL=R.palette,"
    "GREY=R.blocked,dec={},i,j,m;\n"
    "for(i=0;i<64;i++)dec[A[i]]=i;\n"
    "var lab=[].map.call(D.querySelectorAll('#text span'),function(s){return s.textContent});\n"
    "var col=[];for(i=0;i<256;i++)col.push('#'+PAL.substr(6*i,6));\n"
    "var bl=new Uint8Array(T*T);for(i=0;i<T*T;i++)bl[i]=dec[R.mask[i/6|0]]>>(5-i%6)&1;\n"
    "var lev=[],val=[];\n"
    "for(m=0;m<L*H;m++){var s=D.getElementById('w'+m).textContent,v=new Uint16Array(T*T),"
    "e=new Uint8Array(T*T),k=0;\n"
    " for(i=0;i<T*T;i++){if(bl[i])continue;var x=dec[s[k]]<<18|dec[s[k+1]]<<12|dec[s[k+2]]<<6|dec[s[k+3]];"
    "k+=4;e[i]=x>>14;v[i]=x&16383}\n"
    " lev.push(e);val.push(v)}\n"
    "var tip=D.getElementById('tip'),cv=D.querySelectorAll('canvas.map'),F=" HEATMAP_FONT_PX_STR ",PAD=4,MIN=F+1;\n"
    "var ms=D.createElement('canvas').getContext('2d'),LW=0;ms.font=F+'px monospace';\n"
    "for(i=0;i<T;i++)LW=Math.max(LW,Math.ceil(ms.measureText(lab[i]).width));\n"
    "var turn=LW>MIN-2,BX=LW+2*PAD,BY=turn?BX:F+2*PAD;\n"
    "D.querySelector('.grid').style.gridTemplateColumns='repeat(auto-fill,minmax(min(100%,'+"
    "Math.max(300,Math.ceil(BX+T*MIN))+'px),1fr))';\n"
    "function geom(c){var cell=Math.max(MIN,(c.parentNode.clientWidth-BX)/T);return{bx:BX,by:BY,cell:cell,"
    "W:BX+T*cell,H:BY+T*cell}}\n"
    "function draw(c){var m=+c.dataset.map,g=c._g=geom(c),r=window.devicePixelRatio||1,x=c.getContext('2d');\n"
    " c._w=c.parentNode.clientWidth;\n"
    " c.style.width=g.W+'px';c.style.height=g.H+'px';c.width=Math.round(g.W*r);c.height=Math.round(g.H*r);\n"
    " x.setTransform(1,0,0,1,0,0);x.fillStyle='#fff';x.fillRect(0,0,c.width,c.height);\n"
    " function px(u){return Math.round(u*r)}\n"
    " for(i=0;i<T;i++)for(j=0;j<T;j++){var n=i*T+j,x0=px(g.bx+j*g.cell),y0=px(g.by+i*g.cell);\n"
    "  x.fillStyle=bl[n]?GREY:col[lev[m][n]];x.fillRect(x0,y0,px(g.bx+(j+1)*g.cell)-x0,px(g.by+(i+1)*g.cell)-y0)}\n"
    " x.fillStyle='#444';x.font=px(F)+'px monospace';x.textBaseline='middle';\n"
    " for(i=0;i<T;i++){var kx=px(g.bx+(i+0.5)*g.cell);\n"
    "  x.textAlign='right';x.fillText(lab[i],px(g.bx-PAD),px(g.by+(i+0.5)*g.cell));\n"
    "  if(!turn){x.textAlign='center';x.fillText(lab[i],kx,px(g.by-PAD-F/2));continue}\n"
    "  x.save();x.translate(kx,px(g.by-PAD));x.rotate(-Math.PI/2);x.textAlign='left';x.fillText(lab[i],0,0);"
    "x.restore()}}\n"
    "function say(c,e){var m=+c.dataset.map,g=c._g,b=c.getBoundingClientRect(),"
    "j=Math.floor((e.clientX-b.left-g.bx)/g.cell),i=Math.floor((e.clientY-b.top-g.by)/g.cell),t='';\n"
    " if(i>=0&&j>=0&&i<T&&j<T){var n=i*T+j;t='q'+i+' '+lab[i]+' \u2192 k'+j+' '+lab[j]+': '+"
    "(bl[n]?'blocked':(val[m][n]/" HEATMAP_DIGITS_SCALE_STR ").toFixed(" HEATMAP_DIGITS_STR "))}\n"
    " c.closest('figure').querySelector('.read').textContent=t||'\u00a0';tip.textContent=t;"
    "tip.style.display=t?'block':'none';\n"
    " var tx=e.clientX+14,ty=e.clientY+14;if(tx+tip.offsetWidth>innerWidth)tx=e.clientX-14-tip.offsetWidth;\n"
    " if(ty+tip.offsetHeight>innerHeight)ty=e.clientY-14-tip.offsetHeight;\n"
    " tip.style.left=Math.max(0,tx)+'px';tip.style.top=Math.max(0,ty)+'px';return t}\n"
    "[].forEach.call(cv,function(c){draw(c);c.addEventListener('mousemove',function(e){say(c,e)});"
    "c.addEventListener('mouseleave',function(){tip.style.display='none'})});\n"
    "window.addEventListener('resize',function(){[].forEach.call(cv,draw)});\n"
    "if(window.ResizeObserver){var ro=new ResizeObserver(function(es){es.forEach(function(en){"
    "var c=en.target.firstChild;if(c._w!==en.target.clientWidth)draw(c)})});"
    "[].forEach.call(cv,function(c){ro.observe(c.parentNode)})}\n"
    "})();\n";

void heatmap_html(textbuf *o, const char *text, int T, int L, int H, const double *w, const uint8_t *blocked)
{
    heatmap_label *lab = byte_labels(text, T);
    if (!lab) {
        o->oom = true;
        return;
    }
    heatmap_html_labels(o, lab, T, "character", L, H, w, blocked);
    free(lab);
}

void heatmap_html_labels(textbuf *o, const heatmap_label *lab, int T, const char *unit, int L, int H, const double *w,
                         const uint8_t *blocked)
{
    char hex[8];
    tb_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<title>tiny_gpt attention maps</title>\n<style>\n"
               "body{font-family:sans-serif;margin:16px;color:#222;background:#fff}\n"
               "code{background:#f0f0f0;padding:2px 4px;white-space:pre-wrap;word-break:break-all}\n"
               ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,300px),1fr));gap:20px;"
               "align-items:start}\n"
               "figure{margin:0;min-width:0}figcaption{font-weight:bold;margin-bottom:4px;overflow-wrap:anywhere}\n"
               ".box{overflow-x:auto}canvas.map{display:block;cursor:crosshair}\n"
               "#text .special{font-style:italic;color:#a0004a}\n"
               ".read{font:12px monospace;color:#444;min-height:1.5em}\n"
               "#tip{position:fixed;display:none;pointer-events:none;background:#222;color:#fff;font:12px monospace;"
               "padding:2px 6px;border-radius:3px;white-space:nowrap}\n"
               ".bar{display:flex;max-width:330px}.bar span{flex:1;height:14px}\n"
               ".ticks{display:flex;justify-content:space-between;max-width:330px;font:11px monospace}\n"
               "</style></head><body>\n<h1>Attention weights</h1>\n");
    tb_printf(o, "<p>Text (%d %s%s): <code id=\"text\">", T, unit, T == 1 ? "" : "s");
    bool special = false;
    for (int i = 0; i < T; i++) {
        special |= lab[i].special;
        tb_puts(o, lab[i].special ? "<span class=\"special\">" : "<span>");
        heatmap_label_html(o, lab[i]);
        tb_puts(o, "</span>");
    }
    tb_puts(o, "</code></p>\n");
    if (special)
        tb_puts(o, "<p>In <span style=\"font-style:italic;color:#a0004a\">this style</span>: a token that is no text, "
                   "BOS, which a Llama reads before its text: sample and eval --text put it first, as it stood before "
                   "every document in training, and so does this page.</p>\n");
    tb_printf(o, "<p>%d layer%s &times; %d head%s. In each map the rows are queries and the columns "
                 "keys: row i shows how position i spreads its attention over positions 0..i (each row sums to 1). "
                 "Grey cells are future positions, blocked by the causal mask. Hover over a cell for its weight, "
                 "shown to %d decimal places: the page keeps each weight rounded to %d decimals, and its colour "
                 "level, the same as in the PNG beside each caption. Colour scale (0 to 1, the same for every "
                 "map):</p>\n<div class=\"bar\">",
              L, L == 1 ? "" : "s", H, H == 1 ? "" : "s", HEATMAP_DIGITS, HEATMAP_DIGITS);
    for (int k = 0; k <= 10; k++) {
        colour_hex(heatmap_colour(k / 10.0), hex);
        tb_printf(o, "<span style=\"background:%s\" title=\"%.1f\"></span>", hex, k / 10.0);
    }
    tb_puts(o, "</div><div class=\"ticks\"><span>0</span><span>0.5</span><span>1</span></div>\n"
               "<noscript><p>This page draws its maps with a script of its own (it loads nothing); the PNG named "
               "in each caption shows the same map.</p></noscript>\n<div class=\"grid\">\n");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char name[64];
            heatmap_png_name(l, h, name, sizeof name);
            tb_printf(o, "<figure id=\"l%dh%d\"><figcaption>layer %d, head %d <a href=\"%s\">%s</a></figcaption>"
                         "<div class=\"box\"><canvas class=\"map\" data-map=\"%d\"></canvas></div>"
                         "<div class=\"read\">&nbsp;</div></figure>\n",
                      l, h, l, h, name, name, l * H + h);
        }
    tb_puts(o, "</div>\n<div id=\"tip\"></div>\n");

    /* the data: the palette, the mask as bits, each map's visible cells as
     * heatmap_cell_code in 4 base-64 digits, row by row */
    tb_printf(o, "<div id=\"data\" hidden data-t=\"%d\" data-l=\"%d\" data-h=\"%d\" data-alphabet=\"%s\" "
                 "data-palette=\"", T, L, H, HEATMAP_B64);
    for (int k = 0; k < HEATMAP_LEVELS; k++) {
        rgb c = heatmap_level_colour(k);
        tb_printf(o, "%02x%02x%02x", c.r, c.g, c.b);
    }
    colour_hex(HEATMAP_BLOCKED, hex);
    tb_printf(o, "\" data-blocked=\"%s\" data-mask=\"", hex);
    const size_t n = (size_t)T * T;
    for (size_t i = 0; i < n; i += 6) {
        int bits = 0;
        for (size_t b = 0; b < 6; b++) bits = bits << 1 | (i + b < n && blocked && blocked[i + b]);
        char ch[2] = {HEATMAP_B64[bits], 0};
        tb_puts(o, ch);
    }
    tb_puts(o, "\"></div>\n");
    for (int m = 0; m < L * H; m++) {
        tb_printf(o, "<pre id=\"w%d\" hidden>", m);
        const double *wm = w + (size_t)m * n;
        char *buf = malloc(4 * n + 1);
        if (!buf) {
            o->oom = true;
            return;
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (blocked && blocked[i]) continue;
            const uint32_t c = heatmap_cell_code(wm[i]);
            for (int d = 3; d >= 0; d--) buf[k++] = HEATMAP_B64[c >> (6 * d) & 63];
        }
        buf[k] = 0;
        tb_puts(o, buf);
        free(buf);
        tb_puts(o, "</pre>\n");
    }
    tb_printf(o, "<script>\n%s</script>\n</body></html>\n", PAGE_SCRIPT);
}
