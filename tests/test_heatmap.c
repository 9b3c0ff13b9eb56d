/* tiny_gpt's pictures (examples/tiny_gpt: image.c, files.c, heatmap.c,
 * lossplot.c, compiled into this test): PNGs are decoded with stb_image and
 * their pixels checked against the numbers they draw. The colour map gets
 * brighter with the weight and never shows the blocked colour; a heatmap's
 * cells are solid squares of the right size, blocked cells are the
 * background, and in every row the largest weight is the brightest cell
 * (for made-up weights and for a GPT's own attention weights), and the
 * labels, title and colour scale are where the layout says; the HTML
 * index stores every weight (decoded back here), every character, loads
 * nothing and stays small (tests/browser_layout.sh renders it); the
 * loss curve follows a known series; output files are all or nothing.
 * End to end, `tiny_gpt attn` (the built program, TINY_GPT_BIN) on a
 * checkpoint written here draws, in every file, the weights this test
 * computes itself with tg_gpt_forward_ex. */
#include "tg_test.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "files.h"
#include "heatmap.h"
#include "lossplot.h"

#define STB_IMAGE_IMPLEMENTATION
#include "stb_image.h"

/* ---- helpers ------------------------------------------------------------- */

#define P tt_path   /* a file in the scratch directory */

/* ck_assert_msg records every passing check's location (costly per
 * pixel); REQUIRE only acts when the condition fails. */
