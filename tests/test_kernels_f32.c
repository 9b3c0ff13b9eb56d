/* The tuned f32 paths against f64 references.
 *
 * - fastmath: the call-free exp and normal CDF of ops/fastmath_internal.h
 *   over dense grids, against libm.
 * - Every tuned f32 kernel of ops/kernels_internal.h (softmax and
 *   log_softmax forward and backward, layernorm forward and backward,
 *   cross-entropy forward and backward, GELU's erf and tanh forms forward
 *   and backward, the logit cap's forward) called directly, against its f64 reference kernel called on
 *   the same inputs (the f32 values, widened): random rows of every length
 *   in LENS (1 to 257: below, at and across the 8-lane width), with and
 *   without masks (per key, broadcast along the row, broadcast across
 *   rows), -inf scores, fully blocked rows, ignored targets, a common
 *   offset of 1e3, NULL weights, new and accumulated gradients, and row
 *   ranges that start inside the tensor. Error results (the kind and the
 *   element or row) must be the reference's exactly.
 * - Each op's f32 path runs its kernel: the op's output and gradients are
 *   bit for bit the kernel's on the same inputs, and differ from the f64
 *   reference rounded to f32 (so it is not the reference).
 * - Through the ops: softmax and layernorm in f32 against f64; GELU (both
 *   forms) against libm on a dense grid and at extreme inputs.
 *
 * Which code runs: the kernels of the path in use (core/cpu.h: AVX-512,
 * AVX2 + FMA, or generic, the first line printed says which); CTest runs
 * this program once per path (test_kernels_f32_generic, _avx2, _avx512:
 * TG_ISA set).
 *
 * Tolerances (the kernel tests): u = 2^-24, the unit roundoff of f32.
 * Every f32 operation rounds with a relative error of at most u (a fused
 * multiply-add, which the v3 clone uses, rounds once instead of twice); a
 * sum of k terms in any order errs by at most (k - 1) u sum |terms|;
 * tg_fexp is within EXP_ERR = 2e-7 relative (fexp_matches_libm_exp), logf
 * within one ulp (2u relative). Each bound below adds up these errors
 * along the kernel's own arithmetic, to first order, in terms of the
 * reference's exact quantities; the factor SLACK = 1 + 2^-10 covers the
 * second-order terms (products of two errors, each a few u). A bound is
 * checked element by element; the worst ratio error / bound of each test
 * is printed with TG_KERNELS_VERBOSE set. */
#include "tg_test.h"

#include <float.h>

#include "ops/fastmath_internal.h"
#include "ops/kernels_internal.h"

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

static const double U = 0x1p-24; /* f32 unit roundoff */
static const double EXP_ERR = 2e-7; /* tg_fexp, relative */
static const double SLACK = 1 + 0x1p-10; /* second-order terms */
/* tg_fexp clamps its argument at -87, so an exp that should be smaller
 * (a -inf score) comes out as exp(-87) = 1.65e-38 */
static const double EXP_FLOOR = 1.7e-38;

static const int LENS[] = {1, 3, 7, 8, 9, 15, 16, 17, 33, 100, 257};
enum { NLENS = sizeof LENS / sizeof LENS[0] };

/* ---- helpers ---------------------------------------------------------- */

static tg_rng rng;

static float randn(double sd) { return (float)(sd * tg_rng_normal(&rng)); }

