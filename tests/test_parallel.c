/* core/parallel: the pool covers every index once, and every op of the
 * table (op_table.h) gives the single-thread results (which the other
 * suites gradcheck), the same on every run for a given thread count, with
 * the same errors. */
#include "tg_test.h"

#include "op_table.h"

/* ---- tg_parallel_for ---------------------------------------------------- */

enum { MAXN = 1000, MAXPARTS = TG_PARALLEL_MAX_PARTS };

typedef struct cover {
    int hits[MAXN];
    int64_t part_lo[MAXPARTS], part_hi[MAXPARTS];
    int bad_part;
    int64_t nested_calls, nested_lo, nested_hi;
} cover;

static void nested_fn(void *ctx, int64_t lo, int64_t hi)
{
    cover *c = ctx; /* runs on the thread of the outer part: one call */
    c->nested_calls++;
    c->nested_lo = lo, c->nested_hi = hi;
}

static void cover_fn(void *ctx, int64_t lo, int64_t hi)
{
    cover *c = ctx;
    int p = tg_parallel_part();
    if (p < 0 || p >= MAXPARTS || c->part_hi[p] != 0) c->bad_part = 1;
    else c->part_lo[p] = lo, c->part_hi[p] = hi;
    for (int64_t i = lo; i < hi; i++) c->hits[i]++;
}

static void outer_fn(void *ctx, int64_t lo, int64_t hi)
{
    (void)lo, (void)hi;
    if (tg_parallel_part() == 0) tg_parallel_for(50, 25, nested_fn, ctx);
}

START_TEST(parallel_for_covers_once)
{
    static const int threads[] = {1, 2, 3, 5};
    static const int64_t ns[] = {1, 2, 7, 100, 1000, 999};
    static const int64_t grains[] = {0, 1, 3, 50, 2000};
    static cover c;
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        ck_assert_int_eq(tg_set_num_threads(threads[ti]), threads[ti]);
        ck_assert_int_eq(tg_num_threads(), threads[ti]);
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++) {
                const int64_t n = ns[ni], grain = grains[gi] < 1 ? 1 : grains[gi];
                memset(&c, 0, sizeof c);
                tg_parallel_for(n, grains[gi], cover_fn, &c);
                ck_assert_msg(!c.bad_part, "threads %d n %lld: a part index out of range or run twice", threads[ti],
                              (long long)n);
                for (int64_t i = 0; i < n; i++)
                    ck_assert_msg(c.hits[i] == 1, "threads %d n %lld grain %lld: index %lld hit %d times", threads[ti],
                                  (long long)n, (long long)grain, (long long)i, c.hits[i]);
                /* n / grain parts (1 to 64) whatever the thread count, in order, part
                 * k starting at n k / parts: so each is >= grain */
                int64_t want_parts = n / grain < TG_PARALLEL_MAX_PARTS ? n / grain : TG_PARALLEL_MAX_PARTS;
                if (want_parts < 1) want_parts = 1;
                ck_assert_int_eq(tg_parallel_parts(n, grains[gi]), want_parts);
                int parts = 0;
                for (int p = 0; p < MAXPARTS; p++)
                    if (c.part_hi[p]) {
                        parts++;
                        ck_assert_int_eq(c.part_lo[p], n * p / want_parts);
                        ck_assert_int_eq(c.part_hi[p], n * (p + 1) / want_parts);
                        if (want_parts > 1) ck_assert_int_ge(c.part_hi[p] - c.part_lo[p], grain);
                    }
                ck_assert_int_eq(parts, want_parts);
            }
        /* a loop inside a loop runs its parts in order on the calling thread */
        memset(&c, 0, sizeof c);
        tg_parallel_for(threads[ti], 1, outer_fn, &c);
        ck_assert_int_eq(c.nested_calls, 2);
        ck_assert_int_eq(c.nested_lo, 25);
        ck_assert_int_eq(c.nested_hi, 50);
        tg_parallel_for(0, 1, cover_fn, &c); /* nothing to do: no call */
        ck_assert_int_eq(c.hits[0], 0);
    }
    ck_assert_int_eq(tg_set_num_threads(1), 1);
}
END_TEST

/* ---- threaded ops equal single-threaded ones ---------------------------- */

enum { N_IN = 6 };

