/* The pictures layer (pictures/pictures.h): PNGs are decoded with
 * stb_image and their pixels checked against the numbers they draw. The
 * colour map gets brighter with the weight and never shows the blocked
 * colour; a heatmap's cells are solid squares of the right size, blocked
 * cells are the background, and in every row the largest weight is the
 * brightest cell (for made-up weights and for a GPT's own attention
 * weights), and the labels, title and colour scale are where the layout
 * says; the page stores every weight (decoded back here), every label,
 * loads nothing and stays small (tests/browser_layout.sh renders it); the
 * loss curve follows a known series; a model's maps are the weights this
 * test computes itself (tg_model_forward on ids built by hand), labelled
 * as the model reads the text (a Llama's BOS first);
 * the files are all or nothing. End to end, `tiny_gpt attn` (the built
 * program, TINY_GPT_BIN) writes, byte for byte, the files the library
 * writes for the same checkpoint and text. */
#include "tg_test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

/* ---- helpers ------------------------------------------------------------- */

#define P tt_path /* a file in the scratch directory */

/* ck_assert_msg records every passing check's location (costly per
 * pixel); REQUIRE only acts when the condition fails. */
#define REQUIRE(cond, ...)                                                                                             \
    do {                                                                                                               \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                                                        \
    } while (0)

/* Brightness as relative luminance (Rec. 709 weights). */
static double lum(tg_rgb c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; }
static bool same(tg_rgb a, tg_rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

/* A decoded RGB picture. */
typedef struct pic {
    int w, h;
    unsigned char *px;
} pic;

static pic decode(const uint8_t *png, size_t len)
{
    pic p = {0};
    int comp = 0;
    p.px = stbi_load_from_memory(png, (int)len, &p.w, &p.h, &comp, 3);
    ck_assert_msg(p.px != NULL, "stb_image cannot decode the PNG: %s", stbi_failure_reason());
    return p;
}

static pic decode_file(const char *path)
{
    pic p = {0};
    int comp = 0;
    p.px = stbi_load(path, &p.w, &p.h, &comp, 3);
    ck_assert_msg(p.px != NULL, "stb_image cannot decode %s: %s", path, stbi_failure_reason());
    return p;
}

static tg_rgb at(const pic *p, int x, int y)
{
    const unsigned char *q = p->px + ((size_t)y * p->w + x) * 3;
    return (tg_rgb){q[0], q[1], q[2]};
}

/* Names in directory d (sorted into one string "a,b,c,"), to see what a call left. */
static void listing(const char *d_path, char *out, size_t size)
{
    static char names[64][256];
    int n = 0;
    DIR *d = opendir(d_path);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d)) && n < 64;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(names[n++], 256, "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        strncat(out, names[i], size - strlen(out) - 1);
        strncat(out, ",", size - strlen(out) - 1);
    }
}

/* The file's bytes, NUL-terminated (malloc'd), their count in *len. */
static char *slurp_n(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return s;
}

static char *slurp(const char *path)
{
    size_t n;
    return slurp_n(path, &n);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---- the colour map --------------------------------------------------------- */

START_TEST(colour_map_gets_brighter_and_never_shows_blocked)
{
    for (int k = 0; k < TG_HEATMAP_LEVELS; k++) {
        tg_rgb c = tg_heatmap_level_colour(k);
        ck_assert_msg(!same(c, TG_HEATMAP_BLOCKED), "level %d has the blocked colour", k);
        if (k == 0) continue;
        tg_rgb p = tg_heatmap_level_colour(k - 1);
        ck_assert_msg(c.r >= p.r && c.g >= p.g && c.b >= p.b, "level %d: a channel falls", k);
        ck_assert_msg(lum(c) > lum(p), "level %d is not brighter than %d (%g vs %g)", k, k - 1, lum(c), lum(p));
        ck_assert_msg(c.r + c.g + c.b > p.r + p.g + p.b, "level %d: R+G+B does not rise", k);
    }
    /* the two ends: a dark colour for 0, a light one for 1 */
    ck_assert(lum(tg_heatmap_colour(0)) < 30);
    ck_assert(lum(tg_heatmap_colour(1)) > 200);
    /* quantisation: round(255 w), clamped; NaN counts as 0 */
    ck_assert_int_eq(tg_heatmap_level(0), 0);
    ck_assert_int_eq(tg_heatmap_level(1), 255);
    ck_assert_int_eq(tg_heatmap_level(0.5), 128);
    ck_assert_int_eq(tg_heatmap_level(0.5 / 255), 1);
    ck_assert_int_eq(tg_heatmap_level(0.49 / 255), 0);
    ck_assert_int_eq(tg_heatmap_level(-0.2), 0);
    ck_assert_int_eq(tg_heatmap_level(1.7), 255);
    ck_assert_int_eq(tg_heatmap_level(NAN), 0);
    /* cell sizes: 512 / T within [8, 32] */
    ck_assert_int_eq(tg_heatmap_cell_px(1, 1), 32);
    ck_assert_int_eq(tg_heatmap_cell_px(12, 12), 32);
    ck_assert_int_eq(tg_heatmap_cell_px(20, 20), 25);
    ck_assert_int_eq(tg_heatmap_cell_px(64, 64), 8);
    ck_assert_int_eq(tg_heatmap_cell_px(3, 100), 8);
    ck_assert_int_eq(tg_heatmap_cell_px(2000, 2000), 8);
}
END_TEST

/* ---- the font ------------------------------------------------------------------- */

/* Glyph c as tg_image_text draws it at scale 1: g[row][col], true for ink. */
static void glyph_bits(char c, bool g[TG_GLYPH_H][TG_GLYPH_W])
{
    tg_image im;
    ck_assert_int_eq(tg_image_init(&im, TG_GLYPH_W, TG_GLYPH_H, TG_HEATMAP_PAPER, NULL), 0);
    tg_image_text(&im, 0, 0, 1, (char[]){c, 0}, TG_HEATMAP_INK);
    for (int y = 0; y < TG_GLYPH_H; y++)
        for (int x = 0; x < TG_GLYPH_W; x++) g[y][x] = same(tg_image_get(&im, x, y), TG_HEATMAP_INK);
    tg_image_release(&im);
}

/* "queries" in the maps' axis line read as "9ueries": q had a round top
 * beside its stem, a small 9. Now q is p mirrored, as in most faces: the
 * top of its bowl is one bar that meets the stem in a square corner,
 * where 9's top is an arch that leaves both corners empty. */
START_TEST(font_q_is_p_mirrored_and_no_9)
{
    bool q[TG_GLYPH_H][TG_GLYPH_W], p[TG_GLYPH_H][TG_GLYPH_W], nine[TG_GLYPH_H][TG_GLYPH_W];
    glyph_bits('q', q);
    glyph_bits('p', p);
    glyph_bits('9', nine);
    char shape[128] = ""; /* q as drawn, for a message */
    for (int y = 0; y < TG_GLYPH_H; y++) {
        for (int x = 0; x < TG_GLYPH_W; x++) strncat(shape, q[y][x] ? "#" : ".", sizeof shape - strlen(shape) - 1);
        strncat(shape, y + 1 < TG_GLYPH_H ? "|" : "", sizeof shape - strlen(shape) - 1);
    }
    for (int y = 0; y < TG_GLYPH_H; y++)
        for (int x = 0; x < TG_GLYPH_W; x++)
            ck_assert_msg(q[y][x] == p[y][TG_GLYPH_W - 1 - x], "q (%s) is not p mirrored at (%d,%d)", shape, x, y);
    int top = 0, top9 = 0; /* the first row with ink, of q and of 9 */
    while (top < TG_GLYPH_H && !q[top][0] && !q[top][1] && !q[top][2] && !q[top][3] && !q[top][4]) top++;
    while (top9 < TG_GLYPH_H && !nine[top9][1] && !nine[top9][2] && !nine[top9][3]) top9++;
    ck_assert_int_lt(top, TG_GLYPH_H);
    for (int x = 1; x < TG_GLYPH_W; x++)
        ck_assert_msg(q[top][x], "q (%s): its top is no bar reaching the stem (column %d of row %d)", shape, x, top);
    ck_assert_msg(!nine[top9][0] && !nine[top9][TG_GLYPH_W - 1], "9's top is no arch: the test's premise");
    ck_assert_int_ge(top, 2); /* and q stays a lowercase letter, below the digits' height */
}
END_TEST

/* ---- heatmaps ------------------------------------------------------------------ */

/* Whether two bytes get the same label glyph: printable ASCII and space,
 * newline and tab each have their own; every other byte shares one mark. */
static bool same_label(uint8_t a, uint8_t b)
{
    const bool oa = !(a >= 32 && a < 127) && a != '\n' && a != '\t',
               ob = !(b >= 32 && b < 127) && b != '\n' && b != '\t';
    return a == b || (oa && ob);
}

/* Ink in [x0,x1) x [y0,y1): each pixel paper or ink; returns the ink count. */
static int ink_in(const pic *p, int x0, int y0, int x1, int y1)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            tg_rgb c = at(p, x, y);
            REQUIRE(same(c, TG_HEATMAP_PAPER) || same(c, TG_HEATMAP_INK), "pixel (%d,%d) in a label area is %d,%d,%d",
                    x, y, c.r, c.g, c.b);
            n += same(c, TG_HEATMAP_INK);
        }
    return n;
}

