/* core: tensors, the graph and its tape, parameters, RNG, gradcheck. */
#include "tg_test.h"

#include "core/alloc.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

/* ---- tensors and the graph ----------------------------------------- */

START_TEST(tensor_new_and_bad_shapes)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *t = tg_tensor_new(g, TG_F32, TT_SHAPE(2, 3, 4));
    ck_assert_int_eq(t->numel, 24);
    ck_assert_int_eq(t->ndim, 3);
    for (int i = 0; i < 24; i++) ck_assert_float_eq(((float *)t->data)[i], 0.0f);
    ck_assert_int_eq((uintptr_t)t->data % 64, 0);
    tg_tensor *s = tg_scalar(g, TG_F64, 2.5);
    ck_assert_int_eq(s->ndim, 0);
    ck_assert_double_eq(tg_tensor_item(s), 2.5);

    ck_assert_ptr_null(tg_tensor_new(g, TG_F32, TT_SHAPE(2, 0)));
    tt_assert_error(g, "tensor: bad shape (2,0) with ndim 2: every dimension must be >= 1");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_tensor_new(g, TG_F32, TT_SHAPE(1, 2, 3, 4, 5)));
    tt_assert_error(g, "ndim must be 0..4");
    tg_graph_reset(g);
    ck_assert_ptr_null(tg_tensor_from(g, TG_F32, TT_SHAPE(2), NULL));
    tt_assert_error(g, "tensor_from: data is NULL");
    tg_graph_reset(g);
    /* tg_tensor_set writes what tg_tensor_get reads, in every dtype; what a dtype cannot hold is refused */
    const tg_dtype dts[4] = {TG_F32, TG_F64, TG_I32, TG_BOOL};
    for (int k = 0; k < 4; k++) {
        tg_tensor *u = tg_tensor_new(g, dts[k], TT_SHAPE(3));
        ck_assert_int_eq(tg_tensor_set(u, 2, 1), 0);
        ck_assert_double_eq(tg_tensor_get(u, 2), 1);
        ck_assert_int_eq(tg_tensor_set(u, 3, 1), -1);
        ck_assert_int_eq(tg_tensor_set(u, 1, 0.5), dts[k] == TG_I32 || dts[k] == TG_BOOL ? -1 : 0);
        ck_assert_double_eq(tg_tensor_get(u, 1), dts[k] == TG_I32 || dts[k] == TG_BOOL ? 0 : 0.5);
    }
    tg_tensor *f32 = tg_tensor_new(g, TG_F32, TT_SHAPE(1)), *i32 = tg_tensor_new(g, TG_I32, TT_SHAPE(1));
    ck_assert_int_eq(tg_tensor_set(f32, 0, 0.1), 0);
    ck_assert_double_eq(tg_tensor_get(f32, 0), (double)0.1f); /* rounded to float */
    ck_assert_int_eq(tg_tensor_set(i32, 0, -2147483648.0), 0);
    ck_assert_int_eq(tg_tensor_set(i32, 0, 2147483648.0), -1);
    ck_assert_int_eq(tg_tensor_set(i32, 0, NAN), -1);
    ck_assert_double_eq(tg_tensor_get(i32, 0), -2147483648.0);
    tg_graph_free(g);
}
END_TEST

START_TEST(reset_drops_everything_and_keeps_memory)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, TT_SHAPE(64, 64), 1);
    tg_tensor *b = tg_mul(g, tg_exp(g, a), a);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(tg_graph_tape_len(g), 2);
    size_t cap = tg_graph_arena_capacity(g);
    ck_assert_uint_gt(tg_graph_arena_used(g), 3 * 64 * 64 * sizeof(double));
    tg_fail(g, "something: went wrong");
    tg_graph_reset(g);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    ck_assert_uint_eq(tg_graph_arena_used(g), 0);
    ck_assert_uint_eq(tg_graph_arena_capacity(g), cap);
    ck_assert_ptr_null(tg_graph_error(g));
    tg_graph_free(g);
}
END_TEST

START_TEST(arena_merges_chunks_after_a_large_step)
{
    tg_graph *g = tg_graph_new();
    /* more than the first 1 MiB chunk: the arena grows by chunks */
    for (int i = 0; i < 6; i++) ck_assert_ptr_nonnull(tg_tensor_new(g, TG_F64, TT_SHAPE(256, 256)));
    size_t cap = tg_graph_arena_capacity(g);
    tg_graph_reset(g); /* one chunk of at least the same total from now on */
    ck_assert_uint_ge(tg_graph_arena_capacity(g), cap);
    uint64_t before = tg_alloc_calls();
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < 6; i++) ck_assert_ptr_nonnull(tg_tensor_new(g, TG_F64, TT_SHAPE(256, 256)));
        tg_graph_reset(g);
    }
    ck_assert_uint_eq(tg_alloc_calls(), before);
    tg_graph_free(g);
}
END_TEST

