/* optim: SGD, AdamW, weight averaging, gradient clipping, the
 * learning-rate schedule.
 *
 * Every expected value is computed here from the textbook formulas, one
 * scalar at a time, not by calling the optimizer another way. */
#include "tg_test.h"

/* ---- helpers --------------------------------------------------------- */

/* A store with a 2-D weight "w" (2,3) and a 1-D bias "b" (3): 9 elements,
 * values p0(i) in flat order. */
#define N 9
static double p0(int i) { return 0.5 - 0.25 * i + 0.03 * i * i; }

/* The gradient of element i at step k (from 0): fixed numbers with both
 * signs and varied sizes; element 0 is exactly 0 at step 0. */
static double grad_at(int k, int i) { return sin(1.3 * i + 0.7 * k) * (1 + i % 3); }

/* The learning rate of step k: changes every step, so a stale lr shows. */
static double lr_at(int k) { return 0.1 / (k + 1); }

static tg_params *make_store(tg_dtype dt)
{
    tg_params *p = tg_params_new(dt, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(tg_params_add(p, "w", TT_SHAPE(2, 3), NULL));
    ck_assert_ptr_nonnull(tg_params_add(p, "b", TT_SHAPE(3), NULL));
    for (int i = 0; i < N; i++) {
        if (dt == TG_F32) ((float *)tg_params_data(p))[i] = (float)p0(i);
        else ((double *)tg_params_data(p))[i] = p0(i);
    }
    return p;
}

static double get(tg_params *p, bool grad, int i)
{
    void *b = grad ? tg_params_grad(p) : tg_params_data(p);
    return tg_params_dtype(p) == TG_F32 ? ((float *)b)[i] : ((double *)b)[i];
}

static void set_grads(tg_params *p, int k)
{
    for (int i = 0; i < N; i++) {
        if (tg_params_dtype(p) == TG_F32) ((float *)tg_params_grad(p))[i] = (float)grad_at(k, i);
        else ((double *)tg_params_grad(p))[i] = grad_at(k, i);
    }
}

/* |x - y| <= tol * max(1, |y|) for every element of the store's values. */
static void assert_values(tg_params *p, const double *want, double tol, const char *what)
{
    for (int i = 0; i < N; i++) {
        double x = get(p, false, i);
        ck_assert_msg(fabs(x - want[i]) <= tol * fmax(1.0, fabs(want[i])), "%s: element %d: %.17g, want %.17g", what, i,
                      x, want[i]);
    }
}

/* ---- SGD --------------------------------------------------------------- */

/* Textbook SGD over `steps` steps: velocity v starts as the first g. */
static void sgd_reference(int steps, double mom, double wd, double *p)
{
    double vel[N];
    for (int i = 0; i < N; i++) p[i] = p0(i);
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < N; i++) {
            double g = grad_at(k, i) + wd * p[i];
            double d = g;
            if (mom > 0) {
                vel[i] = k == 0 ? g : mom * vel[i] + g;
                d = vel[i];
            }
            p[i] = p[i] - lr_at(k) * d;
        }
    }
}

static void check_sgd(tg_dtype dt, double mom, double wd, double tol)
{
    tg_params *p = make_store(dt);
    tg_sgd *o = tg_sgd_new(p, mom, wd, NULL);
    ck_assert_ptr_nonnull(o);
    for (int k = 0; k < 4; k++) {
        set_grads(p, k);
        ck_assert_int_eq(tg_sgd_step(o, lr_at(k), NULL), 0);
        double want[N];
        sgd_reference(k + 1, mom, wd, want);
        char what[96];
        snprintf(what, sizeof what, "sgd %s momentum %g wd %g step %d", tg_dtype_name(dt), mom, wd, k + 1);
        assert_values(p, want, tol, what);
    }
    /* the gradients are read, not changed */
    for (int i = 0; i < N; i++)
        ck_assert_double_eq(get(p, true, i), dt == TG_F32 ? (double)(float)grad_at(3, i) : grad_at(3, i));
    tg_sgd_free(o);
    tg_params_free(p);
}

START_TEST(sgd_matches_hand_updates)
{
    const double cases[][2] = {{0, 0}, {0.9, 0}, {0, 0.1}, {0.9, 0.1}};
    for (int c = 0; c < 4; c++) {
        check_sgd(TG_F64, cases[c][0], cases[c][1], 1e-14);
        check_sgd(TG_F32, cases[c][0], cases[c][1], 1e-6);
    }
}
END_TEST

START_TEST(sgd_first_step_numbers)
{
    /* one element worked by hand: p = 2, g = 0.5, wd = 0.1, mom = 0.9, lr = 0.1
     * step 1: g' = 0.5 + 0.2 = 0.7, b = 0.7, p = 2 - 0.07 = 1.93
     * step 2 (g = 0.5): g' = 0.5 + 0.193 = 0.693, b = 0.63 + 0.693 = 1.323,
     *                   p = 1.93 - 0.1323 = 1.7977 */
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_tensor *x = tg_params_add(p, "x", TT_SHAPE(1), NULL);
    ((double *)x->data)[0] = 2;
    tg_sgd *o = tg_sgd_new(p, 0.9, 0.1, NULL);
    ((double *)x->grad)[0] = 0.5;
    tg_sgd_step(o, 0.1, NULL);
    ck_assert_double_eq_tol(((double *)x->data)[0], 1.93, 1e-15);
    tg_sgd_step(o, 0.1, NULL);
    ck_assert_double_eq_tol(((double *)x->data)[0], 1.7977, 1e-15);
    tg_sgd_free(o);
    tg_params_free(p);
}
END_TEST