#define REQUIRE(cond, ...)                     \
    do {                                       \
        if (!(cond)) ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* Brightness as relative luminance (Rec. 709 weights). */
static double lum(rgb c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; }
static bool same(rgb a, rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

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

static rgb at(const pic *p, int x, int y)
{
    const unsigned char *q = p->px + ((size_t)y * p->w + x) * 3;
    return (rgb){q[0], q[1], q[2]};
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

static char *slurp(const char *path)
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
    return s;
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
    for (int k = 0; k < HEATMAP_LEVELS; k++) {
        rgb c = heatmap_level_colour(k);
        ck_assert_msg(!same(c, HEATMAP_BLOCKED), "level %d has the blocked colour", k);
        if (k == 0) continue;
        rgb p = heatmap_level_colour(k - 1);
        ck_assert_msg(c.r >= p.r && c.g >= p.g && c.b >= p.b, "level %d: a channel falls", k);
        ck_assert_msg(lum(c) > lum(p), "level %d is not brighter than %d (%g vs %g)", k, k - 1, lum(c), lum(p));
        ck_assert_msg(c.r + c.g + c.b > p.r + p.g + p.b, "level %d: R+G+B does not rise", k);
    }
    /* the two ends: a dark colour for 0, a light one for 1 */
    ck_assert(lum(heatmap_colour(0)) < 30);
    ck_assert(lum(heatmap_colour(1)) > 200);
    /* quantisation: round(255 w), clamped; NaN counts as 0 */
    ck_assert_int_eq(heatmap_level(0), 0);
    ck_assert_int_eq(heatmap_level(1), 255);
    ck_assert_int_eq(heatmap_level(0.5), 128);
    ck_assert_int_eq(heatmap_level(0.5 / 255), 1);
    ck_assert_int_eq(heatmap_level(0.49 / 255), 0);
    ck_assert_int_eq(heatmap_level(-0.2), 0);
    ck_assert_int_eq(heatmap_level(1.7), 255);
    ck_assert_int_eq(heatmap_level(NAN), 0);
    /* cell sizes: 512 / T within [8, 32] */
    ck_assert_int_eq(heatmap_cell_px(1, 1), 32);
    ck_assert_int_eq(heatmap_cell_px(12, 12), 32);
    ck_assert_int_eq(heatmap_cell_px(20, 20), 25);
    ck_assert_int_eq(heatmap_cell_px(64, 64), 8);
    ck_assert_int_eq(heatmap_cell_px(3, 100), 8);
    ck_assert_int_eq(heatmap_cell_px(2000, 2000), 8);
}
END_TEST

/* ---- the font ------------------------------------------------------------------- */

/* Glyph c as image_text draws it at scale 1: g[row][col], true for ink. */
static void glyph_bits(char c, bool g[IMAGE_GLYPH_H][IMAGE_GLYPH_W])
{
    image im;
    ck_assert_int_eq(image_new(&im, IMAGE_GLYPH_W, IMAGE_GLYPH_H, HEATMAP_PAPER), 0);
    image_text(&im, 0, 0, 1, (char[]){c, 0}, HEATMAP_INK);
    for (int y = 0; y < IMAGE_GLYPH_H; y++)
        for (int x = 0; x < IMAGE_GLYPH_W; x++) g[y][x] = same(image_get(&im, x, y), HEATMAP_INK);
    image_free(&im);
}

/* "queries" in the maps' axis line read as "9ueries": q had a round top
 * beside its stem, a small 9. Now q is p mirrored, as in most faces: the
 * top of its bowl is one bar that meets the stem in a square corner,
 * where 9's top is an arch that leaves both corners empty. */
START_TEST(font_q_is_p_mirrored_and_no_9)
{
    bool q[IMAGE_GLYPH_H][IMAGE_GLYPH_W], p[IMAGE_GLYPH_H][IMAGE_GLYPH_W], nine[IMAGE_GLYPH_H][IMAGE_GLYPH_W];
    glyph_bits('q', q);
    glyph_bits('p', p);
    glyph_bits('9', nine);
    char shape[128] = "";   /* q as drawn, for a message */
    for (int y = 0; y < IMAGE_GLYPH_H; y++) {
        for (int x = 0; x < IMAGE_GLYPH_W; x++) strncat(shape, q[y][x] ? "#" : ".", sizeof shape - strlen(shape) - 1);
        strncat(shape, y + 1 < IMAGE_GLYPH_H ? "|" : "", sizeof shape - strlen(shape) - 1);
    }
    for (int y = 0; y < IMAGE_GLYPH_H; y++)
        for (int x = 0; x < IMAGE_GLYPH_W; x++)
            ck_assert_msg(q[y][x] == p[y][IMAGE_GLYPH_W - 1 - x], "q (%s) is not p mirrored at (%d,%d)", shape, x, y);
    int top = 0, top9 = 0;   /* the first row with ink, of q and of 9 */
    while (top < IMAGE_GLYPH_H && !q[top][0] && !q[top][1] && !q[top][2] && !q[top][3] && !q[top][4]) top++;
    while (top9 < IMAGE_GLYPH_H && !nine[top9][1] && !nine[top9][2] && !nine[top9][3]) top9++;
    ck_assert_int_lt(top, IMAGE_GLYPH_H);
    for (int x = 1; x < IMAGE_GLYPH_W; x++)
        ck_assert_msg(q[top][x], "q (%s): its top is no bar reaching the stem (column %d of row %d)", shape, x, top);
    ck_assert_msg(!nine[top9][0] && !nine[top9][IMAGE_GLYPH_W - 1], "9's top is no arch: the test's premise");
    ck_assert_int_ge(top, 2);   /* and q stays a lowercase letter, below the digits' height */
}
END_TEST

/* ---- heatmaps ------------------------------------------------------------------ */

/* Whether two bytes get the same label glyph: printable ASCII and space,
 * newline and tab each have their own; every other byte shares one mark. */
static bool same_label(uint8_t a, uint8_t b)
{
    const bool oa = !(a >= 32 && a < 127) && a != '\n' && a != '\t', ob = !(b >= 32 && b < 127) && b != '\n' && b != '\t';
    return a == b || (oa && ob);
}

/* Ink in [x0,x1) x [y0,y1): each pixel paper or ink; returns the ink count. */
static int ink_in(const pic *p, int x0, int y0, int x1, int y1)
{
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            rgb c = at(p, x, y);
            REQUIRE(same(c, HEATMAP_PAPER) || same(c, HEATMAP_INK), "pixel (%d,%d) in a label area is %d,%d,%d", x,
                    y, c.r, c.g, c.b);
            n += same(c, HEATMAP_INK);
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
static void check_labels(const pic *p, const heatmap_layout *l, int Tq, int Tk, const char *qtext, const char *ktext)
{
    const int cell = l->cell, gh = IMAGE_GLYPH_H * l->scale;
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
    REQUIRE(ink_in(p, HEATMAP_PAD, l->title_y, l->w, l->title_y + 14) > 100, "no title");
    for (int k = 0; k < HEATMAP_LEVELS; k++)
        for (int y = l->bar_y; y < l->bar_y + HEATMAP_BAR_H; y++)
            REQUIRE(same(at(p, l->bar_x + k, y), heatmap_level_colour(k)), "the colour scale's column %d is not level %d",
                    k, k);
    REQUIRE(ink_in(p, l->bar_x, l->tick_y, l->bar_x + HEATMAP_LEVELS, l->tick_y + IMAGE_GLYPH_H) > 0, "no ticks");
    REQUIRE(same(at(p, l->swatch_x + HEATMAP_BAR_H / 2, l->swatch_y + HEATMAP_BAR_H / 2), HEATMAP_BLOCKED),
            "no blocked swatch");
}

/* Decodes heatmap_png's picture of w, rows labelled by qtext and columns
 * by ktext, and checks: the size and layout (label bands outside the map,
 * the scale under it, all inside the picture); a frame of paper one pixel
 * around the map, so the cells start and end where the layout says; every
 * cell a solid square; blocked cells grey and no other cell; each cell's
 * colour the map's colour of its weight; over all cell pairs, a weight
 * larger by more than one level is strictly brighter and a larger weight
 * never darker; each row's largest weight is its brightest cell; the
 * labels (check_labels). Returns the number of unblocked cells. */
static int check_heatmap(const double *w, const uint8_t *blocked, int Tq, int Tk, const char *qtext,
                         const char *ktext)
{
    uint8_t *png = NULL;
    size_t len = 0;
    ck_assert_int_eq(heatmap_png(w, blocked, Tq, Tk, qtext, ktext, "layer 7, head 3", &png, &len), 0);
    pic p = decode(png, len);
    free(png);
    const heatmap_layout l = heatmap_layout_of(Tq, Tk);
    const int cell = l.cell, gw = IMAGE_GLYPH_W * l.scale, gh = IMAGE_GLYPH_H * l.scale;
    ck_assert_int_eq(cell, heatmap_cell_px(Tq, Tk));
    ck_assert_int_eq(l.scale, cell >= 16 ? 2 : 1);
    ck_assert_int_eq(p.w, l.w);
    ck_assert_int_eq(p.h, l.h);
    const int right = l.map_x + Tk * cell, bottom = l.map_y + Tq * cell;
    ck_assert(gw <= cell && gh <= cell);   /* a label fits its row or column */
    ck_assert(l.title_y + 14 < l.key_y && l.key_y + gh < l.map_y && l.query_x + gw < l.map_x);
    ck_assert(bottom < l.bar_y && l.bar_y + HEATMAP_BAR_H < l.tick_y && l.tick_y + IMAGE_GLYPH_H < l.swatch_y);
    ck_assert(right < l.w && l.bar_x + HEATMAP_LEVELS < l.w && l.swatch_y + HEATMAP_BAR_H < l.h);
    for (int x = l.map_x - 1; x <= right; x++)
        REQUIRE(same(at(&p, x, l.map_y - 1), HEATMAP_PAPER) && same(at(&p, x, bottom), HEATMAP_PAPER),
                "no paper above or below the map at x %d", x);
    for (int y = l.map_y - 1; y <= bottom; y++)
        REQUIRE(same(at(&p, l.map_x - 1, y), HEATMAP_PAPER) && same(at(&p, right, y), HEATMAP_PAPER),
                "no paper left or right of the map at y %d", y);
    rgb *cells = malloc(sizeof(rgb) * Tq * Tk);
    int open = 0;
    for (int i = 0; i < Tq; i++)
        for (int j = 0; j < Tk; j++) {
            const int x0 = l.map_x + j * cell, y0 = l.map_y + i * cell;
            rgb c = at(&p, x0, y0);
            for (int y = y0; y < y0 + cell; y++)
                for (int x = x0; x < x0 + cell; x++)
                    REQUIRE(same(at(&p, x, y), c), "cell (%d,%d) is not solid at pixel (%d,%d)", i, j, x, y);
            cells[i * Tk + j] = c;
            const bool b = blocked && blocked[i * Tk + j];
            REQUIRE(same(c, HEATMAP_BLOCKED) == b, "cell (%d,%d) blocked %d but colour %d,%d,%d", i, j, b, c.r,
                          c.g, c.b);
            if (b) continue;
            open++;
            REQUIRE(same(c, heatmap_colour(w[i * Tk + j])), "cell (%d,%d) weight %g has the wrong colour", i,
                          j, w[i * Tk + j]);
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
    const char *text = "ab cab\x01";   /* a space, and a byte outside printable ASCII */
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
    const char *keys = "k\tk\n \xc3\xa9~k";   /* 9 bytes: tab, newline, space, two of a UTF-8 character */
    random_rows(w2, m2, Q, K, 1.0, 2);
    check_heatmap(w2, m2, Q, K, "q.Q", keys);
    random_rows(w2, NULL, Q, K, 3.0, 3);
    ck_assert_int_eq(check_heatmap(w2, NULL, Q, K, "Q.q", keys), Q * K);
    /* one row that attends to a single key: one bright cell */
    double one[4] = {0, 0, 1, 0};
    check_heatmap(one, NULL, 1, 4, "x", "wxyz");
}
END_TEST

/* A GPT's own attention weights (tg_gpt_forward_ex) drawn as heatmaps. */
START_TEST(heatmap_of_a_gpt)
{
    tg_gpt_config cfg = {.n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 12, .vocab_size = 11};
    char err[256];
    tg_gpt *m = tg_gpt_new(&cfg, TG_F64, 3, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    /* sharpen the attention: larger query/key weights than nanoGPT's init */
    tg_rng r;
    tg_rng_seed(&r, 9, 1);
    for (int l = 0; l < 2; l++) tg_rng_fill_normal(&r, m->h[l].attn.c_attn.weight, 0, 0.6);
    tg_graph *g = tg_graph_new();
    enum { T = 12 };
    const int32_t iv[T] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
    tg_tensor *aw[2];
    ck_assert_ptr_nonnull(tg_gpt_forward_ex(g, m, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, iv), aw));
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
    tg_gpt_free(m);
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
    const char *p = strchr(HEATMAP_B64, c);
    REQUIRE(c && p, "'%c' is not a digit of the page's encoding", c);
    return (int)(p - HEATMAP_B64);
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

START_TEST(html_stores_every_weight_and_character)
{
    /* the code of one weight: level << 14 | round(10^4 w) */
    ck_assert_uint_eq(heatmap_cell_code(0), 0);
    ck_assert_uint_eq(heatmap_cell_code(1), 255u << 14 | 10000);
    ck_assert_uint_eq(heatmap_cell_code(0.5), 128u << 14 | 5000);
    ck_assert_uint_eq(heatmap_cell_code(0.123456), (uint32_t)heatmap_level(0.123456) << 14 | 1235);
    ck_assert_uint_eq(heatmap_cell_code(0.00004), 0);   /* level 0, 0.0000 */
    ck_assert_uint_eq(heatmap_cell_code(NAN), 0);
    ck_assert_uint_eq(heatmap_cell_code(-0.2), 0);
    ck_assert_uint_eq(heatmap_cell_code(1.7), 255u << 14 | 10000);

    enum { L = 2, H = 3, T = 5 };
    const char *text = "a <b&";
    double w[L * H * T * T];
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    for (int lh = 0; lh < L * H; lh++) random_rows(w + lh * T * T, causal, T, T, 1.5, 10 + (uint64_t)lh);
    textbuf b = {0};
    heatmap_html(&b, text, T, L, H, w, causal);
    ck_assert(!b.oom);
    const char *s = b.p;
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
                REQUIRE(codes[i] >> 14 == heatmap_level(wm[i]), "map %d cell %d: level %ld, want %d", l * H + h, i,
                        codes[i] >> 14, heatmap_level(wm[i]));
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
    ck_assert_str_eq(got, HEATMAP_B64);
    ck_assert_int_eq((int)strlen(HEATMAP_B64), 64);
    attribute(s, "<div id=\"data\"", "data-palette", got, sizeof got);
    ck_assert_int_eq((int)strlen(got), 6 * HEATMAP_LEVELS);
    for (int k = 0; k < HEATMAP_LEVELS; k++) {
        rgb c = heatmap_level_colour(k);
        snprintf(want, sizeof want, "%02x%02x%02x", c.r, c.g, c.b);
        ck_assert_msg(!strncmp(got + 6 * k, want, 6), "palette level %d", k);
    }
    attribute(s, "<div id=\"data\"", "data-blocked", got, sizeof got);
    ck_assert_str_eq(got, "#808080");
    ck_assert_msg(strstr(s, "shown to 4 decimal places"), "the page does not say how many digits it shows");
    /* the characters, escaped, once: the script labels both axes of every map from them */
    ck_assert_int_eq(count(s, "<code id=\"text\"><span>a</span><span>\xe2\x90\xa3</span><span>&lt;</span>"
                              "<span>b</span><span>&amp;</span></code>"), 1);
    /* self-contained: one inline script, nothing fetched */
    const char *banned[] = {"://", "src=", "url(", "<link", "@import", "<iframe", "<img", "fetch(", "XMLHttpRequest",
                            "import(", "WebSocket", "EventSource", "sendBeacon", "new Image"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        ck_assert_msg(!strstr(s, banned[i]), "the page contains '%s'", banned[i]);
    ck_assert_int_eq(count(s, "<script"), 1);
    ck_assert_int_eq(count(s, "<script>"), 1);
    ck_assert_int_eq(count(s, "href=\""), L * H);   /* only the PNG links */
    /* a raw '<' or '&' from the text never reaches the markup */
    ck_assert(!strstr(s, "<b&"));
    tb_free(&b);

    /* no mask: every cell is stored */
    heatmap_html(&b, text, T, 1, 1, w, NULL);
    long codes[T * T];
    page_codes(b.p, 0, T, NULL, codes);
    for (int i = 0; i < T * T; i++) ck_assert_int_eq(codes[i], (long)heatmap_cell_code(w[i]));
    tb_free(&b);

    /* labels: visible symbols for whitespace, \xNN for other bytes */
    char lab[16];
    heatmap_char_label('\n', lab, sizeof lab);
    ck_assert_str_eq(lab, "\xe2\x86\xb5");
    heatmap_char_label(0x07, lab, sizeof lab);
    ck_assert_str_eq(lab, "\\x07");
    heatmap_char_label(0xc3, lab, sizeof lab);
    ck_assert_str_eq(lab, "\\xc3");
    heatmap_char_label('"', lab, sizeof lab);
    ck_assert_str_eq(lab, "&quot;");
}
END_TEST

/* Labels of tokens reach the page whole (the PNGs cut a label past
 * HEATMAP_LABEL_GLYPHS glyphs; the page's axes draw these), escaped, a
 * special one marked and explained; and the page's script cuts none. */
START_TEST(html_labels_are_whole_and_bos_is_marked)
{
    enum { T = 3 };
    const heatmap_label lab[T] = {{"BOS", 3, true}, {" responsibility", 15, false}, {"<&>", 3, false}};
    ck_assert_int_gt(15, HEATMAP_LABEL_GLYPHS);
    double w[T * T] = {1, 0, 0, 0.25, 0.75, 0, 0.2, 0.3, 0.5};
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    textbuf b = {0};
    heatmap_html_labels(&b, lab, T, "token", 1, 1, w, causal);
    ck_assert(!b.oom);
    ck_assert_msg(strstr(b.p, "<code id=\"text\"><span class=\"special\">BOS</span><span>\xe2\x90\xa3responsibility</span>"
                              "<span>&lt;&amp;&gt;</span></code>"), "%.400s", strstr(b.p, "<code"));
    ck_assert_msg(strstr(b.p, "BOS, which a Llama reads before its text"), "no line says what BOS is");
    ck_assert_msg(!strstr(b.p, "\u2026") && !strstr(b.p, "\xe2\x80\xa6"), "the page cuts labels with an ellipsis");
    tb_free(&b);
    /* without a special label, no such line */
    heatmap_html_labels(&b, lab + 1, 2, "token", 1, 1, w, causal);
    ck_assert(!strstr(b.p, "class=\"special\"") && !strstr(b.p, "reads before its text"));
    tb_free(&b);
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
    textbuf b = {0};
    heatmap_html(&b, text, T, L, H, w, causal);
    ck_assert(!b.oom);
    const size_t cells = (size_t)L * H * T * (T + 1) / 2;
    printf("index.html for %d characters, %d x %d maps: %zu bytes (%zu of them the weights)\n", T, L, H, b.len,
           4 * cells);
    ck_assert_msg(b.len < 4 * cells + 16 * 1024, "the page is %zu bytes", b.len);
    ck_assert_msg(b.len < 200 * 1024, "the page is %zu bytes", b.len);
    tb_free(&b);
}
END_TEST

/* ---- the loss curve --------------------------------------------------------------- */

/* The y pixel of a loss, by lossplot.h's rule: linear over the data range
 * padded by 5%, ymax at the top of the plot area. */
static double loss_y(double loss, double lo, double hi)
{
    double pad = 0.05 * (hi - lo), y0 = lo - pad, y1 = hi + pad;
    return LOSSPLOT_TOP + (y1 - loss) / (y1 - y0) * (LOSSPLOT_BOTTOM - 1 - LOSSPLOT_TOP);
}

START_TEST(loss_curve_follows_the_series)
{
    /* train falls linearly from 4 to 1 over steps 0..99; val is 3 at every
     * evaluation; step 30 was logged twice (a resume), the earlier row
     * wildly off: the later row must win */
    FILE *f = fopen(P("metrics.csv"), "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", TG_RUN_METRICS_HEADER);   /* step,loss,lr,ms_per_step,tokens_per_s,train_loss,val_loss,... */
    for (int s = 0; s <= 99; s++) {
        if (s == 30) fprintf(f, "30,50.0,0.001,1.0,100,,,,\n");
        if (s % 50 == 0) fprintf(f, "%d,%.6f,0.001,1.0,100,%.6f,%.6f,,\n", s, 4.0 - 3.0 * s / 99, 3.3, 3.0);
        else if (s < 99) fprintf(f, "%d,%.6f,0.001,1.0,100,,,,\n", s, 4.0 - 3.0 * s / 99);
    }
    fprintf(f, "99,%.6f,0.001,1.0,100,%.6f,%.6f,,\n", 1.0, 1.2, 3.0);
    fclose(f);
    char err[512] = "";
    REQUIRE(lossplot_write(P("metrics.csv"), P("loss.png"), err, sizeof err) == 0, "%s", err);
    pic p = decode_file(P("loss.png"));
    ck_assert_int_eq(p.w, LOSSPLOT_W);
    ck_assert_int_eq(p.h, LOSSPLOT_H);
    /* train pixels: in nearly every column of the plot area, each within
     * 2 px of the straight line from (left, y(4)) to (right, y(1)) */
    const double lo = 1.0, hi = 4.0;
    int cols = 0, train_px = 0, val_px = 0;
    for (int x = LOSSPLOT_LEFT; x < LOSSPLOT_RIGHT; x++) {
        bool any = false;
        double t = (double)(x - LOSSPLOT_LEFT) / (LOSSPLOT_RIGHT - 1 - LOSSPLOT_LEFT);
        double want = loss_y(4.0 - 3.0 * t, lo, hi);
        for (int y = LOSSPLOT_TOP; y < LOSSPLOT_BOTTOM; y++) {
            rgb c = at(&p, x, y);
            if (same(c, LOSSPLOT_TRAIN)) {
                any = true;
                train_px++;
                REQUIRE(fabs(y - want) <= 2.5, "train pixel (%d,%d) is off the line (want y %.1f)", x, y, want);
            } else if (same(c, LOSSPLOT_VAL)) {
                val_px++;
                REQUIRE(fabs(y - loss_y(3.0, lo, hi)) <= 3.5, "val pixel (%d,%d) is off y %.1f", x, y,
                              loss_y(3.0, lo, hi));
            }
        }
        cols += any;
    }
    /* (val's line covers the train line where they cross, near step 33) */
    REQUIRE(cols > (LOSSPLOT_RIGHT - LOSSPLOT_LEFT) * 9 / 10, "the train curve fills only %d columns", cols);
    REQUIRE(val_px > 2 * (LOSSPLOT_RIGHT - LOSSPLOT_LEFT) * 9 / 10, "the val curve has %d pixels", val_px);
    /* both colours appear in the legend too, above the plot area */
    int legend_train = 0, legend_val = 0;
    for (int y = 0; y < LOSSPLOT_TOP; y++)
        for (int x = 0; x < LOSSPLOT_W; x++) {
            legend_train += same(at(&p, x, y), LOSSPLOT_TRAIN);
            legend_val += same(at(&p, x, y), LOSSPLOT_VAL);
        }
    ck_assert(legend_train > 0 && legend_val > 0);
    /* axes: dark pixels along the left and bottom edges of the plot area */
    for (int y = LOSSPLOT_TOP; y < LOSSPLOT_BOTTOM; y++)
        REQUIRE(lum(at(&p, LOSSPLOT_LEFT - 1, y)) < 60, "no y axis at (%d,%d)", LOSSPLOT_LEFT - 1, y);
    for (int x = LOSSPLOT_LEFT; x < LOSSPLOT_RIGHT; x++)
        REQUIRE(lum(at(&p, x, LOSSPLOT_BOTTOM)) < 60, "no x axis at (%d,%d)", x, LOSSPLOT_BOTTOM);
    stbi_image_free(p.px);
    ck_assert_int_gt(train_px, 0);

    /* no data yet (only the header): still a picture, just the axes */
    f = fopen(P("empty.csv"), "w");
    fprintf(f, "%s\n", TG_RUN_METRICS_HEADER);
    fclose(f);
    REQUIRE(lossplot_write(P("empty.csv"), P("empty.png"), err, sizeof err) == 0, "%s", err);
    p = decode_file(P("empty.png"));
    ck_assert_int_eq(p.w, LOSSPLOT_W);
    for (int k = 0; k < p.w * p.h; k++) {
        rgb c = {p.px[3 * k], p.px[3 * k + 1], p.px[3 * k + 2]};
        if (k / p.w >= LOSSPLOT_TOP)
            REQUIRE(!same(c, LOSSPLOT_TRAIN) && !same(c, LOSSPLOT_VAL), "a curve pixel without data at %d", k);
    }
    stbi_image_free(p.px);
    remove(P("empty.csv"));
    remove(P("empty.png"));
    remove(P("metrics.csv"));
    remove(P("loss.png"));
}
END_TEST

START_TEST(loss_curve_errors)
{
    char err[512] = "", before[2048], after[2048];
    ck_assert_int_eq(lossplot_write(P("nope.csv"), P("loss.png"), err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nope.csv: No such file or directory"), "%s", err);
    /* a destination that cannot be written: its parent is a regular file */
    FILE *f = fopen(P("m.csv"), "w");
    fprintf(f, "%s\n1,2.0,0.1,1,1,,,,\n", TG_RUN_METRICS_HEADER);
    fclose(f);
    listing(tt_dir, before, sizeof before);
    ck_assert_int_eq(lossplot_write(P("m.csv"), P("m.csv/loss.png"), err, sizeof err), -1);
    ck_assert_msg(strstr(err, "m.csv/loss.png: cannot create a file there: Not a directory"), "%s", err);
    listing(tt_dir, after, sizeof after);
    ck_assert_str_eq(after, before);
    remove(P("m.csv"));
}
END_TEST

/* ---- all-or-nothing files ------------------------------------------------------------ */

START_TEST(staged_files_are_all_or_nothing)
{
    char err[512] = "", names[2048];
    staged_files s = {0};
    ck_assert_int_eq(mkdir(P("staged"), 0777), 0);
    /* abort: nothing left */
    ck_assert_int_eq(staged_add(&s, P("staged/one.txt"), "1", 1, err, sizeof err), 0);
    ck_assert_int_eq(staged_add(&s, P("staged/two.txt"), "22", 2, err, sizeof err), 0);
    ck_assert_int_eq(access(P("staged/one.txt"), F_OK), -1);
    staged_abort(&s);
    listing(P("staged"), names, sizeof names);
    ck_assert_str_eq(names, "");
    /* a failure part way, then abort: still nothing, not even the first file */
    ck_assert_int_eq(staged_add(&s, P("staged/one.txt"), "1", 1, err, sizeof err), 0);
    ck_assert_int_eq(staged_add(&s, P("staged/no/such/dir/x.png"), "x", 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "no/such/dir/x.png: cannot create a file there: No such file or directory"), "%s", err);
    staged_abort(&s);
    listing(P("staged"), names, sizeof names);
    ck_assert_str_eq(names, "");
    /* commit: every file, with its bytes, replacing an old one */
    FILE *f = fopen(P("staged/two.txt"), "w");
    fputs("old contents", f);
    fclose(f);
    ck_assert_int_eq(staged_add(&s, P("staged/one.txt"), "1", 1, err, sizeof err), 0);
    ck_assert_int_eq(staged_add(&s, P("staged/two.txt"), "22", 2, err, sizeof err), 0);
    ck_assert_int_eq(staged_commit(&s, err, sizeof err), 0);
    listing(P("staged"), names, sizeof names);
    ck_assert_str_eq(names, "one.txt,two.txt,");
    char *a = slurp(P("staged/one.txt")), *b = slurp(P("staged/two.txt"));
    ck_assert_str_eq(a, "1");
    ck_assert_str_eq(b, "22");
    free(a);
    free(b);
    struct stat st;
    ck_assert_int_eq(stat(P("staged/one.txt"), &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    ck_assert_int_eq(st.st_mode & 0777, 0666 & ~mask);
    remove(P("staged/one.txt"));
    remove(P("staged/two.txt"));
    ck_assert_int_eq(write_file_atomic(P("staged/w.txt"), "abc", 3, err, sizeof err), 0);
    a = slurp(P("staged/w.txt"));
    ck_assert_str_eq(a, "abc");
    free(a);
    remove(P("staged/w.txt"));
    ck_assert_int_eq(rmdir(P("staged")), 0);
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

START_TEST(attn_command_draws_the_models_weights)
{
    /* a small random model with sharp attention, saved as tiny_gpt does */
    const char *corpus = "abc de.";
    tg_vocab v;
    tg_vocab_bytes(&v, corpus, strlen(corpus));
    const tg_model_config mc = {.arch = "gpt", .n_layer = 2, .n_head = 3, .n_embd = 12, .block_size = 16,
                             .vocab_size = v.size};
    char err[1024];
    tg_model md;
    REQUIRE(tg_model_new(&md, &mc, TG_F32, 4, err, sizeof err) == 0, "%s", err);
    tg_gpt *m = md.impl;
    const tg_gpt_config cfg = m->cfg;
    tg_rng r;
    tg_rng_seed(&r, 5, 1);
    for (int l = 0; l < cfg.n_layer; l++) tg_rng_fill_normal(&r, m->h[l].attn.c_attn.weight, 0, 0.7);
    REQUIRE(tg_checkpoint_save(P("m.safetensors"), &md, &v, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, err,
                               sizeof err) == 0, "%s", err);

    /* the weights, computed here */
    const char *text = "bad cab. ed";
    enum { T = 11, L = 2, H = 3 };
    int32_t ids[T];
    size_t bad;
    ck_assert_int_eq(tg_vocab_encode(&v, text, T, ids, &bad), 0);
    tg_graph *g = tg_graph_new();
    tg_graph_set_grad_enabled(g, false);
    tg_tensor *aw[L];
    ck_assert_ptr_nonnull(tg_gpt_forward_ex(g, m, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids), aw));

    const char *args[] = {"attn", "--ckpt", P("m.safetensors"), "--text", text, "--out", P("maps"), NULL};
    int rc = run_tiny_gpt(args);
    char *msg = slurp(P("stderr.txt"));
    REQUIRE(rc == 0, "tiny_gpt attn exited %d: %s", rc, msg);
    free(msg);
    char names[2048];
    listing(P("maps"), names, sizeof names);
    ck_assert_str_eq(names, "attn_l0_h0.png,attn_l0_h1.png,attn_l0_h2.png,attn_l1_h0.png,attn_l1_h1.png,"
                            "attn_l1_h2.png,index.html,");
    char *html = slurp(P("maps/index.html"));
    const heatmap_layout lay = heatmap_layout_of(T, T);
    const int cell = lay.cell;
    double peak = 0;
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char name[64], want[256];
            snprintf(name, sizeof name, "maps/attn_l%d_h%d.png", l, h);
            pic p = decode_file(P(name));
            ck_assert_int_eq(p.w, lay.w);
            ck_assert_int_eq(p.h, lay.h);
            check_labels(&p, &lay, T, T, text, text);
            for (int i = 0; i < T; i++) {
                int best = 0;
                for (int j = 0; j <= i; j++)
                    if (tg_tensor_get(aw[l], (h * T + i) * T + j) > tg_tensor_get(aw[l], (h * T + i) * T + best))
                        best = j;
                for (int j = 0; j < T; j++) {
                    const double w = tg_tensor_get(aw[l], (h * T + i) * T + j);
                    rgb c = at(&p, lay.map_x + j * cell + cell / 2, lay.map_y + i * cell + cell / 2);
                    if (j > i) {
                        REQUIRE(same(c, HEATMAP_BLOCKED), "%s: future cell (%d,%d) is not grey",
                                      name, i, j);
                        continue;
                    }
                    if (i > 0) peak = fmax(peak, w);
                    REQUIRE(same(c, heatmap_colour(w)), "%s: cell (%d,%d) does not show weight %g", name, i,
                                  j, w);
                    REQUIRE(lum(c) <= lum(at(&p, lay.map_x + best * cell, lay.map_y + i * cell)),
                                  "%s: row %d's brightest cell is not its largest weight (key %d)", name, i, best);
                }
            }
            stbi_image_free(p.px);
            /* the page: this map's caption and one of its weights */
            snprintf(want, sizeof want, "layer %d, head %d <a href=\"attn_l%d_h%d.png\">", l, h, l, h);
            REQUIRE(strstr(html, want), "index.html lacks '%s'", want);
            /* and every weight of the map as the page stores it */
            long codes[T * T];
            uint8_t causal[T * T];
            for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
            page_codes(html, l * H + h, T, causal, codes);
            for (int k = 0; k < T * T; k++)
                if (!causal[k])
                    REQUIRE(codes[k] == (long)heatmap_cell_code(tg_tensor_get(aw[l], h * T * T + k)),
                            "index.html: map %d cell %d is not its weight %g", l * H + h, k,
                            tg_tensor_get(aw[l], h * T * T + k));
        }
    REQUIRE(peak > 0.5, "nearly uniform weights (peak %g): a weak test", peak);
    ck_assert(strstr(html, "<code id=\"text\"><span>b</span><span>a</span><span>d</span><span>\xe2\x90\xa3</span>"
                           "<span>c</span>"));
    ck_assert(!strstr(html, "://"));
    free(html);

    /* a failure writes nothing: an unknown character, a missing checkpoint */
    const char *bad_char[] = {"attn", "--ckpt", P("m.safetensors"), "--text", "cab?", "--out", P("maps2"), NULL};
    ck_assert_int_eq(run_tiny_gpt(bad_char), 1);
    msg = slurp(P("stderr.txt"));
    REQUIRE(strstr(msg, "the text's character '?' (byte 63, offset 3) is not in the vocabulary"), "%s", msg);
    free(msg);
    ck_assert_int_eq(access(P("maps2"), F_OK), -1);

    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            char name[64];
            snprintf(name, sizeof name, "maps/attn_l%d_h%d.png", l, h);
            remove(P(name));
        }
    remove(P("maps/index.html"));
    rmdir(P("maps"));
    remove(P("m.safetensors"));
    remove(P("stderr.txt"));
    tg_graph_free(g);
    tg_model_free(&md);
}
END_TEST

/* A Llama's map is over what the model reads in sample and eval --text:
 * BOS, the dummy " ", then the text's bytes (llama2.c's ids 3 + byte), BOS
 * labelled and marked as no text on the page, every weight the one this
 * test computes on those ids. */
START_TEST(attn_of_a_llama_starts_at_its_bos)
{
    tg_vocab v;
    tg_vocab_llama2c(&v);
    const tg_model_config mc = {.arch = "llama", .n_layer = 1, .n_head = 2, .n_kv_head = 2, .n_embd = 16,
                                .hidden_dim = 32, .block_size = 16, .vocab_size = v.size, .rope_theta = 10000,
                                .norm_eps = 1e-5, .tied = true};
    char err[1024];
    tg_model md;
    REQUIRE(tg_model_new(&md, &mc, TG_F32, 7, err, sizeof err) == 0, "%s", err);
    tg_rng r;   /* sharper attention than the init's: larger query and key weights */
    tg_rng_seed(&r, 11, 1);
    tg_rng_fill_normal(&r, tg_params_get(md.params, "layers.0.attention.wq.weight"), 0, 0.8);
    tg_rng_fill_normal(&r, tg_params_get(md.params, "layers.0.attention.wk.weight"), 0, 0.8);
    REQUIRE(tg_checkpoint_save(P("l.safetensors"), &md, &v, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, err,
                               sizeof err) == 0, "%s", err);
    const char *text = "bad cab";
    enum { N = 7, T = N + 2, H = 2 };
    int32_t ids[T] = {TG_VOCAB_BOS, 3 + ' '};
    for (int i = 0; i < N; i++) ids[2 + i] = 3 + (uint8_t)text[i];
    tg_graph *g = tg_graph_new();
    tg_graph_set_grad_enabled(g, false);
    tg_tensor *aw[1];
    ck_assert_ptr_nonnull(tg_model_forward(g, &md, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids), aw));

    const char *args[] = {"attn", "--ckpt", P("l.safetensors"), "--text", text, "--out", P("lmaps"), NULL};
    int rc = run_tiny_gpt(args);
    char *msg = slurp(P("stderr.txt"));
    REQUIRE(rc == 0, "tiny_gpt attn exited %d: %s", rc, msg);
    free(msg);
    char *html = slurp(P("lmaps/index.html"));
    REQUIRE(strstr(html, "<code id=\"text\"><span class=\"special\">BOS</span><span>\xe2\x90\xa3</span><span>b</span>"
                         "<span>a</span><span>d</span><span>\xe2\x90\xa3</span><span>c</span>"),
            "the page's text is not BOS, the space and the text: %.300s", strstr(html, "<code id=\"text\">"));
    REQUIRE(strstr(html, "BOS, which a Llama reads before its text"), "the page does not say what BOS is");
    uint8_t causal[T * T];
    for (int k = 0; k < T * T; k++) causal[k] = k % T > k / T;
    double peak = 0;   /* the largest weight in rows of 4 keys or more: sharp maps, so a misplaced row shows */
    for (int h = 0; h < H; h++) {
        long codes[T * T];
        page_codes(html, h, T, causal, codes);
        for (int k = 0; k < T * T; k++)
            if (!causal[k])
                REQUIRE(codes[k] == (long)heatmap_cell_code(tg_tensor_get(aw[0], h * T * T + k)),
                        "map %d cell %d is not the weight %g over BOS, the space and the text", h, k,
                        tg_tensor_get(aw[0], h * T * T + k));
        for (int k = 3 * T; k < T * T; k++) peak = fmax(peak, tg_tensor_get(aw[0], h * T * T + k));
    }
    REQUIRE(peak > 0.5, "nearly uniform weights (peak %g): a weak test", peak);
    free(html);
    /* the PNG: BOS's key label, the three glyphs B, O, S down column 0 */
    pic p = decode_file(P("lmaps/attn_l0_h0.png"));
    heatmap_label lab[T] = {{"BOS", 3, true}, {" ", 1, false}};
    for (int i = 0; i < N; i++) lab[2 + i] = (heatmap_label){text + i, 1, false};
    uint8_t *png = NULL;
    size_t len = 0;
    double w[T * T];
    for (int k = 0; k < T * T; k++) w[k] = tg_tensor_get(aw[0], k);
    ck_assert_int_eq(heatmap_png_labels(w, causal, T, T, lab, lab, "layer 0, head 0", &png, &len), 0);
    pic want = decode(png, len);
    ck_assert_int_eq(p.w, want.w);
    ck_assert_int_eq(p.h, want.h);
    ck_assert_msg(memcmp(p.px, want.px, (size_t)p.w * p.h * 3) == 0, "attn_l0_h0.png is not the map of BOS + text");
    stbi_image_free(p.px);
    stbi_image_free(want.px);
    free(png);

    /* past the block size, counting BOS and the space */
    const char *longer[] = {"attn", "--ckpt", P("l.safetensors"), "--text", "abcdefghijklmno", "--out", P("lmaps2"),
                            NULL};
    ck_assert_int_eq(run_tiny_gpt(longer), 1);
    msg = slurp(P("stderr.txt"));
    REQUIRE(strstr(msg, "--text has 15 characters, 17 positions with the BOS and the space in front, more than the "
                        "checkpoint's block_size 16"), "%s", msg);
    free(msg);
    for (int h = 0; h < H; h++) {
        char name[64];
        snprintf(name, sizeof name, "lmaps/attn_l0_h%d.png", h);
        remove(P(name));
    }
    remove(P("lmaps/index.html"));
    rmdir(P("lmaps"));
    remove(P("l.safetensors"));
    remove(P("stderr.txt"));
    tg_graph_free(g);
    tg_model_free(&md);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("heatmap");
    tt_tcase(s, "core", 0, TT_TESTS(colour_map_gets_brighter_and_never_shows_blocked,
                                    heatmap_pixels_follow_the_weights, heatmap_of_a_gpt,
                                    html_stores_every_weight_and_character, html_page_is_small,
                                    loss_curve_follows_the_series, loss_curve_errors,
                                    staged_files_are_all_or_nothing, attn_command_draws_the_models_weights,
                                    font_q_is_p_mirrored_and_no_9, attn_of_a_llama_starts_at_its_bos,
                                    html_labels_are_whole_and_bos_is_marked));
    return s;
}

int main(void)
{
    return tt_run_in_tmpdir(suite(), "tg_heatmap_test", false);   /* a failure's files stay for a look */
}
