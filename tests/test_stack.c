/* core/parallel, ops/sgemm: tapegrad runs on threads with small stacks
 * (128 KiB, musl's default; glibc puts the static TLS in it too, and
 * Debian's OpenBLAS alone has 60 KiB of that, so 64 KiB threads cannot
 * even be created in a program that links it). Training steps of a small GPT and a training-sized
 * f32 product run on such a thread, and on a pool whose workers inherit
 * small default stacks, with the same results as on the main thread.
 * (The f32 kernel's packed blocks, 224 KiB, used to sit on the stack.) */
#define _GNU_SOURCE /* pthread_getattr_np, pthread_{get,set}attr_default_np */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "tg_test.h"

#include "../ops/sgemm_internal.h"

enum { SMALL_STACK = 128 * 1024 };

/* ---- what runs on the small stacks ----------------------------------- */

enum { STEPS = 3, BATCH = 4, T = 32, VOCAB = 40 };

typedef struct steps_result {
    double loss[STEPS];
    int done; /* steps completed */
    tg_error err; /* why it stopped */
} steps_result;

/* STEPS AdamW steps of a 2-layer GPT (C = 64, B * T = 128 rows: every
 * linear layer's product, and its weight gradient with A transposed, go to
 * tapegrad's kernel where the CPU has one), each loss recorded. */
static void gpt_steps(steps_result *r)
{
    const tg_model_config cfg = {
        .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 64, .block_size = T, .vocab_size = VOCAB};
    r->done = 0;
    r->err.msg[0] = 0;
    tg_model m;
    const bool made = tg_model_init(&m, &cfg, TG_F32, 5, &r->err) == 0;
    tg_adamw *opt = made ? tg_adamw_new(m.params, NULL, &r->err) : NULL;
    tg_graph *g = tg_graph_new();
    if (!opt || !g) {
        if (!r->err.msg[0]) snprintf(r->err.msg, sizeof r->err.msg, "set-up failed");
        goto out;
    }
    int32_t ids[BATCH * T], tgt[BATCH * T];
    for (int i = 0; i < BATCH * T; i++) ids[i] = (int32_t)(i * 7 % VOCAB), tgt[i] = (int32_t)((i * 7 + 3) % VOCAB);
    for (int s = 0; s < STEPS; s++) {
        tg_tensor *idt = tg_tensor_from(g, TG_I32, TT_SHAPE(BATCH, T), ids);
        tg_tensor *tt = tg_tensor_from(g, TG_I32, TT_SHAPE(BATCH, T), tgt);
        tg_tensor *loss = tg_model_loss(g, &m, idt, tt);
        if (!loss || tg_graph_backward(g, loss) != 0) {
            snprintf(r->err.msg, sizeof r->err.msg, "step %d: %s", s, tg_graph_error(g));
            goto out;
        }
        r->loss[s] = tg_tensor_item(loss);
        tg_adamw_step(opt, 1e-2, NULL);
        tg_params_zero_grad(m.params);
        tg_graph_reset(g);
        r->done++;
    }
out:
    tg_graph_free(g);
    tg_adamw_free(opt);
    tg_model_release(&m);
}

/* C (M,N) = A^T B with A stored (K,M): the weight-gradient layout, in
 * which the kernel packs both operands */
enum { GM = 96, GN = 128, GK = 128 };

static float *gemm_operand(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    if (!x) abort();
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(seed >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
    }
    return x;
}

/* The largest |error| / bound of C against a double reference, bound the
 * float error bound (K + 3) u sum |a b|: above 1 is wrong. */
static double gemm_error(const float *A, const float *B, const float *C)
{
    double worst = 0;
    for (int i = 0; i < GM; i++)
        for (int j = 0; j < GN; j++) {
            double s = 0, sa = 0;
            for (int k = 0; k < GK; k++) {
                const double t = (double)A[k * GM + i] * B[k * GN + j];
                s += t;
                sa += fabs(t);
            }
            const double r = fabs(C[i * GN + j] - s) / ((GK + 3) * sa / (1 << 24) + 1e-30);
            if (!(r <= worst)) worst = r; /* NaN sticks */
        }
    return worst;
}

