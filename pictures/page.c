/* The HTML page of a set of attention maps (see pictures.h): one file
 * that loads nothing, whose inline script draws the maps from weights
 * stored once, 4 characters per visible cell. */
#include "pictures.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "heatmap_internal.h"

/* ---- a growing text buffer ----------------------------------------------- */

typedef struct page {
    char *p; /* NUL-terminated */
    size_t len, cap;
    bool oom; /* a failed allocation sticks; the text is then incomplete */
} page;

static bool reserve(page *b, size_t extra)
{
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = tg_realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void put(page *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void puts_(page *b, const char *s) { put(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void printf_(page *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* ---- names, labels and codes --------------------------------------------- */

const char *tg_attn_png_name(int layer, int head, char *buf, size_t size)
{
    if (!buf || !size) return NULL;
    snprintf(buf, size, "attn_l%d_h%d.png", layer, head);
    return buf;
}

/* A byte as an axis label, HTML-escaped: space, newline and tab as
 * visible symbols, other bytes outside printable ASCII as \xNN. */
static void char_label(uint8_t c, char *buf, size_t size)
{
    switch (c) {
    case ' ': snprintf(buf, size, "\xe2\x90\xa3"); return; /* U+2423 open box */
    case '\n': snprintf(buf, size, "\xe2\x86\xb5"); return; /* U+21B5 return arrow */
    case '\t': snprintf(buf, size, "\xe2\x87\xa5"); return; /* U+21E5 tab arrow */
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

/* A label for the page: char_label's form of every ASCII byte, each valid
 * UTF-8 character as itself, every other byte as \xNN. */
static void label_html(page *o, tg_heatmap_label l)
{
    char lab[16];
    uint8_t g;
    for (int i = 0, n; l.s && i < l.len; i += n) {
        n = tg_heatmap_label_unit((const uint8_t *)l.s, l.len, i, &g);
        if (n > 1) {
            put(o, l.s + i, (size_t)n); /* a whole UTF-8 character: the page is UTF-8 */
        } else {
            char_label(g, lab, sizeof lab);
            puts_(o, lab);
        }
    }
}

static void colour_hex(tg_rgb c, char buf[8]) { snprintf(buf, 8, "#%02x%02x%02x", c.r, c.g, c.b); }

static const char B64[65] = TG_ATTN_PAGE_B64;

uint32_t tg_attn_page_code(double w)
{
    const double c = w > 0 ? (w < 1 ? w : 1) : 0; /* NaN -> 0, as tg_heatmap_level */
    return (uint32_t)tg_heatmap_level(w) << 14 | (uint32_t)floor(c * 10000 + 0.5);
}

/* ---- the page ------------------------------------------------------------ */

/* The page's script: it decodes the weights, draws each map on its canvas
 * (again when the window is resized) with every label in full, and shows
 * the weight under the pointer. It reads nothing but this page. A map is
 * drawn again when its box changes width (the grid reflows as the maps
 * take their heights, a scroll bar comes or goes), and the pointer is read
 * against the geometry it was last drawn with.
 *
 * The labels are PAGE_FONT_PX monospace: the queries' right-aligned in
 * a band left of the map as wide as the widest label; the keys' above the
 * map, upright and centred on their columns when the widest fits a cell,
 * else turned a quarter to read upwards, in a band as high as the widest.
 * So none is cut. A cell is at least PAGE_FONT_PX + 1 pixels, so that
 * neighbouring labels never overlap; the grid's columns are made as wide
 * as such a map needs (or the window, when it needs more: the map then
 * scrolls sideways in its box and the page keeps the window's width). */
#define PAGE_FONT_PX_STR "10"
#define PAGE_DIGITS_STR "4" /* TG_ATTN_PAGE_DIGITS */
#define PAGE_SCALE_STR "10000" /* 10^TG_ATTN_PAGE_DIGITS */
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
    "var tip=D.getElementById('tip'),cv=D.querySelectorAll('canvas.map'),F=" PAGE_FONT_PX_STR ",PAD=4,MIN=F+1;\n"
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
    "(bl[n]?'blocked':(val[m][n]/" PAGE_SCALE_STR ").toFixed(" PAGE_DIGITS_STR "))}\n"
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

/* The head, the text line and what the maps show. */
static void intro(page *o, const tg_attn_maps *a, const tg_heatmap_label *lab, const char *unit)
{
    const int T = a->T, L = a->n_layer, H = a->n_head;
    char hex[8];
    puts_(o,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
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
    printf_(o, "<p>Text (%d %s%s): <code id=\"text\">", T, unit, T == 1 ? "" : "s");
    bool special = false;
    for (int i = 0; i < T; i++) {
        special |= lab[i].special;
        puts_(o, lab[i].special ? "<span class=\"special\">" : "<span>");
        label_html(o, lab[i]);
        puts_(o, "</span>");
    }
    puts_(o, "</code></p>\n");
    if (special)
        puts_(o,
              "<p>In <span style=\"font-style:italic;color:#a0004a\">this style</span>: a token that is no text, "
              "BOS, which a Llama reads before its text: sample and eval --text put it first, as it stood before "
              "every document in training, and so does this page.</p>\n");
    printf_(o,
            "<p>%d layer%s &times; %d head%s. In each map the rows are queries and the columns "
            "keys: row i shows how position i spreads its attention over positions 0..i (each row sums to 1). "
            "Grey cells are future positions, blocked by the causal mask. Hover over a cell for its weight, "
            "shown to %d decimal places: the page keeps each weight rounded to %d decimals, and its colour "
            "level, the same as in the PNG beside each caption. Colour scale (0 to 1, the same for every "
            "map):</p>\n<div class=\"bar\">",
            L, L == 1 ? "" : "s", H, H == 1 ? "" : "s", TG_ATTN_PAGE_DIGITS, TG_ATTN_PAGE_DIGITS);
    for (int k = 0; k <= 10; k++) {
        colour_hex(tg_heatmap_colour(k / 10.0), hex);
        printf_(o, "<span style=\"background:%s\" title=\"%.1f\"></span>", hex, k / 10.0);
    }
    puts_(o,
          "</div><div class=\"ticks\"><span>0</span><span>0.5</span><span>1</span></div>\n"
          "<noscript><p>This page draws its maps with a script of its own (it loads nothing); the PNG named "
          "in each caption shows the same map.</p></noscript>\n<div class=\"grid\">\n");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char name[64];
            tg_attn_png_name(l, h, name, sizeof name);
            printf_(o,
                    "<figure id=\"l%dh%d\"><figcaption>layer %d, head %d <a href=\"%s\">%s</a></figcaption>"
                    "<div class=\"box\"><canvas class=\"map\" data-map=\"%d\"></canvas></div>"
                    "<div class=\"read\">&nbsp;</div></figure>\n",
                    l, h, l, h, name, name, l * H + h);
        }
    puts_(o, "</div>\n<div id=\"tip\"></div>\n");
}

/* The data: the palette, the mask as bits, each map's visible cells as
 * tg_attn_page_code in 4 base-64 digits, row by row. */
static void data(page *o, const tg_attn_maps *a)
{
    const int T = a->T, L = a->n_layer, H = a->n_head;
    const uint8_t *blocked = a->blocked;
    char hex[8];
    printf_(o,
            "<div id=\"data\" hidden data-t=\"%d\" data-l=\"%d\" data-h=\"%d\" data-alphabet=\"%s\" "
            "data-palette=\"",
            T, L, H, B64);
    for (int k = 0; k < TG_HEATMAP_LEVELS; k++) {
        tg_rgb c = tg_heatmap_level_colour(k);
        printf_(o, "%02x%02x%02x", c.r, c.g, c.b);
    }
    colour_hex(TG_HEATMAP_BLOCKED, hex);
    printf_(o, "\" data-blocked=\"%s\" data-mask=\"", hex);
    const size_t n = (size_t)T * T;
    for (size_t i = 0; i < n; i += 6) {
        int bits = 0;
        for (size_t b = 0; b < 6; b++) bits = bits << 1 | (i + b < n && blocked && blocked[i + b]);
        put(o, &B64[bits], 1);
    }
    puts_(o, "\"></div>\n");
    for (int m = 0; m < L * H; m++) {
        printf_(o, "<pre id=\"w%d\" hidden>", m);
        const double *wm = a->w + (size_t)m * n;
        if (!reserve(o, 4 * n)) return;
        char *buf = o->p + o->len;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (blocked && blocked[i]) continue;
            const uint32_t c = tg_attn_page_code(wm[i]);
            for (int d = 3; d >= 0; d--) buf[k++] = B64[c >> (6 * d) & 63];
        }
        o->len += k;
        o->p[o->len] = 0;
        puts_(o, "</pre>\n");
    }
}

char *tg_attn_page_html(const tg_attn_maps *a, const tg_heatmap_label *labels, const char *unit, size_t *len,
                        tg_error *err)
{
    if (len) *len = 0;
    if (!a || !labels || !unit || !len)
        return tg_error_set(err, "attn_page_html: a NULL argument (the maps, labels, unit or len)"), NULL;
    if (a->T < 1 || a->n_layer < 1 || a->n_head < 1 || !a->w)
        return tg_error_set(err, "attn_page_html: no maps: %d layers x %d heads over %d positions%s", a->n_layer,
                            a->n_head, a->T, a->w ? "" : ", no weights"),
               NULL;
    if ((double)a->n_layer * a->n_head * a->T * a->T > (double)((int64_t)1 << 31))
        return tg_error_set(err, "attn_page_html: %d layers x %d heads of %d x %d cells: more than 2^31 cells",
                            a->n_layer, a->n_head, a->T, a->T),
               NULL;
    page o = {0};
    intro(&o, a, labels, unit);
    data(&o, a);
    printf_(&o, "<script>\n%s</script>\n</body></html>\n", PAGE_SCRIPT);
    if (o.oom) {
        tg_free(o.p);
        return tg_error_set(err, "attn_page_html: out of memory for the page of %d maps of %d x %d",
                            a->n_layer * a->n_head, a->T, a->T),
               NULL;
    }
    *len = o.len;
    return o.p;
}
