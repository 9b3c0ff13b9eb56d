/* train: training to a wall-clock budget (train/budget.c).
 *
 * - tg_budget_steps picks the most steps that fit, counted by hand:
 *   the evaluations every eval_interval steps and at the end included.
 * - Steps run after a snapshot and undone by its restore leave no trace:
 *   the run then ends with the bits of a run that never took them (AdamW
 *   and Muon, f32 and f64, dropout on). */
#include "tg_test.h"

START_TEST(budget_steps_by_hand)
{
    /* spent 2 s, a step 0.125 s, an evaluation 1 s, fixed 0.5 s (binary
     * fractions: the sums are exact); budget 20 s, margin 0.25: 15 s
     * usable, 12.5 s for steps and evaluations. eval_interval 50: n = 84
     * costs 10.5 + 2 = 12.5 (fits exactly); n = 85: 10.625 + 2 */
    const tg_budget_costs c = {.spent = 2, .step = 0.125, .eval = 1, .fixed = 0.5};
    ck_assert_int_eq(tg_budget_steps(20, 0.25, &c, 50, 1000000), 84);
    /* a cap */
    ck_assert_int_eq(tg_budget_steps(20, 0.25, &c, 50, 77), 77);
    /* every step evaluated: 12.5 / 1.125 = 11.1 */
    ck_assert_int_eq(tg_budget_steps(20, 0.25, &c, 1, 1000000), 11);
    /* eval_interval above n: one evaluation, at the end: 11.5 / 0.125 = 92 */
    ck_assert_int_eq(tg_budget_steps(20, 0.25, &c, 1000, 1000000), 92);
    /* no margin: 17.5 s; n = 116: 14.5 + 3 evaluations (50, 100, 116) = 17.5;
     * n = 117: 14.625 + 3 */
    ck_assert_int_eq(tg_budget_steps(20, 0, &c, 50, 1000000), 116);
    /* n = 100 with 4.5 s: 12.5 + 2; one step more is a third evaluation */
    const tg_budget_costs d = {.spent = 1, .step = 0.125, .eval = 1, .fixed = 0};
    ck_assert_int_eq(tg_budget_steps(15.5, 0, &d, 50, 1000000), 100);
    /* not one step fits */
    const tg_budget_costs big = {.spent = 19, .step = 0.1, .eval = 1, .fixed = 0};
    ck_assert_int_eq(tg_budget_steps(20, 0, &big, 50, 100), 0);
    /* free steps: the cap */
    const tg_budget_costs free_ = {0};
    ck_assert_int_eq(tg_budget_steps(1, 0, &free_, 1, 1000000000000), 1000000000000);
    /* bad arguments */
    ck_assert_int_eq(tg_budget_steps(0, 0.1, &c, 50, 100), -1);
    ck_assert_int_eq(tg_budget_steps(INFINITY, 0.1, &c, 50, 100), -1);
    ck_assert_int_eq(tg_budget_steps(20, 1, &c, 50, 100), -1);
    ck_assert_int_eq(tg_budget_steps(20, -0.1, &c, 50, 100), -1);
    ck_assert_int_eq(tg_budget_steps(20, 0.1, &c, 0, 100), -1);
    ck_assert_int_eq(tg_budget_steps(20, 0.1, &c, 50, 0), -1);
    ck_assert_int_eq(tg_budget_steps(20, 0.1, NULL, 50, 100), -1);
    const tg_budget_costs neg = {.spent = -1, .step = 0.1};
    ck_assert_int_eq(tg_budget_steps(20, 0.1, &neg, 50, 100), -1);
}
END_TEST

static const char TEXT[] = "the cat sat on the mat and the dog sat on the log while the bird sang; "
                           "the mat was red and the log was wet, the bird flew off and the cat slept";

typedef struct run {
    tg_model m;
    tg_adamw *opt;
    tg_muon *muon;
    tg_train_state ts;
} run;

static void run_new(run *r, tg_dtype dt, bool muon)
{
    tg_error err = {0};
    const tg_model_config c = {.arch = "gpt",
                               .n_layer = 2,
                               .n_head = 2,
                               .n_embd = 8,
                               .block_size = 8,
                               .vocab_size = 30,
                               .bias = true,
                               .dropout = 0.1};
    ck_assert_msg(tg_model_init(&r->m, &c, dt, 7, &err) == 0, "%s", err.msg);
    r->opt = tg_adamw_new(r->m.params, &(tg_adamw_config){0.9, 0.95, 1e-8, 0.1}, &err);
    ck_assert_msg(r->opt, "%s", err.msg);
    r->muon = NULL;
    if (muon) {
        r->muon = tg_muon_new(r->m.params, &(tg_muon_config){0.95, 0.1}, &err);
        ck_assert_msg(r->muon, "%s", err.msg);
        tg_muon_exclude(r->muon, r->opt, NULL);
    }
    tg_train_state_init(&r->ts, 5);
}

