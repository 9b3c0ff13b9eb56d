/* optim: AdamW on a shard of the flat buffers (tg_adamw_new_shard,
 * tg_adamw_step_grad) and clipping of a gradient held in parts
 * (tg_clip_grad_norm_part), what ZeRO stage 1 in distributed/ is made of.
 *
 * A shard's update must be tg_adamw's, bit for bit, element for element:
 * R shards stepped one after another over the same store give exactly the
 * values and moments of one AdamW over the whole store, for R = 1..5 and
 * shards that cut tensors of either decay group in two (a 2-D weight of
 * 7 x 5, a bias of 5, a 3 x 3 weight, a gain of 4: 53 elements). */
#define _POSIX_C_SOURCE 200809L   /* pthread_barrier */
#include <pthread.h>

#include "tg_test.h"

/* Part r of n elements in R parts: [r n / R, (r + 1) n / R) (distributed/'s own
 * split is another; any cut must do). */
static void cut(int64_t n, int r, int R, int64_t *lo, int64_t *hi)
{
    *lo = r * n / R;
    *hi = (r + 1) * n / R;
}

static tg_params *store(tg_dtype dt)
{
    tg_params *p = tg_params_new(dt, NULL, 0);
    ck_assert_ptr_nonnull(tg_params_add(p, "w", TT_SHAPE(7, 5)));
    ck_assert_ptr_nonnull(tg_params_add(p, "b", TT_SHAPE(5)));
    ck_assert_ptr_nonnull(tg_params_add(p, "v", TT_SHAPE(3, 3)));
    ck_assert_ptr_nonnull(tg_params_add(p, "g", TT_SHAPE(4)));
    for (int64_t i = 0; i < tg_params_numel(p); i++) {
        double x = 0.4 - 0.013 * (double)i + 0.002 * (double)(i * i % 17);
        if (dt == TG_F32) ((float *)tg_params_data(p))[i] = (float)x;
        else ((double *)tg_params_data(p))[i] = x;
    }
    return p;
}

static void set_grads(tg_params *p, int k)
{
    for (int64_t i = 0; i < tg_params_numel(p); i++) {
        double x = sin(0.9 * (double)i + 1.7 * k) * (1 + (double)(i % 4)) * (i == 3 && k == 0 ? 0 : 1);
        if (tg_params_dtype(p) == TG_F32) ((float *)tg_params_grad(p))[i] = (float)x;
        else ((double *)tg_params_grad(p))[i] = x;
    }
}

START_TEST(shards_step_exactly_as_the_whole)
{
    const tg_dtype dts[] = {TG_F32, TG_F64};
    tg_adamw_config c = {0.9, 0.99, 1e-8, 0.1};
    for (int d = 0; d < 2; d++)
        for (int R = 1; R <= 5; R++) {
            tg_params *whole = store(dts[d]), *parts = store(dts[d]);
            const int64_t n = tg_params_numel(whole);
            const size_t es = tg_dtype_size(dts[d]);
            tg_adamw *o = tg_adamw_new(whole, &c, NULL, 0);
            tg_adamw *sh[5];
            int64_t lo[5], hi[5];
            for (int r = 0; r < R; r++) {
                cut(n, r, R, &lo[r], &hi[r]);
                char err[200];
                sh[r] = tg_adamw_new_shard(parts, &c, lo[r], hi[r], err, sizeof err);
                ck_assert_msg(sh[r] != NULL, "%s", err);
                /* the decay groups are the whole store's */
                tg_adamw_set_decay(sh[r], tg_params_get(parts, "v"), false);
            }
            tg_adamw_set_decay(o, tg_params_get(whole, "v"), false);
            for (int k = 0; k < 4; k++) {
                double lr = 0.01 / (k + 1);
                set_grads(whole, k);
                set_grads(parts, k);
                tg_adamw_step(o, lr);
                for (int r = 0; r < R; r++) {
                    if (r % 2) {   /* from the store's gradients, or from a copy of the shard's */
                        tg_adamw_step(sh[r], lr);
                    } else {
                        char *copy = malloc((size_t)(hi[r] - lo[r] + 1) * es);
                        memcpy(copy, (char *)tg_params_grad(parts) + (size_t)lo[r] * es, (size_t)(hi[r] - lo[r]) * es);
                        memset((char *)tg_params_grad(parts) + (size_t)lo[r] * es, 0xff, (size_t)(hi[r] - lo[r]) * es);
                        tg_adamw_step_grad(sh[r], lr, copy);
                        free(copy);
                    }
                    ck_assert_ptr_null(tg_adamw_error(sh[r]));
                }
            }
            ck_assert_mem_eq(tg_params_data(parts), tg_params_data(whole), (size_t)n * es);
            for (int r = 0; r < R; r++) {
                int64_t a, z;
                tg_adamw_shard(sh[r], &a, &z);
                ck_assert_int_eq(a, lo[r]);
                ck_assert_int_eq(z, hi[r]);
                ck_assert_int_eq(tg_adamw_steps(sh[r]), 4);
                ck_assert_mem_eq(tg_adamw_m(sh[r]), (char *)tg_adamw_m(o) + (size_t)lo[r] * es, (size_t)(z - a) * es);
                ck_assert_mem_eq(tg_adamw_v(sh[r]), (char *)tg_adamw_v(o) + (size_t)lo[r] * es, (size_t)(z - a) * es);
                tg_adamw_free(sh[r]);
            }
            tg_adamw_free(o);
            tg_params_free(whole);
            tg_params_free(parts);
        }
}
END_TEST

