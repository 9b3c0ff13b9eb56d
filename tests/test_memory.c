/* core: a steady-state training step allocates nothing and memory stays
 * flat, and so does a step of every op of the table (op_table.h) alone.
 * Counts the library's own allocations (tg_alloc_calls) and, outside
 * sanitizer builds, every malloc in the process through an interposer. */
#include "tg_test.h"

#include "op_table.h"

#include <fcntl.h>
#include <unistd.h>

#if !defined(__SANITIZE_ADDRESS__)
#define TT_COUNT_MALLOC 1
/* glibc's allocator under its internal names; these wrappers count calls */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static volatile uint64_t n_malloc;
void *malloc(size_t n)
{
    n_malloc++;
    return __libc_malloc(n);
}
void *calloc(size_t c, size_t n)
{
    n_malloc++;
    return __libc_calloc(c, n);
}
void *realloc(void *p, size_t n)
{
    n_malloc++;
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
#endif

/* The allocations made so far: the library's and (0 in sanitizer
 * builds) the process's. */
typedef struct allocs {
    uint64_t lib, proc;
} allocs;
static allocs allocs_now(void)
{
    allocs a = {tg_alloc_calls(), 0};
#ifdef TT_COUNT_MALLOC
    a.proc = n_malloc;
#endif
    return a;
}

/* Resident anonymous pages (resident minus file-backed): the heap, the
 * arena, the stack. File-backed pages are left out: a library's code or
 * tables paged in the first time a rare branch runs is not growth.
 * Read with open/read, not stdio: fopen would malloc its buffer. */
static long resident_pages(void)
{
    char buf[128] = {0};
    long size = 0, resident = 0, shared = 0;
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0 || sscanf(buf, "%ld %ld %ld", &size, &resident, &shared) != 3) return -1;
    return resident - shared;
}

enum { V = 16, C = 8, B = 4, T = 6 };

typedef struct model {
    tg_params *p;
    tg_tensor *emb, *w, *b, *lw, *lb;
} model;

/* embedding -> layernorm -> gelu -> causal self-attention (one head, no
 * projections) -> linear head -> cross-entropy */
static tg_tensor *forward(tg_graph *g, model *m, const int32_t *ids, const int32_t *tgt)
{
    tg_tensor *idt = tg_tensor_from(g, TG_I32, TT_SHAPE(B, T), ids); /* (B,T) */
    tg_tensor *tt = tg_tensor_from(g, TG_I32, TT_SHAPE(B, T), tgt); /* (B,T) */
    uint8_t causal[T * T];
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) causal[i * T + j] = j > i;
    tg_tensor *mask = tg_tensor_from(g, TG_BOOL, TT_SHAPE(T, T), causal); /* (T,T) */
    tg_tensor *x = tg_embedding(g, m->emb, idt); /* (B,T,C) */
    tg_tensor *h = tg_gelu(g, tg_layernorm(g, x, m->lw, m->lb, TG_LAYERNORM_EPS), TG_GELU_ERF);
    tg_tensor *s = tg_scale(g, tg_matmul(g, h, tg_transpose(g, h, 1, 2)), 1 / sqrt((double)C)); /* (B,T,T) */
    tg_tensor *a = tg_matmul(g, tg_softmax(g, s, mask), h); /* (B,T,C) */
    tg_tensor *logits = tg_add(g, tg_matmul(g, tg_add(g, a, x), m->w), m->b); /* (B,T,V) */
    return tg_cross_entropy(g, logits, tt); /* () */
}