/* n zeroed elements (n >= 1) */
static float *fvec(int64_t n)
{
    float *p = calloc(n > 0 ? (size_t)n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static double *dvec(int64_t n)
{
    double *p = calloc(n > 0 ? (size_t)n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static double *widen(const float *a, int64_t n)
{
    double *b = dvec(n);
    for (int64_t i = 0; i < n; i++) b[i] = a[i];
    return b;
}

/* The worst error / bound seen so far, with a description of where. */
typedef struct tally {
    double ratio;
    char where[200];
} tally;

static void note(tally *w, const char *what, int64_t i, double got, double want, double bound)
{
    double r = got == want ? 0 : fabs(got - want) / (SLACK * bound); /* equal infinities: 0 */
    if (isnan(r)) r = INFINITY; /* NaN on one side only */
    if (r > w->ratio) {
        w->ratio = r;
        snprintf(w->where, sizeof w->where, "%s[%lld] = %.9g, reference %.9g, bound %.3g", what, (long long)i, got,
                 want, bound);
    }
}

/* a test's random stream, and its worst ratio so far (none) */
static tally start(uint64_t seed)
{
    tg_rng_seed(&rng, seed, 1);
    return (tally){0};
}

static void check_tally(const tally *w, const char *test)
{
    if (getenv("TG_KERNELS_VERBOSE")) fprintf(stderr, "%s: worst %.3g of its bound, at %s\n", test, w->ratio, w->where);
    ck_assert_msg(w->ratio <= 1, "%s: %s (%.3g of the bound)", test, w->where, w->ratio);
}

/* Some of the n kernel results differ from the reference's rounded to
 * f32: the kernel is not the reference. */
static void assert_not_reference(const char *what, const float *k, const double *ref, int64_t n)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += k[i] != (float)ref[i];
    ck_assert_msg(d > 0, "%s: all %lld results are the f64 reference's, rounded", what, (long long)n);
}

static int lanes_terms(int n) { return (n + 7) / 8; } /* terms per lane of an 8-lane row sum */

/* ---- fastmath --------------------------------------------------------- */

/* 1 + erf z = 2 Phi(z sqrt 2) within 2e-7 of f64 erf, every 1e-6 on
 * [-6, 6] (12 million points, covering both branches and the 3/4 and 4
 * switch points); e = exp(-z^2) within 4e-6 relative (the rounding of z^2
 * in f32 alone is up to 6e-8 z^2 relative). Tails: Phi keeps relative
 * accuracy for z < 0 (to 1e-4, the fit weighs absolute error) down to
 * z = -3.9, where 1 + erf z in f32 has none. */
START_TEST(phi_matches_libm_erf)
{
    double worst = 0, worst_z = 0, worst_e = 0, worst_tail = 0;
    for (long i = -6000000; i <= 6000000; i++) {
        float z = (float)(i * 1e-6), e;
        double ph = tg_fphi(z, &e), zd = z;
        double err = fabs(2 * ph - (1 + erf(zd)));
        if (err > worst) {
            worst = err;
            worst_z = zd;
        }
        double ex = exp(-zd * zd);
        if (zd * zd < 87) worst_e = fmax(worst_e, fabs(e - ex) / ex);
        if (zd < -0.75 && zd > -3.9) worst_tail = fmax(worst_tail, fabs(ph - 0.5 * erfc(-zd)) / (0.5 * erfc(-zd)));
    }
    ck_assert_msg(worst <= 2e-7, "1 + erf off by %.3g at z = %.7g", worst, worst_z);
    ck_assert_msg(worst_e <= 4e-6, "exp(-z^2) off by %.3g relative", worst_e);
    ck_assert_msg(worst_tail <= 1e-4, "Phi tail off by %.3g relative", worst_tail);
    /* beyond the fit: 1 and 0 exactly past |z| = 4, and the limits */
    float e;
    ck_assert_float_eq(tg_fphi(4.5f, &e), 1.0f);
    ck_assert_float_eq(tg_fphi(-4.5f, &e), 0.0f);
    ck_assert_float_eq(tg_fphi(INFINITY, &e), 1.0f);
    ck_assert_float_eq(e, tg_fexp(-87.0f));
    ck_assert_float_eq(tg_fphi(-INFINITY, &e), 0.0f);
    ck_assert_float_eq(tg_fphi(0.0f, &e), 0.5f);
    ck_assert_float_eq(e, 1.0f);
}
END_TEST

/* exp on [-87, 0] every 1e-6 within 2e-7 relative; below -87 clamped */
START_TEST(fexp_matches_libm_exp)
{
    double worst = 0, worst_x = 0;
    for (long i = 0; i <= 87000000; i += 3) {
        float x = -(float)(i * 1e-6);
        double ex = exp((double)x), err = fabs(tg_fexp(x) - ex) / ex;
        if (err > worst) {
            worst = err;
            worst_x = x;
        }
    }
    ck_assert_msg(worst <= 2e-7, "exp off by %.3g relative at x = %.7g", worst, worst_x);
    ck_assert_float_eq(tg_fexp(0.0f), 1.0f);
    ck_assert_float_eq(tg_fexp(-1000.0f), tg_fexp(-87.0f));
    ck_assert(tg_fexp(-87.0f) > 0 && isnormal(tg_fexp(-87.0f)));
}
END_TEST

/* ---- softmax kernels -------------------------------------------------- */

/* Scores x (2,3,5,n), N(0, 3^2) with every 11th -inf, and a mask of kind
 *   0: none;
 *   1: (5,n), one byte per key (key stride 1), 30% blocked;
 *   2: (5,1), broadcast along the row (key stride 0): every row with
 *      d2 = 2 fully blocked;
 *   3: (3,1,n), broadcast across d2 (row stride 0), 30% blocked.
 * Rows are walked across all three leading dimensions. */
typedef struct sm_case {
    int n, dim[TG_MAX_DIMS];
    int64_t rows, ms[TG_MAX_DIMS];
    float *x;
    double *x64;
    uint8_t *m; /* NULL: no mask */
} sm_case;

static sm_case sm_make(int n, int kind)
{
    sm_case c = {.n = n, .dim = {2, 3, 5, n}, .rows = 30};
    c.x = fvec(c.rows * n);
    for (int64_t i = 0; i < c.rows * n; i++) c.x[i] = i % 11 == 4 ? -INFINITY : randn(3);
    c.x64 = widen(c.x, c.rows * n);
    const int64_t bytes[4] = {0, 5 * n, 5, 3 * n}, strides[4][4] = {{0}, {0, 0, n, 1}, {0, 0, 1, 0}, {0, n, 0, 1}};
    if (kind) c.m = calloc((size_t)bytes[kind], 1);
    for (int64_t i = 0; i < bytes[kind]; i++) c.m[i] = kind == 2 ? i == 2 : tg_rng_uniform(&rng) < 0.3;
    memcpy(c.ms, strides[kind], sizeof c.ms);
    return c;
}

static void sm_free(sm_case *c)
{
    free(c->x);
    free(c->x64);
    free(c->m);
}

/* key j of row r is blocked by the mask (the row's index over the leading
 * dimensions found by division, not by the kernels' row walk) */
static bool sm_blocked(const sm_case *c, int64_t r, int j)
{
    const int64_t d2 = r % c->dim[2], d1 = r / c->dim[2] % c->dim[1], d0 = r / c->dim[2] / c->dim[1];
    return c->m && c->m[d0 * c->ms[0] + d1 * c->ms[1] + d2 * c->ms[2] + j * c->ms[3]];
}

/* The forward bound, per element of an allowed key, from the reference's
 * row maximum m and sum S = sum_k exp(x_k - m) over the allowed keys:
 *   e_j = fexp(x_j - m): the subtraction rounds (u |x_j - m|, which exp
 *     turns into a relative error), fexp errs by EXP_ERR;
 *   S: those errors, at most R = max |x_k - m| over the row, and the
 *     8-lane sum (ceil(n/8) - 1 adds per lane, 7 across lanes):
 *     eps_S = EXP_ERR + u R + (ceil(n/8) + 7) u, relative;
 *   softmax p_j = e_j * (1 / S): two more roundings,
 *     |dp_j| <= p_j (EXP_ERR + u |x_j - m| + eps_S + 2u);
 *   log_softmax y_j = (x_j - m) - logf(S): |dy_j| <= u |x_j - m| + eps_S
 *     + 2u |log S| + u |y_j|.
 * A -inf score: exp(-87) / S <= EXP_FLOOR (softmax), -inf (log_softmax).
 * Blocked keys and fully blocked rows: exactly the reference's 0 / -inf. */
static void sm_check_forward(tally *w, const char *what, const sm_case *c, const float *y, const double *y64,
                             int64_t lo, int64_t hi, bool log_out)
{
    const int n = c->n;
    for (int64_t r = lo; r < hi; r++) {
        const double *x = c->x64 + r * n;
        double m = -INFINITY, S = 0, R = 0;
        for (int j = 0; j < n; j++)
            if (!sm_blocked(c, r, j) && x[j] > m) m = x[j];
        for (int j = 0; j < n; j++)
            if (!sm_blocked(c, r, j) && x[j] != -INFINITY) S += exp(x[j] - m), R = fmax(R, m - x[j]);
        const double eps_s = EXP_ERR + U * R + (lanes_terms(n) + 7) * U;
        for (int j = 0; j < n; j++) {
            const int64_t i = r * n + j;
            double bound = 0; /* blocked, or a fully blocked row: exact */
            if (sm_blocked(c, r, j) || m == -INFINITY) bound = 0;
            else if (x[j] == -INFINITY) bound = log_out ? 0 : EXP_FLOOR;
            else if (log_out) bound = U * (m - x[j]) + eps_s + 2 * U * fabs(log(S)) + U * fabs(y64[i]);
            else bound = y64[i] * (EXP_ERR + U * (m - x[j]) + eps_s + 2 * U);
            note(w, what, i, y[i], y64[i], bound + (bound ? 4 * FLT_TRUE_MIN : 0));
        }
    }
}

START_TEST(softmax_forward_kernel_matches_reference)
{
    tally w = start(11);
    for (int li = 0; li < NLENS; li++)
        for (int kind = 0; kind < 4; kind++)
            for (int mode = 0; mode < 3; mode++) { /* softmax, with zero rows, log_softmax */
                sm_case c = sm_make(LENS[li], kind);
                const int n = c.n;
                const bool log_out = mode == 2, zero_rows = mode == 1;
                for (int part = 0; part < 2; part++) { /* all rows; rows [7, 23) */
                    const int64_t lo = part ? 7 : 0, hi = part ? 23 : c.rows;
                    float *y = fvec(c.rows * n);
                    double *y64 = dvec(c.rows * n);
                    for (int64_t i = 0; i < c.rows * n; i++) y[i] = 7;
                    uint8_t *scratch = calloc((size_t)n, 1);
                    int64_t wk = -1, wr = -1;
                    int sk = tg_softmax_forward_f32(c.x, y, c.dim, c.m, c.ms, log_out, zero_rows, scratch, lo, hi, &wk);
                    int sr = tg_softmax_forward_f64(c.x64, y64, c.dim, c.m, c.ms, log_out, zero_rows, lo, hi, &wr);
                    ck_assert_msg(sk == sr && wk == wr, "n %d mask %d mode %d: kernel %d at %lld, reference %d at %lld",
                                  n, kind, mode, sk, (long long)wk, sr, (long long)wr);
                    if (sk == SCORES_OK) {
                        char what[64];
                        snprintf(what, sizeof what, "n %d mask %d mode %d rows [%lld, %lld) y", n, kind, mode,
                                 (long long)lo, (long long)hi);
                        sm_check_forward(&w, what, &c, y, y64, lo, hi, log_out);
                        for (int64_t i = 0; i < c.rows * n; i++) /* rows outside [lo, hi) untouched */
                            if (i < lo * n || i >= hi * n)
                                ck_assert_msg(y[i] == 7, "%s: row %lld written", what, (long long)(i / n));
                    }
                    free(y);
                    free(y64);
                    free(scratch);
                }
                sm_free(&c);
            }
    check_tally(&w, "softmax forward");
}
END_TEST

/* A NaN or +inf at an allowed key is reported at its element, the first
 * in row order; one at a blocked key is never read: the kernel's result,
 * element and row as the reference's. */
START_TEST(softmax_forward_kernel_errors_match_reference)
{
    tg_rng_seed(&rng, 12, 1);
    for (int li = 0; li < NLENS; li++)
        for (int bad = 0; bad < 3; bad++) {
            sm_case c = sm_make(LENS[li], 1);
            const int n = c.n;
            for (int j = 0; j < n; j++) /* NaN at the blocked keys of row 3 */
                if (sm_blocked(&c, 3, j)) c.x[3 * n + j] = NAN;
            int64_t at = -1; /* the first allowed key of row 9 */
            for (int j = n - 1; j >= 0; j--)
                if (!sm_blocked(&c, 9, j)) at = 9 * n + j;
            if (at >= 0 && bad < 2) c.x[at] = bad ? INFINITY : NAN;
            free(c.x64);
            c.x64 = widen(c.x, c.rows * n);
            float *y = fvec(c.rows * n);
            double *y64 = dvec(c.rows * n);
            uint8_t *scratch = calloc((size_t)n, 1);
            for (int log_out = 0; log_out < 2; log_out++) {
                int64_t wk = -1, wr = -1;
                int sk = tg_softmax_forward_f32(c.x, y, c.dim, c.m, c.ms, log_out, !log_out, scratch, 0, c.rows, &wk);
                int sr = tg_softmax_forward_f64(c.x64, y64, c.dim, c.m, c.ms, log_out, !log_out, 0, c.rows, &wr);
                ck_assert_msg(sk == sr && wk == wr, "n %d bad %d log %d: kernel %d at %lld, reference %d at %lld", n,
                              bad, log_out, sk, (long long)wk, sr, (long long)wr);
                if (at >= 0 && bad < 2 && !log_out) /* with zero rows, row 9 is reached */
                    ck_assert(sk == BAD_SCORE && wk == at);
            }
            free(y);
            free(y64);
            free(scratch);
            sm_free(&c);
        }
}
END_TEST

/* The backward kernels on the forward kernel's own output (as the op
 * feeds them) and dy ~ N(0,1), against the references on the same f32
 * values; dx a new gradient (store; filled with NaN first, which must not
 * be read) or added to c ~ N(0,1). Bounds, from the reference's exact
 * row sums:
 *   softmax, s = sum_k p_k dy_k: the products and the 8-lane sum err by
 *     (ceil(n/8) + 8) u A, A = sum_k |p_k dy_k|; ds_j = p_j (dy_j - s)
 *     rounds twice: |d ds_j| <= p_j ((ceil(n/8) + 8) u A + u |dy_j - s|)
 *     + u |ds_j|;
 *   log_softmax, s = sum_k dy_k over keys with y_k > -inf: errs by
 *     (ceil(n/8) + 7) u B, B = sum_k |dy_k|; ds_j = dy_j - fexp(y_j) s:
 *     |d ds_j| <= p_j ((ceil(n/8) + 7) u B + (EXP_ERR + u) |s|) + u |ds_j|
 *     + EXP_FLOOR |s| (y_j < -87 is clamped), p_j = exp(y_j);
 *   adding to c rounds once more: u |c_j + ds_j|.
 * Keys with p_j = 0 / y_j = -inf: exactly 0 (or c_j). */
START_TEST(softmax_backward_kernels_match_reference)
{
    tally w = start(13);
    for (int li = 0; li < NLENS; li++)
        for (int kind = 0; kind < 4; kind++)
            for (int log_out = 0; log_out < 2; log_out++)
                for (int add = 0; add < 2; add++) {
                    sm_case c = sm_make(LENS[li], kind);
                    const int n = c.n;
                    const int64_t N = c.rows * n;
                    float *y = fvec(N), *dy = fvec(N), *dx = fvec(N);
                    uint8_t *scratch = calloc((size_t)n, 1);
                    int64_t where;
                    /* (log_softmax with a fully blocked row: no output to differentiate) */
                    if (tg_softmax_forward_f32(c.x, y, c.dim, c.m, c.ms, log_out, !log_out, scratch, 0, c.rows,
                                               &where) != SCORES_OK) {
                        free(y), free(dy), free(dx), free(scratch), sm_free(&c);
                        continue;
                    }
                    for (int64_t i = 0; i < N; i++) dy[i] = randn(1), dx[i] = add ? randn(1) : NAN;
                    double *y64 = widen(y, N), *dy64 = widen(dy, N), *dx64 = widen(dx, N), *c0 = widen(dx, N);
                    if (log_out) {
                        tg_log_softmax_backward_f32(y, dy, dx, c.rows, n, !add);
                        tg_log_softmax_backward_f64(y64, dy64, dx64, c.rows, n, !add);
                    } else {
                        tg_softmax_backward_f32(y, dy, dx, c.rows, n, !add);
                        tg_softmax_backward_f64(y64, dy64, dx64, c.rows, n, !add);
                    }
                    char what[64];
                    snprintf(what, sizeof what, "n %d mask %d log %d add %d dx", n, kind, log_out, add);
                    for (int64_t r = 0; r < c.rows; r++) {
                        const double *p = y64 + r * n, *d = dy64 + r * n;
                        double s = 0, a = 0;
                        for (int j = 0; j < n; j++) {
                            if (log_out && p[j] != -INFINITY) s += d[j], a += fabs(d[j]);
                            if (!log_out && p[j] != 0) s += p[j] * d[j], a += fabs(p[j] * d[j]);
                        }
                        for (int j = 0; j < n; j++) {
                            const int64_t i = r * n + j;
                            const double cj = add ? c0[i] : 0;
                            double bound = 0; /* p_j = 0, y_j = -inf: exact */
                            if (log_out && p[j] != -INFINITY) {
                                const double pj = exp(p[j]), ds = d[j] - pj * s;
                                bound = pj * ((lanes_terms(n) + 7) * U * a + (EXP_ERR + U) * fabs(s)) + U * fabs(ds) +
                                    EXP_FLOOR * fabs(s) + (add ? U * fabs(cj + ds) : 0);
                            } else if (!log_out && p[j] != 0) {
                                const double ds = p[j] * (d[j] - s);
                                bound = p[j] * ((lanes_terms(n) + 8) * U * a + U * fabs(d[j] - s)) + U * fabs(ds) +
                                    (add ? U * fabs(cj + ds) : 0);
                            }
                            note(&w, what, i, dx[i], dx64[i], bound + (bound ? 4 * FLT_TRUE_MIN : 0));
                        }
                    }
                    free(y), free(dy), free(dx), free(scratch), free(y64), free(dy64), free(dx64), free(c0);
                    sm_free(&c);
                }
    check_tally(&w, "softmax backward");
}
END_TEST

/* f32 softmax / log_softmax rows of 37 (4 full 8-lane blocks and a tail)
 * against the f64 kernel (a separate code path, unchanged), forward and
 * backward, with no mask, a (5,37) mask (stride 1) and a (5,1) mask
 * broadcast along the row (stride 0, copied per row): blocked keys give 0
 * (softmax) / -inf (log_softmax) and zero gradient. Then a NaN at an allowed
 * key inside the vector part is named by its element. */
START_TEST(softmax_f32_matches_f64)
{
    enum { R = 15, N = 37 };
    tg_graph *g = tg_graph_new();
    tg_tensor *x64 = tt_randn(g, TT_SHAPE(3, 5, N), 40), *dy64 = tt_randn(g, TT_SHAPE(3, 5, N), 41);
    float x32v[R * N], dy32v[R * N];
    for (int i = 0; i < R * N; i++) {
        x32v[i] = (float)(3 * ((double *)x64->data)[i]);
        ((double *)x64->data)[i] = x32v[i];
        dy32v[i] = (float)((double *)dy64->data)[i];
        ((double *)dy64->data)[i] = dy32v[i];
    }
    bool full[5 * N], col[5];
    for (int i = 0; i < 5 * N; i++) full[i] = (i % N) > (i / N) * 7; /* causal-like */
    for (int i = 0; i < 5; i++) col[i] = i == 2; /* all of row 2 blocked */
    for (int mk = 0; mk < 3; mk++)
        for (int lg = 0; lg < 2; lg++) {
            tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(3, 5, N), x32v);
            ck_assert_int_eq(tg_tensor_set_requires_grad(g, x32, true), 0);
            memset(x64->grad, 0, sizeof(double) * R * N); /* a leaf: its gradient accumulates */
            tg_tensor *mask = mk == 0 ? NULL
                : mk == 1             ? tg_tensor_from(g, TG_BOOL, TT_SHAPE(5, N), full)
                                      : tg_tensor_from(g, TG_BOOL, TT_SHAPE(5, 1), col);
            int fl = TG_SOFTMAX_ZERO_BLOCKED_ROWS;
            if (lg && mk == 2) continue; /* log_softmax has no zero-row option */
            tg_tensor *y32 = lg ? tg_log_softmax(g, x32, mask) : tg_softmax_ex(g, x32, mask, fl);
            tg_tensor *y64 = lg ? tg_log_softmax(g, x64, mask) : tg_softmax_ex(g, x64, mask, fl);
            ck_assert_msg(y32 && y64, "%s", tg_graph_error(g));
            ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32v), 0);
            ck_assert_int_eq(tg_graph_backward_seeded(g, y64, dy64->data), 0);
            for (int i = 0; i < R * N; i++) {
                double a = ((float *)y32->data)[i], b = ((double *)y64->data)[i];
                if (isinf(b)) ck_assert_msg(a == b, "y[%d] %g, want %g", i, a, b);
                else
                    ck_assert_msg(fabs(a - b) <= 4e-7 * (1 + fabs(b)), "mask %d log %d: y[%d] %.9g, want %.9g", mk, lg,
                                  i, a, b);
                double ga = ((float *)x32->grad)[i], gb = ((double *)x64->grad)[i];
                ck_assert_msg(fabs(ga - gb) <= 2e-6 * (1 + fabs(gb)), "mask %d log %d: dx[%d] %.9g, want %.9g", mk, lg,
                              i, ga, gb);
                if (mk == 2 && (i / N) % 5 == 2) ck_assert(ga == 0 && a == 0);
            }
        }
    x32v[3 * N + 12] = NAN;
    ck_assert_ptr_null(tg_softmax(g, tg_tensor_from(g, TG_F32, TT_SHAPE(3, 5, N), x32v), NULL));
    tt_assert_error(g, "softmax: score NaN at element 123 (index (0,3,12)) of x f32 (3,5,37)");
    tg_graph_free(g);
}
END_TEST

