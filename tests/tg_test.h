/* Shared helpers for the Check suites: random tensors, gradcheck and
 * error assertions, a scratch directory, and the runner that main calls.
 * (tests/CMakeLists.txt compiles every suite with _POSIX_C_SOURCE
 * 200809L, for mkdtemp here.) */
#ifndef TG_TEST_H
#define TG_TEST_H

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapegrad.h"

/* ---- tensors ------------------------------------------------------------- */

/* An f64 leaf on g with the given shape, filled from a seeded normal
 * stream, requiring grad. */
static inline tg_tensor *tt_randn(tg_graph *g, int ndim, const int *shape, uint64_t seed)
{
    tg_tensor *t = tg_tensor_new(g, TG_F64, ndim, shape);
    if (!t) {
        fprintf(stderr, "tensor_new: %s\n", tg_graph_error(g));
        abort();
    }
    tg_rng r;
    tg_rng_seed(&r, seed, 7);
    tg_rng_fill_normal(&r, t, 0.0, 1.0);
    if (tg_tensor_set_requires_grad(g, t, true) != 0) abort();
    return t;
}

/* An f32 copy of an f64 tensor, requiring grad when src does. */
static inline tg_tensor *tt_to_f32(tg_graph *g, const tg_tensor *src)
{
    tg_tensor *t = tg_tensor_new(g, TG_F32, src->ndim, src->shape);
    if (!t) {
        fprintf(stderr, "tensor_new: %s\n", tg_graph_error(g));
        abort();
    }
    for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)((double *)src->data)[i];
    if (src->requires_grad && tg_tensor_set_requires_grad(g, t, true) != 0) abort();
    return t;
}

/* A tensor of dtype dt (f32 or f64) filled from doubles, not requiring
 * grad. */
static inline tg_tensor *tt_from_doubles(tg_graph *g, tg_dtype dt, int ndim, const int *shape, const double *v)
{
    tg_tensor *t = tg_tensor_new(g, dt, ndim, shape);
    if (!t) {
        fprintf(stderr, "tensor_new: %s\n", tg_graph_error(g));
        abort();
    }
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == TG_F32) ((float *)t->data)[i] = (float)v[i];
        else ((double *)t->data)[i] = v[i];
    }
    return t;
}

/* tt_randn's numbers in dtype dt (rounded to f32 for TG_F32), requiring
 * grad. */
static inline tg_tensor *tt_randn_dt(tg_graph *g, tg_dtype dt, int ndim, const int *shape, uint64_t seed)
{
    tg_tensor *d = tt_randn(g, ndim, shape, seed);
    return dt == TG_F32 ? tt_to_f32(g, d) : d;
}

/* n values of dtype dt from a seeded normal stream, in g's arena: the
 * seed of a tg_graph_backward_seeded. */
static inline void *tt_seed_values(tg_graph *g, tg_dtype dt, int64_t n, uint64_t seed)
{
    tg_tensor *t = tg_tensor_new(g, dt, 1, (int[]){(int)n});
    if (!t) {
        fprintf(stderr, "tensor_new: %s\n", tg_graph_error(g));
        abort();
    }
    tg_rng r;
    tg_rng_seed(&r, seed, 3);
    tg_rng_fill_normal(&r, t, 0, 1);
    return t->data;
}

/* A reference softmax of every row of x (last axis), in double: p_j =
 * exp(x_j) / sum_k exp(x_k) over the keys not blocked[] (0 there). */
static inline void tt_naive_softmax(const tg_tensor *x, const uint8_t *blocked, double *p)
{
    int n = x->shape[x->ndim - 1];
    for (int64_t r = 0; r < x->numel / n; r++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            if (!blocked[r * n + j]) s += exp(tg_tensor_get(x, r * n + j));
        for (int j = 0; j < n; j++) p[r * n + j] = blocked[r * n + j] ? 0 : exp(tg_tensor_get(x, r * n + j)) / s;
    }
}

/* ---- assertions ----------------------------------------------------------- */

/* gradcheck that reports gradcheck's own sentence when it fails. */
#define tt_assert_gradcheck(fn, ctx, n, inputs)                                                                        \
    do {                                                                                                               \
        tg_gradcheck_result res_;                                                                                      \
        bool ok_ = tg_gradcheck((fn), (ctx), (n), (inputs), NULL, &res_);                                              \
        tt_note_gradcheck(&res_);                                                                                      \
        ck_assert_msg(ok_, "%s: %s", #fn, res_.message);                                                               \
    } while (0)

/* tt_assert_gradcheck of fn with ctx on one fresh f64 input, tt_randn's
 * of the given shape and seed, on a graph of its own. */
#define tt_assert_gradcheck1(fn, ctx, ndim, shape, seed)                                                               \
    do {                                                                                                               \
        tg_graph *g1_ = tg_graph_new();                                                                                \
        tg_tensor *x1_[1] = {tt_randn(g1_, (ndim), (shape), (seed))};                                                  \
        tt_assert_gradcheck(fn, ctx, 1, x1_);                                                                          \
        tg_graph_free(g1_);                                                                                            \
    } while (0)

/* Asserts that t is non-NULL with exactly this shape (and its numel). */
static inline void tt_assert_shape(const tg_tensor *t, int ndim, const int *shape)
{
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->ndim, ndim);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        ck_assert_int_eq(t->shape[i], shape[i]);
        n *= shape[i];
    }
    ck_assert_int_eq(t->numel, n);
}

