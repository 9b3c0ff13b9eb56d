/* optim: Muon, and AdamW leaving Muon's matrices alone.
 *
 * Expected values come from the definition (optim/optim.h), computed here
 * in double with plain loops (a naive product, the transpose written out),
 * or by hand for a single row or column, whose one singular value the
 * Newton-Schulz polynomial maps on its own. Run once per kernel path
 * (TG_ISA: the f32 products go through that path's gemm). */
#include "tg_test.h"

#include "../core/product_internal.h"
#include "../ops/gemm_internal.h"
#include "../optim/optim.h"

/* The store: two block matrices (3x5 wide, 5x3 tall: the transposed
 * path), a bias, and an embedding Muon leaves to AdamW. */
static const struct {
    const char *name;
    int r, c;
} shapes[] = {
    {"emb.weight", 4, 3},
    {"blocks.0.w", 3, 5},
    {"blocks.0.b", 5, 0},
    {"blocks.1.w", 5, 3},
};
#define NT 4
#define NE (12 + 15 + 5 + 15)

static double p0(int i) { return 0.3 - 0.02 * i + 0.001 * i * i; }
static double grad_at(int k, int i) { return sin(1.7 * i + 0.9 * k) * (1 + i % 4) + 0.05 * k; }
static double lr_at(int k) { return 0.02 / (1 + 0.5 * k); }

static tg_params *make_store(tg_dtype dt)
{
    tg_params *p = tg_params_new(dt, NULL);
    ck_assert_ptr_nonnull(p);
    for (int t = 0; t < NT; t++) {
        if (shapes[t].c)
            ck_assert_ptr_nonnull(tg_params_add(p, shapes[t].name, TT_SHAPE(shapes[t].r, shapes[t].c), NULL));
        else ck_assert_ptr_nonnull(tg_params_add(p, shapes[t].name, TT_SHAPE(shapes[t].r), NULL));
    }
    ck_assert_int_eq(tg_params_numel(p), NE);
    for (int i = 0; i < NE; i++) {
        if (dt == TG_F32) ((float *)tg_params_data(p))[i] = (float)p0(i);
        else ((double *)tg_params_data(p))[i] = p0(i);
    }
    return p;
}

static double get(tg_params *p, int i)
{
    return tg_params_dtype(p) == TG_F32 ? ((float *)tg_params_data(p))[i] : ((double *)tg_params_data(p))[i];
}

static void set_grads(tg_params *p, int k)
{
    for (int i = 0; i < NE; i++) {
        if (tg_params_dtype(p) == TG_F32) ((float *)tg_params_grad(p))[i] = (float)grad_at(k, i);
        else ((double *)tg_params_grad(p))[i] = grad_at(k, i);
    }
}

/* ---- the reference, in double ---------------------------------------------- */

/* C (n x m) = A (n x k) B (k x m), naive. */
static void matmul(const double *A, const double *B, double *C, int n, int k, int m)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int l = 0; l < k; l++) s += A[i * k + l] * B[l * m + j];
            C[i * m + j] = s;
        }
}

/* One Muon step of a R x C matrix w (gradient g, momentum buf). */
static void ref_matrix(double *w, const double *g, double *buf, int R, int C, double lr, double mom, double wd)
{
    double U[64], X[64], Xt[64], A[64], AA[64], B[64], BX[64];
    int n = R * C;
    double ss = 0;
    for (int i = 0; i < n; i++) {
        buf[i] = mom * buf[i] + (1 - mom) * g[i];
        U[i] = (1 - mom) * g[i] + mom * buf[i];
        ss += U[i] * U[i];
    }
    bool tr = R > C;
    int r = tr ? C : R, c = tr ? R : C;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double x = U[i * C + j] / (sqrt(ss) + 1e-7);
            if (tr) X[j * R + i] = x;
            else X[i * C + j] = x;
        }
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < r; i++)
            for (int j = 0; j < c; j++) Xt[j * r + i] = X[i * c + j];
        matmul(X, Xt, A, r, c, r);
        matmul(A, A, AA, r, r, r);
        for (int i = 0; i < r * r; i++) B[i] = -4.7750 * A[i] + 2.0315 * AA[i];
        matmul(B, X, BX, r, r, c);
        for (int i = 0; i < r * c; i++) X[i] = 3.4445 * X[i] + BX[i];
    }
    double scale = sqrt(R > C ? (double)R / C : 1.0);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double x = tr ? X[j * R + i] : X[i * C + j];
            w[i * C + j] = w[i * C + j] * (1 - lr * wd) - lr * scale * x;
        }
}