/* ---- layernorm kernels ------------------------------------------------ */

static const int LN_LENS[] = {1, 3, 7, 8, 9, 15, 16, 17, 33, 77, 100, 257};
enum { LN_NLENS = sizeof LN_LENS / sizeof LN_LENS[0], LN_ROWS = 37 }; /* 37: 4 flushes of 8 rows and 5 */

/* x (LN_ROWS, C) = offset + N(0,1), w = 1 + N(0,1)/2, b, dy ~ N(0,1) */
typedef struct ln_case {
    int C;
    float *x, *w, *b, *dy;
    double *x64, *w64, *b64, *dy64;
} ln_case;

static ln_case ln_make(int C, double offset)
{
    ln_case c = {.C = C, .x = fvec(LN_ROWS * C), .w = fvec(C), .b = fvec(C), .dy = fvec(LN_ROWS * C)};
    for (int i = 0; i < LN_ROWS * C; i++) c.x[i] = (float)(offset + randn(1)), c.dy[i] = randn(1);
    for (int j = 0; j < C; j++) c.w[j] = 1 + randn(0.5), c.b[j] = randn(1);
    c.x64 = widen(c.x, LN_ROWS * C), c.dy64 = widen(c.dy, LN_ROWS * C);
    c.w64 = widen(c.w, C), c.b64 = widen(c.b, C);
    return c;
}

static void ln_free(ln_case *c)
{
    free(c->x), free(c->w), free(c->b), free(c->dy);
    free(c->x64), free(c->w64), free(c->b64), free(c->dy64);
}

/* The kernels take x - mean as (x - mh) - ml, mh = (float)mean, ml =
 * (float)(mean - mh): both subtractions round, and ml leaves out up to
 * u |mean - mh|, so d_j = x_j - mean errs by
 *   dd_j = u (|x_j - mh| + |d_j| + |mean - mh|) + |d mean|,
 * d mean the error of the kernel's own mean (forward: a double sum in 4
 * lanes, (ceil(C/4) + 4) 2^-53 sum |x_j| / C; backward: given). */
static double ln_dd(double x, double mean, double dmean)
{
    const double mh = (float)mean;
    return U * (fabs(x - mh) + fabs(x - mean) + fabs(mean - mh)) + dmean;
}

/* Forward bounds, per row, from the reference's mean, var and rstd:
 *   sum_j d_j^2 in 8 f32 lanes: the d_j's errors (2 |d_j| dd_j each), the
 *     squares and the lane sums (ceil(C/8) u sum d_j^2); rstd = 1 /
 *     sqrt(var + eps) then errs by eps_r = (d sum / C) / (2 (var + eps)),
 *     and by u more as a float;
 *   y_j = ((d_j rstd) w_j) + b_j: |dy_j| <= |w_j| (rstd dd_j + |xhat_j|
 *     (eps_r + u + 2u)) + u |y_j|.
 * The saved mean and rstd (double) must be within d mean and rstd eps_r. */
START_TEST(layernorm_forward_kernel_matches_reference)
{
    tally w = start(21);
    static const double offsets[2] = {0, 1e3};
    for (int li = 0; li < LN_NLENS; li++)
        for (int oi = 0; oi < 2; oi++)
            for (int wb = 0; wb < 4; wb++) { /* bit 0: w, bit 1: b */
                const int C = LN_LENS[li];
                ln_case c = ln_make(C, offsets[oi]);
                const float *wp = wb & 1 ? c.w : NULL, *bp = wb & 2 ? c.b : NULL;
                const double *wp64 = wb & 1 ? c.w64 : NULL, *bp64 = wb & 2 ? c.b64 : NULL;
                float *y = fvec(LN_ROWS * C), *y_nostats = fvec(LN_ROWS * C);
                double *y64 = dvec(LN_ROWS * C), mean[LN_ROWS], rstd[LN_ROWS], mean64[LN_ROWS], rstd64[LN_ROWS];
                tg_layernorm_forward_f32(LN_ROWS, C, c.x, wp, bp, 1e-5, y, mean, rstd);
                tg_layernorm_forward_f32(LN_ROWS, C, c.x, wp, bp, 1e-5, y_nostats, NULL, NULL);
                tg_layernorm_forward_f64(LN_ROWS, C, c.x64, wp64, bp64, 1e-5, y64, mean64, rstd64);
                ck_assert(memcmp(y, y_nostats, sizeof(float) * LN_ROWS * C) == 0);
                char what[64];
                snprintf(what, sizeof what, "C %d offset %g w %d b %d", C, offsets[oi], wb & 1, wb >> 1);
                for (int r = 0; r < LN_ROWS; r++) {
                    const double *x = c.x64 + r * C, m = mean64[r], s = rstd64[r];
                    double sum_abs = 0, sq = 0, dsq = 0;
                    for (int j = 0; j < C; j++) sum_abs += fabs(x[j]), sq += (x[j] - m) * (x[j] - m);
                    const double dmean = (lanes_terms(C) * 2 + 4) * 0x1p-53 * sum_abs / C;
                    for (int j = 0; j < C; j++) dsq += 2 * fabs(x[j] - m) * ln_dd(x[j], m, dmean);
                    dsq += lanes_terms(C) * U * sq;
                    const double eps_r = dsq / C / (2 * (sq / C + 1e-5));
                    note(&w, "mean", r, mean[r], m, dmean);
                    note(&w, "rstd", r, rstd[r], s, s * eps_r + 4 * 0x1p-53 * s);
                    for (int j = 0; j < C; j++) {
                        const int64_t i = (int64_t)r * C + j;
                        const double wj = wp ? fabs(c.w64[j]) : 1, xhat = (x[j] - m) * s;
                        const double bound = wj * (s * ln_dd(x[j], m, dmean) + fabs(xhat) * (eps_r + 3 * U)) +
                            U * fabs(y64[i]) + 4 * FLT_TRUE_MIN;
                        note(&w, what, i, y[i], y64[i], bound);
                    }
                }
                free(y), free(y_nostats), free(y64);
                ln_free(&c);
            }
    check_tally(&w, "layernorm forward");
}
END_TEST

