/* bench_generate: decoding speed inside a Llama's window and past it,
 * with tg_generate (train/generate.h), both rates from one run.
 *
 *   bench_generate [--rounds 5] [--past 381] [--recompute-past 20]
 *                  [--threads 1] [--seed 1337]
 *
 * The model is bench.py's LL shape, llama2.c's stories15M: 6 layers, 6
 * heads, 288 wide, SwiGLU 768, block 256, tiny_gpt's byte vocabulary of
 * 259 ids, f32, its random initialisation (speed does not depend on the
 * weights). It samples as tiny_gpt sample does by default (temperature
 * 0.8, top-k 200), with no vocabulary (nothing ends the text), keeping
 * the BOS through shifts. Each id's time is taken in its callback; the
 * first id of a generation, which also runs the prompt, is left out of
 * every rate (tiny_gpt sample --stats' "then N tokens at R tokens/s").
 * Each round runs, in an order alternating by round:
 *   inside  a 13-id prompt (BOS, " ", "Once upon a") and 250 tokens: the
 *           rate of tokens 1 .. 243 (the context within 256), and of
 *           tokens 1 .. 249, the figure: 13 + 250 passes 256;
 *   past    a prompt of 256 ids (a full window) and --past more tokens,
 *           every one past the window: 381 is three shifts of 127;
 * each with the Llama's context shift, and with the same model in a
 * family without cache_shift (the window run again for every id, what
 * tiny_gpt sample did before the shift; --recompute-past tokens, each a
 * forward of 256). Rounds taking turns keep the machine's load alike
 * for both rates. Prints per way the median over rounds (the best in
 * parentheses) on the wall clock and, in brackets, on the process's CPU
 * time (time descheduled on a shared machine left out: one thread does
 * the work), and the median of the rounds' past / inside ratios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tapegrad.h"

#include "bench_common.h"

#define MAX_ROUNDS 64

typedef struct times {
    double *wall, *cpu; /* seconds at each id: the monotonic clock, the process's CPU time */
    int n;
} times;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool stamp(void *ctx, const tg_generated *g)
{
    times *s = ctx;
    if (g->id < 0) return true;
    s->wall[s->n] = clock_s(CLOCK_MONOTONIC);
    s->cpu[s->n++] = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    return true;
}

/* tokens 1 .. i of s over their time after token 0, per second: wall, cpu */
static void rate(const times *s, int i, double *wall, double *cpu)
{
    *wall = i / (s->wall[i] - s->wall[0]);
    *cpu = i / (s->cpu[i] - s->cpu[0]);
}

/* Generates `tokens` ids from prompt[0..n) on a fresh model of family
 * arch; their times into *ts. 0, or 1 with a message. */
static int run(const char *arch, const int32_t *prompt, int n, int tokens, uint64_t seed, times *ts)
{
    const tg_model_config c = {.arch = arch,
                               .n_layer = 6,
                               .n_head = 6,
                               .n_kv_head = 6,
                               .n_embd = 288,
                               .hidden_dim = 768,
                               .block_size = 256,
                               .vocab_size = TG_VOCAB_LLAMA2C_SIZE,
                               .rope_theta = 10000,
                               .norm_eps = 1e-5,
                               .tied = true};
    tg_error err = {0};
    tg_model m;
    if (tg_model_init(&m, &c, TG_F32, seed, &err)) {
        fprintf(stderr, "bench_generate: %s\n", err.msg);
        return 1;
    }
    tg_error e = {0};
    tg_sampler *s =
        tg_sampler_new(&(tg_sampler_options){.temperature = 0.8, .top_k = 200, .seed = seed}, c.vocab_size, &e);
    ts->n = 0;
    const tg_generate_options o = {.sampler = s, .on_token = stamp, .ctx = ts, .n_keep = 1};
    const int64_t made = s ? tg_generate(&m, prompt, n, tokens, &o, &e) : -1;
    tg_sampler_free(s);
    tg_model_release(&m);
    if (made != tokens) {
        fprintf(stderr, "bench_generate: %s\n", made < 0 ? e.msg : "stopped early");
        return 1;
    }
    return 0;
}

/* the median of x[0..n) (reordered), and its largest in *best */
static double median(double *x, int n, double *best)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    *best = x[n - 1];
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* "median (best)" of x[0..n) */
static const char *shown(double *x, int n, char buf[48])
{
    double best;
    const double m = median(x, n, &best);
    snprintf(buf, 48, "%.1f (%.1f)", m, best);
    return buf;
}