/* `steps` steps of the store's Muon tensors (1 and 3); the others keep
 * their values. */
static void reference(int steps, double mom, double wd, double *p)
{
    double buf[NE] = {0}, g[NE];
    for (int i = 0; i < NE; i++) p[i] = p0(i);
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < NE; i++) g[i] = grad_at(k, i);
        ref_matrix(p + 12, g + 12, buf + 12, 3, 5, lr_at(k), mom, wd);
        ref_matrix(p + 32, g + 32, buf + 32, 5, 3, lr_at(k), mom, wd);
    }
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(takes_the_block_matrices)
{
    tg_params *p = make_store(TG_F64);
    ck_assert(!tg_muon_takes(tg_params_at(p, 0))); /* no numbered block */
    ck_assert(tg_muon_takes(tg_params_at(p, 1)));
    ck_assert(!tg_muon_takes(tg_params_at(p, 2))); /* 1-D */
    ck_assert(tg_muon_takes(tg_params_at(p, 3)));
    ck_assert(!tg_muon_takes(NULL));
    tg_params *q = tg_params_new(TG_F32, NULL);
    static const struct {
        const char *name;
        bool want;
    } names[] = {
        {"transformer.h.0.attn.c_attn.weight", true},
        {"layers.11.feed_forward.w1.weight", true},
        {"transformer.wte.weight", false},
        {"transformer.wpe.weight", false},
        {"output.weight", false},
        {"tok_embeddings.weight", false},
        {"h0.w", false},
        {"a.1x.w", false},
        {"a.b.7", true},
        {"7.w", false},
    };
    for (int k = 0; k < 10; k++) {
        tg_tensor *t = tg_params_add(q, names[k].name, TT_SHAPE(2, 2), NULL);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(tg_muon_takes(t) == names[k].want, "%s", names[k].name);
    }
    tg_params_free(q);
    tg_params_free(p);
}
END_TEST

/* Three steps on both dtypes against the reference; the tensors Muon
 * does not take are untouched. */
START_TEST(muon_matches_the_definition)
{
    const tg_muon_config c = {0.9, 0.1};
    double want[NE];
    reference(3, c.momentum, c.weight_decay, want);
    for (int dt = 0; dt < 2; dt++) {
        tg_params *p = make_store(dt ? TG_F32 : TG_F64);
        tg_error err = {0};
        tg_muon *o = tg_muon_new(p, &c, &err);
        ck_assert_msg(o != NULL, "%s", err.msg);
        ck_assert_int_eq(tg_muon_numel(o), 30);
        for (int k = 0; k < 3; k++) {
            set_grads(p, k);
            ck_assert_int_eq(tg_muon_step(o, lr_at(k), NULL), 0);
        }
        ck_assert_int_eq(tg_muon_steps(o), 3);
        /* f64: rounding only; f32: the iteration in single precision */
        double tol = dt ? 2e-6 : 1e-14;
        for (int i = 0; i < NE; i++) {
            ck_assert_msg(fabs(get(p, i) - want[i]) <= tol, "%s element %d: %.17g, want %.17g", dt ? "f32" : "f64", i,
                          get(p, i), want[i]);
            bool muon = (i >= 12 && i < 27) || i >= 32;
            if (!muon) ck_assert_msg(get(p, i) == (dt ? (double)(float)p0(i) : p0(i)), "element %d moved", i);
            else ck_assert_msg(fabs(get(p, i) - p0(i)) > 1e-4, "element %d did not move", i);
        }
        tg_muon_free(o);
        tg_params_free(p);
    }
}
END_TEST