/* The backward kernels on the same x, w, dy and the same statistics (the
 * reference forward's mean and rstd), for every combination the op makes:
 * dx stored (filled with NaN first), added to c ~ N(0,1) or not wanted;
 * dw and db each wanted or not; w or none. Bounds, per row, with g = dy w,
 * xhat = d rstd, a = mean(g), c = mean(g xhat) from the reference:
 *   the kernel's xhat_j errs by dh_j = rstd dd_j + 2u |xhat_j| (rstd as a
 *     float, the product), g_j by dg_j = u |g_j| (0 without w);
 *   a, from an 8-lane f32 sum: da = (sum dg + ceil(C/8) u sum |g|) / C +
 *     u |a| (as a float); c likewise, da_c = (sum (dg |xhat| + |g| dh) +
 *     (ceil(C/8) + 1) u sum |g xhat|) / C + u |c|;
 *   dx_j = rstd ((g_j - a) - xhat_j c): the errors above, three roundings
 *     inside, rstd's u and two more: |d dx_j| <= rstd (dg_j + da + dh_j |c|
 *     + |xhat_j| da_c + u (|g_j - a| + |xhat_j c| + 2 |e_j|)) + u |dx_j|,
 *     e_j the bracket; adding to c_j: u |c_j + dx_j| more;
 *   dw_j, db_j (double sums, from f32 sums over at most 8 rows): per row
 *     |dy| dh_j + 8u |dy xhat| (dw), 8u |dy| (db), and 2^-50 of the sum's
 *     size for the double additions. */