/* Two w x h boxes of p with the same pixels? */
static bool same_box(const pic *p, int x0, int y0, int x1, int y1, int w, int h)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (!same(at(p, x0 + x, y0 + y), at(p, x1 + x, y1 + y))) return false;
    return true;
}

/* The labels of a picture laid out as l: every column has ink in its key
 * label box above the map and every row in its query label box left of
 * it, only paper and ink there; two boxes look alike exactly when their
 * bytes share a glyph; the title line has ink; the colour scale shows
 * every level in order and the blocked swatch is grey. */
static void check_labels(const pic *p, const tg_heatmap_layout *l, int Tq, int Tk, const char *qtext, const char *ktext)
{
    const int cell = l->cell, gh = TG_GLYPH_H * l->scale;
    for (int j = 0; j < Tk; j++) {
        const int x = l->map_x + j * cell;
        REQUIRE(ink_in(p, x, l->key_y, x + cell, l->key_y + gh) > 0, "no key label above column %d", j);
        for (int k = 0; k < j; k++)
            REQUIRE(same_box(p, x, l->key_y, l->map_x + k * cell, l->key_y, cell, gh) ==
                        same_label((uint8_t)ktext[j], (uint8_t)ktext[k]),
                    "key labels %d (byte %d) and %d (byte %d): drawn alike %d", j, (uint8_t)ktext[j], k,
                    (uint8_t)ktext[k], !same_label((uint8_t)ktext[j], (uint8_t)ktext[k]));
    }
    for (int i = 0; i < Tq; i++) {
        const int y = l->map_y + i * cell;
        REQUIRE(ink_in(p, l->query_x, y, l->map_x, y + cell) > 0, "no query label beside row %d", i);
        for (int k = 0; k < i; k++)
            REQUIRE(same_box(p, l->query_x, y, l->query_x, l->map_y + k * cell, l->map_x - l->query_x, cell) ==
                        same_label((uint8_t)qtext[i], (uint8_t)qtext[k]),
                    "query labels %d and %d", i, k);
    }
    REQUIRE(ink_in(p, TG_HEATMAP_PAD, l->title_y, l->w, l->title_y + 14) > 100, "no title");
    for (int k = 0; k < TG_HEATMAP_LEVELS; k++)
        for (int y = l->bar_y; y < l->bar_y + TG_HEATMAP_BAR_H; y++)
            REQUIRE(same(at(p, l->bar_x + k, y), tg_heatmap_level_colour(k)),
                    "the colour scale's column %d is not level %d", k, k);
    REQUIRE(ink_in(p, l->bar_x, l->tick_y, l->bar_x + TG_HEATMAP_LEVELS, l->tick_y + TG_GLYPH_H) > 0, "no ticks");
    REQUIRE(same(at(p, l->swatch_x + TG_HEATMAP_BAR_H / 2, l->swatch_y + TG_HEATMAP_BAR_H / 2), TG_HEATMAP_BLOCKED),
            "no blocked swatch");
}

/* Decodes tg_heatmap_png's picture of w, rows labelled by qtext and columns
 * by ktext, and checks: the size and layout (label bands outside the map,
 * the scale under it, all inside the picture); a frame of paper one pixel
 * around the map, so the cells start and end where the layout says; every
 * cell a solid square; blocked cells grey and no other cell; each cell's
 * colour the map's colour of its weight; over all cell pairs, a weight
 * larger by more than one level is strictly brighter and a larger weight
 * never darker; each row's largest weight is its brightest cell; the
 * labels (check_labels). Returns the number of unblocked cells. */
static int check_heatmap(const double *w, const uint8_t *blocked, int Tq, int Tk, const char *qtext, const char *ktext)
{
    uint8_t *png = NULL;
    size_t len = 0;
    const tg_heatmap m = {
        .w = w, .blocked = blocked, .Tq = Tq, .Tk = Tk, .qtext = qtext, .ktext = ktext, .title = "layer 7, head 3"};
    tg_error e = {0};
    ck_assert_msg(tg_heatmap_png(&m, &png, &len, &e) == 0, "%s", e.msg);
    pic p = decode(png, len);
    tg_free(png);
    const tg_heatmap_layout l = tg_heatmap_layout_of(Tq, Tk, 1, 1);
    const int cell = l.cell, gw = TG_GLYPH_W * l.scale, gh = TG_GLYPH_H * l.scale;
    ck_assert_int_eq(cell, tg_heatmap_cell_px(Tq, Tk));
    ck_assert_int_eq(l.scale, cell >= 16 ? 2 : 1);
    ck_assert_int_eq(p.w, l.w);
    ck_assert_int_eq(p.h, l.h);
    const int right = l.map_x + Tk * cell, bottom = l.map_y + Tq * cell;
    ck_assert(gw <= cell && gh <= cell); /* a label fits its row or column */
    ck_assert(l.title_y + 14 < l.key_y && l.key_y + gh < l.map_y && l.query_x + gw < l.map_x);
    ck_assert(bottom < l.bar_y && l.bar_y + TG_HEATMAP_BAR_H < l.tick_y && l.tick_y + TG_GLYPH_H < l.swatch_y);
    ck_assert(right < l.w && l.bar_x + TG_HEATMAP_LEVELS < l.w && l.swatch_y + TG_HEATMAP_BAR_H < l.h);
    for (int x = l.map_x - 1; x <= right; x++)
        REQUIRE(same(at(&p, x, l.map_y - 1), TG_HEATMAP_PAPER) && same(at(&p, x, bottom), TG_HEATMAP_PAPER),
                "no paper above or below the map at x %d", x);
    for (int y = l.map_y - 1; y <= bottom; y++)
        REQUIRE(same(at(&p, l.map_x - 1, y), TG_HEATMAP_PAPER) && same(at(&p, right, y), TG_HEATMAP_PAPER),
                "no paper left or right of the map at y %d", y);
    tg_rgb *cells = malloc(sizeof(tg_rgb) * Tq * Tk);
    int open = 0;
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            const int x0 = l.map_x + j * cell, y0 = l.map_y + i * cell;
            tg_rgb c = at(&p, x0, y0);
            for (int y = y0; y < y0 + cell; y++)
                for (int x = x0; x < x0 + cell; x++)
                    REQUIRE(same(at(&p, x, y), c), "cell (%d,%d) is not solid at pixel (%d,%d)", i, j, x, y);
            cells[i * Tk + j] = c;
            const bool b = blocked && blocked[i * Tk + j];
            REQUIRE(same(c, TG_HEATMAP_BLOCKED) == b, "cell (%d,%d) blocked %d but colour %d,%d,%d", i, j, b, c.r, c.g,
                    c.b);
            if (b) continue;
            open++;
            REQUIRE(same(c, tg_heatmap_colour(w[i * Tk + j])), "cell (%d,%d) weight %g has the wrong colour", i, j,
                    w[i * Tk + j]);
        }
    for (int a = 0; a < Tq * Tk; a++)
        for (int b = 0; b < Tq * Tk; b++) {
            if (blocked && (blocked[a] || blocked[b])) continue;
            if (w[a] > w[b] + 1.0 / 255)
                REQUIRE(lum(cells[a]) > lum(cells[b]), "weight %g is not brighter than %g", w[a], w[b]);
            if (w[a] >= w[b]) REQUIRE(lum(cells[a]) >= lum(cells[b]), "weight %g darker than %g", w[a], w[b]);
        }
    for (int i = 0; i < Tq; i++) {
        int best = -1;
        for (int j = 0; j < Tk; j++)
            if (!(blocked && blocked[i * Tk + j]) && (best < 0 || w[i * Tk + j] > w[i * Tk + best])) best = j;
        if (best < 0) continue;
        for (int j = 0; j < Tk; j++)
            if (!(blocked && blocked[i * Tk + j]))
                REQUIRE(lum(cells[i * Tk + best]) >= lum(cells[i * Tk + j]),
                        "row %d: the largest weight (key %d) is not the brightest cell (key %d is)", i, best, j);
    }
    free(cells);
    check_labels(&p, &l, Tq, Tk, qtext, ktext);
    stbi_image_free(p.px);
    return open;
}

/* Softmax rows of seeded normal scores (times `sharp`), with a mask. */
static void random_rows(double *w, const uint8_t *blocked, int Tq, int Tk, double sharp, uint64_t seed)
{
    tg_rng r;
    tg_rng_seed(&r, seed, 3);
    for (int i = 0; i < Tq; i++) {
        double sum = 0;
        for (int j = 0; j < Tk; j++) {
            double z = sharp * tg_rng_normal(&r);
            w[i * Tk + j] = blocked && blocked[i * Tk + j] ? 0 : exp(z);
            sum += w[i * Tk + j];
        }
        for (int j = 0; j < Tk; j++) w[i * Tk + j] /= sum;
    }
}