/* A single row: one singular value s0 = |U| / (|U| + 1e-7), mapped five
 * times by s -> a s + b s^3 + c s^5; the update is that value along U's
 * direction. A single column: the same, transposed, times sqrt(rows). */
START_TEST(one_row_and_one_column_by_hand)
{
    for (int dt = 0; dt < 2; dt++)
        for (int col = 0; col < 2; col++) {
            tg_params *p = tg_params_new(dt ? TG_F32 : TG_F64, NULL);
            tg_tensor *w =
                col ? tg_params_add(p, "h.0.w", TT_SHAPE(3, 1), NULL) : tg_params_add(p, "h.0.w", TT_SHAPE(1, 3), NULL);
            ck_assert_ptr_nonnull(w);
            const double g[3] = {3, 0, -4}, mom = 0.5, lr = 0.1; /* |g| = 5 */
            for (int i = 0; i < 3; i++) {
                if (dt) ((float *)w->grad)[i] = (float)g[i], ((float *)w->data)[i] = 1;
                else ((double *)w->grad)[i] = g[i], ((double *)w->data)[i] = 1;
            }
            tg_muon *o = tg_muon_new(p, &(tg_muon_config){mom, 0}, NULL);
            ck_assert_ptr_nonnull(o);
            ck_assert_int_eq(tg_muon_step(o, lr, NULL), 0);
            /* buf = 0.5 g, U = 0.5 g + 0.25 g = 0.75 g, |U| = 3.75 */
            double s = 3.75 / (3.75 + 1e-7);
            for (int k = 0; k < 5; k++) s = 3.4445 * s - 4.7750 * s * s * s + 2.0315 * s * s * s * s * s;
            double scale = col ? sqrt(3.0) : 1.0;
            for (int i = 0; i < 3; i++) {
                double want = 1 - lr * scale * s * g[i] / 5;
                double got = dt ? ((float *)w->data)[i] : ((double *)w->data)[i];
                ck_assert_msg(fabs(got - want) <= (dt ? 1e-6 : 1e-15), "%s %s element %d: %.17g, want %.17g",
                              dt ? "f32" : "f64", col ? "column" : "row", i, got, want);
                double b = dt ? ((float *)tg_muon_momentum(o))[i] : ((double *)tg_muon_momentum(o))[i];
                ck_assert_double_eq_tol(b, 0.5 * g[i], 1e-7);
            }
            /* s after five maps from 1: 0.6964 (the polynomial swings
             * between about 0.7 and 1.1 near 1 instead of converging) */
            ck_assert(s > 0.696 && s < 0.697);
            tg_muon_free(o);
            tg_params_free(p);
        }
}
END_TEST

/* Two steps, the state through a file into a fresh optimizer and store,
 * two more: the same bits as four straight. */