static void thin_gemm(const float *A, const float *B, float *C)
{
    tg_sgemm(true, false, GM, GN, GK, 1.0f, A, GM, B, GN, 0.0f, C, GN);
}

/* ---- threads ---------------------------------------------------------- */

static size_t this_stack_size(void)
{
    pthread_attr_t a;
    size_t s = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, &s);
        pthread_attr_destroy(&a);
    }
    return s;
}

typedef struct small_job {
    const float *A, *B;
    float *C;
    steps_result steps;
    size_t stack;
} small_job;

static void *small_main(void *arg)
{
    small_job *j = arg;
    j->stack = this_stack_size();
    thin_gemm(j->A, j->B, j->C);
    gpt_steps(&j->steps);
    return NULL;
}

/* Runs small_main on a new thread with a SMALL_STACK stack and waits. */
static void run_on_small_thread(small_job *j)
{
    pthread_attr_t a;
    pthread_t t;
    ck_assert_int_eq(pthread_attr_init(&a), 0);
    ck_assert_int_eq(pthread_attr_setstacksize(&a, SMALL_STACK), 0);
    ck_assert_int_eq(pthread_create(&t, &a, small_main, j), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&a);
    ck_assert_msg(j->stack > 0 && j->stack <= SMALL_STACK, "the thread's stack is %zu bytes", j->stack);
}

static void note_kernel(void)
{
    if (!tg_sgemm_picks_kernel(true, false, GN, GK))
        printf("test_stack: this CPU or build sends f32 products to OpenBLAS: tapegrad's kernel is not exercised\n");
}

START_TEST(training_on_a_thread_with_a_small_stack)
{
    note_kernel();
    float *A = gemm_operand((size_t)GK * GM, 1), *B = gemm_operand((size_t)GK * GN, 2);
    float *C = calloc((size_t)GM * GN, sizeof *C);
    steps_result *main_steps = calloc(1, sizeof *main_steps);
    small_job *j = calloc(1, sizeof *j);
    ck_assert(C && main_steps && j);
    gpt_steps(main_steps); /* the reference, on the main thread's stack */
    ck_assert_msg(main_steps->done == STEPS, "main thread: %s", main_steps->err.msg);
    ck_assert_msg(fabs(main_steps->loss[0] - log(VOCAB)) < 0.1, "first loss %g, not about ln %d", main_steps->loss[0],
                  VOCAB);
    ck_assert_msg(main_steps->loss[STEPS - 1] < main_steps->loss[0] - 0.05, "the loss did not fall: %g -> %g",
                  main_steps->loss[0], main_steps->loss[STEPS - 1]);

    *j = (small_job){.A = A, .B = B, .C = C};
    run_on_small_thread(j);
    ck_assert_msg(gemm_error(A, B, C) <= 1, "product on the small stack: error %g of the bound", gemm_error(A, B, C));
    ck_assert_msg(j->steps.done == STEPS, "small stack: %s", j->steps.err.msg);
    for (int s = 0; s < STEPS; s++) /* one thread: the same operations in the same order, the same bits */
        ck_assert_msg(j->steps.loss[s] == main_steps->loss[s], "step %d: loss %.17g on the small stack, %.17g on main",
                      s, j->steps.loss[s], main_steps->loss[s]);
    free(A), free(B), free(C), free(main_steps), free(j);
}
END_TEST

/* ---- the pool --------------------------------------------------------- */

typedef struct pool_job {
    atomic_int started;
    bool timed_out;
    pthread_t thread[2];
    size_t stack[2];
    const float *A, *B;
    float *C[2];
} pool_job;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Part lo of two: notes its thread, waits until the other part has started
 * (so the two certainly run on two threads: the caller and a worker),
 * then computes the product. */
