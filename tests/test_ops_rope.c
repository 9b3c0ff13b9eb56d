/* ops: rotary position embedding (tg_rope). */
#include "tg_test.h"

/* The rotation written out for one element pair: angle p theta^(-2i/d). */
static void rope_naive(const double *x, int B, int T, int D, int hd, int n_rot, int pos0, double theta, bool halves,
                       double *y)
{
    memcpy(y, x, sizeof *y * (size_t)B * T * D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < n_rot; h++)
                for (int i = 0; i < hd / 2; i++) {
                    const double a = (pos0 + t) * pow(theta, -2.0 * i / hd);
                    const int base = ((b * T + t) * D) + h * hd;
                    const int k0 = base + (halves ? i : 2 * i), k1 = halves ? k0 + hd / 2 : k0 + 1;
                    y[k0] = x[k0] * cos(a) - x[k1] * sin(a);
                    y[k1] = x[k0] * sin(a) + x[k1] * cos(a);
                }
}

typedef struct {
    int hd, n_rot, pos0, flags;
    double theta;
} rope_ctx;

static tg_tensor *rope_fn(tg_graph *g, tg_tensor **in, void *ctx)
{
    const rope_ctx *c = ctx;
    return tg_rope(g, in[0], c->hd, c->n_rot, c->pos0, c->theta, c->flags);
}

/* forward against the formula, and gradcheck of the backward (the
 * inverse rotation), for both pairings, odd sizes, one head, a pos0
 * offset and heads left unrotated */
START_TEST(rope_matches_the_formula_and_gradchecks)
{
    const struct {
        int B, T, H, hd, n_rot, pos0;
        double theta;
    } cases[] = {
        {2, 5, 3, 4, 3, 0, 10000}, {1, 7, 1, 6, 1, 3, 10000},  {2, 3, 4, 2, 2, 11, 500},
        {1, 1, 2, 8, 2, 0, 10000}, {3, 4, 5, 10, 4, 250, 1e6},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int halves = 0; halves < 2; halves++) {
            const int B = cases[c].B, T = cases[c].T, D = cases[c].H * cases[c].hd;
            tg_graph *g = tg_graph_new();
            tg_tensor *x = tt_randn(g, TT_SHAPE(B, T, D), 10 + c);
            rope_ctx ctx = {cases[c].hd, cases[c].n_rot, cases[c].pos0, halves ? TG_ROPE_HALVES : TG_ROPE_INTERLEAVED,
                            cases[c].theta};
            tg_tensor *y = rope_fn(g, &x, &ctx);
            ck_assert_msg(y != NULL, "%s", tg_graph_error(g));
            double *want = malloc(sizeof *want * (size_t)x->numel);
            rope_naive(x->data, B, T, D, ctx.hd, ctx.n_rot, ctx.pos0, ctx.theta, halves, want);
            for (int64_t i = 0; i < x->numel; i++)
                ck_assert_msg(fabs(((double *)y->data)[i] - want[i]) <= 1e-14 * (1 + fabs(want[i])),
                              "case %zu halves %d element %lld: %.17g vs %.17g", c, halves, (long long)i,
                              ((double *)y->data)[i], want[i]);
            free(want);
            tt_assert_gradcheck(rope_fn, &ctx, 1, &x);
            tg_graph_free(g);
        }
}
END_TEST

/* With a KV cache a chunk starts at pos0 = the cache length: rotating
 * rows t0.. of a sequence with pos0 = t0 gives exactly rows t0.. of the
 * whole sequence rotated from 0 (the same angles, bit for bit) */
START_TEST(rope_offset_equals_full_recompute)
{
    for (int dt = 0; dt < 2; dt++) {
        tg_graph *g = tg_graph_new();
        const int T = 9, D = 12, hd = 6, t0 = 4;
        tg_tensor *x = tt_randn(g, TT_SHAPE(2, T, D), 3);
        if (dt) { /* f32 */
            tg_tensor *x32 = tg_tensor_new(g, TG_F32, 3, x->shape);
            for (int64_t i = 0; i < x->numel; i++) ((float *)x32->data)[i] = (float)((double *)x->data)[i];
            x = x32;
        }
        tg_tensor *full = tg_rope(g, x, hd, 2, 0, 10000, TG_ROPE_INTERLEAVED);
        tg_tensor *tail = tg_rope(g, tg_slice(g, x, 1, t0, T), hd, 2, t0, 10000, TG_ROPE_INTERLEAVED);
        tg_tensor *want = tg_slice(g, full, 1, t0, T);
        ck_assert_msg(tail && want, "%s", tg_graph_error(g));
        ck_assert_mem_eq(tail->data, want->data, (size_t)want->numel * tg_dtype_size(want->dtype));
        tg_graph_free(g);
    }
}
END_TEST