/* Arena chunks from 2 MiB up are whole 2 MiB pages, aligned to one (huge
 * pages on Linux); smaller blocks are plain malloc. */
START_TEST(big_blocks_are_whole_huge_pages)
{
    const size_t mib = (size_t)1 << 20;
    size_t n = 3 * mib + 1;
    const uint64_t before = tg_alloc_calls();
    char *p = tg_malloc_big(&n);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(tg_alloc_calls(), before + 1);
#ifdef __linux__
    ck_assert_uint_eq(n, 4 * mib);
    ck_assert_uint_eq((uintptr_t)p % (2 * mib), 0);
#else
    ck_assert_uint_eq(n, 3 * mib + 1);
#endif
    memset(p, 1, n); /* every byte it reports is usable (ASan checks) */
    tg_free(p);
    size_t small = 1000;
    p = tg_malloc_big(&small);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(small, 1000);
    tg_free(p);
}
END_TEST

/* Whether the mapping that holds p is advised as huge pages (its VmFlags
 * in /proc/self/smaps carry "hg") */
static bool advised_huge(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    bool inside = false, hg = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            hg = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return hg;
}

/* tg_calloc_big: zeroed even where the allocator hands back memory just
 * written, whole huge pages from 2 MiB up on Linux, tg_calloc below */
START_TEST(calloc_big_is_zeroed_whole_huge_pages)
{
    const size_t mib = (size_t)1 << 20;
#ifdef __GLIBC__
    /* large blocks from glibc's heap, kept there when freed: the block
     * below is handed back dirty to the call under test */
    (void)mallopt(M_MMAP_THRESHOLD, 64 << 20); /* (ASan's allocator ignores them) */
    (void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
    size_t dn = 4 * mib;
    unsigned char *d = tg_malloc_big(&dn);
    ck_assert_ptr_nonnull(d);
    memset(d, 0xAB, dn);
    tg_free(d);
    const size_t n = 3 * mib + 5;
    const uint64_t before = tg_alloc_calls();
    unsigned char *p = tg_calloc_big(n, 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(tg_alloc_calls(), before + 1);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += p[i] != 0;
    ck_assert_uint_eq(nonzero, 0);
#ifdef __linux__
    ck_assert_uint_eq((uintptr_t)p % (2 * mib), 0);
    /* a kernel built with transparent huge pages takes the advice */
    if (access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0) ck_assert(advised_huge(p));
#endif
    memset(p, 1, n); /* every byte asked for is usable (ASan checks) */
    tg_free(p);
    double *s = tg_calloc_big(10, sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < 10; i++) ck_assert_double_eq(s[i], 0.0);
    tg_free(s);
    ck_assert_ptr_null(tg_calloc_big(SIZE_MAX / 2, 3));
}
END_TEST

START_TEST(grad_mode_off_records_nothing)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, TT_SHAPE(3), 1);
    ck_assert(tg_graph_set_grad_enabled(g, false));
    tg_tensor *b = tg_exp(g, a);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    ck_assert(!b->requires_grad);
    ck_assert_int_eq(tg_graph_backward(g, b), -1);
    ck_assert(!tg_graph_set_grad_enabled(g, true));
    tg_graph_reset(g);
    /* nothing requiring grad: nothing recorded either */
    tg_tensor *c = tg_tensor_new(g, TG_F64, TT_SHAPE(3));
    tg_exp(g, c);
    ck_assert_int_eq(tg_graph_tape_len(g), 0);
    tg_graph_free(g);
}
END_TEST

START_TEST(backward_errors)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *a = tt_randn(g, TT_SHAPE(2, 3), 1);
    tg_tensor *b = tg_exp(g, a);
    ck_assert_int_eq(tg_graph_backward(g, b), -1);
    tt_assert_error(g, "backward: loss must have one element, got (2,3)");
    tg_graph_reset(g);
    tg_tensor *c = tg_scalar(g, TG_F64, 1.0);
    ck_assert_int_eq(tg_graph_backward(g, c), -1);
    tt_assert_error(g, "backward: tensor () does not require grad");
    tg_graph_reset(g);
    ck_assert_int_eq(tg_graph_backward(g, NULL), -1);
    tt_assert_error(g, "backward: tensor is NULL");
    tg_graph_reset(g);
    tg_tensor *ids = tg_tensor_new(g, TG_I32, TT_SHAPE(2));
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, ids, true), -1);
    tt_assert_error(g, "requires_grad: only f32/f64 tensors can require grad, got i32 (2)");
    tg_graph_reset(g);
    tg_tensor *x = tt_randn(g, TT_SHAPE(2), 3);
    ck_assert_int_eq(tg_tensor_set_requires_grad(g, tg_exp(g, x), true), -1);
    tt_assert_error(g, "requires_grad: tensor (2) was made by a recorded op");
    tg_graph_free(g);
}
END_TEST