START_TEST(heatmap_pixels_follow_the_weights)
{
    /* causal, square */
    enum { T = 7 };
    double w[T * T];
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    const char *text = "ab cab\x01"; /* a space, and a byte outside printable ASCII */
    random_rows(w, causal, T, T, 2.0, 1);
    ck_assert_int_eq(check_heatmap(w, causal, T, T, text, text), T * (T + 1) / 2);
    /* an unblocked weight of exactly 0 is the map's darkest colour, not grey */
    w[T * 3 + 1] = 0;
    ck_assert_int_eq(check_heatmap(w, causal, T, T, text, text), T * (T + 1) / 2);
    /* not square, an arbitrary mask, no mask */
    enum { Q = 3, K = 9 };
    double w2[Q * K];
    uint8_t m2[Q * K];
    for (int k = 0; k < Q * K; k++) m2[k] = (k * 7) % 5 == 0;
    const char *keys = "k\tk\n \xc3\xa9~k"; /* 9 bytes: tab, newline, space, two of a UTF-8 character */
    random_rows(w2, m2, Q, K, 1.0, 2);
    check_heatmap(w2, m2, Q, K, "q.Q", keys);
    random_rows(w2, NULL, Q, K, 3.0, 3);
    ck_assert_int_eq(check_heatmap(w2, NULL, Q, K, "Q.q", keys), Q * K);
    /* one row that attends to a single key: one bright cell */
    double one[4] = {0, 0, 1, 0};
    check_heatmap(one, NULL, 1, 4, "x", "wxyz");
}
END_TEST

/* A GPT's own attention weights (tg_model_forward's) drawn as heatmaps. */
START_TEST(heatmap_of_a_gpt)
{
    const tg_model_config cfg = {
        .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 12, .vocab_size = 11};
    tg_error err = {0};
    tg_model md;
    ck_assert_msg(tg_model_init(&md, &cfg, TG_F64, 3, &err) == 0, "%s", err.msg);
    tg_gpt *m = md.impl;
    /* sharpen the attention: larger query/key weights than nanoGPT's init */
    tg_rng r;
    tg_rng_seed(&r, 9, 1);
    for (int l = 0; l < 2; l++) tg_rng_fill_normal(&r, m->h[l].attn.c_attn.weight, 0, 0.6);
    tg_graph *g = tg_graph_new();
    enum { T = 12 };
    const int32_t iv[T] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    tg_tensor *aw[2];
    ck_assert_ptr_nonnull(tg_model_forward(g, &md, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, iv), aw));
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    double w[T * T], peak = 0;
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < T * T; k++) {
                w[k] = tg_tensor_get(aw[l], h * T * T + k);
                if (k / T > 0) peak = fmax(peak, w[k]);
            }
            ck_assert_int_eq(check_heatmap(w, causal, T, T, "cab bad dab.", "cab bad dab."), T * (T + 1) / 2);
        }
    ck_assert_msg(peak > 0.5, "the weights are nearly uniform (peak %g): a weak test", peak);
    tg_graph_free(g);
    tg_model_release(&md);
}
END_TEST

/* ---- the HTML index ----------------------------------------------------------- */

/* The value of attribute `name` of the element that opens at `tag` in html, copied to out. */
static void attribute(const char *html, const char *tag, const char *name, char *out, size_t size)
{
    const char *t = strstr(html, tag);
    REQUIRE(t != NULL, "no '%s' in the page", tag);
    const char *end = strchr(t, '>');
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *v = strstr(t, key);
    REQUIRE(v && v < end, "'%s' has no %s", tag, name);
    v += strlen(key);
    const char *q = strchr(v, '"');
    REQUIRE((size_t)(q - v) < size, "%s too long", name);
    memcpy(out, v, (size_t)(q - v));
    out[q - v] = 0;
}

static int b64(char c)
{
    const char *p = strchr(TG_ATTN_PAGE_B64, c);
    REQUIRE(c && p, "'%c' is not a digit of the page's encoding", c);
    return (int)(p - TG_ATTN_PAGE_B64);
}

/* Map m's cells as the page stores them: codes[i*T+j], -1 where the
 * page's own mask says blocked. Checks the mask against `blocked` and
 * that the map holds 4 digits per open cell, no more. */
static void page_codes(const char *html, int m, int T, const uint8_t *blocked, long *codes)
{
    static char mask[8192];
    attribute(html, "<div id=\"data\"", "data-mask", mask, sizeof mask);
    ck_assert_int_eq((int)strlen(mask), (T * T + 5) / 6);
    char open[32];
    snprintf(open, sizeof open, "<pre id=\"w%d\" hidden>", m);
    const char *p = strstr(html, open);
    REQUIRE(p != NULL, "no weights of map %d", m);
    p += strlen(open);
    for (int i = 0; i < T * T; i++) {
        const bool b = b64(mask[i / 6]) >> (5 - i % 6) & 1;
        REQUIRE(b == (blocked && blocked[i]), "the page's mask differs at cell %d", i);
        if (b) {
            codes[i] = -1;
            continue;
        }
        long c = 0;
        for (int d = 0; d < 4; d++) c = c << 6 | b64(*p++);
        codes[i] = c;
    }
    REQUIRE(!strncmp(p, "</pre>", 6), "map %d holds more than its cells", m);
}

/* The page of the maps w (L,H,T,T) with mask blocked, labelled by lab
 * (T), unit "character" (tg_attn_page_html). */
static char *page_labels(const tg_heatmap_label *lab, int T, int L, int H, double *w, uint8_t *blocked)
{
    const tg_attn_maps a = {.n_layer = L, .n_head = H, .T = T, .w = w, .blocked = blocked};
    size_t len = 0;
    tg_error e = {0};
    char *page = tg_attn_page_html(&a, lab, "character", &len, &e);
    ck_assert_msg(page != NULL, "%s", e.msg);
    ck_assert_uint_eq(strlen(page), len);
    return page;
}

/* The same, each position labelled by one byte of text. */
static char *page_of(const char *text, int T, int L, int H, double *w, uint8_t *blocked)
{
    tg_heatmap_label lab[256];
    ck_assert_int_le(T, 256);
    for (int i = 0; i < T; i++) lab[i] = (tg_heatmap_label){text + i, 1, false};
    return page_labels(lab, T, L, H, w, blocked);
}

START_TEST(html_stores_every_weight_and_character)
{
    /* the code of one weight: level << 14 | round(10^4 w) */
    ck_assert_uint_eq(tg_attn_page_code(0), 0);
    ck_assert_uint_eq(tg_attn_page_code(1), 255u << 14 | 10000);
    ck_assert_uint_eq(tg_attn_page_code(0.5), 128u << 14 | 5000);
    ck_assert_uint_eq(tg_attn_page_code(0.123456), (uint32_t)tg_heatmap_level(0.123456) << 14 | 1235);
    ck_assert_uint_eq(tg_attn_page_code(0.00004), 0); /* level 0, 0.0000 */
    ck_assert_uint_eq(tg_attn_page_code(NAN), 0);
    ck_assert_uint_eq(tg_attn_page_code(-0.2), 0);
    ck_assert_uint_eq(tg_attn_page_code(1.7), 255u << 14 | 10000);

    enum { L = 2, H = 3, T = 5 };
    const char *text = "a <b&";
    double w[L * H * T * T];
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    for (int lh = 0; lh < L * H; lh++) random_rows(w + lh * T * T, causal, T, T, 1.5, 10 + (uint64_t)lh);
    char *s = page_of(text, T, L, H, w, causal);
    ck_assert_int_eq(count(s, "<figure"), L * H);
    ck_assert_int_eq(count(s, "<canvas class=\"map\""), L * H);
    char want[256], got[2048];
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            snprintf(want, sizeof want, "layer %d, head %d <a href=\"attn_l%d_h%d.png\">", l, h, l, h);
            ck_assert_msg(strstr(s, want), "no caption/link for layer %d head %d", l, h);
            snprintf(want, sizeof want, "<canvas class=\"map\" data-map=\"%d\">", l * H + h);
            ck_assert_msg(strstr(s, want), "no canvas for layer %d head %d", l, h);
            /* every open cell's weight: its colour level and its 4 decimals */
            long codes[T * T];
            page_codes(s, l * H + h, T, causal, codes);
            const double *wm = w + (l * H + h) * T * T;
            for (int i = 0; i < T * T; i++) {
                if (causal[i]) continue;
                REQUIRE(codes[i] >> 14 == tg_heatmap_level(wm[i]), "map %d cell %d: level %ld, want %d", l * H + h, i,
                        codes[i] >> 14, tg_heatmap_level(wm[i]));
                REQUIRE(fabs((codes[i] & 16383) / 1e4 - wm[i]) <= 0.5e-4, "map %d cell %d: %ld for weight %.6f",
                        l * H + h, i, codes[i] & 16383, wm[i]);
            }
        }
    /* the page's header: sizes, the digits, the palette of every level, the grey */
    attribute(s, "<div id=\"data\"", "data-t", got, sizeof got);
    ck_assert_str_eq(got, "5");
    attribute(s, "<div id=\"data\"", "data-l", got, sizeof got);
    ck_assert_str_eq(got, "2");
    attribute(s, "<div id=\"data\"", "data-h", got, sizeof got);
    ck_assert_str_eq(got, "3");
    attribute(s, "<div id=\"data\"", "data-alphabet", got, sizeof got);
    ck_assert_str_eq(got, TG_ATTN_PAGE_B64);
    ck_assert_int_eq((int)strlen(TG_ATTN_PAGE_B64), 64);
    attribute(s, "<div id=\"data\"", "data-palette", got, sizeof got);
    ck_assert_int_eq((int)strlen(got), 6 * TG_HEATMAP_LEVELS);
    for (int k = 0; k < TG_HEATMAP_LEVELS; k++) {
        tg_rgb c = tg_heatmap_level_colour(k);
        snprintf(want, sizeof want, "%02x%02x%02x", c.r, c.g, c.b);
        ck_assert_msg(!strncmp(got + 6 * k, want, 6), "palette level %d", k);
    }
    attribute(s, "<div id=\"data\"", "data-blocked", got, sizeof got);
    ck_assert_str_eq(got, "#808080");
    ck_assert_msg(strstr(s, "shown to 4 decimal places"), "the page does not say how many digits it shows");
    /* the characters, escaped, once: the script labels both axes of every map from them */
    ck_assert_int_eq(count(s,
                           "<code id=\"text\"><span>a</span><span>\xe2\x90\xa3</span><span>&lt;</span>"
                           "<span>b</span><span>&amp;</span></code>"),
                     1);
    /* self-contained: one inline script, nothing fetched */
    const char *banned[] = {"://",       "src=",        "url(",       "<link",          "@import",
                            "<iframe",   "<img",        "fetch(",     "XMLHttpRequest", "import(",
                            "WebSocket", "EventSource", "sendBeacon", "new Image"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        ck_assert_msg(!strstr(s, banned[i]), "the page contains '%s'", banned[i]);
    ck_assert_int_eq(count(s, "<script"), 1);
    ck_assert_int_eq(count(s, "<script>"), 1);
    ck_assert_int_eq(count(s, "href=\""), L * H); /* only the PNG links */
    /* a raw '<' or '&' from the text never reaches the markup */
    ck_assert(!strstr(s, "<b&"));
    tg_free(s);

    /* no mask: every cell is stored */
    s = page_of(text, T, 1, 1, w, NULL);
    long codes[T * T];
    page_codes(s, 0, T, NULL, codes);
    for (int i = 0; i < T * T; i++) ck_assert_int_eq(codes[i], (long)tg_attn_page_code(w[i]));
    tg_free(s);

    /* labels: visible symbols for whitespace, \xNN for other bytes (0xc3
     * alone is no UTF-8 character), quotes escaped */
    s = page_of("\n\x07\xc3\"\t'", 5, 1, 1, w, NULL);
    ck_assert_msg(strstr(s,
                         "<code id=\"text\"><span>\xe2\x86\xb5</span><span>\\x07</span><span>\\xc3</span>"
                         "<span>&quot;</span><span>\xe2\x87\xa5</span></code>"),
                  "%.300s", strstr(s, "<code"));
    tg_free(s);
    const tg_heatmap_label apostrophe = {"'", 1, false};
    s = page_labels(&apostrophe, 1, 1, 1, w, NULL);
    ck_assert(strstr(s, "<code id=\"text\"><span>&#39;</span></code>"));
    tg_free(s);
}
END_TEST