/* A rotation keeps each pair's length; position 0 is the identity; the
 * two pairings are one permutation apart: halves(x) = P^-1 interleaved(P x),
 * P taking (x[i], x[i + d/2]) to (x[2i], x[2i + 1]) within each head */
START_TEST(rope_properties)
{
    tg_graph *g = tg_graph_new();
    const int T = 6, hd = 8, H = 2, D = H * hd;
    tg_tensor *x = tt_randn(g, TT_SHAPE(1, T, D), 5);
    tg_tensor *yi = tg_rope(g, x, hd, H, 0, 10000, TG_ROPE_INTERLEAVED);
    tg_tensor *yh = tg_rope(g, x, hd, H, 0, 10000, TG_ROPE_HALVES);
    ck_assert_ptr_nonnull(yh);
    const double *xv = x->data, *vi = yi->data, *vh = yh->data;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < hd / 2; i++) {
                const int k = t * D + h * hd + 2 * i;
                const double before = hypot(xv[k], xv[k + 1]), after = hypot(vi[k], vi[k + 1]);
                ck_assert_msg(fabs(before - after) <= 1e-14 * before, "pair length %g -> %g", before, after);
                if (t == 0) ck_assert(vi[k] == xv[k] && vi[k + 1] == xv[k + 1] && vh[k] == xv[k]);
            }
    tg_tensor *px = tg_tensor_new(g, TG_F64, 3, x->shape); /* P x */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < hd / 2; i++) {
                const int base = t * D + h * hd;
                ((double *)px->data)[base + 2 * i] = xv[base + i];
                ((double *)px->data)[base + 2 * i + 1] = xv[base + i + hd / 2];
            }
    tg_tensor *pyi = tg_rope(g, px, hd, H, 0, 10000, TG_ROPE_INTERLEAVED);
    ck_assert_ptr_nonnull(pyi);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < hd / 2; i++) {
                const int base = t * D + h * hd;
                ck_assert(((double *)pyi->data)[base + 2 * i] == vh[base + i]);
                ck_assert(((double *)pyi->data)[base + 2 * i + 1] == vh[base + i + hd / 2]);
            }
    tg_graph_free(g);
}
END_TEST

/* f32 takes its angles as llama2.c's run.c computes them, in float */
START_TEST(rope_f32_angles_are_run_c_s)
{
    tg_graph *g = tg_graph_new();
    const int T = 40, hd = 16, pos0 = 300;
    tg_tensor *x = tg_tensor_new(g, TG_F32, 3, (int[]){1, T, hd});
    for (int t = 0; t < T; t++) ((float *)x->data)[t * hd + 6] = 1.0f; /* pair i = 3: (1, 0) */
    tg_tensor *y = tg_rope(g, x, hd, 1, pos0, 10000, TG_ROPE_INTERLEAVED);
    ck_assert_ptr_nonnull(y);
    for (int t = 0; t < T; t++) {
        const float freq = 1.0f / powf(10000.0f, 6 / (float)hd), val = (pos0 + t) * freq;
        ck_assert_float_eq(((float *)y->data)[t * hd + 6], cosf(val));
        ck_assert_float_eq(((float *)y->data)[t * hd + 7], sinf(val));
    }
    /* and f32 follows the f64 rotation to float rounding */
    tg_tensor *x64 = tt_randn(g, TT_SHAPE(2, 5, 12), 8), *x32 = tg_tensor_new(g, TG_F32, 3, x64->shape);
    for (int64_t i = 0; i < x64->numel; i++) ((float *)x32->data)[i] = (float)((double *)x64->data)[i];
    tg_tensor *y64 = tg_rope(g, x64, 6, 2, 100, 10000, TG_ROPE_HALVES),
              *y32 = tg_rope(g, x32, 6, 2, 100, 10000, TG_ROPE_HALVES);
    ck_assert_ptr_nonnull(y32);
    for (int64_t i = 0; i < x64->numel; i++)
        ck_assert_double_eq_tol(((float *)y32->data)[i], ((double *)y64->data)[i], 1e-4);
    tg_graph_free(g);
}
END_TEST

/* One f32 rope forward and backward on the path in use (with add, x has
 * a second use, so its gradient is added to): y and dx copied out */