/* y = a * a * b, one backward: a is used twice, both paths add up */
START_TEST(tensor_used_twice_sums_both_paths)
{
    tg_graph *g = tg_graph_new();
    double av[] = {3}, bv[] = {5};
    tg_tensor *a = tg_tensor_from(g, TG_F64, 0, NULL, av), *b = tg_tensor_from(g, TG_F64, 0, NULL, bv);
    tg_tensor_set_requires_grad(g, a, true);
    tg_tensor_set_requires_grad(g, b, true);
    tg_tensor *y = tg_mul(g, tg_mul(g, a, a), b);
    ck_assert_int_eq(tg_graph_backward(g, y), 0);
    ck_assert_double_eq(((double *)a->grad)[0], 2 * 3 * 5);
    ck_assert_double_eq(((double *)b->grad)[0], 9);
    /* a second backward over the same tape: activation grads restart,
     * leaf grads accumulate (as in PyTorch with retain_graph) */
    ck_assert_int_eq(tg_graph_backward(g, y), 0);
    ck_assert_double_eq(((double *)a->grad)[0], 2 * 2 * 3 * 5);
    ck_assert_double_eq(((double *)b->grad)[0], 18);
    tg_graph_free(g);
}
END_TEST

/* ---- parameters ---------------------------------------------------- */

START_TEST(params_store_views_and_accumulation)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_tensor *w = tg_params_add(p, "w", TT_SHAPE(2, 3), NULL);
    tg_tensor *bias = tg_params_add(p, "b", TT_SHAPE(3), NULL);
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(bias);
    ck_assert_int_eq(tg_params_count(p), 2);
    ck_assert_int_eq(tg_params_numel(p), 9);
    ck_assert_str_eq(w->name, "w");
    ck_assert_ptr_eq(tg_params_get(p, "b"), bias);
    ck_assert_ptr_null(tg_params_get(p, "nope"));
    /* views into the flat buffers, in order */
    ck_assert_ptr_eq(w->data, tg_params_data(p));
    ck_assert_ptr_eq(bias->data, (double *)tg_params_data(p) + 6);
    ck_assert_ptr_eq(bias->grad, (double *)tg_params_grad(p) + 6);
    tg_error err = {0};
    ck_assert_ptr_null(tg_params_add(p, "w", TT_SHAPE(1), &err));
    ck_assert_str_eq(err.msg, "params_add: duplicate name 'w'");
    ck_assert_ptr_null(tg_params_add(p, "", TT_SHAPE(1), &err));
    ck_assert_str_eq(err.msg, "params_add: name is empty");
    ck_assert_ptr_null(tg_params_add(p, "z", TT_SHAPE(0), &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "every dimension must be >= 1"));
    ck_assert_ptr_null(tg_params_new(TG_I32, &err));
    ck_assert_str_eq(err.msg, "params_new: dtype must be f32 or f64, got i32 (2)");

    for (int i = 0; i < 6; i++) ((double *)w->data)[i] = i + 1;
    tg_graph *g = tg_graph_new();
    for (int step = 1; step <= 3; step++) {
        /* loss = sum(w + b), b broadcast over w's 2 rows: per call dw = 1, db = 2 */
        ck_assert_int_eq(tg_graph_backward(g, tg_sum_all(g, tg_add(g, w, bias))), 0);
        for (int i = 0; i < 6; i++) ck_assert_double_eq(((double *)w->grad)[i], step);
        for (int i = 0; i < 3; i++) ck_assert_double_eq(((double *)bias->grad)[i], 2 * step);
        tg_graph_reset(g);
    }
    tg_params_zero_grad(p);
    for (int i = 0; i < 9; i++) ck_assert_double_eq(((double *)tg_params_grad(p))[i], 0);
    tg_graph_free(g);
    tg_params_free(p);
}
END_TEST

/* ---- RNG ------------------------------------------------------------ */