static void run_free(run *r)
{
    tg_muon_free(r->muon);
    tg_adamw_free(r->opt);
    tg_model_release(&r->m);
}

static void step(run *r, const tg_dataset *d)
{
    int32_t x[2 * 8], y[2 * 8];
    tg_dataset_rows(d, false, &(tg_rows){x, y, 2, 0, 2, 8}, &r->ts.data_rng);
    tg_graph *g = tg_graph_new();
    *tg_graph_rng(g) = r->ts.drop_rng;
    tg_tensor *idx = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 8), x), *tgt = tg_tensor_from(g, TG_I32, TT_SHAPE(2, 8), y);
    tg_params_zero_grad(r->m.params);
    tg_tensor *loss = tg_model_loss(g, &r->m, idx, tgt);
    ck_assert_msg(loss && tg_graph_backward(g, loss) == 0, "%s", tg_graph_error(g));
    r->ts.drop_rng = *tg_graph_rng(g);
    tg_graph_free(g);
    ck_assert_int_eq(tg_adamw_step(r->opt, 1e-2, NULL), 0);
    if (r->muon) ck_assert_int_eq(tg_muon_step(r->muon, 2e-2, NULL), 0);
    r->ts.step++;
}

START_TEST(steps_undone_by_a_restore_leave_no_trace)
{
    tg_error err = {0};
    tg_vocab v;
    tg_vocab_bytes(&v, TEXT, sizeof TEXT - 1);
    tg_dataset d;
    ck_assert_msg(tg_dataset_from_text(&d, &v, TEXT, sizeof TEXT - 1, 8, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 4; k++) {
        const tg_dtype dt = k & 1 ? TG_F64 : TG_F32;
        const bool muon = k >= 2;
        run a, b;
        run_new(&a, dt, muon);
        run_new(&b, dt, muon);
        for (int i = 0; i < 2; i++) step(&a, &d), step(&b, &d);
        tg_train_snapshot *s = tg_train_snapshot_take(&b.m, b.opt, b.muon, &b.ts, &err);
        ck_assert_msg(s, "%s", err.msg);
        for (int i = 0; i < 3; i++) step(&b, &d); /* the steps timed */
        const size_t bytes = (size_t)tg_params_numel(a.m.params) * tg_dtype_size(dt);
        ck_assert(memcmp(tg_params_data(a.m.params), tg_params_data(b.m.params), bytes) != 0); /* they did train */
        ck_assert_int_eq(tg_train_snapshot_restore(s, &b.m, b.opt, b.muon, &b.ts), 0);
        tg_train_snapshot_free(s);
        ck_assert_int_eq(b.ts.step, 2);
        for (int i = 0; i < 4; i++) step(&a, &d), step(&b, &d);
        ck_assert_msg(memcmp(tg_params_data(a.m.params), tg_params_data(b.m.params), bytes) == 0, "case %d", k);
        ck_assert(memcmp(tg_adamw_m(a.opt), tg_adamw_m(b.opt), bytes) == 0);
        ck_assert(memcmp(tg_adamw_v(a.opt), tg_adamw_v(b.opt), bytes) == 0);
        ck_assert_int_eq(tg_adamw_steps(a.opt), tg_adamw_steps(b.opt));
        if (muon) {
            ck_assert(memcmp(tg_muon_momentum(a.muon), tg_muon_momentum(b.muon),
                             (size_t)tg_muon_numel(a.muon) * tg_dtype_size(dt)) == 0);
            ck_assert_int_eq(tg_muon_steps(a.muon), tg_muon_steps(b.muon));
        }
        ck_assert(a.ts.data_rng.state == b.ts.data_rng.state && a.ts.drop_rng.state == b.ts.drop_rng.state);
        /* a snapshot goes back only into objects of its sizes */
        run c;
        run_new(&c, dt, !muon);
        s = tg_train_snapshot_take(&a.m, a.opt, a.muon, &a.ts, &err);
        ck_assert_int_eq(tg_train_snapshot_restore(s, &c.m, c.opt, c.muon, &c.ts), -1);
        ck_assert_int_eq(c.ts.step, 0);
        tg_train_snapshot_free(s);
        run_free(&c);
        run_free(&a);
        run_free(&b);
    }
    tg_dataset_release(&d);
    tg_vocab_release(&v);
}
END_TEST

int main(void)
{
    return tt_main("train_budget", "budget", 0,
                   TT_TESTS(budget_steps_by_hand, steps_undone_by_a_restore_leave_no_trace));
}