START_TEST(state_through_a_file_is_bit_identical)
{
    for (int dt = 0; dt < 2; dt++) {
        const tg_dtype d = dt ? TG_F32 : TG_F64;
        const size_t bytes = NE * tg_dtype_size(d);
        tg_params *a = make_store(d);
        tg_muon *oa = tg_muon_new(a, NULL, NULL);
        for (int k = 0; k < 4; k++) {
            set_grads(a, k);
            tg_muon_step(oa, lr_at(k), NULL);
        }
        tg_params *b = make_store(d);
        tg_muon *ob = tg_muon_new(b, NULL, NULL);
        for (int k = 0; k < 2; k++) {
            set_grads(b, k);
            tg_muon_step(ob, lr_at(k), NULL);
        }
        tg_st_writer *w = tg_st_writer_new();
        ck_assert_int_eq(tg_muon_state_write(ob, w, "opt.muon"), 0);
        tg_error err = {0};
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("muon.safetensors"), &err), 0);
        tg_st_writer_free(w);
        tg_st_file *f = tg_st_load(tt_path("muon.safetensors"), &err);
        ck_assert_msg(f != NULL, "%s", err.msg);
        tg_params *r = make_store(d);
        tg_muon *orr = tg_muon_new(r, NULL, NULL);
        memcpy(tg_params_data(r), tg_params_data(b), bytes);
        ck_assert_int_eq(tg_muon_state_read(orr, f, "opt.muon", &err), 0);
        ck_assert_int_eq(tg_muon_steps(orr), 2);
        for (int k = 2; k < 4; k++) {
            set_grads(r, k);
            tg_muon_step(orr, lr_at(k), NULL);
        }
        ck_assert_mem_eq(tg_params_data(r), tg_params_data(a), bytes);
        ck_assert_mem_eq(tg_muon_momentum(orr), tg_muon_momentum(oa), (size_t)tg_muon_numel(oa) * tg_dtype_size(d));

        /* without the momentum the run differs */
        tg_params *z = make_store(d);
        tg_muon *oz = tg_muon_new(z, NULL, NULL);
        memcpy(tg_params_data(z), tg_params_data(b), bytes);
        for (int k = 2; k < 4; k++) {
            set_grads(z, k);
            tg_muon_step(oz, lr_at(k), NULL);
        }
        ck_assert(memcmp(tg_params_data(z), tg_params_data(a), bytes) != 0);

        /* the state of another dtype or store is refused, nothing changed */
        tg_params *o2 = tg_params_new(d == TG_F32 ? TG_F64 : TG_F32, NULL);
        tg_params_add(o2, "l.0.w", TT_SHAPE(5, 6), NULL);
        tg_muon *m2 = tg_muon_new(o2, NULL, NULL);
        ck_assert_int_eq(tg_muon_state_read(m2, f, "opt.muon", &err), -1);
        ck_assert_msg(strstr(err.msg, "'opt.muon.momentum' is not the optimizer's state: want") != NULL, "%s", err.msg);
        ck_assert_int_eq(tg_muon_state_read(orr, f, "opt.adam", &err), -1);
        ck_assert_str_eq(err.msg, "muon_state_read: the file has no tensor 'opt.adam.momentum'");
        tg_muon_free(m2);
        tg_params_free(o2);
        tg_st_free(f);

        /* a non-finite momentum and a bad step count are refused */
        void *bad = tg_calloc(30, tg_dtype_size(d));
        if (dt) ((float *)bad)[7] = NAN;
        else ((double *)bad)[7] = INFINITY;
        w = tg_st_writer_new();
        const int64_t n30 = 30;
        tg_st_writer_add(w, "o.momentum", dt ? "F32" : "F64", 1, &n30, bad);
        tg_st_writer_add_meta(w, "o.steps", "2");
        tg_st_writer_add(w, "q.momentum", dt ? "F32" : "F64", 1, &n30, tg_muon_momentum(oa));
        tg_st_writer_add_meta(w, "q.steps", "-3");
        ck_assert_int_eq(tg_st_writer_save(w, tt_path("bad.safetensors"), &err), 0);
        tg_st_writer_free(w);
        f = tg_st_load(tt_path("bad.safetensors"), &err);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(tg_muon_state_read(orr, f, "o", &err), -1);
        ck_assert_msg(strstr(err.msg, "element 7 of 'o.momentum' is") != NULL, "%s", err.msg);
        ck_assert_int_eq(tg_muon_state_read(orr, f, "q", &err), -1);
        ck_assert_str_eq(err.msg,
                         "muon_state_read: metadata 'q.steps' = '-3' is not a step count (a whole number >= 0)");
        ck_assert_int_eq(tg_muon_steps(orr), 4);
        ck_assert_mem_eq(tg_muon_momentum(orr), tg_muon_momentum(oa), 30 * tg_dtype_size(d));
        tg_st_free(f);
        tg_free(bad);
        remove(tt_path("muon.safetensors"));
        remove(tt_path("bad.safetensors"));

        tg_muon_free(oz);
        tg_params_free(z);
        tg_muon_free(orr);
        tg_params_free(r);
        tg_muon_free(ob);
        tg_params_free(b);
        tg_muon_free(oa);
        tg_params_free(a);
    }
}
END_TEST