/* ---- AdamW ------------------------------------------------------------- */

/* Textbook AdamW (Loshchilov & Hutter, as PyTorch): decay, moments, the
 * bias-corrected estimates m_hat and v_hat, then the update. decay[i]
 * says whether element i's tensor decays. */
static void adamw_reference(int steps, const tg_adamw_config *c, const bool *decay, double *p)
{
    double m[N] = {0}, v[N] = {0};
    for (int i = 0; i < N; i++) p[i] = p0(i);
    for (int k = 0; k < steps; k++) {
        int t = k + 1;
        double lr = lr_at(k);
        for (int i = 0; i < N; i++) {
            double g = grad_at(k, i);
            if (decay[i]) p[i] = p[i] - lr * c->weight_decay * p[i];
            m[i] = c->beta1 * m[i] + (1 - c->beta1) * g;
            v[i] = c->beta2 * v[i] + (1 - c->beta2) * g * g;
            double m_hat = m[i] / (1 - pow(c->beta1, t));
            double v_hat = v[i] / (1 - pow(c->beta2, t));
            p[i] = p[i] - lr * m_hat / (sqrt(v_hat) + c->eps);
        }
    }
}

static const bool W_DECAYS[N] = {1, 1, 1, 1, 1, 1, 0, 0, 0}; /* w (2,3) yes, b (3) no */

static void check_adamw(tg_dtype dt, tg_adamw_config c, double tol)
{
    tg_params *p = make_store(dt);
    tg_adamw *o = tg_adamw_new(p, &c, NULL);
    ck_assert_ptr_nonnull(o);
    for (int k = 0; k < 4; k++) {
        set_grads(p, k);
        ck_assert_int_eq(tg_adamw_step(o, lr_at(k), NULL), 0);
        ck_assert_int_eq(tg_adamw_steps(o), k + 1);
        double want[N];
        adamw_reference(k + 1, &c, W_DECAYS, want);
        char what[96];
        snprintf(what, sizeof what, "adamw %s wd %g step %d", tg_dtype_name(dt), c.weight_decay, k + 1);
        assert_values(p, want, tol, what);
    }
    tg_adamw_free(o);
    tg_params_free(p);
}

START_TEST(adamw_matches_hand_updates)
{
    check_adamw(TG_F64, TG_ADAMW_DEFAULTS, 1e-14);
    check_adamw(TG_F64, (tg_adamw_config){0.9, 0.99, 1e-8, 0.1}, 1e-14); /* nanoGPT's */
    check_adamw(TG_F64, (tg_adamw_config){0.5, 0.75, 1e-3, 0.5}, 1e-14); /* large effects */
    check_adamw(TG_F32, TG_ADAMW_DEFAULTS, 2e-6);
    check_adamw(TG_F32, (tg_adamw_config){0.9, 0.99, 1e-8, 0.1}, 2e-6);
}
END_TEST

START_TEST(adamw_null_config_is_the_defaults)
{
    tg_params *a = make_store(TG_F64), *b = make_store(TG_F64);
    tg_adamw *oa = tg_adamw_new(a, NULL, NULL), *ob = tg_adamw_new(b, &TG_ADAMW_DEFAULTS, NULL);
    for (int k = 0; k < 3; k++) {
        set_grads(a, k);
        set_grads(b, k);
        tg_adamw_step(oa, lr_at(k), NULL);
        tg_adamw_step(ob, lr_at(k), NULL);
    }
    ck_assert_mem_eq(tg_params_data(a), tg_params_data(b), N * sizeof(double));
    /* and the defaults are PyTorch's */
    double want[N];
    adamw_reference(3, &(tg_adamw_config){0.9, 0.999, 1e-8, 0.01}, W_DECAYS, want);
    assert_values(a, want, 1e-14, "adamw NULL config");
    tg_adamw_free(oa);
    tg_adamw_free(ob);
    tg_params_free(a);
    tg_params_free(b);
}
END_TEST

START_TEST(adamw_first_update_is_about_lr_times_sign)
{
    /* at t = 1 the bias corrections undo (1 - beta): the update is
     * lr * g / (|g| + eps) whatever the size of g */
    const double g[] = {1e-3, -1e-3, 5, -5, 200, -200, 0.37};
    const tg_adamw_config cs[] = {TG_ADAMW_DEFAULTS, {0.9, 0.99, 1e-8, 0}, {0.5, 0.6, 1e-8, 0}};
    for (int dt = 0; dt < 2; dt++) {
        for (int c = 0; c < 3; c++) {
            tg_params *p = tg_params_new(dt ? TG_F32 : TG_F64, NULL);
            tg_tensor *x = tg_params_add(p, "x", TT_SHAPE(7), NULL); /* 1-D: no decay */
            tg_adamw *o = tg_adamw_new(p, &cs[c], NULL);
            for (int i = 0; i < 7; i++) {
                if (dt) ((float *)x->grad)[i] = (float)g[i];
                else ((double *)x->grad)[i] = g[i];
            }
            double lr = 0.01;
            tg_adamw_step(o, lr, NULL);
            for (int i = 0; i < 7; i++) {
                double delta = tg_tensor_get(x, i); /* p started at 0 */
                double want = g[i] > 0 ? -lr : lr;
                ck_assert_msg(fabs(delta - want) <= lr * 1e-5, "g %g: update %.10g, want about %g", g[i], delta, want);
            }
            tg_adamw_free(o);
            tg_params_free(p);
        }
    }
}
END_TEST