enum { IN, FIRST, PAST, N_RATES };

int main(int argc, char **argv)
{
    int rounds = 5, past = 381, recompute_past = 20, threads = 1;
    uint64_t seed = 1337;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && !strcmp(a, "--rounds")) rounds = atoi(v);
        else if (v && !strcmp(a, "--past")) past = atoi(v);
        else if (v && !strcmp(a, "--recompute-past")) recompute_past = atoi(v);
        else if (v && !strcmp(a, "--threads")) threads = atoi(v);
        else if (v && !strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else {
            fprintf(stderr,
                    "usage: bench_generate [--rounds N] [--past N] [--recompute-past N] [--threads N] "
                    "[--seed S]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > MAX_ROUNDS || past < 2 || past > 100000 || recompute_past < 2 ||
        recompute_past > 100000 || threads < 1) {
        fprintf(stderr,
                "bench_generate: --rounds in [1, %d], --past and --recompute-past in [2, 100000], "
                "--threads >= 1\n",
                MAX_ROUNDS);
        return 2;
    }
    tg_set_num_threads(threads);
    /* the Llama in a family without cache_shift: the window run again */
    static tg_model_family recompute;
    recompute = *tg_model_family_find("llama");
    recompute.arch = "recompute";
    recompute.cache_shift = NULL;
    tg_error err = {0};
    if (tg_model_register(&recompute, &err)) {
        fprintf(stderr, "bench_generate: %s\n", err.msg);
        return 1;
    }
    int32_t inside[13] = {TG_VOCAB_BOS, 3 + ' '}, full[256] = {TG_VOCAB_BOS};
    for (int i = 2; i < 13; i++) inside[i] = 3 + "Once upon a"[i - 2];
    for (int i = 1; i < 256; i++) full[i] = 3 + "Once upon a time there was "[(i - 1) % 27];
    const int most = past > recompute_past ? past : recompute_past;
    times ts = {malloc((size_t)(most + 250) * sizeof *ts.wall), malloc((size_t)(most + 250) * sizeof *ts.cpu), 0};
    static double wall[2][N_RATES][MAX_ROUNDS], cpu[2][N_RATES][MAX_ROUNDS], ratio[2][2][MAX_ROUNDS];
    const char *const arch[2] = {"llama", "recompute"};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 4; k++) {
            const int step = r % 2 ? 3 - k : k, w = step / 2, at_past = step % 2; /* way, then which run */
            const uint64_t sd = seed + (uint64_t)r;
            if (at_past) {
                const int n = w ? recompute_past : past;
                if (run(arch[w], full, 256, n + 1, sd, &ts)) return 1;
                rate(&ts, n, &wall[w][PAST][r], &cpu[w][PAST][r]);
            } else {
                if (run(arch[w], inside, 13, 250, sd, &ts)) return 1;
                rate(&ts, 256 - 13, &wall[w][IN][r], &cpu[w][IN][r]);
                rate(&ts, 249, &wall[w][FIRST][r], &cpu[w][FIRST][r]);
            }
        }
    for (int w = 0; w < 2; w++)
        for (int r = 0; r < rounds; r++) {
            ratio[w][0][r] = wall[w][PAST][r] / wall[w][IN][r];
            ratio[w][1][r] = cpu[w][PAST][r] / cpu[w][IN][r];
        }
    printf("LL Llama (6 layers, 6 heads, 288 wide, hidden 768, block 256, %d ids), f32, %d thread%s, temperature "
           "0.8, top-k 200; %d rounds: tokens/s, median (best), on the wall clock [on CPU time]\n",
           TG_VOCAB_LLAMA2C_SIZE, threads, threads == 1 ? "" : "s", rounds);
    const char *const label[2] = {"shift", "recompute"};
    for (int w = 0; w < 2; w++) {
        char b[6][48];
        double best;
        printf("%-9s inside the window %s [%s]; past it (%d tokens) %s [%s]: %.2fx [%.2fx] of inside; "
               "13 + 250 tokens %s [%s]\n",
               label[w], shown(wall[w][IN], rounds, b[0]), shown(cpu[w][IN], rounds, b[1]), w ? recompute_past : past,
               shown(wall[w][PAST], rounds, b[2]), shown(cpu[w][PAST], rounds, b[3]),
               median(ratio[w][0], rounds, &best), median(ratio[w][1], rounds, &best),
               shown(wall[w][FIRST], rounds, b[4]), shown(cpu[w][FIRST], rounds, b[5]));
    }
    free(ts.wall);
    free(ts.cpu);
    return 0;
}