START_TEST(rng_pcg32_reference_stream)
{
    /* the published PCG32 demo stream for seed 42, sequence 54 */
    static const uint32_t want[] = {0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e};
    tg_rng r;
    tg_rng_seed(&r, 42, 54);
    for (int i = 0; i < 6; i++) ck_assert_uint_eq(tg_rng_u32(&r), want[i]);
}
END_TEST

START_TEST(rng_distributions)
{
    tg_rng r, r2;
    tg_rng_seed(&r, 7, 0);
    tg_rng_seed(&r2, 8, 0);
    ck_assert_uint_ne(tg_rng_u32(&r), tg_rng_u32(&r2));
    tg_rng_seed(&r, 7, 0);
    double s = 0, s2 = 0, us = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = tg_rng_uniform(&r);
        ck_assert(u >= 0 && u < 1);
        us += u;
        double z = tg_rng_normal(&r);
        s += z;
        s2 += z * z;
        ck_assert_uint_lt(tg_rng_below(&r, 10), 10);
    }
    /* 5 standard errors */
    ck_assert_double_lt(fabs(us / n - 0.5), 5 * sqrt(1.0 / 12 / n));
    ck_assert_double_lt(fabs(s / n), 5 / sqrt(n));
    ck_assert_double_lt(fabs(s2 / n - 1), 5 * sqrt(2.0 / n));
}
END_TEST

/* The state as text: a stream restored from it (mid-pair of normals, so
 * the spare matters) continues exactly as the original; malformed texts
 * are refused, leaving the stream as it was. */
START_TEST(rng_state_text_round_trip)
{
    tg_rng r, back;
    tg_rng_seed(&r, 1234, 5);
    tg_rng_normal(&r); /* a spare normal now waits */
    char s[TG_RNG_STRING_LEN + 1];
    tg_error err = {0};
    ck_assert_int_eq(tg_rng_to_string(&r, s, sizeof s), TG_RNG_STRING_LEN);
    ck_assert_int_eq(s[34], '1');
    tg_rng_seed(&back, 1, 1);
    ck_assert_int_eq(tg_rng_from_string(&back, s, &err), 0);
    for (int i = 0; i < 5; i++) ck_assert(tg_rng_normal(&back) == tg_rng_normal(&r));
    ck_assert_uint_eq(tg_rng_u32(&back), tg_rng_u32(&r));

    const tg_rng before = back;
    static const char *const bad[] = {"",
                                      "0123",
                                      "0000000000000000:0000000000000001:2:0000000000000000",
                                      "0000000000000000:0000000000000001:0:000000000000000G",
                                      "0000000000000000-0000000000000001:0:0000000000000000",
                                      "0000000000000000:0000000000000001:1:7ff0000000000000", /* inf spare */
                                      "\xef\xbb\xbf"
                                      "00000000000000:0000000000000001:0:0000000000000000"};
    for (int k = 0; k < 7; k++) {
        err.msg[0] = 0;
        ck_assert_int_eq(tg_rng_from_string(&back, bad[k], &err), -1);
        ck_assert_msg(strstr(err.msg, "rng_from_string: "), "case %d: '%s'", k, err.msg);
        ck_assert_mem_eq(&back, &before, sizeof back);
    }
    ck_assert_ptr_nonnull(strstr(err.msg, "\\xef\\xbb\\xbf")); /* bytes shown escaped */
    ck_assert_int_eq(tg_rng_from_string(&back, "0000000000000000:0000000000000002:0:0000000000000000", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "is even"));
}
END_TEST

/* ---- gradcheck ------------------------------------------------------ */

/* a user's op: y = x^2, with a correct and a wrong backward */
static void square_backward(tg_graph *g, tg_node *n)
{
    double *dx = tg_grad(g, n->in[0]);
    const double *x = n->in[0]->data, *dy = n->out->grad;
    for (int64_t i = 0; i < n->out->numel; i++) dx[i] += n->darg[0] * x[i] * dy[i];
}

static tg_tensor *square(tg_graph *g, tg_tensor *x, double slope)
{
    if (!tg_op_begin(g, "square", 1, &x)) return NULL;
    tg_tensor *y = tg_op_output(g, TG_F64, x->ndim, x->shape);
    for (int64_t i = 0; i < x->numel; i++) ((double *)y->data)[i] = ((double *)x->data)[i] * ((double *)x->data)[i];
    tg_node *n = tg_op_record(g, "square", square_backward, y, 1, &x);
    if (n) n->darg[0] = slope;
    return y;
}