/* Runs op k forward and backward on its large inputs (backward seeded
 * with a fixed random gradient) with `threads` threads; copies the output
 * and the gradients of the float inputs to doubles. */
static void run_case(int k, tg_dtype dt, int threads, double **out, int64_t *n_out, double *grads[N_IN],
                     int64_t n_grad[N_IN], int *n_in)
{
    ck_assert_int_eq(tg_set_num_threads(threads), threads);
    tg_graph *g = tg_graph_new();
    tt_op_in a;
    TT_OPS[k].large(g, dt, &a);
    tg_tensor *in[N_IN];
    *n_in = tt_op_leaves(&a, in);
    tg_tensor *y = TT_OPS[k].apply(g, &a);
    ck_assert_msg(y != NULL, "%s: %s", TT_OPS[k].name, tg_graph_error(g));
    tg_tensor *seed = tg_tensor_new(g, dt, y->ndim, y->shape);
    tg_rng r;
    tg_rng_seed(&r, 99, 1);
    tg_rng_fill_normal(&r, seed, 0.0, 1.0);
    ck_assert_int_eq(tg_graph_backward_seeded(g, y, seed->data), 0);
    *n_out = y->numel;
    *out = malloc((size_t)y->numel * sizeof(double));
    for (int64_t i = 0; i < y->numel; i++) (*out)[i] = tg_tensor_get(y, i);
    for (int i = 0; i < *n_in; i++) {
        n_grad[i] = in[i]->numel;
        grads[i] = malloc((size_t)in[i]->numel * sizeof(double));
        for (int64_t e = 0; e < in[i]->numel; e++)
            grads[i][e] = dt == TG_F32 ? ((float *)in[i]->grad)[e] : ((double *)in[i]->grad)[e];
    }
    tg_graph_free(g);
}

/* max |a - b| / (1 + max |b|) */
static double rel_diff(const double *a, const double *b, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        if (fabs(b[i]) > m) m = fabs(b[i]);
    }
    return d / (1 + m);
}

START_TEST(threaded_ops_match_one_thread)
{
    const tg_dtype dts[2] = {TG_F64, TG_F32};
    for (int k = 0; k < TT_N_OPS; k++)
        for (int d = 0; d < 2; d++) {
            double *o1, *o3, *g1[N_IN], *g3[N_IN];
            int64_t no, ng[N_IN];
            int n_in;
            run_case(k, dts[d], 1, &o1, &no, g1, ng, &n_in);
            const char *name = TT_OPS[k].name;
            for (int t = 0; t < 3; t++) { /* the same bits on 2, 3 and 8 threads */
                static const int threads[] = {2, 3, 8};
                run_case(k, dts[d], threads[t], &o3, &no, g3, ng, &n_in);
                ck_assert_msg(!memcmp(o3, o1, (size_t)no * sizeof(double)),
                              "%s %s: output differs with %d threads by %g", name, tg_dtype_name(dts[d]), threads[t],
                              rel_diff(o3, o1, no));
                for (int i = 0; i < n_in; i++) {
                    ck_assert_msg(!memcmp(g3[i], g1[i], (size_t)ng[i] * sizeof(double)),
                                  "%s %s: grad of input %d differs with %d threads by %g", name, tg_dtype_name(dts[d]),
                                  i, threads[t], rel_diff(g3[i], g1[i], ng[i]));
                    free(g3[i]);
                }
                free(o3);
            }
            for (int i = 0; i < n_in; i++) free(g1[i]);
            free(o1);
        }
    tg_set_num_threads(1);
}
END_TEST

/* Two clipped AdamW steps on a store with threads: elementwise updates
 * split, the norm summed per thread in double. */