/* Labels of tokens reach the page whole (the PNGs cut a label past
 * TG_HEATMAP_LABEL_GLYPHS glyphs; the page's axes draw these), escaped, a
 * special one marked and explained; and the page's script cuts none. */
START_TEST(html_labels_are_whole_and_bos_is_marked)
{
    enum { T = 3 };
    const tg_heatmap_label lab[T] = {{"BOS", 3, true}, {" responsibility", 15, false}, {"<&>", 3, false}};
    ck_assert_int_gt(15, TG_HEATMAP_LABEL_GLYPHS);
    double w[T * T] = {1, 0, 0, 0.25, 0.75, 0, 0.2, 0.3, 0.5};
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    const tg_attn_maps a = {.n_layer = 1, .n_head = 1, .T = T, .w = w, .blocked = causal};
    size_t len = 0;
    char *p = tg_attn_page_html(&a, lab, "token", &len, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(strstr(p,
                         "<code id=\"text\"><span class=\"special\">BOS</span><span>\xe2\x90\xa3responsibility</span>"
                         "<span>&lt;&amp;&gt;</span></code>"),
                  "%.400s", strstr(p, "<code"));
    ck_assert_msg(strstr(p, "<p>Text (3 tokens): "), "the unit: %.100s", strstr(p, "<p>Text"));
    ck_assert_msg(strstr(p, "BOS, which a Llama reads before its text"), "no line says what BOS is");
    ck_assert_msg(!strstr(p, "\u2026") && !strstr(p, "\xe2\x80\xa6"), "the page cuts labels with an ellipsis");
    tg_free(p);
    /* without a special label, no such line */
    const tg_attn_maps two = {.n_layer = 1, .n_head = 1, .T = 2, .w = w, .blocked = causal};
    p = tg_attn_page_html(&two, lab + 1, "token", &len, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert(!strstr(p, "class=\"special\"") && !strstr(p, "reads before its text"));
    tg_free(p);
}
END_TEST

/* The page for a 64-character text at 4 layers x 4 heads stays small: the
 * weights are stored once, 4 bytes per open cell (it was 3.4 MB of table
 * cells with inline styles and tooltips). */
START_TEST(html_page_is_small)
{
    enum { L = 4, H = 4, T = 64 };
    static double w[L * H * T * T];
    uint8_t causal[T * T];
    char text[T + 1];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    for (int lh = 0; lh < L * H; lh++) random_rows(w + lh * T * T, causal, T, T, 2.0, 40 + (uint64_t)lh);
    for (int i = 0; i < T; i++) text[i] = "the cat sees a dog. "[i % 20];
    text[T] = 0;
    char *p = page_of(text, T, L, H, w, causal);
    const size_t cells = (size_t)L * H * T * (T + 1) / 2, len = strlen(p);
    printf("index.html for %d characters, %d x %d maps: %zu bytes (%zu of them the weights)\n", T, L, H, len,
           4 * cells);
    ck_assert_msg(len < 4 * cells + 16 * 1024, "the page is %zu bytes", len);
    ck_assert_msg(len < 200 * 1024, "the page is %zu bytes", len);
    tg_free(p);
}
END_TEST

/* ---- the loss curve --------------------------------------------------------------- */

/* The columns of tiny_gpt train's metrics.csv. */

/* The y pixel of a loss, by pictures.h's rule: linear over the data range
 * padded by 5%, ymax at the top of the plot area. */
static double loss_y(double loss, double lo, double hi)
{
    double pad = 0.05 * (hi - lo), y0 = lo - pad, y1 = hi + pad;
    return TG_LOSSPLOT_TOP + (y1 - loss) / (y1 - y0) * (TG_LOSSPLOT_BOTTOM - 1 - TG_LOSSPLOT_TOP);
}

START_TEST(loss_curve_follows_the_series)
{
    /* train falls linearly from 4 to 1 over steps 0..99; val is 3 at every
     * evaluation; step 30 was logged twice (a resume), the earlier row
     * wildly off: the later row must win */
    FILE *f = fopen(P("metrics.csv"), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", TG_RUN_METRICS_HEADER); /* step,loss,lr,ms_per_step,tokens_per_s,train_loss,val_loss,... */
    for (int s = 0; s <= 99; s++) {
        if (s == 30) fprintf(f, "30,50.0,0.001,1.0,100,,,,\n");
        if (s % 50 == 0) fprintf(f, "%d,%.6f,0.001,1.0,100,%.6f,%.6f,,\n", s, 4.0 - 3.0 * s / 99, 3.3, 3.0);
        else if (s < 99) fprintf(f, "%d,%.6f,0.001,1.0,100,,,,\n", s, 4.0 - 3.0 * s / 99);
    }
    fprintf(f, "99,%.6f,0.001,1.0,100,%.6f,%.6f,,\n", 1.0, 1.2, 3.0);
    fclose(f);
    tg_error e = {0};
    REQUIRE(tg_lossplot_write(P("metrics.csv"), P("loss.png"), NULL, &e) == 0, "%s", e.msg);
    pic p = decode_file(P("loss.png"));
    ck_assert_int_eq(p.w, TG_LOSSPLOT_W);
    ck_assert_int_eq(p.h, TG_LOSSPLOT_H);
    /* train pixels: in nearly every column of the plot area, each within
     * 2 px of the straight line from (left, y(4)) to (right, y(1)) */
    const double lo = 1.0, hi = 4.0;
    int cols = 0, train_px = 0, val_px = 0;
    for (int x = TG_LOSSPLOT_LEFT; x < TG_LOSSPLOT_RIGHT; x++) {
        bool any = false;
        double t = (double)(x - TG_LOSSPLOT_LEFT) / (TG_LOSSPLOT_RIGHT - 1 - TG_LOSSPLOT_LEFT);
        double want = loss_y(4.0 - 3.0 * t, lo, hi);
        for (int y = TG_LOSSPLOT_TOP; y < TG_LOSSPLOT_BOTTOM; y++) {
            tg_rgb c = at(&p, x, y);
            if (same(c, TG_LOSSPLOT_TRAIN)) {
                any = true;
                train_px++;
                REQUIRE(fabs(y - want) <= 2.5, "train pixel (%d,%d) is off the line (want y %.1f)", x, y, want);
            } else if (same(c, TG_LOSSPLOT_VAL)) {
                val_px++;
                REQUIRE(fabs(y - loss_y(3.0, lo, hi)) <= 3.5, "val pixel (%d,%d) is off y %.1f", x, y,
                        loss_y(3.0, lo, hi));
            }
        }
        cols += any;
    }
    /* (val's line covers the train line where they cross, near step 33) */
    REQUIRE(cols > (TG_LOSSPLOT_RIGHT - TG_LOSSPLOT_LEFT) * 9 / 10, "the train curve fills only %d columns", cols);
    REQUIRE(val_px > 2 * (TG_LOSSPLOT_RIGHT - TG_LOSSPLOT_LEFT) * 9 / 10, "the val curve has %d pixels", val_px);
    /* both colours appear in the legend too, above the plot area */
    int legend_train = 0, legend_val = 0;
    for (int y = 0; y < TG_LOSSPLOT_TOP; y++)
        for (int x = 0; x < TG_LOSSPLOT_W; x++) {
            legend_train += same(at(&p, x, y), TG_LOSSPLOT_TRAIN);
            legend_val += same(at(&p, x, y), TG_LOSSPLOT_VAL);
        }
    ck_assert(legend_train > 0 && legend_val > 0);
    /* axes: dark pixels along the left and bottom edges of the plot area */
    for (int y = TG_LOSSPLOT_TOP; y < TG_LOSSPLOT_BOTTOM; y++)
        REQUIRE(lum(at(&p, TG_LOSSPLOT_LEFT - 1, y)) < 60, "no y axis at (%d,%d)", TG_LOSSPLOT_LEFT - 1, y);
    for (int x = TG_LOSSPLOT_LEFT; x < TG_LOSSPLOT_RIGHT; x++)
        REQUIRE(lum(at(&p, x, TG_LOSSPLOT_BOTTOM)) < 60, "no x axis at (%d,%d)", x, TG_LOSSPLOT_BOTTOM);
    stbi_image_free(p.px);
    ck_assert_int_gt(train_px, 0);

    /* no data yet (only the header): still a picture, just the axes */
    f = fopen(P("empty.csv"), "w");
    fprintf(f, "%s\n", TG_RUN_METRICS_HEADER);
    fclose(f);
    REQUIRE(tg_lossplot_write(P("empty.csv"), P("empty.png"), NULL, &e) == 0, "%s", e.msg);
    p = decode_file(P("empty.png"));
    ck_assert_int_eq(p.w, TG_LOSSPLOT_W);
    for (int k = 0; k < p.w * p.h; k++) {
        tg_rgb c = {p.px[3 * k], p.px[3 * k + 1], p.px[3 * k + 2]};
        if (k / p.w >= TG_LOSSPLOT_TOP)
            REQUIRE(!same(c, TG_LOSSPLOT_TRAIN) && !same(c, TG_LOSSPLOT_VAL), "a curve pixel without data at %d", k);
    }
    stbi_image_free(p.px);
    remove(P("empty.csv"));
    remove(P("empty.png"));
    remove(P("metrics.csv"));
    remove(P("loss.png"));
}
END_TEST

/* The PNG of the curves (tg_lossplot_png) from arrays is the PNG
 * tg_lossplot_write draws from a metrics file of the same points: in any
 * order, a repeated step's later point winning, a non-finite one left
 * out; the columns are found by their names, others when the options say. */
START_TEST(loss_curve_from_arrays_is_the_files)
{
    FILE *f = fopen(P("m.csv"), "w");
    fprintf(f, "%s\n", TG_RUN_METRICS_HEADER);
    fprintf(f, "0,,,,,,4.5,,\n3,3.0,0.1,1,1,,,,\n1,4.0,0.1,1,1,,,,\n2,9.0,0.1,1,1,,,,\n2,3.5,0.1,1,1,3.3,3.4,,\n");
    fprintf(f, "4,2.5,0.1,1,1,2.2,2.9,,\n5,nan,0.1,1,1,,,,\n");
    fclose(f);
    tg_error e = {0};
    REQUIRE(tg_lossplot_write(P("m.csv"), P("m.png"), NULL, &e) == 0, "%s", e.msg);
    size_t n_file = 0, n = 0;
    char *file = slurp_n(P("m.png"), &n_file);
    const double ts[] = {3, 1, 2, 2, 4, 5, INFINITY}, tl[] = {3.0, 4.0, 9.0, 3.5, 2.5, NAN, 1};
    const double vs[] = {4, 0, 2}, vl[] = {2.9, 4.5, 3.4};
    const tg_loss_curve train = {ts, tl, 7}, val = {vs, vl, 3};
    uint8_t *png = NULL;
    REQUIRE(tg_lossplot_png(&train, &val, &png, &n, &e) == 0, "%s", e.msg);
    ck_assert_uint_eq(n, n_file);
    ck_assert_msg(memcmp(png, file, n) == 0, "the arrays' PNG is not the file's");
    tg_free(png);
    /* without the val curve: another picture, none of val's colour inside the plot */
    REQUIRE(tg_lossplot_png(&train, NULL, &png, &n, &e) == 0, "%s", e.msg);
    pic p = decode(png, n);
    int val_px = 0;
    for (int y = TG_LOSSPLOT_TOP; y < TG_LOSSPLOT_BOTTOM; y++)
        for (int x = TG_LOSSPLOT_LEFT; x < TG_LOSSPLOT_RIGHT; x++) val_px += same(at(&p, x, y), TG_LOSSPLOT_VAL);
    ck_assert_int_eq(val_px, 0);
    stbi_image_free(p.px);
    tg_free(png);
    /* other column names: train_loss and val_bpb (absent: no val curve) */
    f = fopen(P("o.csv"), "w");
    fprintf(f, "step,train_loss,val_bpb_x\n1,4.0,1\n3,3.0,2\n2,3.5,3\n4,2.5,4\n");
    fclose(f);
    const tg_lossplot_options o = {.train_column = "train_loss", .val_column = "val_bpb"};
    REQUIRE(tg_lossplot_write(P("o.csv"), P("o.png"), &o, &e) == 0, "%s", e.msg);
    const tg_loss_curve t2 = {(const double[]){1, 3, 2, 4}, (const double[]){4.0, 3.0, 3.5, 2.5}, 4};
    REQUIRE(tg_lossplot_png(&t2, NULL, &png, &n, &e) == 0, "%s", e.msg);
    free(file);
    file = slurp_n(P("o.png"), &n_file);
    ck_assert_msg(n == n_file && memcmp(png, file, n) == 0, "the columns the options name are not the ones drawn");
    tg_free(png);
    free(file);
    remove(P("m.csv"));
    remove(P("m.png"));
    remove(P("o.csv"));
    remove(P("o.png"));
}
END_TEST

START_TEST(loss_curve_errors)
{
    char before[2048], after[2048];
    tg_error e = {0};
    ck_assert_int_eq(tg_lossplot_write(P("nope.csv"), P("loss.png"), NULL, &e), -1);
    ck_assert_msg(strstr(e.msg, "nope.csv: No such file or directory"), "%s", e.msg);
    /* a destination that cannot be written: its parent is a regular file */
    FILE *f = fopen(P("m.csv"), "w");
    fprintf(f, "%s\n1,2.0,0.1,1,1,,,,\n", TG_RUN_METRICS_HEADER);
    fclose(f);
    listing(tt_dir, before, sizeof before);
    e = (tg_error){0};
    ck_assert_int_eq(tg_lossplot_write(P("m.csv"), P("m.csv/loss.png"), NULL, &e), -1);
    ck_assert_msg(strstr(e.msg, "m.csv/loss.png': cannot create a temporary file beside it: Not a directory"), "%s",
                  e.msg);
    listing(tt_dir, after, sizeof after);
    ck_assert_str_eq(after, before);
    remove(P("m.csv"));
    /* a curve with points and no arrays */
    uint8_t *png = (uint8_t *)"x";
    size_t n = 1;
    e = (tg_error){0};
    ck_assert_int_eq(tg_lossplot_png(&(tg_loss_curve){NULL, NULL, 3}, NULL, &png, &n, &e), -1);
    ck_assert_ptr_null(png);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(e.msg, "the train curve has 3 points and a NULL step"), "%s", e.msg);
}
END_TEST

/* ---- a model's attention maps ---------------------------------------------- */

/* A small model of vocabulary v with sharp attention (larger query and
 * key weights than the init's): a GPT (arch "gpt") or a Llama. */
static void sharp_model(tg_model *md, const char *arch, const tg_vocab *v, uint64_t seed)
{
    const bool llama = !strcmp(arch, "llama");
    const tg_model_config mc = llama
        ? (tg_model_config){.arch = "llama",
                            .n_layer = 1,
                            .n_head = 2,
                            .n_kv_head = 2,
                            .n_embd = 16,
                            .hidden_dim = 32,
                            .block_size = 16,
                            .vocab_size = v->size,
                            .rope_theta = 10000,
                            .norm_eps = 1e-5,
                            .tied = true}
        : (tg_model_config){
              .arch = "gpt", .n_layer = 2, .n_head = 3, .n_embd = 12, .block_size = 16, .vocab_size = v->size};
    tg_error err = {0};
    REQUIRE(tg_model_init(md, &mc, TG_F32, seed, &err) == 0, "%s", err.msg);
    tg_rng r;
    tg_rng_seed(&r, seed + 1, 1);
    if (llama) {
        tg_rng_fill_normal(&r, tg_params_get(md->params, "layers.0.attention.wq.weight"), 0, 0.8);
        tg_rng_fill_normal(&r, tg_params_get(md->params, "layers.0.attention.wk.weight"), 0, 0.8);
    } else {
        tg_gpt *m = md->impl;
        for (int l = 0; l < mc.n_layer; l++) tg_rng_fill_normal(&r, m->h[l].attn.c_attn.weight, 0, 0.7);
    }
}

/* The causal mask of T positions. */
static void causal_mask(uint8_t *m, int T)
{
    for (int k = 0; k < T * T; k++) m[k] = k % T > k / T;
}

/* Checks the files tg_attn_write (or tiny_gpt attn) left in dir for a's
 * maps of a text of one byte per position: the names, each PNG's size,
 * labels and cells (each cell the colour of its weight, the future
 * grey, each row's brightest cell its largest weight), each caption and
 * every weight as the page stores it. Returns the largest weight past
 * the first row. */
static double check_files(const char *dir, const tg_attn_maps *a, const char *text)
{
    const int T = a->T, L = a->n_layer, H = a->n_head;
    char names[2048], want[2048] = "", path[512];
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char name[64];
            strncat(want, tg_attn_png_name(l, h, name, sizeof name), sizeof want - strlen(want) - 1);
            strncat(want, ",", sizeof want - strlen(want) - 1);
        }
    strncat(want, "index.html,", sizeof want - strlen(want) - 1);
    listing(dir, names, sizeof names);
    ck_assert_str_eq(names, want);
    snprintf(path, sizeof path, "%s/index.html", dir);
    char *html = slurp(path);
    const tg_heatmap_layout lay = tg_heatmap_layout_of(T, T, 1, 1);
    const int cell = lay.cell;
    uint8_t causal[64 * 64];
    causal_mask(causal, T);
    double peak = 0;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            const double *w = a->w + ((size_t)l * H + h) * T * T;
            snprintf(path, sizeof path, "%s/attn_l%d_h%d.png", dir, l, h);
            pic p = decode_file(path);
            ck_assert_int_eq(p.w, lay.w);
            ck_assert_int_eq(p.h, lay.h);
            check_labels(&p, &lay, T, T, text, text);
            for (int i = 0; i < T; i++) {
                int best = 0;
                for (int j = 0; j <= i; j++)
                    if (w[i * T + j] > w[i * T + best]) best = j;
                for (int j = 0; j < T; j++) {
                    tg_rgb c = at(&p, lay.map_x + j * cell + cell / 2, lay.map_y + i * cell + cell / 2);
                    if (j > i) {
                        REQUIRE(same(c, TG_HEATMAP_BLOCKED), "%s: future cell (%d,%d) is not grey", path, i, j);
                        continue;
                    }
                    if (i > 0) peak = fmax(peak, w[i * T + j]);
                    REQUIRE(same(c, tg_heatmap_colour(w[i * T + j])), "%s: cell (%d,%d) does not show weight %g", path,
                            i, j, w[i * T + j]);
                    REQUIRE(lum(c) <= lum(at(&p, lay.map_x + best * cell, lay.map_y + i * cell)),
                            "%s: row %d's brightest cell is not its largest weight (key %d)", path, i, best);
                }
            }
            stbi_image_free(p.px);
            snprintf(want, sizeof want, "layer %d, head %d <a href=\"attn_l%d_h%d.png\">", l, h, l, h);
            REQUIRE(strstr(html, want), "index.html lacks '%s'", want);
            long codes[64 * 64];
            page_codes(html, l * H + h, T, causal, codes);
            for (int k = 0; k < T * T; k++)
                if (!causal[k])
                    REQUIRE(codes[k] == (long)tg_attn_page_code(w[k]),
                            "index.html: map %d cell %d is not its weight %g", l * H + h, k, w[k]);
        }
    ck_assert(!strstr(html, "://"));
    free(html);
    return peak;
}