START_TEST(layernorm_backward_kernel_matches_reference)
{
    tally w = start(22);
    static const double offsets[2] = {0, 1e3};
    /* dx: 0 not wanted, 1 stored, 2 added; dw, db wanted */
    static const int modes[][3] = {{1, 1, 1}, {2, 1, 1}, {0, 1, 1}, {1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {0, 0, 1}};
    for (int li = 0; li < LN_NLENS; li++)
        for (int oi = 0; oi < 2; oi++)
            for (int has_w = 0; has_w < 2; has_w++)
                for (int mi = 0; mi < (int)(sizeof modes / sizeof modes[0]); mi++) {
                    const int C = LN_LENS[li], *mode = modes[mi];
                    ln_case c = ln_make(C, offsets[oi]);
                    const float *wp = has_w ? c.w : NULL;
                    const double *wp64 = has_w ? c.w64 : NULL;
                    double *y64 = dvec(LN_ROWS * C), mean[LN_ROWS], rstd[LN_ROWS];
                    tg_layernorm_forward_f64(LN_ROWS, C, c.x64, wp64, NULL, 1e-5, y64, mean, rstd);
                    float *gx = fvec(LN_ROWS * C), *acc_w = fvec(C), *acc_b = fvec(C);
                    for (int i = 0; i < LN_ROWS * C; i++) gx[i] = mode[0] == 2 ? randn(1) : NAN;
                    double *gx64 = widen(gx, LN_ROWS * C), *c0 = widen(gx, LN_ROWS * C);
                    double *gw = dvec(C), *gb = dvec(C), *gw64 = dvec(C), *gb64 = dvec(C);
                    tg_layernorm_backward_f32(LN_ROWS, C, c.x, wp, c.dy, mean, rstd, mode[0] ? gx : NULL, mode[0] == 1,
                                              mode[1] ? gw : NULL, mode[2] ? gb : NULL, acc_w, acc_b);
                    tg_layernorm_backward_f64(LN_ROWS, C, c.x64, wp64, c.dy64, mean, rstd, mode[0] ? gx64 : NULL,
                                              mode[0] == 1, mode[1] ? gw64 : NULL, mode[2] ? gb64 : NULL);
                    char what[80];
                    snprintf(what, sizeof what, "C %d offset %g w %d dx %d dw %d db %d", C, offsets[oi], has_w, mode[0],
                             mode[1], mode[2]);
                    double *bw = dvec(C), *bb = dvec(C); /* dw, db bounds, summed over rows */
                    for (int r = 0; r < LN_ROWS; r++) {
                        const double *x = c.x64 + r * C, *d = c.dy64 + r * C, m = mean[r], s = rstd[r];
                        double sg = 0, sgh = 0, ag = 0, agh = 0, dg_sum = 0, dgh_sum = 0;
                        for (int j = 0; j < C; j++) {
                            const double h = (x[j] - m) * s, g = has_w ? d[j] * c.w64[j] : d[j];
                            const double dh = s * ln_dd(x[j], m, 0) + 2 * U * fabs(h), dg = has_w ? U * fabs(g) : 0;
                            sg += g, sgh += g * h, ag += fabs(g), agh += fabs(g * h);
                            dg_sum += dg, dgh_sum += dg * fabs(h) + fabs(g) * dh;
                            bw[j] += fabs(d[j]) * dh + 8 * U * fabs(d[j] * h);
                            bb[j] += 8 * U * fabs(d[j]);
                        }
                        const double a = sg / C, cc = sgh / C;
                        const double da = (dg_sum + lanes_terms(C) * U * ag) / C + U * fabs(a);
                        const double dc = (dgh_sum + (lanes_terms(C) + 1) * U * agh) / C + U * fabs(cc);
                        for (int j = 0; j < C && mode[0]; j++) {
                            const int64_t i = (int64_t)r * C + j;
                            const double h = (x[j] - m) * s, g = has_w ? d[j] * c.w64[j] : d[j];
                            const double dh = s * ln_dd(x[j], m, 0) + 2 * U * fabs(h), dg = has_w ? U * fabs(g) : 0;
                            const double e = (g - a) - h * cc, dx = s * e;
                            const double bound = s *
                                    (dg + da + dh * fabs(cc) + fabs(h) * dc +
                                     U * (fabs(g - a) + fabs(h * cc) + 2 * fabs(e))) +
                                U * fabs(dx) + (mode[0] == 2 ? U * fabs(c0[i] + dx) : 0) + 4 * FLT_TRUE_MIN;
                            note(&w, what, i, gx[i], gx64[i], bound);
                        }
                    }
                    for (int j = 0; j < C; j++) {
                        if (mode[1]) note(&w, "dw", j, gw[j], gw64[j], bw[j] + 0x1p-50 * fabs(gw64[j]) + 1e-300);
                        if (mode[2]) note(&w, "db", j, gb[j], gb64[j], bb[j] + 0x1p-50 * fabs(gb64[j]) + 1e-300);
                        if (!mode[1]) ck_assert(gw[j] == 0);
                        if (!mode[2]) ck_assert(gb[j] == 0);
                        ck_assert_msg(acc_w[j] == 0 && acc_b[j] == 0, "%s: the f32 accumulators are left clear", what);
                    }
                    free(y64), free(gx), free(acc_w), free(acc_b), free(gx64), free(c0);
                    free(gw), free(gb), free(gw64), free(gb64), free(bw), free(bb);
                    ln_free(&c);
                }
    check_tally(&w, "layernorm backward");
}
END_TEST

/* f32 layernorm forward + backward against f64 on the same (f32-valued)
 * inputs: x (37, 77) = offset + N(0,1), w = 1 + N(0,1)/2, b, dy ~ N(0,1).
 * mode 0: w and b, all requiring grad; 1: no w, no b; 2: x a constant
 * (only dw and db: the accumulate-only path). Bounds:
 *   dx within 5e-7 (1 + |dx|): dx = rstd (g - mean g - xhat mean(g xhat)),
 *     a few f32 roundings (6e-8 each) on terms of size ~|g| ~ 1-3
 *     (measured 1.1e-7);
 *   dw, db within 2e-6 (1 + |.|): sums over 37 rows of terms ~1, f32
 *     within 8 rows, and the final f32 rounding (measured 6e-7). */
START_TEST(layernorm_f32_backward_matches_f64)
{
    enum { R = 37, C = 77 };
    static const double offsets[2] = {0.0, 1e3};
    for (int oi = 0; oi < 2; oi++)
        for (int mode = 0; mode < 3; mode++) {
            tg_graph *g = tg_graph_new();
            tg_tensor *x = tt_randn(g, TT_SHAPE(R, C), 70 + oi), *w = tt_randn(g, TT_SHAPE(C), 72),
                      *b = tt_randn(g, TT_SHAPE(C), 73), *dy = tt_randn(g, TT_SHAPE(R, C), 74);
            double *xd = x->data, *wd = w->data, *bd = b->data, *dyd = dy->data;
            float x32v[R * C], w32v[C], b32v[C], dy32v[R * C];
            for (int i = 0; i < R * C; i++) {
                xd[i] = x32v[i] = (float)(offsets[oi] + xd[i]);
                dyd[i] = dy32v[i] = (float)dyd[i];
            }
            for (int j = 0; j < C; j++) {
                wd[j] = w32v[j] = (float)(1 + 0.5 * wd[j]);
                bd[j] = b32v[j] = (float)bd[j];
            }
            tg_tensor *x32 = tg_tensor_from(g, TG_F32, TT_SHAPE(R, C), x32v);
            tg_tensor *w32 = tg_tensor_from(g, TG_F32, TT_SHAPE(C), w32v);
            tg_tensor *b32 = tg_tensor_from(g, TG_F32, TT_SHAPE(C), b32v);
            tg_tensor *xc = tg_tensor_from(g, TG_F64, TT_SHAPE(R, C), xd); /* x without grad */
            if (mode != 2) ck_assert_int_eq(tg_tensor_set_requires_grad(g, x32, true), 0);
            if (mode != 1) {
                ck_assert_int_eq(tg_tensor_set_requires_grad(g, w32, true), 0);
                ck_assert_int_eq(tg_tensor_set_requires_grad(g, b32, true), 0);
            }
            tg_tensor *xin = mode == 2 ? xc : x;
            tg_tensor *y = tg_layernorm(g, xin, mode == 1 ? NULL : w, mode == 1 ? NULL : b, 1e-5);
            tg_tensor *y32 = tg_layernorm(g, x32, mode == 1 ? NULL : w32, mode == 1 ? NULL : b32, 1e-5);
            ck_assert_msg(y && y32, "%s", tg_graph_error(g));
            ck_assert_int_eq(tg_graph_backward_seeded(g, y, dyd), 0);
            ck_assert_int_eq(tg_graph_backward_seeded(g, y32, dy32v), 0);
            double ex = 0, ew = 0, eb = 0;
            for (int i = 0; i < R * C && mode != 2; i++) {
                double want = ((double *)x->grad)[i];
                ex = fmax(ex, fabs(((float *)x32->grad)[i] - want) / (5e-7 * (1 + fabs(want))));
            }
            for (int j = 0; j < C && mode != 1; j++) {
                double ww = ((double *)w->grad)[j], wb = ((double *)b->grad)[j];
                ew = fmax(ew, fabs(((float *)w32->grad)[j] - ww) / (2e-6 * (1 + fabs(ww))));
                eb = fmax(eb, fabs(((float *)b32->grad)[j] - wb) / (2e-6 * (1 + fabs(wb))));
            }
            ck_assert_msg(ex <= 1, "offset %g mode %d: dx off by %.3g of its bound", offsets[oi], mode, ex);
            ck_assert_msg(ew <= 1, "offset %g mode %d: dw off by %.3g of its bound", offsets[oi], mode, ew);
            ck_assert_msg(eb <= 1, "offset %g mode %d: db off by %.3g of its bound", offsets[oi], mode, eb);
            if (getenv("TG_SPEEDPATH_VERBOSE"))
                fprintf(stderr, "offset %g mode %d: dx %.3g dw %.3g db %.3g of bound\n", offsets[oi], mode, ex, ew, eb);
            tg_graph_free(g);
        }
}
END_TEST

/* ---- cross-entropy kernels -------------------------------------------- */

enum { CE_ROWS = 29 };

/* logits x (CE_ROWS, v) ~ N(0, 2^2) with every 13th -inf (never at the
 * target), targets uniform in [0, v) with every 7th row ignored (-1) */
typedef struct ce_case {
    int v;
    float *x;
    double *x64;
    int32_t t[CE_ROWS];
} ce_case;

static ce_case ce_make(int v)
{
    ce_case c = {.v = v, .x = fvec(CE_ROWS * v)};
    for (int r = 0; r < CE_ROWS; r++) c.t[r] = r % 7 == 3 ? -1 : (int32_t)tg_rng_below(&rng, (uint32_t)v);
    for (int64_t i = 0; i < CE_ROWS * v; i++) c.x[i] = i % 13 == 5 && i % v != c.t[i / v] ? -INFINITY : randn(2);
    c.x64 = widen(c.x, CE_ROWS * v);
    return c;
}

static void ce_free(ce_case *c)
{
    free(c->x);
    free(c->x64);
}

/* Forward bounds, per counted row, from the reference's m = max_j x_j and
 * S = sum_j exp(x_j - m): the kernel's S errs by eps_S = EXP_ERR + u R +
 * (v - 1) u relative (as softmax's, R = max |x_j - m| over finite logits,
 * a plain sum of v terms), so lse = m + logf(S) by eps_S + 2u |log S| +
 * u |lse|; the total adds each row's lse - x_t rounded in f32 (u |lse -
 * x_t|) in double. Errors (a NaN or +inf in a counted row, a row of -inf)
 * and the rows never read (ignored ones, and in a NaN's row) as the
 * reference's. */
START_TEST(cross_entropy_forward_kernel_matches_reference)
{
    tally w = start(31);
    for (int li = 0; li < NLENS; li++)
        for (int part = 0; part < 2; part++) { /* all rows; rows [5, 20) */
            const int v = LENS[li];
            const int64_t lo = part ? 5 : 0, hi = part ? 20 : CE_ROWS;
            ce_case c = ce_make(v);
            float lse[CE_ROWS];
            double lse64[CE_ROWS], total, total64, bound_total = 0;
            int64_t wk, wr;
            ck_assert_int_eq(tg_cross_entropy_forward_f32(c.x, c.t, lo, hi, v, lse, &total, &wk), CE_OK);
            ck_assert_int_eq(tg_cross_entropy_forward_f64(c.x64, c.t, lo, hi, v, lse64, &total64, &wr), CE_OK);
            for (int64_t r = lo; r < hi; r++) {
                if (c.t[r] == -1) continue;
                const double *x = c.x64 + r * v;
                double m = -INFINITY, S = 0, R = 0;
                for (int j = 0; j < v; j++) m = fmax(m, x[j]);
                for (int j = 0; j < v; j++)
                    if (x[j] != -INFINITY) S += exp(x[j] - m), R = fmax(R, m - x[j]);
                const double eps_s = EXP_ERR + U * R + (v - 1) * U;
                const double bound = eps_s + 2 * U * fabs(log(S)) + U * fabs(lse64[r]);
                note(&w, "lse", r, lse[r], lse64[r], bound);
                bound_total += bound + U * fabs(lse64[r] - x[c.t[r]]);
            }
            note(&w, "total", lo, total, total64, bound_total + 0x1p-50 * fabs(total64));
            /* errors: a NaN in an ignored row is never read; NaN, +inf in
             * counted rows and a row of -inf are, at the first one */
            c.x[3 * v] = NAN;
            for (int bad = 0; bad < 3; bad++) {
                float *xb = fvec(CE_ROWS * v);
                memcpy(xb, c.x, sizeof(float) * CE_ROWS * v);
                const int64_t at = 12 * (int64_t)v + v / 2;
                if (bad < 2) xb[at] = bad ? INFINITY : NAN;
                for (int j = 0; j < v && bad == 2; j++) xb[16 * v + j] = -INFINITY;
                double *xb64 = widen(xb, CE_ROWS * v);
                int sk = tg_cross_entropy_forward_f32(xb, c.t, lo, hi, v, lse, &total, &wk);
                int sr = tg_cross_entropy_forward_f64(xb64, c.t, lo, hi, v, lse64, &total64, &wr);
                ck_assert_msg(sk == sr && (sk == CE_OK || wk == wr),
                              "v %d bad %d: kernel %d at %lld, reference %d at %lld", v, bad, sk, (long long)wk, sr,
                              (long long)wr);
                ck_assert_int_eq(sk, bad < 2 ? CE_BAD_LOGIT : CE_DEAD_ROW);
                ck_assert_int_eq(wk, bad < 2 ? at : 16);
                free(xb), free(xb64);
            }
            ce_free(&c);
        }
    check_tally(&w, "cross-entropy forward");
}
END_TEST

/* The backward kernel on the forward kernel's lse (as the op feeds it),
 * the reference on the same values, scale = 0.37 / 23 (dL / N); dx stored
 * (NaN first) or added to c ~ N(0,1). dx_j = scale fexp(x_j - lse) - [j ==
 * t] scale: the subtraction, fexp, the product and (at the target, or
 * adding to c) one more rounding each: |d dx_j| <= |scale| p_j (u |x_j -
 * lse| + EXP_ERR + u) + u |dx_j| (+ u |dx_j| at the target) (+ u |c_j +
 * scale p_j| when adding), p_j = exp(x_j - lse). A -inf logit gives
 * exactly 0; an ignored row exactly 0 (stored) or c (added). */
START_TEST(cross_entropy_backward_kernel_matches_reference)
{
    tally w = start(32);
    const float scale = (float)(0.37 / 23);
    for (int li = 0; li < NLENS; li++)
        for (int add = 0; add < 2; add++) {
            const int v = LENS[li];
            ce_case c = ce_make(v);
            float lse[CE_ROWS], *dx = fvec(CE_ROWS * v);
            double total;
            int64_t where;
            ck_assert_int_eq(tg_cross_entropy_forward_f32(c.x, c.t, 0, CE_ROWS, v, lse, &total, &where), CE_OK);
            for (int r = 0; r < CE_ROWS; r++)
                if (c.t[r] == -1) lse[r] = NAN; /* never read */
            for (int64_t i = 0; i < CE_ROWS * v; i++) dx[i] = add ? randn(1) : NAN;
            double *lse64 = widen(lse, CE_ROWS), *dx64 = widen(dx, CE_ROWS * v), *c0 = widen(dx, CE_ROWS * v);
            tg_cross_entropy_backward_f32(c.x, c.t, 0, CE_ROWS, v, lse, scale, dx, !add);
            tg_cross_entropy_backward_f64(c.x64, c.t, 0, CE_ROWS, v, lse64, scale, dx64, !add);
            char what[48];
            snprintf(what, sizeof what, "v %d add %d dx", v, add);
            for (int r = 0; r < CE_ROWS; r++)
                for (int j = 0; j < v; j++) {
                    const int64_t i = (int64_t)r * v + j;
                    const double x = c.x64[i];
                    double bound = 0; /* ignored rows, -inf logits: exact */
                    if (c.t[r] != -1 && x != -INFINITY) {
                        const double p = exp(x - lse64[r]), cj = add ? c0[i] : 0;
                        bound = fabs(scale) * p * (U * fabs(x - lse64[r]) + EXP_ERR + U) +
                            U * fabs(dx64[i]) * (j == c.t[r] ? 2 : 1) + (add ? U * fabs(cj + scale * p) : 0) +
                            4 * FLT_TRUE_MIN;
                    }
                    note(&w, what, i, dx[i], dx64[i], bound);
                }
            free(dx), free(lse64), free(dx64), free(c0);
            ce_free(&c);
        }
    check_tally(&w, "cross-entropy backward");
}
END_TEST

/* ---- GELU kernels ----------------------------------------------------- */

/* phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
static double ref_pdf(double x) { return INV_SQRT_2PI * exp(-0.5 * x * x); }

/* GELU's erf form, kernels against the references on x ~ N(0, 3^2) and
 * dy ~ N(0,1), every length in LENS and 1000; dx stored (NaN first) or
 * added to c ~ N(0,1). Bounds: Phi within 1e-7 and the slope Phi + x phi
 * within 1e-7 (1 + |x|) (tg_fphi's bound; phi_matches_libm_erf,
 * gelu_f32_dense_and_extreme), plus the rounding of z = x / sqrt 2 (2u
 * |x| with 1 / sqrt 2's own, moving Phi by phi(x) 2u |x| and the slope
 * by |2 - x^2| phi(x) 2u |x|), then one product with x or dy (u of the
 * result) and the add. */
START_TEST(gelu_kernels_match_reference)
{
    tally w = start(41);
    for (int li = 0; li <= NLENS; li++)
        for (int add = 0; add < 2; add++) {
            const int n = li < NLENS ? LENS[li] : 1000;
            float *x = fvec(n), *y = fvec(n), *dy = fvec(n), *dx = fvec(n);
            for (int i = 0; i < n; i++) x[i] = randn(3), dy[i] = randn(1), dx[i] = add ? randn(1) : NAN;
            double *x64 = widen(x, n), *dy64 = widen(dy, n), *dx64 = widen(dx, n), *c0 = widen(dx, n), *y64 = dvec(n);
            tg_gelu_forward_f32(n, x, y);
            tg_gelu_forward_f64(n, x64, y64);
            tg_gelu_backward_f32(n, x, dy, dx, add);
            tg_gelu_backward_f64(n, x64, dy64, dx64, add);
            for (int i = 0; i < n; i++) {
                const double v = x64[i], zr = 2 * U * fabs(v) * ref_pdf(v); /* z's rounding (and 1 / sqrt 2's) */
                const double slope = 0.5 * erfc(-v * INV_SQRT2) + v * ref_pdf(v), prod = dy64[i] * slope;
                note(&w, "gelu y", i, y[i], y64[i], fabs(v) * (1e-7 + zr) + U * fabs(y64[i]) + 4 * FLT_TRUE_MIN);
                note(&w, "gelu dx", i, dx[i], dx64[i],
                     fabs(dy64[i]) * (1e-7 * (1 + fabs(v)) + zr * fabs(2 - v * v)) + U * fabs(prod) +
                         (add ? U * fabs(dx64[i]) : 0) + 4 * FLT_TRUE_MIN);
            }
            free(x), free(y), free(dy), free(dx), free(x64), free(dy64), free(dx64), free(c0), free(y64);
        }
    check_tally(&w, "gelu");
}
END_TEST

/* GELU's tanh form, y = x S, S = (1 + tanh u) / 2, u = k (x + c x^3), in
 * f64 without cancellation: A = 2|u|, E = exp(-A), S = 1 / (1 + E) or
 * E / (1 + E) (x < 0), P = S (1 - S) = E / (1 + E)^2, D = 2u' = 2k + 6kc x^2,
 * the slope G = S + x D P */
typedef struct tanh_gelu {
    double A, E, S, P, D, Y, G;
} tanh_gelu;

static tanh_gelu tanh_gelu_at(double v)
{
    const double k2 = 2 * 0.79788456080286535588, k2c = k2 * 0.044715;
    tanh_gelu r;
    r.A = fabs(v) * (k2 + k2c * v * v);
    r.E = exp(-r.A);
    r.S = v < 0 ? r.E / (1 + r.E) : 1 / (1 + r.E);
    r.P = r.E / ((1 + r.E) * (1 + r.E));
    r.D = k2 + 3 * k2c * v * v;
    r.Y = v * r.S;
    r.G = r.S + v * r.D * r.P;
    return r;
}

/* Forward and backward on x + k (n - k elements) give the bits of the
 * call on all n: an element's result does not depend on where it falls
 * (vector body or tail, the part a thread gets). */
static void gelu_tanh_bits_anywhere(int n, const float *x, const float *dy, const float *c0, const float *y,
                                    const float *dx, bool add)
{
    for (int k = 1; k < n && k < 8; k += 3) {
        float *y1 = fvec(n), *dx1 = fvec(n);
        memcpy(dx1, c0, (size_t)n * sizeof *dx1);
        tg_gelu_tanh_forward_f32(n - k, x + k, y1 + k);
        tg_gelu_tanh_backward_f32(n - k, x + k, dy + k, dx1 + k, add);
        for (int i = k; i < n; i++)
            ck_assert_msg(!memcmp(&y1[i], &y[i], sizeof *y) && !memcmp(&dx1[i], &dx[i], sizeof *dx),
                          "gelu tanh x[%d] = %.9g: y %.9g / %.9g, dx %.9g / %.9g, from element %d of %d", i, x[i],
                          y1[i], y[i], dx1[i], dx[i], k, n);
        free(y1), free(dx1);
    }
}

/* GELU's tanh form, kernels against the references, on x ~ N(0, 3^2) and
 * dy ~ N(0,1), every length in LENS and 1000, and at edges (0, -0, tiny,
 * either side of the step at a = 87 and past a = 88.4, where e's
 * unclamped exponent bits wrap, the tails, huge); dx stored (NaN
 * first) or added to c ~ N(0,1). Bounds, in the exact quantities of
 * tanh_gelu_at:
 *   a = |x| (2k + 2kc x^2) in f32: x^2, the constants, the product, the
 *     sum (no cancellation: both terms > 0) and |x| times it: 5u A; so
 *     e = exp(-a) within de = EXP_ERR + 5u A (relative);
 *   1 / (1 + e) moves by P de (relative e / (1 + E) of de) plus 2
 *     roundings, e / (1 + e) by P de (relative de / (1 + E)) plus 3: so
 *     y = x / (1 + e) or x e / (1 + e) within |x| P de + 3u |y|, and
 *     s within P de + 3u S;
 *   q = x (2k + 6kc x^2) e r^2, r = 1 / (1 + e): e's de and r^2's -2 E /
 *     (1 + E) de make (1 - E) / (1 + E) de, at most de, then 12
 *     roundings (2u' 5, r twice 2 each, 3 products): |x D P| (de + 12u);
 *     the sum s + q: u |G|;
 *   dx = dy g: u |dx| more, and the add (u of the sum);
 *   the reference's own 1 + tanh u (tanh's and the add's roundings in
 *     f64, a few 2^-53): 2^-50 |x| in y, 2^-50 (1 + |x D|) in the slope
 *     (the sum that carries y at x < -6, where it cancels to about 0). */
START_TEST(gelu_tanh_kernels_match_reference)
{
    static const float edges[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 1e-40f, -1e-40f, 9.98f, -9.98f,
                                  9.99f, -9.99f, 10.0f,  -10.0f,  10.05f, -10.05f, 10.5f, -10.5f,
                                  -4.0f, -6.0f,  -8.0f,  3e4f,    -3e4f,  1e19f,   -1e19f};
    enum { NE = sizeof edges / sizeof edges[0] };
    tally w = start(43);
    for (int li = 0; li <= NLENS + 1; li++)
        for (int add = 0; add < 2; add++) {
            const int n = li < NLENS ? LENS[li] : li == NLENS ? 1000 : NE;
            float *x = fvec(n), *y = fvec(n), *dy = fvec(n), *dx = fvec(n), *c = fvec(n);
            for (int i = 0; i < n; i++) x[i] = li > NLENS ? edges[i] : randn(3), dy[i] = randn(1);
            for (int i = 0; i < n; i++) c[i] = dx[i] = add ? randn(1) : NAN;
            double *x64 = widen(x, n), *dy64 = widen(dy, n), *dx64 = widen(dx, n), *y64 = dvec(n);
            tg_gelu_tanh_forward_f32(n, x, y);
            tg_gelu_tanh_forward_f64(n, x64, y64);
            tg_gelu_tanh_backward_f32(n, x, dy, dx, add);
            tg_gelu_tanh_backward_f64(n, x64, dy64, dx64, add);
            for (int i = 0; i < n; i++) {
                const double v = x64[i], ref = 0x1p-50;
                const tanh_gelu r = tanh_gelu_at(v);
                const double de = EXP_ERR + 5 * U * r.A, q = fabs(v * r.D * r.P);
                note(&w, "gelu_tanh y", i, y[i], y64[i],
                     fabs(v) * (r.P * de + ref) + 3 * U * fabs(r.Y) + 4 * FLT_TRUE_MIN);
                const double dg =
                    r.P * de + 3 * U * r.S + q * (de + 12 * U) + U * fabs(r.G) + ref * (1 + fabs(v * r.D));
                note(&w, "gelu_tanh dx", i, dx[i], dx64[i],
                     fabs(dy64[i]) * dg + U * fabs(dy64[i] * r.G) + (add ? U * fabs(dx64[i]) : 0) + 4 * FLT_TRUE_MIN);
            }
            gelu_tanh_bits_anywhere(n, x, dy, c, y, dx, add);
            free(x), free(y), free(dy), free(dx), free(c), free(x64), free(dy64), free(dx64), free(y64);
        }
    check_tally(&w, "gelu tanh");
}
END_TEST

/* Phi(x) = erfc(-x / sqrt 2) / 2 in f64 (erfc keeps the tail exact) */
static double ref_cdf(double x) { return 0.5 * erfc(-x * INV_SQRT2); }

/* Runs f32 GELU forward and backward (dy = 1) on n points. */
static void gelu_f32(tg_graph *g, tg_gelu_mode mode, int n, const float *xv, const float **y, const float **dx)
{
    float *seed = malloc((size_t)n * sizeof *seed);
    for (int i = 0; i < n; i++) seed[i] = 1.0f;
    tg_tensor *x = tg_tensor_from(g, TG_F32, TT_SHAPE(n), xv);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, x, true), 0);
    tg_tensor *yt = tg_gelu(g, x, mode);
    ck_assert_ptr_nonnull(yt);
    ck_assert_int_eq(tg_graph_backward_seeded(g, yt, seed), 0);
    free(seed);
    *y = yt->data;
    *dx = x->grad;
}