static void pool_part(void *ctx, int64_t lo, int64_t hi)
{
    (void)hi;
    pool_job *j = ctx;
    j->thread[lo] = pthread_self();
    j->stack[lo] = this_stack_size();
    atomic_fetch_add(&j->started, 1);
    const double t0 = now_s();
    while (atomic_load(&j->started) < 2)
        if (now_s() - t0 > 30) {
            j->timed_out = true;
            break;
        } else sched_yield();
    thin_gemm(j->A, j->B, j->C[lo]);
}

START_TEST(pool_workers_with_small_default_stacks)
{
    note_kernel();
    /* threads created without attributes from here on get SMALL_STACK */
    pthread_attr_t def, small;
    ck_assert_int_eq(pthread_getattr_default_np(&def), 0);
    ck_assert_int_eq(pthread_attr_init(&small), 0);
    ck_assert_int_eq(pthread_attr_setstacksize(&small, SMALL_STACK), 0);
    ck_assert_int_eq(pthread_setattr_default_np(&small), 0);
    const int threads = tg_set_num_threads(2);
    ck_assert_int_eq(pthread_setattr_default_np(&def), 0);
    pthread_attr_destroy(&small);
    pthread_attr_destroy(&def);
    ck_assert_int_eq(threads, 2);

    float *A = gemm_operand((size_t)GK * GM, 3), *B = gemm_operand((size_t)GK * GN, 4);
    pool_job *pj = calloc(1, sizeof *pj);
    ck_assert_ptr_nonnull(pj);
    pj->A = A, pj->B = B;
    for (int p = 0; p < 2; p++) ck_assert_ptr_nonnull(pj->C[p] = calloc((size_t)GM * GN, sizeof(float)));
    tg_parallel_for(2, 1, pool_part, pj);
    ck_assert_msg(!pj->timed_out, "the second part never started");
    ck_assert_msg(!pthread_equal(pj->thread[0], pj->thread[1]), "both parts ran on one thread");
    const int w = pthread_equal(pj->thread[0], pthread_self()) ? 1 : 0; /* the worker's part */
    ck_assert_msg(pj->stack[w] > 0 && pj->stack[w] <= SMALL_STACK,
                  "the worker's stack is %zu bytes: the pool did not take the default attributes", pj->stack[w]);
    for (int p = 0; p < 2; p++)
        ck_assert_msg(gemm_error(A, B, pj->C[p]) <= 1, "part %d: error %g of the bound", p, gemm_error(A, B, pj->C[p]));

    /* training steps driven from a small-stack thread, split over the pool */
    steps_result *one = calloc(1, sizeof *one);
    small_job *j = calloc(1, sizeof *j);
    float *C = calloc((size_t)GM * GN, sizeof *C);
    ck_assert(one && j && C);
    *j = (small_job){.A = A, .B = B, .C = C};
    run_on_small_thread(j);
    ck_assert_int_eq(tg_set_num_threads(1), 1);
    gpt_steps(one);
    ck_assert_msg(one->done == STEPS, "one thread: %s", one->err.msg);
    ck_assert_msg(j->steps.done == STEPS, "small stack, two threads: %s", j->steps.err.msg);
    ck_assert_msg(gemm_error(A, B, C) <= 1, "product on the small stack: error %g of the bound", gemm_error(A, B, C));
    for (int s = 0; s < STEPS; s++) /* OpenBLAS's parts agree across thread counts to rounding */
        ck_assert_msg(fabs(j->steps.loss[s] - one->loss[s]) <= 1e-5 * fabs(one->loss[s]),
                      "step %d: loss %.9g with two threads, %.9g with one", s, j->steps.loss[s], one->loss[s]);
    free(A), free(B), free(C), free(pj->C[0]), free(pj->C[1]), free(pj), free(one), free(j);
}
END_TEST

int main(void)
{
    return tt_main("stack", "stack", 120,
                   TT_TESTS(training_on_a_thread_with_a_small_stack, pool_workers_with_small_default_stacks));
}