/* Muon on the matrices, AdamW on the rest (tg_muon_exclude): AdamW's
 * tensors get what an AdamW alone gives them, Muon's what Muon alone. */
START_TEST(muon_and_adamw_share_a_store)
{
    tg_params *p = make_store(TG_F64), *pa = make_store(TG_F64), *pm = make_store(TG_F64);
    tg_muon *mu = tg_muon_new(p, NULL, NULL), *mm = tg_muon_new(pm, NULL, NULL);
    tg_adamw *ad = tg_adamw_new(p, NULL, NULL), *aa = tg_adamw_new(pa, NULL, NULL);
    ck_assert(tg_adamw_updates(ad, tg_params_at(p, 1)));
    tg_muon_exclude(mu, ad, NULL);
    for (int t = 0; t < NT; t++) {
        ck_assert(tg_adamw_updates(ad, tg_params_at(p, t)) == (t == 0 || t == 2));
        ck_assert(tg_muon_updates(mu, tg_params_at(p, t)) == (t == 1 || t == 3));
    }
    for (int k = 0; k < 3; k++) {
        set_grads(p, k);
        set_grads(pa, k);
        set_grads(pm, k);
        ck_assert_int_eq(tg_muon_step(mu, lr_at(k), NULL), 0);
        ck_assert_int_eq(tg_adamw_step(ad, 1e-3, NULL), 0);
        tg_muon_step(mm, lr_at(k), NULL);
        tg_adamw_step(aa, 1e-3, NULL);
    }
    for (int i = 0; i < NE; i++) {
        bool muon = (i >= 12 && i < 27) || i >= 32;
        double want = muon ? get(pm, i) : get(pa, i);
        ck_assert_msg(get(p, i) == want, "element %d: %.17g, want %.17g", i, get(p, i), want);
        if (muon) ck_assert_double_eq(((double *)tg_adamw_m(ad))[i], 0);
    }
    /* switched back on, AdamW updates the matrix again */
    tg_adamw_set_update(ad, tg_params_at(p, 1), true, NULL);
    ck_assert(tg_adamw_updates(ad, tg_params_at(p, 1)));
    double before = get(p, 12);
    tg_adamw_step(ad, 1e-3, NULL);
    ck_assert(get(p, 12) != before);
    tg_error se = {0};
    ck_assert_int_eq(tg_adamw_set_update(ad, tg_params_at(pa, 1), false, &se), -1); /* another store's tensor */
    ck_assert_msg(strstr(se.msg, "adamw_set_update: tensor 'blocks.0.w' is not a parameter") != NULL, "%s", se.msg);
    ck_assert(!tg_adamw_updates(ad, NULL));
    tg_muon_free(mu);
    tg_muon_free(mm);
    tg_adamw_free(ad);
    tg_adamw_free(aa);
    tg_params_free(p);
    tg_params_free(pa);
    tg_params_free(pm);
}
END_TEST

/* The work in parts (one per process): each part steps its own matrices
 * whole; together they give the bits of one step of all. */