/* Removes dir and the files in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[512];
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    closedir(d);
    rmdir(dir);
}

/* A GPT's maps are its own attention weights (tg_model_forward's,
 * computed here, against what tg_attn_maps_init collects), over
 * the ids sample reads, each position labelled by its character; the
 * files show them. */
START_TEST(attn_maps_of_a_gpt_are_its_weights)
{
    const char *corpus = "abc de.";
    tg_vocab v;
    tg_vocab_bytes(&v, corpus, strlen(corpus));
    tg_model md;
    sharp_model(&md, "gpt", &v, 4);
    const char *text = "bad cab. ed";
    enum { T = 11, L = 2, H = 3 };
    int32_t want_ids[T], *ids = NULL;
    size_t bad;
    ck_assert_int_eq(tg_vocab_encode(&v, text, T, want_ids, &bad), 0);
    tg_error e = {0};
    REQUIRE(tg_prompt_ids(&v, v.size, text, T, &ids, &e) == T, "%s", e.msg);
    ck_assert_mem_eq(ids, want_ids, sizeof want_ids);
    tg_heatmap_label *lab = tg_attn_labels(&v, ids, T, text, T, &e);
    REQUIRE(lab, "%s", e.msg);
    for (int i = 0; i < T; i++) ck_assert(lab[i].len == 1 && lab[i].s[0] == text[i] && !lab[i].special);
    tg_attn_maps a;
    REQUIRE(tg_attn_maps_init(&a, &md, ids, T, &e) == 0, "%s", e.msg);
    ck_assert(a.n_layer == L && a.n_head == H && a.T == T);
    tg_graph *g = tg_graph_new();
    tg_graph_set_grad_enabled(g, false);
    tg_tensor *aw[L];
    ck_assert_ptr_nonnull(tg_model_forward(g, &md, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids), aw));
    for (int l = 0; l < L; l++)
        for (int k = 0; k < H * T * T; k++)
            REQUIRE(a.w[l * H * T * T + k] == tg_tensor_get(aw[l], k), "layer %d weight %d: %g, the GPT's %g", l, k,
                    a.w[l * H * T * T + k], tg_tensor_get(aw[l], k));
    uint8_t causal[T * T];
    causal_mask(causal, T);
    ck_assert_mem_eq(a.blocked, causal, sizeof causal);
    /* map (1, 2) as a heatmap: its weights, the mask, the labels, the title */
    const tg_heatmap m = tg_attn_heatmap(&a, 1, 2, lab);
    ck_assert(m.w == a.w + (1 * H + 2) * T * T && m.blocked == a.blocked && m.Tq == T && m.Tk == T && m.q == lab &&
              m.k == lab);
    ck_assert_str_eq(m.title, "layer 1, head 2");
    ck_assert_ptr_null(tg_attn_heatmap(&a, 2, 0, lab).w);
    ck_assert_ptr_null(tg_attn_heatmap(&a, 0, -1, lab).w);

    ck_assert_int_eq(mkdir(P("maps"), 0777), 0);
    REQUIRE(tg_attn_write(&a, lab, "character", P("maps"), &e) == 0, "%s", e.msg);
    REQUIRE(check_files(P("maps"), &a, text) > 0.5, "nearly uniform weights: a weak test");
    char *html = slurp(P("maps/index.html"));
    ck_assert(strstr(html,
                     "<p>Text (11 characters): <code id=\"text\"><span>b</span><span>a</span><span>d</span>"
                     "<span>\xe2\x90\xa3</span><span>c</span>"));
    free(html);
    remove_dir(P("maps"));

    /* what the forward refuses: more than block_size positions, an id outside the vocabulary */
    tg_attn_maps no;
    int32_t many[17] = {0};
    e = (tg_error){0};
    ck_assert_int_eq(tg_attn_maps_init(&no, &md, many, 17, &e), -1);
    ck_assert_msg(strstr(e.msg, "17 positions, outside [1, the model's block_size 16]"), "%s", e.msg);
    ck_assert_ptr_null(no.w);
    e = (tg_error){0};
    ck_assert_int_eq(tg_attn_maps_init(&no, &md, (int32_t[]){1, 7}, 2, &e), -1);
    ck_assert_msg(strstr(e.msg, "attn_maps_init: ") && strstr(e.msg, "7"), "%s", e.msg);
    tg_graph_free(g);
    tg_free(lab);
    tg_free(ids);
    tg_attn_maps_release(&a);
    ck_assert_ptr_null(a.w);
    tg_model_release(&md);
}
END_TEST