START_TEST(steady_state_step_makes_no_malloc_and_memory_is_flat)
{
    model m = {tg_params_new(TG_F32, NULL), 0, 0, 0, 0, 0};
    m.emb = tg_params_add(m.p, "emb", TT_SHAPE(V, C), NULL);
    m.w = tg_params_add(m.p, "w", TT_SHAPE(C, V), NULL);
    m.b = tg_params_add(m.p, "b", TT_SHAPE(V), NULL);
    m.lw = tg_params_add(m.p, "ln.w", TT_SHAPE(C), NULL);
    m.lb = tg_params_add(m.p, "ln.b", TT_SHAPE(C), NULL);
    tg_rng r;
    tg_rng_seed(&r, 3, 0);
    tg_rng_fill_normal(&r, m.emb, 0, 0.5);
    tg_rng_fill_normal(&r, m.w, 0, 0.5);
    tg_rng_fill_uniform(&r, m.lw, 1, 1);

    int32_t ids[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)((i * 5) % V);
        tgt[i] = (int32_t)((i * 5 + 1) % V);
    }
    tg_graph *g = tg_graph_new();
    float *pd = tg_params_data(m.p), *pg = tg_params_grad(m.p);
    int64_t np = tg_params_numel(m.p);

    double first = 0, last = 0;
    allocs a0 = {0, 0};
    long rss0 = 0;
    int steps = 0;
    for (int step = 0; step < 1000; step++) {
        if (step == 2) { /* after warm-up: the first reset merged the arena */
            a0 = allocs_now();
            rss0 = resident_pages();
        }
        /* no ck_assert inside the loop: Check allocates to log each one */
        tg_tensor *loss = forward(g, &m, ids, tgt);
        if (!loss || tg_graph_backward(g, loss) != 0) break;
        if (step == 0) first = tg_tensor_item(loss);
        last = tg_tensor_item(loss);
        for (int64_t i = 0; i < np; i++) pd[i] -= 0.1f * pg[i];
        tg_params_zero_grad(m.p);
        tg_graph_reset(g);
        steps++;
    }
    allocs a1 = allocs_now();
    long rss1 = resident_pages();
    ck_assert_msg(steps == 1000, "step %d failed: %s", steps, tg_graph_error(g));
    ck_assert_uint_eq(a1.lib - a0.lib, 0);
    ck_assert_uint_eq(a1.proc - a0.proc, 0);
    ck_assert_int_ge(rss0, 0);
    ck_assert_msg(rss1 == rss0, "resident pages grew from %ld to %ld", rss0, rss1);
    ck_assert_msg(last < 0.5 * first, "training did not reduce the loss: %g -> %g", first, last);
    tg_graph_free(g);
    tg_params_free(m.p);
}
END_TEST

/* Each op of the table, in f64 and f32: after two warm-up steps, a step
 * on its small inputs (made, the op applied and summed, backward, reset)
 * allocates nothing. */
START_TEST(steady_state_op_step_allocates_nothing)
{
    const tt_op *op = &TT_OPS[_i / 2];
    const tg_dtype dt = _i % 2 ? TG_F32 : TG_F64;
    tg_graph *g = tg_graph_new();
    allocs a0 = {0, 0};
    int steps = 0;
    for (int step = 0; step < 20; step++) {
        if (step == 2) a0 = allocs_now();
        /* no ck_assert inside the loop: Check allocates to log each one */
        tt_op_in a;
        tt_op_small(g, dt, 100, &a);
        tg_tensor *y = op->apply(g, &a);
        tg_tensor *loss = y ? tg_sum_all(g, y) : NULL;
        if (!loss || tg_graph_backward(g, loss) != 0) break;
        tg_graph_reset(g);
        steps++;
    }
    allocs a1 = allocs_now();
    ck_assert_msg(steps == 20, "%s %s: step %d failed: %s", op->name, tg_dtype_name(dt), steps, tg_graph_error(g));
    ck_assert_msg(a1.lib == a0.lib, "%s %s: %llu library allocations in 18 steps", op->name, tg_dtype_name(dt),
                  (unsigned long long)(a1.lib - a0.lib));
    ck_assert_msg(a1.proc == a0.proc, "%s %s: %llu mallocs in 18 steps", op->name, tg_dtype_name(dt),
                  (unsigned long long)(a1.proc - a0.proc));
    tg_graph_free(g);
}
END_TEST

int main(void)
{
    return tt_main("memory", "memory", 120,
                   TT_TESTS(steady_state_step_makes_no_malloc_and_memory_is_flat,
                            TT_LOOP(steady_state_op_step_allocates_nothing, 2 * TT_N_OPS)));
}