/* x = -10 .. 10 every 1e-3 (20001 points) and |x| up to 1e30.
 * Bounds, from tg_fphi's (ops/fastmath_internal.h: Phi within 1e-7
 * absolute, checked by phi_matches_libm_erf above) and the f32 rounding
 * of the products:
 *   forward  |y - x Phi(x)|         <= 1e-7 |x| + 6e-8 |y|
 *   backward |dx - (Phi + x phi)|   <= 1e-7 (1 + |x|) + 1.2e-7 |dx|
 *   tail, x in [-5.5, -1]: |y - x Phi(x)| <= 5e-6 |x Phi(x)| (relative:
 *   Phi keeps relative accuracy where 1 + erf cancels; the f32 rounding of
 *   x^2 / 2, ~6e-8 x^2 / 2 relative in exp(-x^2/2), is most of it).
 * Measured: 0.58, 0.38 and 0.41 of these bounds. */
START_TEST(gelu_f32_dense_and_extreme)
{
    enum { NG = 20001, NX = 14 };
    static const float extra[NX] = {13.19f,  -13.19f, 13.2f, -13.2f, 20.0f,  -20.0f, 100.0f,
                                    -100.0f, 1e4f,    -1e4f, 1e30f,  -1e30f, 1e-40f, -1e-40f};
    float *xv = malloc((NG + NX) * sizeof *xv);
    for (int i = 0; i < NG; i++) xv[i] = (float)((i - 10000) * 1e-3);
    for (int i = 0; i < NX; i++) xv[NG + i] = extra[i];
    tg_graph *g = tg_graph_new();
    const float *y, *dx;
    gelu_f32(g, TG_GELU_ERF, NG + NX, xv, &y, &dx);
    double wy = 0, wd = 0, wt = 0;
    for (int i = 0; i < NG + NX; i++) {
        double v = xv[i], cdf = ref_cdf(v), ye = v * cdf;
        double de = cdf + v * INV_SQRT_2PI * exp(-0.5 * v * v);
        wy = fmax(wy, fabs(y[i] - ye) / (1e-7 * fabs(v) + 6e-8 * fabs(ye) + 1e-45));
        wd = fmax(wd, fabs(dx[i] - de) / (1e-7 * (1 + fabs(v)) + 1.2e-7 * fabs(de)));
        if (v >= -5.5 && v <= -1) wt = fmax(wt, fabs(y[i] - ye) / (5e-6 * fabs(ye)));
    }
    if (getenv("TG_SPEEDPATH_VERBOSE")) fprintf(stderr, "gelu: fwd %.3g bwd %.3g tail %.3g of bound\n", wy, wd, wt);
    ck_assert_msg(wy <= 1, "gelu f32 forward off by %.3g of its bound", wy);
    ck_assert_msg(wd <= 1, "gelu f32 backward off by %.3g of its bound", wd);
    ck_assert_msg(wt <= 1, "gelu f32 tail off by %.3g of its bound", wt);
    /* exact values: gelu(0) = 0 with slope 1/2; x Phi(x) = x once Phi
     * rounds to 1 */
    ck_assert_float_eq(y[10000], 0.0f);
    ck_assert_float_eq(dx[10000], 0.5f);
    ck_assert_float_eq(y[NG + 4], 20.0f);
    ck_assert_float_eq(dx[NG + 4], 1.0f);
    free(xv);
    tg_graph_free(g);
}
END_TEST