static void rope_f32_run(int B, int T, int H, int hd, int n_rot, int pos0, int flags, bool add, float *y, float *gx)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_to_f32(g, tt_randn(g, TT_SHAPE(B, T, H * hd), 50 + hd));
    tg_tensor *out = tg_rope(g, x, hd, n_rot, pos0, 10000, flags);
    if (add) out = tg_add(g, out, tg_mul(g, x, x));
    ck_assert_msg(out != NULL, "%s", tg_graph_error(g));
    ck_assert_int_eq(tg_graph_backward_seeded(g, out, tt_seed_values(g, TG_F32, out->numel, 60 + hd)), 0);
    memcpy(y, out->data, (size_t)out->numel * sizeof(float));
    memcpy(gx, x->grad, (size_t)x->numel * sizeof(float));
    tg_graph_free(g);
}

/* f32 on the avx512 path (ops/rope_avx512.c) gives the plain code's bits
 * (the generic path): both pairings, head sizes off the 8 pairs and 16
 * lanes, heads left unrotated, gradients stored and added */
START_TEST(rope_f32_paths_same_bits)
{
    if (tg_isa_cpu() < TG_ISA_AVX512) return;
    const struct {
        int B, T, H, hd, n_rot, pos0;
    } cases[] = {
        {2, 5, 3, 4, 3, 0},  {1, 7, 2, 6, 1, 3},   {2, 9, 3, 48, 3, 250},
        {1, 4, 2, 34, 2, 0}, {1, 3, 4, 64, 3, 11}, {2, 3, 2, 18, 2, 1000},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = 0; mode < 4; mode++) {
            const int flags = mode & 1 ? TG_ROPE_HALVES : TG_ROPE_INTERLEAVED;
            const size_t n = (size_t)cases[c].B * cases[c].T * cases[c].H * cases[c].hd;
            float *r[2][2];
            for (int p = 0; p < 2; p++) {
                r[p][0] = malloc(n * sizeof(float)), r[p][1] = malloc(n * sizeof(float));
                tg_isa_set_max(p ? TG_ISA_AVX512 : TG_ISA_GENERIC);
                rope_f32_run(cases[c].B, cases[c].T, cases[c].H, cases[c].hd, cases[c].n_rot, cases[c].pos0, flags,
                             mode & 2, r[p][0], r[p][1]);
            }
            tg_isa_set_max(TG_ISA_AVX512);
            ck_assert_msg(!memcmp(r[0][0], r[1][0], n * sizeof(float)), "y differs, case %zu mode %d", c, mode);
            ck_assert_msg(!memcmp(r[0][1], r[1][1], n * sizeof(float)), "dx differs, case %zu mode %d", c, mode);
            for (int p = 0; p < 2; p++) free(r[p][0]), free(r[p][1]);
        }
}
END_TEST

START_TEST(rope_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_new(g, TG_F32, 3, (int[]){2, 3, 12});
    const struct {
        int hd, n_rot, pos0;
        double theta;
        int flags;
        const char *want;
    } bad[] = {
        {5, 1, 0, 10000, 0, "rope: head_dim 5 must be even and divide the last axis of x f32 (2,3,12)"},
        {8, 1, 0, 10000, 0, "head_dim 8 must be even and divide"},
        {4, 4, 0, 10000, 0, "rope: n_rot 4 must be in [1, 3]"},
        {4, 0, 0, 10000, 0, "n_rot 0 must be in [1, 3]"},
        {4, 3, -1, 10000, 0, "rope: pos0 -1 must be >= 0"},
        {4, 3, 0, 1, 0, "rope: theta must be finite and > 1, got 1"},
        {4, 3, 0, NAN, 0, "theta must be finite and > 1, got nan"},
        {4, 3, 0, 10000, 7, "rope: unknown flags 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(tg_rope(g, x, bad[i].hd, bad[i].n_rot, bad[i].pos0, bad[i].theta, bad[i].flags));
        tt_assert_error(g, bad[i].want);
        tg_graph_clear_error(g);
    }
    ck_assert_ptr_null(tg_rope(g, tg_tensor_new(g, TG_F32, 1, (int[]){4}), 2, 1, 0, 10000, 0));
    tt_assert_error(g, "rope: x must be (..., T, D), got f32 (4)");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rope(g, tg_tensor_new(g, TG_I32, 2, (int[]){2, 4}), 2, 1, 0, 10000, 0));
    tt_assert_error(g, "rope: x must be f32 or f64, got i32 (2,4)");
    tg_graph_clear_error(g);
    ck_assert_ptr_null(tg_rope(g, NULL, 2, 1, 0, 10000, 0));
    tt_assert_error(g, "rope: input 0 is NULL");
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("ops_rope", "rope", 0,
                   TT_TESTS(rope_matches_the_formula_and_gradchecks, rope_offset_equals_full_recompute, rope_properties,
                            rope_f32_angles_are_run_c_s, rope_f32_paths_same_bits, rope_errors));
}