START_TEST(parts_together_equal_the_whole)
{
    for (int dt = 0; dt < 2; dt++) {
        const tg_dtype d = dt ? TG_F32 : TG_F64;
        tg_params *a = make_store(d), *b = make_store(d), *c = make_store(d);
        tg_muon *oa = tg_muon_new(a, NULL, NULL), *ob = tg_muon_new(b, NULL, NULL);
        tg_muon *oc = tg_muon_new(c, NULL, NULL);
        ck_assert_int_eq(tg_muon_owner(oa, tg_params_at(a, 1), 2), 0);
        ck_assert_int_eq(tg_muon_owner(oa, tg_params_at(a, 3), 2), 1);
        ck_assert_int_eq(tg_muon_owner(oa, tg_params_at(a, 2), 2), -1);
        ck_assert_int_eq(tg_muon_owner(oa, tg_params_at(a, 3), 0), -1);
        for (int k = 0; k < 2; k++) {
            set_grads(a, k);
            set_grads(b, k);
            set_grads(c, k);
            tg_muon_step(oa, lr_at(k), NULL);
            ck_assert_int_eq(tg_muon_step_part(ob, lr_at(k), 0, 2, NULL), 0);
            ck_assert_int_eq(tg_muon_step_part(oc, lr_at(k), 1, 2, NULL), 0);
        }
        size_t es = tg_dtype_size(d);
        /* part 0 has blocks.0.w (elements 12..26), part 1 blocks.1.w (32..46) */
        ck_assert_mem_eq((char *)tg_params_data(b) + 12 * es, (char *)tg_params_data(a) + 12 * es, 15 * es);
        ck_assert_mem_eq((char *)tg_params_data(c) + 32 * es, (char *)tg_params_data(a) + 32 * es, 15 * es);
        ck_assert(get(b, 32) == (dt ? (double)(float)p0(32) : p0(32))); /* the other part's matrix */
        ck_assert(get(c, 12) == (dt ? (double)(float)p0(12) : p0(12)));
        tg_error se = {0};
        ck_assert_int_eq(tg_muon_step_part(ob, 0.1, 2, 2, &se), -1);
        ck_assert_ptr_nonnull(strstr(se.msg, "part 2 of 2 is not one of [0, parts)"));
        tg_muon_free(oa);
        tg_muon_free(ob);
        tg_muon_free(oc);
        tg_params_free(a);
        tg_params_free(b);
        tg_params_free(c);
    }
}
END_TEST