/* The tanh form on gelu_f32_dense_and_extreme's points (-10 .. 10 every
 * 1e-3, |x| up to 1e30) against tanh_gelu_at, held to the erf form's
 * bounds:
 *   forward  |y - x S|       <= 1e-7 |x| + 6e-8 |y|
 *   backward |dx - G|        <= 1e-7 (1 + |x|) + 1.2e-7 |dx|
 *   tail, x in [-5.5, -1]: |y - x S| <= 5e-6 |x S| (the sigmoid form
 *   keeps S's relative accuracy there; most of what is left is the f32
 *   rounding of a = 2|u|, 5u a relative in e, a <= 21). */
START_TEST(gelu_tanh_f32_dense_and_extreme)
{
    enum { NG = 20001, NX = 14 };
    static const float extra[NX] = {9.98f,   -9.98f, 10.0f, -10.0f, 20.0f,  -20.0f, 100.0f,
                                    -100.0f, 1e4f,   -1e4f, 1e30f,  -1e30f, 1e-40f, -1e-40f};
    float *xv = malloc((NG + NX) * sizeof *xv);
    for (int i = 0; i < NG; i++) xv[i] = (float)((i - 10000) * 1e-3);
    for (int i = 0; i < NX; i++) xv[NG + i] = extra[i];
    tg_graph *g = tg_graph_new();
    const float *y, *dx;
    gelu_f32(g, TG_GELU_TANH, NG + NX, xv, &y, &dx);
    double wy = 0, wd = 0, wt = 0;
    for (int i = 0; i < NG + NX; i++) {
        const double v = xv[i];
        const tanh_gelu r = tanh_gelu_at(v);
        wy = fmax(wy, fabs(y[i] - r.Y) / (1e-7 * fabs(v) + 6e-8 * fabs(r.Y) + 1e-45));
        wd = fmax(wd, fabs(dx[i] - r.G) / (1e-7 * (1 + fabs(v)) + 1.2e-7 * fabs(r.G)));
        if (v >= -5.5 && v <= -1) wt = fmax(wt, fabs(y[i] - r.Y) / (5e-6 * fabs(r.Y)));
    }
    if (getenv("TG_SPEEDPATH_VERBOSE"))
        fprintf(stderr, "gelu tanh: fwd %.3g bwd %.3g tail %.3g of bound\n", wy, wd, wt);
    ck_assert_msg(wy <= 1, "gelu tanh f32 forward off by %.3g of its bound", wy);
    ck_assert_msg(wd <= 1, "gelu tanh f32 backward off by %.3g of its bound", wd);
    ck_assert_msg(wt <= 1, "gelu tanh f32 tail off by %.3g of its bound", wt);
    /* exact values: gelu(0) = 0 with slope 1/2; x past the step */
    ck_assert_float_eq(y[10000], 0.0f);
    ck_assert_float_eq(dx[10000], 0.5f);
    ck_assert_float_eq(y[NG + 4], 20.0f);
    ck_assert_float_eq(dx[NG + 4], 1.0f);
    ck_assert(y[NG + 5] == 0.0f && dx[NG + 5] == 0.0f);
    free(xv);
    tg_graph_free(g);
}
END_TEST

/* Infinities and NaN as with libm and the f64 path, both forms (_i):
 * gelu(inf) = inf, gelu(-inf) = -inf * 0 = NaN, NaN stays NaN in y and
 * dx; FLT_MAX passes through with slope exactly 1 (0 at -FLT_MAX: x phi(x)
 * is 0 there, not x times a clamped exp, which gave 2.97); at +-inf the
 * slope is NaN (Phi + x phi = 1 + inf 0, as in f64 and PyTorch; the tanh
 * form's (1 + t) / 2 + x (1 - t^2) u' / 2 likewise). */
START_TEST(gelu_f32_nonfinite)
{
    const float xv[5] = {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX};
    tg_graph *g = tg_graph_new();
    const float *y, *dx;
    gelu_f32(g, _i ? TG_GELU_TANH : TG_GELU_ERF, 5, xv, &y, &dx);
    ck_assert(isinf(y[0]) && y[0] > 0);
    ck_assert(isnan(y[1]));
    ck_assert(isnan(y[2]) && isnan(dx[2]));
    ck_assert_float_eq(y[3], FLT_MAX);
    ck_assert(y[4] == 0.0f);
    ck_assert(isnan(dx[0]) && isnan(dx[1]));
    ck_assert_float_eq(dx[3], 1.0f);
    ck_assert_float_eq(dx[4], 0.0f);
    tg_graph_free(g);
}
END_TEST

/* ---- the ops run the tuned kernels ------------------------------------ */

static void assert_same_bits(const char *what, const float *op, const float *kernel, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&op[i], &kernel[i], sizeof(float)) == 0, "%s[%lld]: the op gives %.9g, the kernel %.9g",
                      what, (long long)i, op[i], kernel[i]);
}

/* a graph for an op's run, on one thread (one part: one kernel call),
 * with the test's random stream seeded */
static tg_graph *op_graph(uint64_t seed)
{
    ck_assert_int_eq(tg_num_threads(), 1);
    tg_rng_seed(&rng, seed, 1);
    return tg_graph_new();
}

static tg_tensor *leaf32(tg_graph *g, int ndim, const int *shape, const float *v)
{
    tg_tensor *t = tg_tensor_from(g, TG_F32, ndim, shape, v);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, t, true), 0);
    return t;
}

/* f32 softmax (masked, zero rows) and log_softmax, outputs and input
 * gradients (new: stored), against the kernels called directly on the
 * same values: the same bits; the f64 references rounded to f32 differ. */
START_TEST(softmax_ops_run_the_kernels)
{
    tg_graph *g = op_graph(51);
    for (int log_out = 0; log_out < 2; log_out++) {
        sm_case c = sm_make(33, log_out ? 0 : 1);
        const int n = c.n;
        const int64_t N = c.rows * n;
        float *dy = fvec(N), *y = fvec(N), *dx = fvec(N);
        for (int64_t i = 0; i < N; i++) dy[i] = randn(1);
        tg_tensor *x = leaf32(g, TT_SHAPE(2, 3, 5, 33), c.x);
        tg_tensor *mask = c.m ? tg_tensor_from(g, TG_BOOL, TT_SHAPE(5, 33), c.m) : NULL;
        tg_tensor *yo = log_out ? tg_log_softmax(g, x, mask) : tg_softmax_ex(g, x, mask, TG_SOFTMAX_ZERO_BLOCKED_ROWS);
        ck_assert_msg(yo, "%s", tg_graph_error(g));
        ck_assert_int_eq(tg_graph_backward_seeded(g, yo, dy), 0);
        uint8_t *scratch = calloc((size_t)n, 1);
        int64_t where;
        const int status =
            tg_softmax_forward_f32(c.x, y, c.dim, c.m, c.ms, log_out, !log_out, scratch, 0, c.rows, &where);
        ck_assert_int_eq(status, SCORES_OK);
        if (log_out) tg_log_softmax_backward_f32(yo->data, dy, dx, c.rows, n, true);
        else tg_softmax_backward_f32(yo->data, dy, dx, c.rows, n, true);
        assert_same_bits(log_out ? "log_softmax y" : "softmax y", yo->data, y, N);
        assert_same_bits(log_out ? "log_softmax dx" : "softmax dx", x->grad, dx, N);
        double *y64 = dvec(N), *yw = widen(y, N), *dy64 = widen(dy, N), *dx64 = dvec(N);
        tg_softmax_forward_f64(c.x64, y64, c.dim, c.m, c.ms, log_out, !log_out, 0, c.rows, &where);
        if (log_out) tg_log_softmax_backward_f64(yw, dy64, dx64, c.rows, n, true);
        else tg_softmax_backward_f64(yw, dy64, dx64, c.rows, n, true);
        assert_not_reference(log_out ? "log_softmax y" : "softmax y", y, y64, N);
        assert_not_reference(log_out ? "log_softmax dx" : "softmax dx", dx, dx64, N);
        free(dy), free(y), free(dx), free(scratch), free(y64), free(yw), free(dy64), free(dx64);
        sm_free(&c);
    }
    tg_graph_free(g);
}
END_TEST

/* f32 layernorm with w and b: y, dx, dw and db as the kernels give them
 * (dw, db: the kernel's double sums rounded once, as the op adds its one
 * part, on one thread, to the new gradients' zeros); not the references'
 * (which would give other bits). */
START_TEST(layernorm_op_runs_the_kernels)
{
    tg_graph *g = op_graph(52);
    ln_case c = ln_make(77, 3);
    const int C = c.C;
    tg_tensor *x = leaf32(g, TT_SHAPE(LN_ROWS, C), c.x), *w = leaf32(g, TT_SHAPE(C), c.w),
              *b = leaf32(g, TT_SHAPE(C), c.b);
    tg_tensor *yo = tg_layernorm(g, x, w, b, 1e-5);
    ck_assert_msg(yo, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, yo, c.dy), 0);
    float *y = fvec(LN_ROWS * C), *dx = fvec(LN_ROWS * C), *acc_w = fvec(C), *acc_b = fvec(C), *dw = fvec(C),
          *db = fvec(C);
    double mean[LN_ROWS], rstd[LN_ROWS], *gw = dvec(C), *gb = dvec(C);
    tg_layernorm_forward_f32(LN_ROWS, C, c.x, c.w, c.b, 1e-5, y, mean, rstd);
    tg_layernorm_backward_f32(LN_ROWS, C, c.x, c.w, c.dy, mean, rstd, dx, true, gw, gb, acc_w, acc_b);
    for (int j = 0; j < C; j++) dw[j] = (float)gw[j], db[j] = (float)gb[j];
    assert_same_bits("layernorm y", yo->data, y, LN_ROWS * C);
    assert_same_bits("layernorm dx", x->grad, dx, LN_ROWS * C);
    assert_same_bits("layernorm dw", w->grad, dw, C);
    assert_same_bits("layernorm db", b->grad, db, C);
    double *y64 = dvec(LN_ROWS * C), *dx64 = dvec(LN_ROWS * C), mean64[LN_ROWS], rstd64[LN_ROWS];
    tg_layernorm_forward_f64(LN_ROWS, C, c.x64, c.w64, c.b64, 1e-5, y64, mean64, rstd64);
    tg_layernorm_backward_f64(LN_ROWS, C, c.x64, c.w64, c.dy64, mean64, rstd64, dx64, true, NULL, NULL);
    assert_not_reference("layernorm y", y, y64, LN_ROWS * C);
    assert_not_reference("layernorm dx", dx, dx64, LN_ROWS * C);
    free(y), free(dx), free(y64), free(dx64);
    free(acc_w), free(acc_b), free(gw), free(gb), free(dw), free(db);
    ln_free(&c);
    tg_graph_free(g);
}
END_TEST