START_TEST(adamw_decay_groups)
{
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_tensor *w = tg_params_add(p, "w", TT_SHAPE(2, 3), NULL); /* (2,3) */
    tg_tensor *b = tg_params_add(p, "b", TT_SHAPE(3), NULL); /* (3) */
    tg_tensor *s = tg_params_add(p, "s", 0, NULL, NULL); /* () */
    tg_tensor *k = tg_params_add(p, "k", TT_SHAPE(2, 1, 2), NULL); /* (2,1,2) */
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_nonnull(k);
    int64_t n = tg_params_numel(p);
    ck_assert_int_eq(n, 14);
    double *d = tg_params_data(p);
    for (int64_t i = 0; i < n; i++) d[i] = 1.0 + 0.5 * (double)i;

    const tg_adamw_config c = {0.9, 0.999, 1e-8, 0.1};
    tg_adamw *o = tg_adamw_new(p, &c, NULL);
    ck_assert(tg_adamw_decays(o, w));
    ck_assert(!tg_adamw_decays(o, b));
    ck_assert(!tg_adamw_decays(o, s));
    ck_assert(tg_adamw_decays(o, k));

    /* zero gradients: m = v = 0, so the Adam part moves nothing and only
     * the decay shows: p * (1 - lr * wd) exactly, or p unchanged */
    double lr = 0.5, before[14];
    memcpy(before, d, sizeof before);
    tg_adamw_step(o, lr, NULL);
    const bool decays[14] = {1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    for (int i = 0; i < 14; i++) ck_assert_double_eq(d[i], decays[i] ? before[i] * (1 - lr * 0.1) : before[i]);

    /* overrides: the bias now decays, the weight does not */
    ck_assert_int_eq(tg_adamw_set_decay(o, b, true, NULL), 0);
    ck_assert_int_eq(tg_adamw_set_decay(o, w, false, NULL), 0);
    ck_assert(tg_adamw_decays(o, b));
    ck_assert(!tg_adamw_decays(o, w));
    memcpy(before, d, sizeof before);
    tg_adamw_step(o, lr, NULL);
    for (int i = 0; i < 14; i++) {
        bool dec = (i >= 6 && i < 9) || i >= 10;
        ck_assert_double_eq(d[i], dec ? before[i] * (1 - lr * 0.1) : before[i]);
    }

    /* a tensor of another store is refused by name */
    tg_params *other = tg_params_new(TG_F64, NULL);
    tg_tensor *stranger = tg_params_add(other, "stranger", TT_SHAPE(2, 2), NULL);
    tg_error se = {0};
    ck_assert_int_eq(tg_adamw_set_decay(o, stranger, false, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "'stranger' is not a parameter"));
    ck_assert(!tg_adamw_decays(o, stranger));
    ck_assert(!tg_adamw_decays(o, NULL));
    tg_params_free(other);
    tg_adamw_free(o);
    tg_params_free(p);
}
END_TEST

/* Gradients that depend on the values, as in training: g = 2 (p - t_i)
 * + 0.1 sin(k + i), computed from the store itself. */
static void loss_grads(tg_params *p, int k)
{
    float *d = tg_params_data(p), *g = tg_params_grad(p);
    for (int i = 0; i < N; i++) g[i] = 2 * (d[i] - 0.1f * (float)i) + 0.1f * sinf((float)(k + i));
}

START_TEST(adamw_state_save_and_restore_is_bit_identical)
{
    const tg_adamw_config c = {0.9, 0.95, 1e-8, 0.1};
    size_t bytes = N * sizeof(float);

    /* four steps straight */
    tg_params *a = make_store(TG_F32);
    tg_adamw *oa = tg_adamw_new(a, &c, NULL);
    for (int k = 0; k < 4; k++) {
        loss_grads(a, k);
        tg_adamw_step(oa, lr_at(k), NULL);
    }

    /* two steps, then values and state into a fresh store and optimizer */
    tg_params *b = make_store(TG_F32);
    tg_adamw *ob = tg_adamw_new(b, &c, NULL);
    for (int k = 0; k < 2; k++) {
        loss_grads(b, k);
        tg_adamw_step(ob, lr_at(k), NULL);
    }
    tg_params *r = make_store(TG_F32);
    tg_adamw *orr = tg_adamw_new(r, &c, NULL);
    memcpy(tg_params_data(r), tg_params_data(b), bytes);
    memcpy(tg_adamw_m(orr), tg_adamw_m(ob), bytes);
    memcpy(tg_adamw_v(orr), tg_adamw_v(ob), bytes);
    ck_assert_int_eq(tg_adamw_steps(ob), 2);
    tg_adamw_set_steps(orr, tg_adamw_steps(ob), NULL);
    tg_adamw_free(ob);
    tg_params_free(b);
    for (int k = 2; k < 4; k++) {
        loss_grads(r, k);
        tg_adamw_step(orr, lr_at(k), NULL);
    }
    ck_assert_int_eq(tg_adamw_steps(orr), 4);
    ck_assert_mem_eq(tg_params_data(r), tg_params_data(a), bytes);
    ck_assert_mem_eq(tg_adamw_m(orr), tg_adamw_m(oa), bytes);
    ck_assert_mem_eq(tg_adamw_v(orr), tg_adamw_v(oa), bytes);

    /* without the step count the bias corrections differ: not identical */
    tg_params *z = make_store(TG_F32);
    tg_adamw *oz = tg_adamw_new(z, &c, NULL);
    for (int k = 0; k < 2; k++) {
        loss_grads(z, k);
        tg_adamw_step(oz, lr_at(k), NULL);
    }
    tg_adamw_set_steps(oz, 0, NULL);
    for (int k = 2; k < 4; k++) {
        loss_grads(z, k);
        tg_adamw_step(oz, lr_at(k), NULL);
    }
    ck_assert(memcmp(tg_params_data(z), tg_params_data(a), bytes) != 0);

    tg_error se = {0};
    ck_assert_int_eq(tg_adamw_set_steps(oz, -1, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "step count -1 is negative"));
    ck_assert_int_eq(tg_adamw_steps(oz), 2);
    tg_adamw_free(oz);
    tg_params_free(z);
    tg_adamw_free(orr);
    tg_params_free(r);
    tg_adamw_free(oa);
    tg_params_free(a);
}
END_TEST

START_TEST(optimizers_refuse_a_grown_store_and_bad_settings)
{
    tg_params *p = make_store(TG_F64);
    tg_adamw *a = tg_adamw_new(p, NULL, NULL);
    tg_sgd *s = tg_sgd_new(p, 0.9, 0, NULL);
    tg_tensor *late = tg_params_add(p, "late", TT_SHAPE(4), NULL);
    ck_assert_ptr_nonnull(late);
    set_grads(p, 0);
    for (int i = 0; i < 4; i++) ((double *)late->grad)[i] = 1;
    double before[N + 4];
    memcpy(before, tg_params_data(p), sizeof before);

    tg_error se = {0};
    ck_assert_int_eq(tg_adamw_step(a, 0.1, &se), -1); /* parameters added later would never train */
    ck_assert_ptr_nonnull(strstr(se.msg, "adamw_step: the store has grown from 9 to 13 elements"));
    ck_assert_int_eq(tg_adamw_steps(a), 0);
    ck_assert_int_eq(tg_sgd_step(s, 0.1, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "sgd_step: the store has grown from 9 to 13 elements"));
    ck_assert_mem_eq(tg_params_data(p), before, sizeof before);
    tg_adamw_free(a);
    tg_sgd_free(s);

    /* settings PyTorch also refuses, each with its reason in err.msg */
    static const struct {
        double mom, wd;
        const char *want;
    } sgd_bad[] = {
        {0, 0, "sgd_new: params is NULL"},
        {-0.1, 0, "momentum and weight_decay must be finite and >= 0, got -0.1 and 0"},
        {0, -1, "momentum and weight_decay must be finite and >= 0, got 0 and -1"},
        {NAN, 0, "momentum and weight_decay must be finite and >= 0, got nan and 0"},
    };
    for (int k = 0; k < 4; k++) {
        tg_error err = {0};
        ck_assert_ptr_null(tg_sgd_new(k ? p : NULL, sgd_bad[k].mom, sgd_bad[k].wd, &err));
        ck_assert_msg(strstr(err.msg, sgd_bad[k].want), "sgd case %d: '%s' lacks '%s'", k, err.msg, sgd_bad[k].want);
    }
    static const struct {
        tg_adamw_config c;
        const char *want;
    } adamw_bad[] = {
        {{0.9, 0.999, 1e-8, 0}, "adamw_new: params is NULL"},
        {{1.0, 0.999, 1e-8, 0}, "beta1 and beta2 must be in [0, 1), got 1 and 0.999"},
        {{0.9, -0.1, 1e-8, 0}, "beta1 and beta2 must be in [0, 1), got 0.9 and -0.1"},
        {{0.9, 0.999, -1, 0}, "eps and weight_decay must be finite and >= 0, got -1 and 0"},
        {{0.9, 0.999, 1e-8, NAN}, "eps and weight_decay must be finite and >= 0, got 1e-08 and nan"},
        {{NAN, 0.999, 1e-8, 0}, "beta1 and beta2 must be in [0, 1), got nan and 0.999"},
    };
    for (int k = 0; k < 6; k++) {
        tg_error err = {0};
        ck_assert_ptr_null(tg_adamw_new(k ? p : NULL, &adamw_bad[k].c, &err));
        ck_assert_msg(strstr(err.msg, adamw_bad[k].want), "adamw case %d: '%s' lacks '%s'", k, err.msg,
                      adamw_bad[k].want);
    }
    tg_sgd_free(NULL);
    tg_adamw_free(NULL);
    tg_params_free(p);

    /* an empty store: steps do nothing, and nothing breaks */
    tg_params *e = tg_params_new(TG_F32, NULL);
    tg_adamw *ea = tg_adamw_new(e, NULL, NULL);
    tg_sgd *es = tg_sgd_new(e, 0.9, 0.1, NULL);
    ck_assert_ptr_nonnull(ea);
    ck_assert_ptr_nonnull(es);
    ck_assert_int_eq(tg_adamw_step(ea, 0.1, NULL), 0);
    ck_assert_int_eq(tg_sgd_step(es, 0.1, NULL), 0);
    ck_assert_double_eq(tg_clip_grad_norm(e, 1.0), 0.0);
    tg_adamw_free(ea);
    tg_sgd_free(es);
    tg_params_free(e);
}
END_TEST

START_TEST(steps_allocate_nothing)
{
    tg_params *p = make_store(TG_F32);
    tg_adamw *a = tg_adamw_new(p, NULL, NULL);
    tg_sgd *s = tg_sgd_new(p, 0.9, 0.1, NULL);
    uint64_t before = tg_alloc_calls();
    for (int k = 0; k < 3; k++) {
        set_grads(p, k);
        tg_clip_grad_norm(p, 1.0);
        tg_adamw_step(a, 0.01, NULL);
        tg_sgd_step(s, 0.01, NULL);
    }
    ck_assert_uint_eq(tg_alloc_calls(), before);
    tg_adamw_free(a);
    tg_sgd_free(s);
    tg_params_free(p);
}
END_TEST

/* ---- clip_grad_norm ------------------------------------------------------ */

START_TEST(clip_grad_norm_scales_above_and_not_below)
{
    for (int dt = 0; dt < 2; dt++) {
        tg_params *p = make_store(dt ? TG_F32 : TG_F64);
        set_grads(p, 1);
        double orig[N], sum = 0;
        for (int i = 0; i < N; i++) {
            orig[i] = get(p, true, i); /* as stored (rounded to f32 there) */
            sum += orig[i] * orig[i];
        }
        double want = sqrt(sum);
        size_t bytes = N * (dt ? sizeof(float) : sizeof(double));
        char saved[N * sizeof(double)];
        memcpy(saved, tg_params_grad(p), bytes);

        /* below: untouched */
        double norm = tg_clip_grad_norm(p, want * 1.5);
        ck_assert_double_eq_tol(norm, want, 1e-15 * want);
        ck_assert_mem_eq(tg_params_grad(p), saved, bytes);

        /* above: every gradient times max / (norm + 1e-6) */
        double max = 0.5;
        norm = tg_clip_grad_norm(p, max);
        ck_assert_double_eq_tol(norm, want, 1e-15 * want);
        double coef = max / (want + 1e-6);
        for (int i = 0; i < N; i++) {
            if (dt) ck_assert_float_eq((float)get(p, true, i), (float)orig[i] * (float)coef);
            else ck_assert_double_eq(get(p, true, i), orig[i] * coef);
        }
        /* the clipped norm is max_norm * norm / (norm + 1e-6), a hair under max_norm */
        double again = tg_clip_grad_norm(p, 1e9);
        ck_assert_double_eq_tol(again, max * want / (want + 1e-6), (dt ? 1e-7 : 1e-15));
        if (!dt) ck_assert(again < max);
        tg_params_free(p);
    }
}
END_TEST

START_TEST(clip_grad_norm_nonfinite)
{
    for (int dt = 0; dt < 2; dt++) {
        tg_params *p = make_store(dt ? TG_F32 : TG_F64);
        size_t bytes = N * (dt ? sizeof(float) : sizeof(double));
        char saved[N * sizeof(double)];
        set_grads(p, 2);
        if (dt) ((float *)tg_params_grad(p))[7] = NAN;
        else ((double *)tg_params_grad(p))[7] = NAN;
        memcpy(saved, tg_params_grad(p), bytes);
        ck_assert(isnan(tg_clip_grad_norm(p, 0.1)));
        ck_assert_mem_eq(tg_params_grad(p), saved, bytes);

        if (dt) ((float *)tg_params_grad(p))[7] = -INFINITY;
        else ((double *)tg_params_grad(p))[7] = -INFINITY;
        memcpy(saved, tg_params_grad(p), bytes);
        double n = tg_clip_grad_norm(p, 0.1);
        ck_assert(isinf(n) && n > 0);
        ck_assert_mem_eq(tg_params_grad(p), saved, bytes);
        tg_params_free(p);
    }
    ck_assert(isnan(tg_clip_grad_norm(NULL, 1)));

    /* f64 squares that overflow while the norm does not: still clipped */
    tg_params *p = tg_params_new(TG_F64, NULL);
    tg_tensor *x = tg_params_add(p, "x", TT_SHAPE(2), NULL);
    double *g = x->grad;
    g[0] = 3e200;
    g[1] = -4e200;
    double norm = tg_clip_grad_norm(p, 1.0);
    ck_assert_double_eq_tol(norm, 5e200, 1e-15 * 5e200);
    ck_assert_double_eq_tol(g[0], 0.6, 1e-15);
    ck_assert_double_eq_tol(g[1], -0.8, 1e-15);
    tg_params_free(p);
}
END_TEST

START_TEST(clip_grad_norm_zero_max_zeroes)
{
    tg_params *p = make_store(TG_F64);
    set_grads(p, 1);
    tg_clip_grad_norm(p, 0.0);
    for (int i = 0; i < N; i++) ck_assert_double_eq(get(p, true, i), 0.0);
    /* a negative max_norm scales nothing (it would flip the gradients) */
    set_grads(p, 1);
    tg_clip_grad_norm(p, -1.0);
    for (int i = 0; i < N; i++) ck_assert_double_eq(get(p, true, i), grad_at(1, i));
    tg_params_free(p);
}
END_TEST

/* ---- the schedule -------------------------------------------------------- */

START_TEST(lr_cosine_schedule)
{
    const double lr = 6e-4, lo = 6e-5;
    const int64_t W = 10, D = 110;
    ck_assert_double_eq_tol(tg_lr_cosine(0, W, D, lr, lo), lr / 11, 1e-19); /* first step */
    ck_assert_double_eq_tol(tg_lr_cosine(4, W, D, lr, lo), lr * 5 / 11, 1e-19);
    ck_assert_double_eq_tol(tg_lr_cosine(9, W, D, lr, lo), lr * 10 / 11, 1e-19); /* end of warmup */
    ck_assert_double_eq(tg_lr_cosine(10, W, D, lr, lo), lr); /* peak */
    ck_assert_double_eq_tol(tg_lr_cosine(60, W, D, lr, lo), (lr + lo) / 2, 1e-19); /* midway */
    /* a quarter of the way: cos(pi/4) = sqrt(2)/2 */
    ck_assert_double_eq_tol(tg_lr_cosine(35, W, D, lr, lo), lo + (0.5 + sqrt(2) / 4) * (lr - lo), 1e-19);
    ck_assert_double_eq_tol(tg_lr_cosine(85, W, D, lr, lo), lo + (0.5 - sqrt(2) / 4) * (lr - lo), 1e-19);
    ck_assert_double_eq(tg_lr_cosine(D, W, D, lr, lo), lo);
    ck_assert_double_eq(tg_lr_cosine(D + 1, W, D, lr, lo), lo);
    ck_assert_double_eq(tg_lr_cosine(1000000, W, D, lr, lo), lo);
    /* it only falls after the peak */
    for (int64_t s = W; s < D; s++) ck_assert(tg_lr_cosine(s + 1, W, D, lr, lo) < tg_lr_cosine(s, W, D, lr, lo));
    /* no warmup: the peak at step 0; decay_steps == warmup: no 0/0 */
    ck_assert_double_eq(tg_lr_cosine(0, 0, 100, lr, lo), lr);
    ck_assert_double_eq(tg_lr_cosine(10, 10, 10, lr, lo), lo);
    ck_assert_double_eq_tol(tg_lr_cosine(9, 10, 10, lr, lo), lr * 10 / 11, 1e-19);
    ck_assert_double_eq_tol(tg_lr_cosine(-3, W, D, lr, lo), lr / 11, 1e-19);
}
END_TEST

/* warmup-stable-decay against values worked out by hand: warmup 10,
 * decay_steps 110, decay_frac 0.2: the decay takes round(22) = 22 steps,
 * from step 88 */
START_TEST(lr_wsd_schedule)
{
    const double lr = 6e-4, lo = 6e-5;
    tg_lr_schedule s = {
        .shape = TG_LR_WSD, .warmup = 10, .decay_steps = 110, .lr = lr, .min_lr = lo, .decay_frac = 0.2};
    ck_assert_double_eq_tol(tg_lr_at(&s, 0), lr / 11, 1e-19); /* the cosine's warmup */
    ck_assert_double_eq_tol(tg_lr_at(&s, 9), lr * 10 / 11, 1e-19);
    ck_assert_double_eq(tg_lr_at(&s, 10), lr); /* stable */
    ck_assert_double_eq(tg_lr_at(&s, 60), lr);
    ck_assert_double_eq(tg_lr_at(&s, 87), lr);
    ck_assert_double_eq(tg_lr_at(&s, 88), lr); /* the decay's first step: 22/22 */
    ck_assert_double_eq_tol(tg_lr_at(&s, 89), lo + (lr - lo) * 21 / 22, 1e-19);
    ck_assert_double_eq_tol(tg_lr_at(&s, 99), (lr + lo) / 2, 1e-19); /* 11/22 */
    ck_assert_double_eq_tol(tg_lr_at(&s, 109), lo + (lr - lo) / 22, 1e-19); /* the last step trained */
    ck_assert_double_eq(tg_lr_at(&s, 110), lo);
    ck_assert_double_eq(tg_lr_at(&s, 5000), lo);
    for (int64_t k = 88; k < 110; k++) ck_assert(tg_lr_at(&s, k + 1) < tg_lr_at(&s, k));
    /* 0.25 of 110 is 27.5: rounded to 28 steps, from step 82 */
    s.decay_frac = 0.25;
    ck_assert_double_eq(tg_lr_at(&s, 81), lr);
    ck_assert_double_eq(tg_lr_at(&s, 82), lr);
    ck_assert_double_eq_tol(tg_lr_at(&s, 96), (lr + lo) / 2, 1e-19);
    ck_assert_double_eq_tol(tg_lr_at(&s, 83), lo + (lr - lo) * 27 / 28, 1e-19);
    /* the whole run decays: the decay starts where the warmup ends */
    s.decay_frac = 1;
    ck_assert_double_eq(tg_lr_at(&s, 10), lr);
    ck_assert_double_eq_tol(tg_lr_at(&s, 60), (lr + lo) / 2, 1e-19);
    s.decay_frac = 7; /* beyond 1: as 1 */
    ck_assert_double_eq_tol(tg_lr_at(&s, 60), (lr + lo) / 2, 1e-19);
    /* no decay: lr to the end, then min_lr */
    s.decay_frac = 0;
    ck_assert_double_eq(tg_lr_at(&s, 109), lr);
    ck_assert_double_eq(tg_lr_at(&s, 110), lo);
    s.decay_frac = NAN;
    ck_assert_double_eq(tg_lr_at(&s, 109), lr);
    /* no warmup: the peak at step 0; a negative step counts as 0 */
    s = (tg_lr_schedule){.shape = TG_LR_WSD, .warmup = 0, .decay_steps = 10, .lr = 1, .min_lr = 0, .decay_frac = 0.5};
    ck_assert_double_eq(tg_lr_at(&s, 0), 1);
    ck_assert_double_eq(tg_lr_at(&s, -4), 1);
    ck_assert_double_eq(tg_lr_at(&s, 5), 1);
    ck_assert_double_eq(tg_lr_at(&s, 6), 0.8);
    ck_assert_double_eq(tg_lr_at(&s, 9), 0.2);
    ck_assert(isnan(tg_lr_at(NULL, 3)));
}
END_TEST

/* TG_LR_COSINE is tg_lr_cosine, step for step */
START_TEST(lr_at_cosine_is_tg_lr_cosine)
{
    const tg_lr_schedule s = {
        .shape = TG_LR_COSINE, .warmup = 7, .decay_steps = 93, .lr = 3e-3, .min_lr = 1e-4, .decay_frac = 0.3};
    for (int64_t k = -2; k < 120; k++) ck_assert_double_eq(tg_lr_at(&s, k), tg_lr_cosine(k, 7, 93, 3e-3, 1e-4));
}
END_TEST

/* ---- weight averaging --------------------------------------------------- */

/* a = d a + (1 - d) p after every change of the values, a starting as p0;
 * in each dtype, from the formula one scalar at a time */
START_TEST(ema_matches_hand_averages)
{
    for (int f = 0; f < 2; f++) {
        const tg_dtype dt = f ? TG_F32 : TG_F64;
        tg_params *p = make_store(dt);
        tg_error err = {0};
        tg_ema *e = tg_ema_new(p, 0.75, &err);
        ck_assert_msg(e != NULL, "%s", err.msg);
        ck_assert_double_eq(tg_ema_decay(e), 0.75);
        ck_assert_int_eq(tg_ema_numel(e), N);
        double a[N];
        for (int i = 0; i < N; i++) a[i] = dt == TG_F32 ? (double)(float)p0(i) : p0(i);
        for (int k = 0; k < 5; k++) {
            for (int i = 0; i < N; i++) { /* new values, then the update */
                const double v = p0(i) + grad_at(k, i);
                if (dt == TG_F32) ((float *)tg_params_data(p))[i] = (float)v;
                else ((double *)tg_params_data(p))[i] = v;
                a[i] = dt == TG_F32 ? (double)(0.75f * (float)a[i] + 0.25f * (float)v) : 0.75 * a[i] + 0.25 * v;
            }
            ck_assert_int_eq(tg_ema_update(e, NULL), 0);
            for (int i = 0; i < N; i++) {
                const double got = dt == TG_F32 ? ((float *)tg_ema_values(e))[i] : ((double *)tg_ema_values(e))[i];
                /* two roundings of the dtype: the sum may be one fused multiply-add */
                const double tol = (dt == TG_F32 ? 0x1p-22 : 0x1p-51) * fmax(fabs(a[i]), 1e-30);
                ck_assert_msg(fabs(got - a[i]) <= tol, "%s step %d element %d: %.17g, want %.17g", tg_dtype_name(dt), k,
                              i, got, a[i]);
                a[i] = got; /* the next step from the library's value: no drift of the roundings */
            }
        }
        /* a swap puts the averages in the store and the values aside; a second swaps back */
        double v[N];
        for (int i = 0; i < N; i++) v[i] = get(p, false, i);
        ck_assert_int_eq(tg_ema_swap(e, NULL), 0);
        assert_values(p, a, 0, "the averages swapped in");
        ck_assert_int_eq(tg_ema_swap(e, NULL), 0);
        assert_values(p, v, 0, "the values swapped back");
        /* a reset starts the averages again as the values, which it leaves alone */
        ck_assert_int_eq(tg_ema_reset(e, NULL), 0);
        ck_assert_mem_eq(tg_ema_values(e), tg_params_data(p), N * tg_dtype_size(dt));
        assert_values(p, v, 0, "the values after a reset");
        /* decay 0: the average is the values */
        tg_ema *z = tg_ema_new(p, 0, NULL);
        ck_assert_int_eq(tg_ema_update(z, NULL), 0);
        ck_assert_mem_eq(tg_ema_values(z), tg_params_data(p), N * tg_dtype_size(dt));
        tg_ema_free(z);
        tg_ema_free(e);
        tg_params_free(p);
    }
}
END_TEST

START_TEST(ema_refuses_bad_decays_a_grown_store_and_bad_state)
{
    tg_error err = {0};
    tg_params *p = make_store(TG_F32);
    const double bad[] = {-0.1, 1, 1.5, NAN, INFINITY};
    for (int i = 0; i < 5; i++) {
        ck_assert_ptr_null(tg_ema_new(p, bad[i], &err));
        ck_assert_ptr_nonnull(strstr(err.msg, "ema_new: decay must be in [0, 1)"));
    }
    tg_ema *e = tg_ema_new(p, 0.5, &err);
    ck_assert_int_eq(tg_ema_update(e, NULL), 0);
    /* through a file: the same bits back, into an average of the same decay */
    tg_st_writer *w = tg_st_writer_new();
    ck_assert_int_eq(tg_ema_state_write(e, w, "run.ema"), 0);
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("ema.safetensors"), &err), 0);
    tg_st_writer_free(w);
    tg_st_file *f = tg_st_load(tt_path("ema.safetensors"), &err);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(tg_st_meta(f, "run.ema.decay"), "0.5");
    for (int i = 0; i < N; i++) ((float *)tg_params_data(p))[i] += 1;
    tg_ema *r = tg_ema_new(p, 0.5, &err);
    ck_assert_int_eq(tg_ema_state_read(r, f, "run.ema", &err), 0);
    ck_assert_mem_eq(tg_ema_values(r), tg_ema_values(e), N * sizeof(float));
    /* another decay, another prefix, another dtype: refused, nothing changed */
    tg_ema *other = tg_ema_new(p, 0.25, &err);
    float before[N];
    memcpy(before, tg_ema_values(other), sizeof before);
    ck_assert_int_eq(tg_ema_state_read(other, f, "run.ema", &err), -1);
    ck_assert_str_eq(err.msg, "ema_state_read: metadata 'run.ema.decay' = '0.5' is not this average's decay 0.25");
    ck_assert_mem_eq(tg_ema_values(other), before, sizeof before);
    ck_assert_int_eq(tg_ema_state_read(other, f, "ema", &err), -1);
    ck_assert_str_eq(err.msg, "ema_state_read: the file has no tensor 'ema.values'");
    tg_params *p64 = make_store(TG_F64);
    tg_ema *e64 = tg_ema_new(p64, 0.5, &err);
    ck_assert_int_eq(tg_ema_state_read(e64, f, "run.ema", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "want F64 of 9 elements, got F32 of 9 elements"));
    tg_st_free(f);
    /* a value that is not finite */
    float nan_avg[N] = {0};
    nan_avg[4] = NAN;
    const int64_t n = N;
    w = tg_st_writer_new();
    tg_st_writer_add(w, "x.values", "F32", 1, &n, nan_avg);
    tg_st_writer_add_meta(w, "x.decay", "0.25");
    ck_assert_int_eq(tg_st_writer_save(w, tt_path("bad.safetensors"), &err), 0);
    tg_st_writer_free(w);
    f = tg_st_load(tt_path("bad.safetensors"), &err);
    ck_assert_int_eq(tg_ema_state_read(other, f, "x", &err), -1);
    ck_assert_msg(strstr(err.msg, "element 4 of 'x.values' is") != NULL, "%s", err.msg);
    ck_assert_mem_eq(tg_ema_values(other), before, sizeof before);
    tg_st_free(f);
    /* a grown store: nothing done, and said why */
    ck_assert_ptr_nonnull(tg_params_add(p, "extra", TT_SHAPE(2), NULL));
    memcpy(before, tg_ema_values(e), sizeof before);
    tg_error se = {0};
    ck_assert_int_eq(tg_ema_update(e, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "ema_update: the store has grown from 9 to 11 elements"));
    ck_assert_int_eq(tg_ema_swap(e, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "ema_swap: the store has grown from 9 to 11 elements"));
    ck_assert_int_eq(tg_ema_reset(e, &se), -1);
    ck_assert_ptr_nonnull(strstr(se.msg, "ema_reset: the store has grown from 9 to 11 elements"));
    ck_assert_mem_eq(tg_ema_values(e), before, sizeof before);
    tg_ema_free(e);
    tg_ema_free(r);
    tg_ema_free(other);
    tg_ema_free(e64);
    tg_params_free(p);
    tg_params_free(p64);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("optim");
    tt_tcase(s, "optim", 0,
             TT_TESTS(sgd_matches_hand_updates, sgd_first_step_numbers, adamw_matches_hand_updates,
                      adamw_null_config_is_the_defaults, adamw_first_update_is_about_lr_times_sign, adamw_decay_groups,
                      adamw_state_save_and_restore_is_bit_identical, optimizers_refuse_a_grown_store_and_bad_settings,
                      steps_allocate_nothing, clip_grad_norm_scales_above_and_not_below, clip_grad_norm_nonfinite,
                      clip_grad_norm_zero_max_zeroes, lr_cosine_schedule, lr_wsd_schedule, lr_at_cosine_is_tg_lr_cosine,
                      ema_matches_hand_averages, ema_refuses_bad_decays_a_grown_store_and_bad_state));
    return tt_run_in_tmpdir(s, "tg_optim", true);
}
