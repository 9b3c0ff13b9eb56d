/* Shared helpers for the Check suites. */
#ifndef TG_TEST_H
#define TG_TEST_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad.h"

/* An f64 leaf on g with the given shape, filled from a seeded normal
 * stream, requiring grad. */
static inline tg_tensor *tt_randn(tg_graph *g, int ndim, const int *shape, uint64_t seed)
{
    tg_tensor *t = tg_tensor_new(g, TG_F64, ndim, shape);
    if (!t) { fprintf(stderr, "tensor_new: %s\n", tg_graph_error(g)); abort(); }
    tg_rng r;
    tg_rng_seed(&r, seed, 7);
    tg_rng_fill_normal(&r, t, 0.0, 1.0);
    if (tg_tensor_set_requires_grad(g, t, true) != 0) abort();
    return t;
}

/* gradcheck that reports gradcheck's own sentence when it fails. */
#define tt_assert_gradcheck(fn, ctx, n, inputs)                                        \
    do {                                                                               \
        tg_gradcheck_result res_;                                                      \
        bool ok_ = tg_gradcheck((fn), (ctx), (n), (inputs), NULL, &res_);             \
        tt_note_gradcheck(&res_);                                                      \
        ck_assert_msg(ok_, "%s: %s", #fn, res_.message);                               \
    } while (0)

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
#define tt_assert_error(g, needle)                                                     \
    do {                                                                               \
        const char *e_ = tg_graph_error(g);                                            \
        ck_assert_msg(e_ != NULL, "expected an error containing '%s', got none", needle); \
        ck_assert_msg(strstr(e_, needle) != NULL, "error '%s' lacks '%s'", e_, needle); \
    } while (0)

static inline int tt_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);   /* one process: the gradcheck tally below sees every test */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (tt_gc_cases)
        printf("gradcheck: %d cases, max |analytic - numeric| %.3g, worst ratio to tolerance %.3g\n",
               tt_gc_cases, tt_gc_max_err, tt_gc_worst_ratio);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define TT_SHAPE(...) (sizeof((int[]){__VA_ARGS__}) / sizeof(int)), ((int[]){__VA_ARGS__})

#endif