/* Running record of gradcheck figures, printed at the end of a suite. */
static int tt_gc_cases;
static double tt_gc_max_err, tt_gc_worst_ratio;
static inline void tt_note_gradcheck(const tg_gradcheck_result *r)
{
    tt_gc_cases++;
    if (r->max_abs_err > tt_gc_max_err) tt_gc_max_err = r->max_abs_err;
    if (r->worst_ratio > tt_gc_worst_ratio) tt_gc_worst_ratio = r->worst_ratio;
}

/* Asserts that g holds an error containing `needle`. */
#define tt_assert_error(g, needle)                                                                                     \
    do {                                                                                                               \
        const char *e_ = tg_graph_error(g);                                                                            \
        ck_assert_msg(e_ != NULL, "expected an error containing '%s', got none", needle);                              \
        ck_assert_msg(strstr(e_, needle) != NULL, "error '%s' lacks '%s'", e_, needle);                                \
    } while (0)

/* y, what an op returned, is NULL with an error on g containing needle,
 * and the error sticks: ops of several families given NULL afterwards
 * return NULL and leave the first message in place. */
static inline void tt_assert_failed(tg_graph *g, const void *y, const char *needle)
{
    ck_assert_ptr_null(y);
    tt_assert_error(g, needle);
    char first[1024];
    snprintf(first, sizeof first, "%s", tg_graph_error(g));
    ck_assert_ptr_null(tg_layernorm(g, NULL, NULL, NULL, 1e-5));
    ck_assert_ptr_null(tg_dropout(g, NULL, 0.5));
    ck_assert_ptr_null(tg_softmax(g, NULL, NULL));
    ck_assert_ptr_null(tg_cross_entropy(g, NULL, NULL));
    ck_assert_ptr_null(tg_sum_all(g, NULL));
    ck_assert_ptr_null(tg_reshape(g, NULL, 1, (int[]){-1}));
    ck_assert_str_eq(tg_graph_error(g), first);
}

/* ---- a scratch directory --------------------------------------------------- */

/* The suite's scratch directory, "/tmp/<prefix>_XXXXXX" (tt_run_in_tmpdir
 * makes it). */
static char tt_dir[256];

/* tt_dir/name, in one of four rotating buffers (so that one call can take
 * a few paths). */
static inline const char *tt_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tt_dir, name);
    return buf[k];
}

/* The names in directory dir (. and .. aside) that contain part, counted. */
static inline int tt_count_names(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open the directory %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* ---- running a suite -------------------------------------------------------- */

/* The tests of one tcase, in order: START_TEST names, and TT_LOOP(name, n)
 * for a loop test over _i in [0, n). */
#define TT_TESTS(...) ((const TTest *const[]){__VA_ARGS__, NULL})
/* A marker (a TTest with no function, n in its line) followed by the test. */
#define TT_LOOP(test, n) &(const TTest){"tt_loop", NULL, NULL, (n)}, (test)

/* Adds a tcase called name to s with the tests (TT_TESTS); timeout in
 * seconds, 0 for Check's default. Returns the tcase. */
static inline TCase *tt_tcase(Suite *s, const char *name, double timeout, const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (timeout > 0) tcase_set_timeout(tc, timeout);
    for (; *tests; tests++) {
        if (!(*tests)->fn) { /* TT_LOOP's marker */
            tcase_add_loop_test(tc, tests[1], 0, (*tests)->line);
            tests++;
        } else {
            tcase_add_test(tc, *tests);
        }
    }
    suite_add_tcase(s, tc);
    return tc;
}

/* Runs every test of s in this process and prints the gradcheck tally;
 * EXIT_SUCCESS when all passed. */
static inline int tt_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* one process: the gradcheck tally below sees every test */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (tt_gc_cases)
        printf("gradcheck: %d cases, max |analytic - numeric| %.3g, worst ratio to tolerance %.3g\n", tt_gc_cases,
               tt_gc_max_err, tt_gc_worst_ratio);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* tt_run inside a new scratch directory (tt_dir, tt_path), removed
 * afterwards: with the files left in it when remove_files, else only when
 * empty (every test removes its files, a failure's stay for a look). */
static inline int tt_run_in_tmpdir(Suite *s, const char *prefix, bool remove_files)
{
    snprintf(tt_dir, sizeof tt_dir, "/tmp/%s_XXXXXX", prefix);
    if (!mkdtemp(tt_dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    int rc = tt_run(s);
    DIR *d = remove_files ? opendir(tt_dir) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", tt_dir, e->d_name);
        remove(path);
    }
    if (d) closedir(d);
    rmdir(tt_dir);
    return rc;
}

/* The whole of a main whose suite has one tcase. */
static inline int tt_main(const char *suite, const char *tcase, double timeout, const TTest *const *tests)
{
    Suite *s = suite_create(suite);
    tt_tcase(s, tcase, timeout, tests);
    return tt_run(s);
}

/* The shape arguments (ndim, shape) of a literal shape. */
#define TT_SHAPE(...) (sizeof((int[]){__VA_ARGS__}) / sizeof(int)), ((int[]){__VA_ARGS__})

#endif