/* A Llama's maps are over what the model reads in sample and eval --text:
 * BOS, the dummy " ", then the text's bytes (llama2.c's ids 3 + byte),
 * BOS labelled and marked as no text on the page, every weight the one
 * this test computes on those ids. */
START_TEST(attn_of_a_llama_starts_at_its_bos)
{
    tg_vocab v;
    tg_vocab_llama2c(&v);
    tg_model md;
    sharp_model(&md, "llama", &v, 7);
    const char *text = "bad cab";
    enum { N = 7, T = N + 2, H = 2 };
    int32_t want_ids[T] = {TG_VOCAB_BOS, 3 + ' '}, *ids = NULL;
    for (int i = 0; i < N; i++) want_ids[2 + i] = 3 + (uint8_t)text[i];
    tg_error e = {0};
    REQUIRE(tg_prompt_ids(&v, v.size, text, N, &ids, &e) == T, "%s", e.msg);
    ck_assert_mem_eq(ids, want_ids, sizeof want_ids);
    tg_heatmap_label *lab = tg_attn_labels(&v, ids, T, text, N, &e);
    REQUIRE(lab, "%s", e.msg);
    ck_assert(lab[0].special && lab[0].len == 3 && !memcmp(lab[0].s, "BOS", 3));
    ck_assert(!lab[1].special && lab[1].len == 1 && lab[1].s[0] == ' ');
    for (int i = 0; i < N; i++) ck_assert(!lab[2 + i].special && lab[2 + i].len == 1 && lab[2 + i].s[0] == text[i]);
    tg_attn_maps a;
    REQUIRE(tg_attn_maps_init(&a, &md, ids, T, &e) == 0, "%s", e.msg);
    tg_graph *g = tg_graph_new();
    tg_graph_set_grad_enabled(g, false);
    tg_tensor *aw[1];
    ck_assert_ptr_nonnull(tg_model_forward(g, &md, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, want_ids), aw));
    double peak = 0; /* the largest weight in rows of 4 keys or more: sharp maps, so a misplaced row shows */
    for (int k = 0; k < H * T * T; k++) {
        REQUIRE(a.w[k] == tg_tensor_get(aw[0], k), "weight %d is not the one over BOS, the space and the text", k);
        if (k % (T * T) >= 3 * T) peak = fmax(peak, a.w[k]);
    }
    REQUIRE(peak > 0.5, "nearly uniform weights (peak %g): a weak test", peak);

    ck_assert_int_eq(mkdir(P("lmaps"), 0777), 0);
    REQUIRE(tg_attn_write(&a, lab, "token", P("lmaps"), &e) == 0, "%s", e.msg);
    char *html = slurp(P("lmaps/index.html"));
    REQUIRE(strstr(html,
                   "<p>Text (9 tokens): <code id=\"text\"><span class=\"special\">BOS</span>"
                   "<span>\xe2\x90\xa3</span><span>b</span><span>a</span><span>d</span><span>\xe2\x90\xa3</span>"
                   "<span>c</span>"),
            "the page's text is not BOS, the space and the text: %.300s", strstr(html, "<p>Text"));
    REQUIRE(strstr(html, "BOS, which a Llama reads before its text"), "the page does not say what BOS is");
    free(html);
    /* the PNG: BOS's key label, the three glyphs B, O, S down column 0, is the map of BOS + text */
    pic p = decode_file(P("lmaps/attn_l0_h0.png"));
    tg_heatmap_label hand[T] = {{"BOS", 3, true}, {" ", 1, false}};
    for (int i = 0; i < N; i++) hand[2 + i] = (tg_heatmap_label){text + i, 1, false};
    uint8_t *png = NULL, causal[T * T];
    causal_mask(causal, T);
    size_t len = 0;
    const tg_heatmap m = {
        .w = a.w, .blocked = causal, .Tq = T, .Tk = T, .q = hand, .k = hand, .title = "layer 0, head 0"};
    ck_assert_int_eq(tg_heatmap_png(&m, &png, &len, NULL), 0);
    pic want = decode(png, len);
    ck_assert_int_eq(p.w, want.w);
    ck_assert_int_eq(p.h, want.h);
    ck_assert_msg(memcmp(p.px, want.px, (size_t)p.w * p.h * 3) == 0, "attn_l0_h0.png is not the map of BOS + text");
    const tg_heatmap_layout lay = tg_heatmap_layout_of(T, T, 3, 3); /* BOS: 3 glyphs on both axes */
    ck_assert_int_eq(p.w, lay.w);
    ck_assert_int_eq(p.h, lay.h);
    stbi_image_free(p.px);
    stbi_image_free(want.px);
    tg_free(png);
    remove_dir(P("lmaps"));
    tg_graph_free(g);
    tg_free(lab);
    tg_free(ids);
    tg_attn_maps_release(&a);
    tg_model_release(&md);
}
END_TEST