START_TEST(shard_refusals)
{
    tg_params *p = store(TG_F32);
    char err[200] = "";
    ck_assert_ptr_null(tg_adamw_new_shard(p, NULL, 5, 54, err, sizeof err));
    ck_assert_str_eq(err, "adamw_new_shard: the shard [5, 54) is not a range of the store's 53 elements");
    ck_assert_ptr_null(tg_adamw_new_shard(p, NULL, 6, 5, err, sizeof err));
    tg_adamw *o = tg_adamw_new_shard(p, NULL, 9, 12, err, sizeof err);
    ck_assert_ptr_nonnull(o);
    tg_adamw_step_grad(o, 0.1, NULL);
    ck_assert_str_eq(tg_adamw_error(o), "adamw_step_grad: grad is NULL; nothing done");
    ck_assert_int_eq(tg_adamw_steps(o), 0);
    tg_adamw_free(o);
    tg_adamw *e = tg_adamw_new_shard(p, NULL, 9, 9, err, sizeof err);   /* an empty shard steps nothing */
    ck_assert_ptr_nonnull(e);
    tg_adamw_step_grad(e, 0.1, NULL);
    ck_assert_ptr_null(tg_adamw_error(e));
    ck_assert_int_eq(tg_adamw_steps(e), 1);
    tg_adamw_free(e);
    tg_params_free(p);
}
END_TEST

/* The parts run on threads of their own, as ranks would, and reduce
 * meets them at a barrier: each writes its value, all read the combination. */
typedef struct shared {
    int n;
    pthread_barrier_t bar;
    double vals[8];
} shared;

typedef struct part {
    shared *sh;
    int me;
    void *g;
    tg_dtype dt;
    int64_t n;
    double max_norm, norm;
} part;

static void barrier_reduce(void *ctx, double *x, bool max)
{
    part *q = ctx;
    q->sh->vals[q->me] = *x;
    pthread_barrier_wait(&q->sh->bar);
    double acc = max ? -INFINITY : 0;
    for (int i = 0; i < q->sh->n; i++) acc = max ? fmax(acc, q->sh->vals[i]) : acc + q->sh->vals[i];
    pthread_barrier_wait(&q->sh->bar);   /* nobody overwrites vals before all have read them */
    *x = acc;
}

static void *run_part(void *arg)
{
    part *q = arg;
    q->norm = tg_clip_grad_norm_part(q->g, q->dt, q->n, q->max_norm, barrier_reduce, q);
    return NULL;
}

/* Clips the gradient g (n elements of dt) as `np` parts on np threads and
 * returns the norm (every part's, checked equal); g is scaled in place. */
static double clip_in_parts(void *g, tg_dtype dt, int64_t n, int np, double max_norm)
{
    shared sh = {.n = np};
    pthread_barrier_init(&sh.bar, NULL, (unsigned)np);
    part q[8];
    pthread_t th[8];
    const size_t es = tg_dtype_size(dt);
    for (int r = 0; r < np; r++) {
        int64_t lo, hi;
        cut(n, r, np, &lo, &hi);
        q[r] = (part){&sh, r, (char *)g + (size_t)lo * es, dt, hi - lo, max_norm, NAN};
        ck_assert_int_eq(pthread_create(&th[r], NULL, run_part, &q[r]), 0);
    }
    for (int r = 0; r < np; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&sh.bar);
    for (int r = 1; r < np; r++) ck_assert(q[r].norm == q[0].norm);
    return q[0].norm;
}

START_TEST(clip_in_parts_equals_clip_of_the_whole)
{
    for (int np = 1; np <= 4; np++) {
        tg_params *a = store(TG_F64), *b = store(TG_F64);
        set_grads(a, 2);
        set_grads(b, 2);
        double whole = tg_clip_grad_norm(a, 1.0);
        double part = clip_in_parts(tg_params_grad(b), TG_F64, tg_params_numel(b), np, 1.0);
        ck_assert_double_eq_tol(part, whole, 1e-13 * whole);
        for (int64_t i = 0; i < tg_params_numel(a); i++)
            ck_assert_double_eq_tol(((double *)tg_params_grad(b))[i], ((double *)tg_params_grad(a))[i], 1e-14);
        /* squares that overflow: the rescaled sum uses the largest |g| of all parts */
        ((double *)tg_params_grad(a))[50] = 1e200;
        ((double *)tg_params_grad(b))[50] = 1e200;
        ((double *)tg_params_grad(a))[2] = -3e199;
        ((double *)tg_params_grad(b))[2] = -3e199;
        whole = tg_clip_grad_norm(a, 1.0);
        part = clip_in_parts(tg_params_grad(b), TG_F64, tg_params_numel(b), np, 1.0);
        ck_assert(isfinite(whole));
        ck_assert_double_eq_tol(part, whole, 1e-13 * whole);
        ck_assert_double_eq_tol(((double *)tg_params_grad(b))[50], ((double *)tg_params_grad(a))[50], 1e-14);
        tg_params_free(a);
        tg_params_free(b);
    }
    ck_assert(isnan(tg_clip_grad_norm_part(NULL, TG_F32, 3, 1, NULL, NULL)));
    ck_assert(isnan(tg_clip_grad_norm_part(&(float){1}, TG_I32, 1, 1, NULL, NULL)));
    ck_assert_double_eq(tg_clip_grad_norm_part(NULL, TG_F32, 0, 1, NULL, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("optim_shard");
    TCase *tc = tcase_create("shard");
    tcase_add_test(tc, shards_step_exactly_as_the_whole);
    tcase_add_test(tc, shard_refusals);
    tcase_add_test(tc, clip_in_parts_equals_clip_of_the_whole);
    suite_add_tcase(s, tc);
    return tt_run(s);
}
