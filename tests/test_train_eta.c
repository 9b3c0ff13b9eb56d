/* A run's ETA (train/run_eta.c, tiny_gpt train's progress line): the time a run has
 * left counts its steps and its evaluations with their saves, each at
 * its measured cost, counted here by hand. (It counted the steps alone:
 * a Llama run said "ETA 37s" at step 10 and took 82 s, three evaluations
 * of 13.6 s among them.) */
#include "tg_test.h"

START_TEST(evaluations_left_by_hand)
{
    tg_eta_plan p = {.steps = 100, .eval_interval = 25, .step_s = 0.1, .eval_s = 2, .save_s = 0.5};
    /* after steps 25, 50, 75 and 100 */
    ck_assert_int_eq(tg_eta_evals_left(&p, 0), 4);
    ck_assert_int_eq(tg_eta_evals_left(&p, 10), 4);
    ck_assert_int_eq(tg_eta_evals_left(&p, 25), 3);
    ck_assert_int_eq(tg_eta_evals_left(&p, 99), 1);
    ck_assert_int_eq(tg_eta_evals_left(&p, 100), 0);
    /* 90 steps: after 25, 50, 75 and the last, 90 */
    p.steps = 90;
    ck_assert_int_eq(tg_eta_evals_left(&p, 0), 4);
    ck_assert_int_eq(tg_eta_evals_left(&p, 75), 1);
    ck_assert_int_eq(tg_eta_evals_left(&p, 80), 1);
    /* an interval longer than the run: the last step's alone */
    p.eval_interval = 500;
    ck_assert_int_eq(tg_eta_evals_left(&p, 3), 1);
    /* --stop-at 60 ends the run there: after 25 and 50, no last one */
    p.eval_interval = 25;
    p.stop_at = 60;
    ck_assert_int_eq(tg_eta_evals_left(&p, 10), 2);
    p.stop_at = 50; /* a stop on an evaluation's step evaluates first */
    ck_assert_int_eq(tg_eta_evals_left(&p, 10), 2);
    p.stop_at = 200; /* past the steps: the steps end the run */
    ck_assert_int_eq(tg_eta_evals_left(&p, 10), 4);
}
END_TEST

START_TEST(seconds_left_by_hand)
{
    tg_eta_plan p = {.steps = 100, .eval_interval = 25, .step_s = 0.1, .eval_s = 2, .save_s = 0.5};
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 0), 100 * 0.1 + 4 * 2, 1e-12);
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 25), 75 * 0.1 + 3 * 2, 1e-12);
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 99), 0.1 + 2, 1e-12);
    ck_assert_double_eq(tg_eta_seconds(&p, 100), 0);
    /* a stop: the steps to it, its evaluations, its save */
    p.stop_at = 60;
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 10), 50 * 0.1 + 2 * 2 + 0.5, 1e-12);
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 60), 0.5, 1e-12);
    /* the Llama: 10 of 3000 steps at 12 ms, evaluations of 13.6 s
     * after steps 1000, 2000 and 3000: 36 s of steps, 40.8 s of evaluations */
    p = (tg_eta_plan){.steps = 3000, .eval_interval = 1000, .step_s = 0.012, .eval_s = 13.6};
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 10), 2990 * 0.012 + 3 * 13.6, 1e-9);
    /* evaluations not yet timed (a resume before its first): left out */
    p.eval_s = -1;
    ck_assert_double_eq_tol(tg_eta_seconds(&p, 10), 2990 * 0.012, 1e-9);
}
END_TEST

START_TEST(the_line_shows_it)
{
    char buf[64];
    tg_eta_plan p = {.steps = 3000, .eval_interval = 1000, .step_s = 0.012, .eval_s = 13.6};
    tg_eta_format(&p, 10, buf, sizeof buf);
    ck_assert_str_eq(buf, "1m16s"); /* 76.68 s */
    p.step_s = 1.2;
    tg_eta_format(&p, 10, buf, sizeof buf);
    ck_assert_str_eq(buf, "1h00m"); /* 3628.8 s */
    p = (tg_eta_plan){.steps = 100, .eval_interval = 25, .step_s = 0.1, .eval_s = 2};
    tg_eta_format(&p, 60, buf, sizeof buf);
    ck_assert_str_eq(buf, "8s"); /* 4 s of steps, 2 evaluations */
    p.eval_s = -1;
    tg_eta_format(&p, 60, buf, sizeof buf);
    ck_assert_str_eq(buf, "4s + 2 evaluations");
    tg_eta_format(&p, 80, buf, sizeof buf);
    ck_assert_str_eq(buf, "2s + 1 evaluation");
    tg_eta_format(&p, 100, buf, sizeof buf);
    ck_assert_str_eq(buf, "0s");
}
END_TEST

int main(void)
{
    return tt_main("train_eta", "eta", 0, TT_TESTS(evaluations_left_by_hand, seconds_left_by_hand, the_line_shows_it));
}