/* Each vocabulary's labels: a tokenizer's pieces (a Llama's BOS first), a
 * model of token ids' numbers as written, llama2.c's bytes (an id that is
 * no byte: byte 0); and what is refused. */
START_TEST(attn_labels_of_every_vocabulary)
{
    tg_error e = {0};
    /* a BPE tokenizer for a Llama: BOS, then the pieces of " ab ab" */
    tg_tokenizer *tok = tg_bpe_train("ab ab ab ab", 11, &(tg_bpe_options){.vocab_size = 262}, NULL);
    ck_assert_ptr_nonnull(tok);
    tg_vocab v;
    ck_assert_int_eq(tg_vocab_tokenizer(&v, tok, true, 0, NULL), 0);
    int32_t *ids = NULL;
    const int64_t n = tg_prompt_ids(&v, v.size, "ab ab", 5, &ids, &e);
    REQUIRE(n >= 2, "%s", e.msg);
    tg_heatmap_label *lab = tg_attn_labels(&v, ids, n, "ab ab", 5, &e);
    REQUIRE(lab, "%s", e.msg);
    ck_assert(lab[0].special && lab[0].len == 3 && !memcmp(lab[0].s, "BOS", 3));
    char joined[64] = "";
    for (int64_t i = 1; i < n; i++) {
        size_t l = 0;
        const unsigned char *piece = tg_tok_piece(v.tok, ids[i], &l);
        ck_assert(!lab[i].special && lab[i].len == (int)l && !memcmp(lab[i].s, piece, l));
        strncat(joined, lab[i].s, (size_t)lab[i].len);
    }
    ck_assert_str_eq(joined, " ab ab"); /* the pieces spell what the Llama reads */
    tg_free(lab);
    /* BOS is special only first; an id past the vocabulary is refused */
    const int32_t later[3] = {ids[1], tg_tok_bos(v.tok), ids[1]};
    lab = tg_attn_labels(&v, later, 3, NULL, 0, &e);
    ck_assert(lab && !lab[1].special);
    tg_free(lab);
    e = (tg_error){0};
    ck_assert_ptr_null(tg_attn_labels(&v, (int32_t[]){v.size}, 1, NULL, 0, &e));
    ck_assert_msg(strstr(e.msg, "is outside the vocabulary"), "%s", e.msg);
    tg_free(ids);
    tg_vocab_release(&v);

    /* token ids: the numbers as the text writes them */
    tg_vocab_ids(&v, 40);
    const char *text = " 3  017\t5\n";
    lab = tg_attn_labels(&v, (int32_t[]){3, 17, 5}, 3, text, strlen(text), &e);
    REQUIRE(lab, "%s", e.msg);
    ck_assert(lab[0].len == 1 && !memcmp(lab[0].s, "3", 1) && lab[1].len == 3 && !memcmp(lab[1].s, "017", 3) &&
              lab[2].len == 1 && !memcmp(lab[2].s, "5", 1));
    tg_free(lab);
    e = (tg_error){0};
    ck_assert_ptr_null(tg_attn_labels(&v, (int32_t[]){3, 17, 5, 1}, 4, text, strlen(text), &e));
    ck_assert_msg(strstr(e.msg, "the text writes 3 ids, fewer than the 4 given"), "%s", e.msg);
    e = (tg_error){0};
    ck_assert_ptr_null(tg_attn_labels(&v, (int32_t[]){3}, 1, NULL, 0, &e));
    ck_assert_msg(strstr(e.msg, "labels them from the text"), "%s", e.msg);

    /* llama2.c's bytes: BOS first, the bytes 3 + b, an EOS (no byte) as byte 0 */
    tg_vocab_llama2c(&v);
    lab = tg_attn_labels(&v, (int32_t[]){1, 3 + 'x', 2, 3 + 255}, 4, NULL, 0, &e);
    REQUIRE(lab, "%s", e.msg);
    ck_assert(lab[0].special && lab[1].s[0] == 'x' && lab[2].len == 1 && lab[2].s[0] == 0 &&
              (uint8_t)lab[3].s[0] == 255);
    tg_free(lab);
    e = (tg_error){0};
    ck_assert_ptr_null(tg_attn_labels(&v, (int32_t[]){1}, 0, NULL, 0, &e));
    ck_assert_msg(strstr(e.msg, "0 ids: at least 1"), "%s", e.msg);
}
END_TEST

/* tg_attn_write writes every file or none: into a directory that is
 * missing, nothing (and the message names the file); again into one
 * that holds the maps, the files replaced; a rename that fails (an
 * index.html that is a directory) leaves no temporary. */