static void optim_run(tg_dtype dt, int threads, double *out, int64_t *n_out)
{
    tg_set_num_threads(threads);
    tg_params *p = tg_params_new(dt, NULL);
    tg_params_add(p, "w", TT_SHAPE(300, 200), NULL);
    tg_params_add(p, "b", TT_SHAPE(50), NULL);
    const int64_t n = tg_params_numel(p);
    tg_adamw_config c = {.beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1};
    tg_adamw *o = tg_adamw_new(p, &c, NULL);
    ck_assert_ptr_nonnull(o);
    tg_rng r;
    tg_rng_seed(&r, 5, 5);
    for (int i = 0; i < tg_params_count(p); i++) tg_rng_fill_normal(&r, tg_params_at(p, i), 0.0, 1.0);
    for (int step = 0; step < 2; step++) {
        for (int64_t e = 0; e < n; e++) {
            double gv = sin((double)e * 0.37 + step);
            if (dt == TG_F32) ((float *)tg_params_grad(p))[e] = (float)gv;
            else ((double *)tg_params_grad(p))[e] = gv;
        }
        double norm = tg_clip_grad_norm(p, 0.5);
        ck_assert(norm > 0.5);
        tg_adamw_step(o, 1e-2, NULL);
    }
    for (int64_t e = 0; e < n; e++)
        out[e] = dt == TG_F32 ? ((float *)tg_params_data(p))[e] : ((double *)tg_params_data(p))[e];
    *n_out = n;
    tg_adamw_free(o);
    tg_params_free(p);
}

START_TEST(threaded_optim_matches_one_thread)
{
    const tg_dtype dts[2] = {TG_F64, TG_F32};
    static double a[60050], b[60050], c[60050];
    for (int d = 0; d < 2; d++) {
        int64_t n;
        optim_run(dts[d], 1, a, &n);
        ck_assert_int_eq(n, 60050);
        optim_run(dts[d], 3, b, &n);
        optim_run(dts[d], 8, c, &n);
        ck_assert_msg(!memcmp(b, a, sizeof b), "%s: AdamW + clip with 3 threads differs by %g", tg_dtype_name(dts[d]),
                      rel_diff(b, a, n));
        ck_assert_msg(!memcmp(c, a, sizeof c), "%s: AdamW + clip with 8 threads differs by %g", tg_dtype_name(dts[d]),
                      rel_diff(c, a, n));
    }
    tg_set_num_threads(1);
}
END_TEST

/* The first bad row is named, whichever thread met it. */
START_TEST(threaded_errors_name_the_first_row)
{
    for (int threads = 1; threads <= 3; threads += 2) {
        tg_set_num_threads(threads);
        tg_graph *g = tg_graph_new();
        tg_tensor *x = tt_randn_dt(g, TG_F32, TT_SHAPE(1000, 64), 21); /* (1000,64) */
        ((float *)x->data)[700 * 64 + 5] = NAN; /* in the second half */
        ((float *)x->data)[900 * 64 + 1] = INFINITY;
        ck_assert_ptr_null(tg_softmax(g, x, NULL));
        tt_assert_error(g, "NaN at element 44805 (index (700,5))");
        tg_graph_reset(g);

        x = tt_randn_dt(g, TG_F64, TT_SHAPE(1000, 64), 22);
        uint8_t *m = calloc(1000 * 64, 1);
        for (int j = 0; j < 64; j++) m[600 * 64 + j] = m[800 * 64 + j] = 1; /* rows 600 and 800 blocked */
        tg_tensor *mask = tg_tensor_from(g, TG_BOOL, TT_SHAPE(1000, 64), m);
        free(m);
        ck_assert_ptr_null(tg_softmax(g, x, mask));
        tt_assert_error(g, "row 600 (index (600))");
        tg_graph_reset(g);

        /* attention: NaNs in the keys of batch rows 2 and 3; pairs (b,h) are split */
        tg_tensor *q = tt_randn_dt(g, TG_F32, TT_SHAPE(4, 30, 16), 23);
        tg_tensor *k = tt_randn_dt(g, TG_F32, TT_SHAPE(4, 30, 16), 24);
        tg_tensor *v = tt_randn_dt(g, TG_F32, TT_SHAPE(4, 30, 16), 25);
        ((float *)k->data)[(2 * 30 + 7) * 16 + 9] = NAN; /* b 2, key 7, head 2 (dh 4) */
        ((float *)k->data)[(3 * 30 + 1) * 16 + 0] = NAN; /* b 3, key 1, head 0 */
        ck_assert_ptr_null(tg_attention(g, q, k, v, 4, TG_ATTN_CAUSAL, 0));
        tt_assert_error(g, "query 7 and key 7 in batch row 2, head 2");
        tg_graph_free(g);
    }
    tg_set_num_threads(1);
}
END_TEST

int main(void)
{
    return tt_main("parallel", "parallel", 120,
                   TT_TESTS(parallel_for_covers_once, threaded_ops_match_one_thread, threaded_optim_matches_one_thread,
                            threaded_errors_name_the_first_row));
}