static tg_tensor *square_ok(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return square(g, in[0], 2.0);
}
static tg_tensor *square_wrong(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return square(g, in[0], 2.01);
}

START_TEST(gradcheck_passes_a_right_backward_and_fails_a_wrong_one)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(3, 4), 5);
    tt_assert_gradcheck(square_ok, NULL, 1, &x);

    tg_gradcheck_result res;
    ck_assert(!tg_gradcheck(square_wrong, NULL, 1, &x, NULL, &res));
    ck_assert_int_eq(res.input, 0);
    ck_assert_int_ge(res.index, 0);
    ck_assert_double_eq_tol(res.analytic / res.numeric, 1.005, 1e-6);
    ck_assert_ptr_nonnull(strstr(res.message, "input 0 element"));
    ck_assert_ptr_nonnull(strstr(res.message, "analytic"));
    ck_assert_ptr_nonnull(strstr(res.message, "numeric"));
    tg_graph_free(g);
}
END_TEST

static void no_backward_dummy(tg_graph *g, tg_node *n)
{
    (void)g;
    (void)n;
}
static tg_tensor *forgets_one_path(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    /* records y = x * w but its backward writes nothing: gradcheck must see zeros vs real numbers */
    tg_tensor *ins[2] = {in[0], in[1]};
    if (!tg_op_begin(g, "lazy_mul", 2, ins)) return NULL;
    tg_tensor *y = tg_op_output(g, TG_F64, in[0]->ndim, in[0]->shape);
    for (int64_t i = 0; i < y->numel; i++)
        ((double *)y->data)[i] = ((double *)in[0]->data)[i] * ((double *)in[1]->data)[i];
    tg_op_record(g, "lazy_mul", no_backward_dummy, y, 2, ins);
    return y;
}

START_TEST(gradcheck_fails_a_missing_gradient)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(4), 1), *w = tt_randn(g, TT_SHAPE(4), 2);
    tg_gradcheck_result res;
    ck_assert(!tg_gradcheck(forgets_one_path, NULL, 2, (tg_tensor *[]){x, w}, NULL, &res));
    ck_assert_double_eq(res.analytic, 0.0);
    ck_assert_double_ne(res.numeric, 0.0);
    tg_graph_free(g);
}
END_TEST

static tg_tensor *record_without_backward(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *y = tg_op_output(g, TG_F64, in[0]->ndim, in[0]->shape);
    tg_op_record(g, "nobwd", NULL, y, 1, in);
    return tg_graph_error(g) ? NULL : y;
}

static tg_tensor *make_nan(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    tg_tensor *y = tg_exp(g, in[0]);
    if (y) ((double *)y->data)[0] = NAN;
    return y;
}

START_TEST(gradcheck_rejects_bad_setups)
{
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tt_randn(g, TT_SHAPE(2), 1);
    tg_gradcheck_result res;
    ck_assert(!tg_gradcheck(record_without_backward, NULL, 1, &x, NULL, &res));
    ck_assert_ptr_nonnull(strstr(res.message, "nobwd: op has no backward, so it cannot be recorded"));
    ck_assert(!tg_gradcheck(make_nan, NULL, 1, &x, NULL, &res));
    ck_assert_ptr_nonnull(strstr(res.message, "output element 0 is nan"));
    tg_tensor *f = tg_tensor_new(g, TG_F32, TT_SHAPE(2));
    tg_tensor_set_requires_grad(g, f, true);
    ck_assert(!tg_gradcheck(square_ok, NULL, 1, &f, NULL, &res));
    ck_assert_ptr_nonnull(strstr(res.message, "must be an f64 leaf"));
    tg_tensor *c = tg_tensor_new(g, TG_F64, TT_SHAPE(2));
    ck_assert(!tg_gradcheck(square_ok, NULL, 1, &c, NULL, &res));
    ck_assert_ptr_nonnull(strstr(res.message, "no input requires grad"));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("core", "core", 0,
                   TT_TESTS(tensor_new_and_bad_shapes, reset_drops_everything_and_keeps_memory,
                            arena_merges_chunks_after_a_large_step, big_blocks_are_whole_huge_pages,
                            calloc_big_is_zeroed_whole_huge_pages, grad_mode_off_records_nothing, backward_errors,
                            tensor_used_twice_sums_both_paths, params_store_views_and_accumulation,
                            rng_pcg32_reference_stream, rng_distributions, rng_state_text_round_trip,
                            gradcheck_passes_a_right_backward_and_fails_a_wrong_one, gradcheck_fails_a_missing_gradient,
                            gradcheck_rejects_bad_setups));
}