START_TEST(attn_write_is_all_or_nothing)
{
    enum { T = 3 };
    double w[2 * T * T] = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5, 1, 0, 0, 0.9, 0.1, 0, 0.1, 0.1, 0.8};
    uint8_t causal[T * T];
    causal_mask(causal, T);
    const tg_attn_maps a = {.n_layer = 1, .n_head = 2, .T = T, .w = w, .blocked = causal};
    const tg_heatmap_label lab[T] = {{"a", 1, false}, {"b", 1, false}, {"c", 1, false}};
    char names[2048];
    tg_error e = {0};
    ck_assert_int_eq(tg_attn_write(&a, lab, "character", P("none/maps"), &e), -1);
    ck_assert_msg(strstr(e.msg, "none/maps/attn_l0_h0.png': cannot create a temporary file beside it: No such file"),
                  "%s", e.msg);
    ck_assert_int_eq(access(P("none"), F_OK), -1);
    ck_assert_int_eq(mkdir(P("w"), 0777), 0);
    REQUIRE(tg_attn_write(&a, lab, "character", P("w"), &e) == 0, "%s", e.msg);
    listing(P("w"), names, sizeof names);
    ck_assert_str_eq(names, "attn_l0_h0.png,attn_l0_h1.png,index.html,");
    check_files(P("w"), &a, "abc");
    /* again, other weights: every file replaced */
    double w2[2 * T * T];
    for (int k = 0; k < 2 * T * T; k++) w2[k] = w[(k + T * T) % (2 * T * T)];
    const tg_attn_maps b = {.n_layer = 1, .n_head = 2, .T = T, .w = w2, .blocked = causal};
    REQUIRE(tg_attn_write(&b, lab, "character", P("w"), &e) == 0, "%s", e.msg);
    listing(P("w"), names, sizeof names);
    ck_assert_str_eq(names, "attn_l0_h0.png,attn_l0_h1.png,index.html,");
    check_files(P("w"), &b, "abc");
    /* index.html a directory with a file in it: the rename fails, no temporary stays */
    remove_dir(P("w"));
    ck_assert_int_eq(mkdir(P("w"), 0777), 0);
    ck_assert_int_eq(mkdir(P("w/index.html"), 0777), 0);
    FILE *f = fopen(P("w/index.html/x"), "w");
    fclose(f);
    e = (tg_error){0};
    ck_assert_int_eq(tg_attn_write(&a, lab, "character", P("w"), &e), -1);
    ck_assert_msg(strstr(e.msg, "w/index.html': rename of the temporary file failed"), "%s", e.msg);
    listing(P("w"), names, sizeof names);
    ck_assert_str_eq(names, "attn_l0_h0.png,attn_l0_h1.png,index.html,");
    remove(P("w/index.html/x"));
    rmdir(P("w/index.html"));
    remove_dir(P("w"));
}
END_TEST

/* ---- tiny_gpt attn, end to end ------------------------------------------------------ */

/* Runs TINY_GPT_BIN with args; returns its exit status; stderr into P("stderr.txt"). */
static int run_tiny_gpt(const char *const *args)
{
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)TINY_GPT_BIN;
    for (; args[n - 1] && n < 15; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen(P("stderr.txt"), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "tiny_gpt did not exit normally");
    return WEXITSTATUS(st);
}

/* tiny_gpt attn on the checkpoint ckpt and text, into P("cli"); the
 * library on the same checkpoint and text, into P("lib"): the same
 * files, byte for byte. */
static void same_as_the_library(const char *ckpt, const char *text, const char *unit)
{
    /* (ckpt is not one of tt_path's buffers: this calls it more than they are) */
    const char *args[] = {"attn", "--ckpt", ckpt, "--text", text, "--out", P("cli"), NULL};
    int rc = run_tiny_gpt(args);
    char *msg = slurp(P("stderr.txt"));
    REQUIRE(rc == 0, "tiny_gpt attn exited %d: %s", rc, msg);
    free(msg);
    tg_error err = {0};
    tg_st_file *f = tg_st_load(ckpt, &err);
    REQUIRE(f, "%s", err.msg);
    tg_model m;
    tg_vocab v;
    REQUIRE(tg_checkpoint_load_model(f, TG_F32, 0.0, &m, &err) == 0, "%s", err.msg);
    REQUIRE(tg_checkpoint_load_vocab(f, &m, &v, &err) == 0, "%s", err.msg);
    tg_error e = {0};
    int32_t *ids = NULL;
    const int64_t n = tg_prompt_ids(&v, m.config.vocab_size, text, strlen(text), &ids, &e);
    REQUIRE(n > 0, "%s", e.msg);
    tg_heatmap_label *lab = tg_attn_labels(&v, ids, n, text, strlen(text), &e);
    tg_attn_maps a;
    REQUIRE(lab && tg_attn_maps_init(&a, &m, ids, (int)n, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(mkdir(P("lib"), 0777), 0);
    REQUIRE(tg_attn_write(&a, lab, unit, P("lib"), &e) == 0, "%s", e.msg);
    char cli[2048], lib[2048];
    listing(P("cli"), cli, sizeof cli);
    listing(P("lib"), lib, sizeof lib);
    ck_assert_str_eq(cli, lib);
    for (char *name = lib, *end; (end = strchr(name, ',')); name = end + 1) {
        *end = 0;
        char pc[4096], pl[4096];
        snprintf(pc, sizeof pc, "%.2000s/%.2000s", P("cli"), name);
        snprintf(pl, sizeof pl, "%.2000s/%.2000s", P("lib"), name);
        size_t nc, nl;
        char *bc = slurp_n(pc, &nc), *bl = slurp_n(pl, &nl);
        REQUIRE(nc == nl && !memcmp(bc, bl, nc), "%s: tiny_gpt attn's %s (%zu bytes) is not the library's (%zu)", ckpt,
                name, nc, nl);
        free(bc);
        free(bl);
    }
    remove_dir(P("cli"));
    remove_dir(P("lib"));
    tg_attn_maps_release(&a);
    tg_free(lab);
    tg_free(ids);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
}

/* A checkpoint of model md with vocabulary v at P(name); its path, in path. */
static const char *saved(const char *name, const tg_model *md, const tg_vocab *v, char path[512])
{
    tg_error err = {0};
    snprintf(path, 512, "%s", P(name));
    REQUIRE(tg_checkpoint_save(path, &(tg_checkpoint){.model = md, .vocab = v}, &err) == 0, "%s", err.msg);
    return path;
}

/* tiny_gpt attn is the library's: on a GPT of bytes, a Llama of
 * llama2.c's bytes, a Llama with a tokenizer and a model of token ids it
 * writes the library's files; and its checks keep their messages and
 * write nothing. */
START_TEST(tiny_gpt_attn_writes_what_the_library_writes)
{
    tg_vocab v;
    tg_model md;
    char gpt[512], llama[512], path[512];
    tg_vocab_bytes(&v, "abc de.", 7);
    sharp_model(&md, "gpt", &v, 4);
    saved("gpt.safetensors", &md, &v, gpt);
    same_as_the_library(gpt, "bad cab. ed", "character");
    tg_model_release(&md);

    tg_vocab_llama2c(&v);
    sharp_model(&md, "llama", &v, 7);
    saved("llama.safetensors", &md, &v, llama);
    same_as_the_library(llama, "bad cab", "token");
    tg_model_release(&md);

    tg_tokenizer *tok = tg_bpe_train("ab ab ab ab", 11, &(tg_bpe_options){.vocab_size = 262}, NULL);
    ck_assert_int_eq(tg_vocab_tokenizer(&v, tok, true, 0, NULL), 0);
    sharp_model(&md, "llama", &v, 9);
    same_as_the_library(saved("bpe.safetensors", &md, &v, path), "ab ab abba", "token");
    tg_model_release(&md);
    tg_vocab_release(&v);

    tg_vocab_ids(&v, 40);
    sharp_model(&md, "gpt", &v, 5);
    same_as_the_library(saved("ids.safetensors", &md, &v, path), "3 17 039", "token");
    tg_model_release(&md);

    /* a failure writes nothing: a character outside the vocabulary, past the block size */
    const char *bad_char[] = {"attn", "--ckpt", gpt, "--text", "cab?", "--out", P("maps2"), NULL};
    ck_assert_int_eq(run_tiny_gpt(bad_char), 1);
    char *msg = slurp(P("stderr.txt"));
    REQUIRE(strstr(msg, "the text's character '?' (byte 63, offset 3) is not in the vocabulary"), "%s", msg);
    free(msg);
    ck_assert_int_eq(access(P("maps2"), F_OK), -1);
    const char *longer[] = {"attn", "--ckpt", llama, "--text", "abcdefghijklmno", "--out", P("maps2"), NULL};
    ck_assert_int_eq(run_tiny_gpt(longer), 1);
    msg = slurp(P("stderr.txt"));
    REQUIRE(strstr(msg,
                   "--text has 15 characters, 17 positions with the BOS and the space in front, more than the "
                   "checkpoint's block_size 16"),
            "%s", msg);
    free(msg);
    ck_assert_int_eq(access(P("maps2"), F_OK), -1);
    remove(P("gpt.safetensors"));
    remove(P("llama.safetensors"));
    remove(P("bpe.safetensors"));
    remove(P("ids.safetensors"));
    remove(P("stderr.txt"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pictures");
    tt_tcase(s, "core", 0,
             TT_TESTS(colour_map_gets_brighter_and_never_shows_blocked, font_q_is_p_mirrored_and_no_9,
                      heatmap_pixels_follow_the_weights, heatmap_of_a_gpt, html_stores_every_weight_and_character,
                      html_labels_are_whole_and_bos_is_marked, html_page_is_small, loss_curve_follows_the_series,
                      loss_curve_from_arrays_is_the_files, loss_curve_errors, attn_maps_of_a_gpt_are_its_weights,
                      attn_of_a_llama_starts_at_its_bos, attn_labels_of_every_vocabulary, attn_write_is_all_or_nothing,
                      tiny_gpt_attn_writes_what_the_library_writes));
    return s;
}

int main(void) { return tt_run_in_tmpdir(suite(), "tg_pictures_test", false); /* a failure's files stay for a look */ }