/* f32 cross-entropy: the loss is the kernel's total over the counted rows
 * (rounded once), dlogits the kernel's with scale dL / N; not the
 * references' */
START_TEST(cross_entropy_op_runs_the_kernels)
{
    tg_graph *g = op_graph(53);
    const int v = 65;
    ce_case c = ce_make(v);
    int count = 0;
    for (int r = 0; r < CE_ROWS; r++) count += c.t[r] != -1;
    tg_tensor *x = leaf32(g, TT_SHAPE(CE_ROWS, v), c.x), *t = tg_tensor_from(g, TG_I32, TT_SHAPE(CE_ROWS), c.t);
    tg_tensor *loss = tg_cross_entropy(g, x, t);
    ck_assert_msg(loss, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward(g, loss), 0);
    float lse[CE_ROWS], *dx = fvec(CE_ROWS * v);
    double total, lse64[CE_ROWS], total64;
    int64_t where;
    ck_assert_int_eq(tg_cross_entropy_forward_f32(c.x, c.t, 0, CE_ROWS, v, lse, &total, &where), CE_OK);
    const float want = (float)(total / count), scale = (float)(1.0 / count);
    tg_cross_entropy_backward_f32(c.x, c.t, 0, CE_ROWS, v, lse, scale, dx, true);
    assert_same_bits("cross-entropy loss", loss->data, &want, 1);
    assert_same_bits("cross-entropy dx", x->grad, dx, CE_ROWS * v);
    tg_cross_entropy_forward_f64(c.x64, c.t, 0, CE_ROWS, v, lse64, &total64, &where);
    double *dx64 = dvec(CE_ROWS * v);
    tg_cross_entropy_backward_f64(c.x64, c.t, 0, CE_ROWS, v, lse64, 1.0 / count, dx64, true);
    assert_not_reference("cross-entropy lse", lse, lse64, CE_ROWS);
    assert_not_reference("cross-entropy dx", dx, dx64, CE_ROWS * v);
    tg_graph_free(g);
    ce_free(&c);
    free(dx), free(dx64);
}
END_TEST

/* f32 GELU (erf): y and dx as the kernels give them; not the references' */
START_TEST(gelu_op_runs_the_kernels)
{
    enum { N = 1001 };
    tg_graph *g = op_graph(54);
    float xv[N], dyv[N], y[N], dx[N];
    for (int i = 0; i < N; i++) xv[i] = randn(3), dyv[i] = randn(1);
    tg_tensor *x = leaf32(g, TT_SHAPE(N), xv), *yo = tg_gelu(g, x, TG_GELU_ERF);
    ck_assert_msg(yo, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, yo, dyv), 0);
    tg_gelu_forward_f32(N, xv, y);
    tg_gelu_backward_f32(N, xv, dyv, dx, false);
    assert_same_bits("gelu y", yo->data, y, N);
    assert_same_bits("gelu dx", x->grad, dx, N);
    double *x64 = widen(xv, N), *dy64 = widen(dyv, N), *y64 = dvec(N), *dx64 = dvec(N);
    tg_gelu_forward_f64(N, x64, y64);
    tg_gelu_backward_f64(N, x64, dy64, dx64, false);
    assert_not_reference("gelu y", y, y64, N);
    assert_not_reference("gelu dx", dx, dx64, N);
    free(x64), free(dy64), free(y64), free(dx64);
    tg_graph_free(g);
}
END_TEST

/* f32 GELU (tanh): the same */
START_TEST(gelu_tanh_op_runs_the_kernels)
{
    enum { N = 1001 };
    tg_graph *g = op_graph(56);
    float xv[N], dyv[N], y[N], dx[N];
    for (int i = 0; i < N; i++) xv[i] = randn(3), dyv[i] = randn(1);
    tg_tensor *x = leaf32(g, TT_SHAPE(N), xv), *yo = tg_gelu(g, x, TG_GELU_TANH);
    ck_assert_msg(yo, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, yo, dyv), 0);
    tg_gelu_tanh_forward_f32(N, xv, y);
    tg_gelu_tanh_backward_f32(N, xv, dyv, dx, false);
    assert_same_bits("gelu tanh y", yo->data, y, N);
    assert_same_bits("gelu tanh dx", x->grad, dx, N);
    double *x64 = widen(xv, N), *dy64 = widen(dyv, N), *y64 = dvec(N), *dx64 = dvec(N);
    tg_gelu_tanh_forward_f64(N, x64, y64);
    tg_gelu_tanh_backward_f64(N, x64, dy64, dx64, false);
    assert_not_reference("gelu tanh y", y, y64, N);
    assert_not_reference("gelu tanh dx", dx, dx64, N);
    free(x64), free(dy64), free(y64), free(dx64);
    tg_graph_free(g);
}
END_TEST

/* ---- the logit cap ----------------------------------------------------- */

/* y = s tanh(x / s): the kernel against the f64 reference, caps 0.3, 2.5
 * and 15, x ~ N(0, (2s)^2) (both sides of the series/exp switch at
 * |x / s| = 0.3), every length in LENS and 1000, and at 0, -0, +-0.3 s
 * (the switch), tiny, huge, +-inf and NaN. Bound, with u = x / s and
 * t = tanh u: the rounding of 1 / s and of x (1 / s) (2u |u|, moving t by
 * (1 - t^2) of it); the series' roundings (4u |t|); the exp side's e =
 * exp(-2|u|) within EXP_ERR plus 2|u|'s rounding (2u |u| of e), moving t
 * by 2e / (1 + e)^2 of e's relative error, and the quotient's (3u |t|);
 * then the product with s (u |y|). */
START_TEST(softcap_kernel_matches_reference)
{
    tally w = start(61);
    const float caps[] = {0.3f, 2.5f, 15.0f};
    for (int c = 0; c < 3; c++)
        for (int li = 0; li <= NLENS + 1; li++) {
            const float s = caps[c];
            const int n = li < NLENS ? LENS[li] : li == NLENS ? 1000 : 12;
            float *x = fvec(n), *y = fvec(n);
            for (int i = 0; i < n; i++) x[i] = randn(2 * s);
            if (li == NLENS + 1) { /* the edges */
                const float e[12] = {0.0f,      -0.0f,   0.3f * s, -0.3f * s, nextafterf(0.3f * s, 0),
                                     1e-30f,    -1e-30f, 1e30f,    -1e30f,    INFINITY,
                                     -INFINITY, NAN};
                memcpy(x, e, sizeof e);
            }
            double *x64 = widen(x, n), *y64 = dvec(n);
            tg_softcap_forward_f32(n, s, x, y);
            tg_softcap_forward_f64(n, s, x64, y64);
            for (int i = 0; i < n; i++) {
                if (isnan(x64[i])) {
                    ck_assert_msg(isnan(y[i]), "softcap of NaN is %g", y[i]);
                    continue;
                }
                if (x64[i] == 0)
                    ck_assert_msg(y[i] == 0 && signbit(y[i]) == signbit(x[i]), "softcap(%g) = %g", x[i], y[i]);
                const double u = fabs(x64[i] / s), t = tanh(u), e = exp(-2 * u);
                const double bound =
                    s * ((1 - t * t) * 2 * U * u + 2 * e / ((1 + e) * (1 + e)) * (EXP_ERR + 2 * U * u) + 4 * U * t) +
                    U * fabs(y64[i]) + 4 * FLT_TRUE_MIN;
                note(&w, "softcap y", i, y[i], y64[i], bound);
            }
            free(x), free(y), free(x64), free(y64);
        }
    check_tally(&w, "softcap");
}
END_TEST

/* The f32 op runs the kernel (forward) and its backward from y. */
START_TEST(softcap_op_runs_the_kernel)
{
    enum { N = 1001 };
    tg_graph *g = op_graph(55);
    float xv[N], dyv[N], y[N];
    for (int i = 0; i < N; i++) xv[i] = randn(20), dyv[i] = randn(1);
    tg_tensor *x = leaf32(g, TT_SHAPE(N), xv), *yo = tg_softcap(g, x, 7.5);
    ck_assert_msg(yo, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, yo, dyv), 0);
    tg_softcap_forward_f32(N, 7.5f, xv, y);
    assert_same_bits("softcap y", yo->data, y, N);
    double *x64 = widen(xv, N), *y64 = dvec(N);
    tg_softcap_forward_f64(N, 7.5, x64, y64);
    assert_not_reference("softcap y", y, y64, N);
    for (int i = 0; i < N; i++) { /* dx = dy (1 - (y / s)^2), from the kernel's y */
        const double t = y64[i] / 7.5, want = dyv[i] * (1 - t * t);
        ck_assert_msg(fabs(((float *)x->grad)[i] - want) <= 1e-6 * (fabs(dyv[i]) + 1e-30), "dx[%d] %.9g want %.9g", i,
                      ((float *)x->grad)[i], want);
    }
    free(x64), free(y64);
    tg_graph_free(g);
}
END_TEST

/* ---- main ------------------------------------------------------------- */

int main(void)
{
    printf("f32 kernels: the %s path (core/cpu.h; TG_ISA caps it)\n", tg_isa_name(tg_isa_active()));
    Suite *s = suite_create("kernels_f32");
    tt_tcase(s, "fastmath", 120, TT_TESTS(phi_matches_libm_erf, fexp_matches_libm_exp));
    tt_tcase(s, "kernels", 60,
             TT_TESTS(softmax_forward_kernel_matches_reference, softmax_forward_kernel_errors_match_reference,
                      softmax_backward_kernels_match_reference, layernorm_forward_kernel_matches_reference,
                      layernorm_backward_kernel_matches_reference, cross_entropy_forward_kernel_matches_reference,
                      cross_entropy_backward_kernel_matches_reference, gelu_kernels_match_reference,
                      gelu_tanh_kernels_match_reference, softcap_kernel_matches_reference));
    tt_tcase(s, "ops", 0,
             TT_TESTS(softmax_ops_run_the_kernels, layernorm_op_runs_the_kernels, cross_entropy_op_runs_the_kernels,
                      gelu_op_runs_the_kernels, gelu_tanh_op_runs_the_kernels, softmax_f32_matches_f64,
                      layernorm_f32_backward_matches_f64, gelu_f32_dense_and_extreme, gelu_tanh_f32_dense_and_extreme,
                      TT_LOOP(gelu_f32_nonfinite, 2), softcap_op_runs_the_kernel));
    return tt_run(s);
}