START_TEST(refuses_bad_settings_and_a_grown_store)
{
    static const struct {
        tg_muon_config c;
        const char *want;
    } bad[] = {
        {{0.95, 0}, "muon_new: params is NULL"},
        {{1.0, 0}, "muon_new: momentum must be in [0, 1), got 1"},
        {{-0.1, 0}, "muon_new: momentum must be in [0, 1), got -0.1"},
        {{NAN, 0}, "muon_new: momentum must be in [0, 1), got nan"},
        {{0.9, -1}, "muon_new: weight_decay must be finite and >= 0, got -1"},
        {{0.9, INFINITY}, "muon_new: weight_decay must be finite and >= 0, got inf"},
    };
    tg_params *p = make_store(TG_F32);
    for (int k = 0; k < 6; k++) {
        tg_error err = {0};
        ck_assert_ptr_null(tg_muon_new(k ? p : NULL, &bad[k].c, &err));
        ck_assert_msg(strcmp(err.msg, bad[k].want) == 0, "case %d: '%s', want '%s'", k, err.msg, bad[k].want);
    }
    tg_error err = {0};
    bool take[NT] = {false, true, true, false};
    ck_assert_ptr_null(tg_muon_new_select(p, NULL, take, &err));
    ck_assert_str_eq(err.msg,
                     "muon_new: tensor 'blocks.0.b' has 1 dimensions; Muon takes 2-D matrices only (leave it "
                     "to AdamW)");
    take[2] = false;
    take[0] = true; /* the caller's choice: the embedding too */
    tg_muon *s = tg_muon_new_select(p, NULL, take, &err);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(tg_muon_numel(s), 27);
    ck_assert(tg_muon_updates(s, tg_params_at(p, 0)) && !tg_muon_updates(s, tg_params_at(p, 3)));
    tg_muon_free(s);

    tg_muon *o = tg_muon_new(p, NULL, NULL);
    set_grads(p, 0);
    tg_error se = {0};
    ck_assert_int_eq(tg_muon_step(o, NAN, &se), -1);
    ck_assert_str_eq(se.msg, "muon_step: lr must be finite, got nan; nothing done");
    ck_assert_int_eq(tg_muon_step(o, INFINITY, NULL), -1);
    ck_assert_int_eq(tg_muon_steps(o), 0);
    ck_assert(get(p, 12) == (double)(float)p0(12));
    ck_assert_ptr_nonnull(tg_params_add(p, "blocks.2.w", TT_SHAPE(2, 2), NULL));
    float before[NE + 4];
    memcpy(before, tg_params_data(p), sizeof before);
    ck_assert_int_eq(tg_muon_step(o, 0.02, &se), -1);
    ck_assert_str_eq(se.msg,
                     "muon_step: the store has grown from 47 to 51 elements since the optimizer "
                     "was made; nothing done");
    ck_assert_mem_eq(tg_params_data(p), before, sizeof before);
    ck_assert_int_eq(tg_muon_steps(o), 0);
    ck_assert_int_eq(tg_muon_set_steps(o, -1, &se), -1);
    ck_assert_str_eq(se.msg, "muon_set_steps: step count -1 is negative");
    ck_assert_int_eq(tg_muon_set_steps(o, 5, &se), 0);
    ck_assert_int_eq(tg_muon_steps(o), 5);
    tg_muon_free(o);

    ck_assert_int_eq(tg_muon_step(NULL, 0.1, &se), -1);
    ck_assert_str_eq(se.msg, "muon_step: the optimizer is NULL");
    ck_assert_ptr_null(tg_muon_momentum(NULL));
    ck_assert_int_eq(tg_muon_numel(NULL), 0);
    ck_assert_int_eq(tg_muon_steps(NULL), 0);
    tg_muon_free(NULL);
    tg_params_free(p);

    /* a store without matrices: steps do nothing, and nothing breaks */
    tg_params *e = tg_params_new(TG_F64, NULL);
    tg_params_add(e, "bias", TT_SHAPE(3), NULL);
    tg_muon *eo = tg_muon_new(e, NULL, NULL);
    ck_assert_ptr_nonnull(eo);
    ck_assert_int_eq(tg_muon_numel(eo), 0);
    ck_assert_int_eq(tg_muon_step(eo, 0.02, NULL), 0);
    tg_muon_free(eo);
    tg_params_free(e);
}
END_TEST

START_TEST(steps_allocate_nothing)
{
    for (int dt = 0; dt < 2; dt++) {
        tg_params *p = make_store(dt ? TG_F32 : TG_F64);
        tg_muon *o = tg_muon_new(p, NULL, NULL);
        uint64_t before = tg_alloc_calls();
        for (int k = 0; k < 3; k++) {
            set_grads(p, k);
            tg_muon_step(o, 0.02, NULL);
        }
        ck_assert_uint_eq(tg_alloc_calls(), before);
        tg_muon_free(o);
        tg_params_free(p);
    }
}
END_TEST

/* Muon's products are the ops' gemm, the kernel path's (so the tests
 * above ran on it): ops/gemm.c fills core's table when the program
 * starts. Naming tg_gemm_f32 here also links ops/gemm.c into this test. */
START_TEST(muon_runs_on_the_ops_gemm)
{
    ck_assert(tg_product_get()->gemm_f32 == tg_gemm_f32);
    ck_assert(tg_product_get()->gemm_f64 == tg_gemm_f64);
}
END_TEST

/* C = alpha op(A) op(B) + beta C written out, in double. */
static double naive_at(bool ta, bool tb, int K, const double *A, int lda, const double *B, int ldb, int i, int j)
{
    double s = 0;
    for (int k = 0; k < K; k++) s += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
    return s;
}

/* core's plain products, which Muon runs on when no op registered its
 * gemm: both transposes, leading dimensions past the width, beta 0 (C not
 * read: NaN there stays out) and beta 1. */
