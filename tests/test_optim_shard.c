/* optim: AdamW on a shard of the flat buffers (tg_adamw_new_shard,
 * tg_adamw_step_grad) and clipping of a gradient held in parts
 * (tg_clip_grad_norm_part), what ZeRO stage 1 in distributed/ is made of.
 *
 * A shard's update must be tg_adamw's, bit for bit, element for element:
 * R shards stepped one after another over the same store give exactly the
 * values and moments of one AdamW over the whole store, for R = 1..5 and
 * shards that cut tensors of either decay group in two (a 2-D weight of
 * 7 x 5, a bias of 5, a 3 x 3 weight, a gain of 4: 53 elements). */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier */
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
    tg_params *p = tg_params_new(dt, NULL);
    ck_assert_ptr_nonnull(tg_params_add(p, "w", TT_SHAPE(7, 5), NULL));
    ck_assert_ptr_nonnull(tg_params_add(p, "b", TT_SHAPE(5), NULL));
    ck_assert_ptr_nonnull(tg_params_add(p, "v", TT_SHAPE(3, 3), NULL));
    ck_assert_ptr_nonnull(tg_params_add(p, "g", TT_SHAPE(4), NULL));
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
            tg_adamw *o = tg_adamw_new(whole, &c, NULL);
            tg_adamw *sh[5];
            int64_t lo[5], hi[5];
            for (int r = 0; r < R; r++) {
                cut(n, r, R, &lo[r], &hi[r]);
                tg_error err = {0};
                sh[r] = tg_adamw_new_shard(parts, &c, lo[r], hi[r], &err);
                ck_assert_msg(sh[r] != NULL, "%s", err.msg);
                /* the decay groups are the whole store's */
                tg_adamw_set_decay(sh[r], tg_params_get(parts, "v"), false, NULL);
            }
            tg_adamw_set_decay(o, tg_params_get(whole, "v"), false, NULL);
            for (int k = 0; k < 4; k++) {
                double lr = 0.01 / (k + 1);
                set_grads(whole, k);
                set_grads(parts, k);
                tg_adamw_step(o, lr, NULL);
                for (int r = 0; r < R; r++) {
                    if (r % 2) { /* from the store's gradients, or from a copy of the shard's */
                        tg_adamw_step(sh[r], lr, NULL);
                    } else {
                        char *copy = malloc((size_t)(hi[r] - lo[r] + 1) * es);
                        memcpy(copy, (char *)tg_params_grad(parts) + (size_t)lo[r] * es, (size_t)(hi[r] - lo[r]) * es);
                        memset((char *)tg_params_grad(parts) + (size_t)lo[r] * es, 0xff, (size_t)(hi[r] - lo[r]) * es);
                        ck_assert_int_eq(tg_adamw_step_grad(sh[r], lr, copy, NULL), 0);
                        free(copy);
                    }
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
    tg_error err = {0};
    ck_assert_ptr_null(tg_adamw_new_shard(p, NULL, 5, 54, &err));
    ck_assert_str_eq(err.msg, "adamw_new_shard: the shard [5, 54) is not a range of the store's 53 elements");
    ck_assert_ptr_null(tg_adamw_new_shard(p, NULL, 6, 5, &err));
    tg_adamw *o = tg_adamw_new_shard(p, NULL, 9, 12, &err);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(tg_adamw_step_grad(o, 0.1, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "adamw_step_grad: grad is NULL; nothing done");
    ck_assert_int_eq(tg_adamw_steps(o), 0);
    tg_adamw_free(o);
    tg_adamw *e = tg_adamw_new_shard(p, NULL, 9, 9, &err); /* an empty shard steps nothing */
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(tg_adamw_step_grad(e, 0.1, NULL, NULL), 0);
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
    pthread_barrier_wait(&q->sh->bar); /* nobody overwrites vals before all have read them */
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
        double parts = clip_in_parts(tg_params_grad(b), TG_F64, tg_params_numel(b), np, 1.0);
        ck_assert_double_eq_tol(parts, whole, 1e-13 * whole);
        for (int64_t i = 0; i < tg_params_numel(a); i++)
            ck_assert_double_eq_tol(((double *)tg_params_grad(b))[i], ((double *)tg_params_grad(a))[i], 1e-14);
        /* squares that overflow: the rescaled sum uses the largest |g| of all parts */
        ((double *)tg_params_grad(a))[50] = 1e200;
        ((double *)tg_params_grad(b))[50] = 1e200;
        ((double *)tg_params_grad(a))[2] = -3e199;
        ((double *)tg_params_grad(b))[2] = -3e199;
        whole = tg_clip_grad_norm(a, 1.0);
        parts = clip_in_parts(tg_params_grad(b), TG_F64, tg_params_numel(b), np, 1.0);
        ck_assert(isfinite(whole));
        ck_assert_double_eq_tol(parts, whole, 1e-13 * whole);
        ck_assert_double_eq_tol(((double *)tg_params_grad(b))[50], ((double *)tg_params_grad(a))[50], 1e-14);
        tg_params_free(a);
        tg_params_free(b);
    }
    ck_assert(isnan(tg_clip_grad_norm_part(NULL, TG_F32, 3, 1, NULL, NULL)));
    ck_assert(isnan(tg_clip_grad_norm_part(&(float){1}, TG_I32, 1, 1, NULL, NULL)));
    ck_assert_double_eq(tg_clip_grad_norm_part(NULL, TG_F32, 0, 1, NULL, NULL), 0);
}
END_TEST

/* The state through a file (tg_adamw_state_write / _read): an optimizer
 * restored from it, whole or as any shard, steps on exactly as the one
 * that wrote it; a file that is wrong anywhere is refused and changes
 * nothing. */
START_TEST(state_through_a_file_resumes_exactly)
{
    const tg_dtype dts[] = {TG_F32, TG_F64};
    tg_adamw_config c = {0.9, 0.99, 1e-8, 0.1};
    for (int d = 0; d < 2; d++) {
        tg_params *a = store(dts[d]), *b = store(dts[d]);
        const int64_t n = tg_params_numel(a);
        const size_t es = tg_dtype_size(dts[d]);
        tg_adamw *o = tg_adamw_new(a, &c, NULL);
        for (int k = 0; k < 3; k++) {
            set_grads(a, k);
            ck_assert_int_eq(tg_adamw_step(o, 0.01, NULL), 0);
        }
        memcpy(tg_params_data(b), tg_params_data(a), (size_t)n * es);
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_adamw_state_write(o, w, "opt", NULL, NULL), 0);
        tg_error err = {0};
        ck_assert_msg(tg_st_writer_save(w, tt_path("state.safetensors"), &err) == 0, "%s", err.msg);
        tg_st_writer_free(w);
        tg_st_file *f = tg_st_load(tt_path("state.safetensors"), &err);
        ck_assert_msg(f != NULL, "%s", err.msg);
        ck_assert_str_eq(tg_st_meta(f, "opt.steps"), "3");
        /* the optimizer that never stops: two more steps */
        for (int k = 3; k < 5; k++) {
            set_grads(a, k);
            ck_assert_int_eq(tg_adamw_step(o, 0.01, NULL), 0);
        }
        /* from the file (weights from b, a's at the save): the whole, and
         * shards of 2 and 3 processes, each steps on as o did */
        for (int R = 1; R <= 3; R++) {
            tg_params *parts = store(dts[d]);
            memcpy(tg_params_data(parts), tg_params_data(b), (size_t)n * es);
            tg_adamw *sh[3];
            for (int r = 0; r < R; r++) {
                int64_t lo, hi;
                cut(n, r, R, &lo, &hi);
                sh[r] = tg_adamw_new_shard(parts, &c, lo, hi, NULL);
                ck_assert_msg(tg_adamw_state_read(sh[r], f, "opt", &err) == 0, "%s", err.msg);
                ck_assert_int_eq(tg_adamw_steps(sh[r]), 3);
            }
            tg_params *ref = store(dts[d]);
            memcpy(tg_params_data(ref), tg_params_data(b), (size_t)n * es);
            tg_adamw *oref = tg_adamw_new(ref, &c, NULL);
            ck_assert_int_eq(tg_adamw_state_read(oref, f, "opt", &err), 0);
            for (int k = 3; k < 5; k++) {
                set_grads(parts, k);
                set_grads(ref, k);
                for (int r = 0; r < R; r++) ck_assert_int_eq(tg_adamw_step(sh[r], 0.01, NULL), 0);
                ck_assert_int_eq(tg_adamw_step(oref, 0.01, NULL), 0);
            }
            ck_assert_mem_eq(tg_params_data(parts), tg_params_data(a), (size_t)n * es);
            ck_assert_mem_eq(tg_params_data(ref), tg_params_data(a), (size_t)n * es);
            for (int r = 0; r < R; r++) tg_adamw_free(sh[r]);
            tg_adamw_free(oref);
            tg_params_free(ref);
            tg_params_free(parts);
        }
        tg_st_free(f);

        /* a shard writes the whole store's moments it is given; its own are only a part */
        tg_adamw *half = tg_adamw_new_shard(b, &c, 0, n / 2, NULL);
        const void *ms[2] = {NULL, tg_adamw_m(o)};
        for (int k = 0; k < 2; k++) { /* the refusal sticks in the writer: its save says why */
            w = tg_st_writer_new();
            ck_assert_int_eq(tg_adamw_state_write(half, w, "opt", ms[k], NULL), -1);
            ck_assert_int_eq(tg_st_writer_save(w, tt_path("never.safetensors"), &err), -1);
            ck_assert_msg(strstr(err.msg,
                                 k ? "adamw_state_write: give both moments m and v, or neither"
                                   : "adamw_state_write: the optimizer is a shard: give the whole store's moments"),
                          "%s", err.msg);
            tg_st_writer_free(w);
        }
        w = tg_st_writer_new();
        ck_assert_int_eq(tg_adamw_state_write(half, w, "opt", tg_adamw_m(o), tg_adamw_v(o)), 0);
        ck_assert_int_eq(tg_adamw_state_write(half, w, "opt", tg_adamw_m(o), tg_adamw_v(o)), -1); /* names taken */
        tg_st_writer_free(w);

        /* refusals: each file wrong in one way; the optimizer keeps its state */
        void *m = malloc((size_t)n * 8), *v = malloc((size_t)n * 8); /* room for either dtype's bytes */
        const int64_t shape2[2] = {1, n}, n1 = n - 1;
        for (int bad = 0; bad < 8; bad++) {
            memcpy(m, tg_adamw_m(o), (size_t)n * es);
            memcpy(v, tg_adamw_v(o), (size_t)n * es);
            const double put = bad == 0 ? NAN : bad == 1 ? -1e-3 : bad == 2 ? INFINITY : 0;
            if (bad <= 2) { /* a moment that cannot be: element n - 1, past any shard's start */
                void *t = bad == 0 ? m : v;
                if (dts[d] == TG_F32) ((float *)t)[n - 1] = (float)put;
                else ((double *)t)[n - 1] = put;
            }
            w = tg_st_writer_new();
            const char *dt = dts[d] == TG_F32 ? "F32" : "F64", *other = dts[d] == TG_F32 ? "F64" : "F32";
            if (bad != 3)
                tg_st_writer_add(w, "opt.m", bad == 4 ? other : dt, bad == 5 ? 2 : 1, bad == 5 ? shape2 : &n, m);
            tg_st_writer_add(w, "opt.v", dt, 1, bad == 6 ? &n1 : &n, v);
            tg_st_writer_add_meta(w, "opt.steps", bad == 7 ? "0x3" : "3");
            ck_assert_int_eq(tg_st_writer_save(w, tt_path("bad.safetensors"), &err), 0);
            tg_st_writer_free(w);
            f = tg_st_load(tt_path("bad.safetensors"), &err);
            ck_assert_ptr_nonnull(f);
            tg_adamw *x = tg_adamw_new(b, &c, NULL);
            err.msg[0] = 0;
            ck_assert_int_eq(tg_adamw_state_read(x, f, "opt", &err), -1);
            static const char *const want[] = {"is m nan", "v -0.001",        "v inf",          "no tensor 'opt.m'",
                                               "want F",   "in 2 dimensions", "of 52 elements", "'opt.steps' = '0x3'"};
            ck_assert_msg(strstr(err.msg, want[bad]), "case %d: '%s' lacks '%s'", bad, err.msg, want[bad]);
            ck_assert_int_eq(tg_adamw_steps(x), 0);
            for (int64_t i = 0; i < n; i++)
                ck_assert(dts[d] == TG_F32 ? ((float *)tg_adamw_m(x))[i] == 0 : ((double *)tg_adamw_m(x))[i] == 0);
            tg_adamw_free(x);
            tg_st_free(f);
            remove(tt_path("bad.safetensors"));
        }
        free(m);
        free(v);
        remove(tt_path("state.safetensors"));
        tg_adamw_free(half);
        tg_adamw_free(o);
        tg_params_free(a);
        tg_params_free(b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("optim_shard");
    TCase *tc = tcase_create("shard");
    tcase_add_test(tc, shards_step_exactly_as_the_whole);
    tcase_add_test(tc, shard_refusals);
    tcase_add_test(tc, clip_in_parts_equals_clip_of_the_whole);
    tcase_add_test(tc, state_through_a_file_resumes_exactly);
    suite_add_tcase(s, tc);
    return tt_run_in_tmpdir(s, "tg_optim_shard", false);
}