START_TEST(plain_products_are_products)
{
    enum { M = 5, N = 7, K = 6, LD = 9 };
    double A[LD * LD], B[LD * LD], C[LD * LD];
    float Af[LD * LD], Bf[LD * LD], Cf[LD * LD];
    for (int i = 0; i < LD * LD; i++) {
        A[i] = sin(0.7 * i), B[i] = cos(1.1 * i + 0.3);
        Af[i] = (float)A[i], Bf[i] = (float)B[i];
        A[i] = Af[i], B[i] = Bf[i];
    }
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int beta = 0; beta < 2; beta++) {
                for (int i = 0; i < LD * LD; i++) C[i] = Cf[i] = beta ? (float)(0.01 * i) : NAN;
                tg_product_plain_f64(ta, tb, M, N, K, 0.5, A, LD, B, LD, beta, C, LD);
                tg_product_plain_f32(ta, tb, M, N, K, 0.5f, Af, LD, Bf, LD, (float)beta, Cf, LD);
                for (int i = 0; i < LD; i++)
                    for (int j = 0; j < LD; j++) {
                        const int c = i * LD + j;
                        if (i >= M || j >= N) {
                            ck_assert_msg(beta ? C[c] == (float)(0.01 * c) : isnan(C[c]), "C[%d] written", c);
                            continue;
                        }
                        const double want =
                            0.5 * naive_at(ta, tb, K, A, LD, B, LD, i, j) + (beta ? (float)(0.01 * c) : 0);
                        ck_assert_msg(fabs(C[c] - want) <= 1e-14, "f64 ta %d tb %d beta %d (%d,%d): %.17g, want %.17g",
                                      ta, tb, beta, i, j, C[c], want);
                        ck_assert_msg(Cf[c] == (float)want, "f32 ta %d tb %d beta %d (%d,%d): %.9g, want %.9g", ta, tb,
                                      beta, i, j, Cf[c], (float)want);
                    }
            }
}
END_TEST

/* Muon on the plain products, as in a program that runs no op: still the
 * definition. */
START_TEST(muon_on_the_plain_products_matches_the_definition)
{
    const tg_product ops = *tg_product_get();
    tg_product_register(NULL);
    ck_assert(tg_product_get()->gemm_f32 == tg_product_plain_f32);
    const tg_muon_config c = {0.9, 0.1};
    double want[NE];
    reference(3, c.momentum, c.weight_decay, want);
    for (int dt = 0; dt < 2; dt++) {
        tg_params *p = make_store(dt ? TG_F32 : TG_F64);
        tg_muon *o = tg_muon_new(p, &c, NULL);
        ck_assert_ptr_nonnull(o);
        for (int k = 0; k < 3; k++) {
            set_grads(p, k);
            ck_assert_int_eq(tg_muon_step(o, lr_at(k), NULL), 0);
        }
        double tol = dt ? 2e-6 : 1e-14;
        for (int i = 0; i < NE; i++)
            ck_assert_msg(fabs(get(p, i) - want[i]) <= tol, "%s element %d: %.17g, want %.17g", dt ? "f32" : "f64", i,
                          get(p, i), want[i]);
        tg_muon_free(o);
        tg_params_free(p);
    }
    tg_product_register(&ops);
    ck_assert(tg_product_get()->gemm_f32 == tg_gemm_f32);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("muon");
    tt_tcase(s, "muon", 0,
             TT_TESTS(takes_the_block_matrices, muon_matches_the_definition, one_row_and_one_column_by_hand,
                      state_through_a_file_is_bit_identical, muon_and_adamw_share_a_store,
                      parts_together_equal_the_whole, refuses_bad_settings_and_a_grown_store, steps_allocate_nothing,
                      muon_runs_on_the_ops_gemm, plain_products_are_products,
                      muon_on_the_plain_products_matches_the_definition));
    return tt_run_in_tmpdir(s, "tg_muon", false);
}
