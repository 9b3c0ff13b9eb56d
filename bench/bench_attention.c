/* bench_attention: the fused attention op (tg_attention) against the
 * composed path nn/attention.c takes with --attn composed (split heads by
 * reshape + transpose, S = Q K^T, scale, causal masked softmax, A V, merge
 * heads), float32, causal self-attention.
 *
 *   bench_attention [--threads 1] [--min-time 0.5] [--bq N --bk N]
 *                   [--only L|M|S] [--T 64,128,256] [--path both|fused|composed] [--min]
 *
 * Shapes (the attention of the configs): L = B 8, H 8, C 256;
 * M = B 16, H 4, C 128; S = B 16, H 4, C 64; each at T = 64, 128, 256.
 * q, k, v (B,T,C) and dO are filled from a seeded normal stream on their
 * own graph; each rep runs on a second graph, reset after it: forward
 * (fwd), or forward then backward seeded with dO into q, k, v (fwd+bwd).
 * Reps repeat until --min-time seconds have passed (at least 5); each is
 * timed in process CPU time (so time spent descheduled on a shared
 * machine does not count) and the median counts, or the fastest with
 * --min.
 * Memory: the arena bytes one forward + backward takes (inputs excluded).
 * Output: one line per shape and path, then the fused / composed ratios. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tapegrad.h"
#include "ops/attention_f32_internal.h"

#include "bench_common.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the process: on a shared machine, time spent descheduled
 * does not count (with one OpenBLAS thread all work is on this thread) */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* nn/attention.c's composed path from the projections on */
static tg_tensor *composed(tg_graph *g, tg_tensor *q, tg_tensor *k, tg_tensor *v, int H)
{
    const int B = q->shape[0], T = q->shape[1], C = q->shape[2], dh = C / H;
    tg_tensor *Q = tg_transpose(g, tg_reshape(g, q, 4, (int[]){B, T, H, dh}), 1, 2); /* (B,H,T,dh) */
    tg_tensor *K = tg_transpose(g, tg_reshape(g, k, 4, (int[]){B, T, H, dh}), 1, 2); /* (B,H,T,dh) */
    tg_tensor *V = tg_transpose(g, tg_reshape(g, v, 4, (int[]){B, T, H, dh}), 1, 2); /* (B,H,T,dh) */
    tg_tensor *S = tg_scale(g, tg_matmul(g, Q, tg_transpose(g, K, 2, 3)), 1.0 / sqrt((double)dh)); /* (B,H,T,T) */
    tg_tensor *mask = tg_tensor_new(g, TG_BOOL, 2, (int[]){T, T}); /* (T,T) */
    if (mask)
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) ((uint8_t *)mask->data)[i * T + j] = j > i;
    tg_tensor *O = tg_matmul(g, tg_softmax(g, S, mask), V); /* (B,H,T,dh) */
    return tg_reshape(g, tg_transpose(g, O, 1, 2), 3, (int[]){B, T, C}); /* (B,T,C) */
}

static bool use_min; /* report the fastest rep instead of the median */

typedef struct result {
    double fwd_ms, fwdbwd_ms;
    size_t bytes;
} result;

/* median ms of reps of one path; bytes of one forward + backward */
static int run(tg_graph *g, tg_tensor *const *in, const tg_tensor *dO, int H, bool fused, double min_time, result *r)
{
    for (int backward = 0; backward < 2; backward++) {
        enum { MAX_REPS = 2000 };
        static double t[MAX_REPS];
        int n = 0;
        const double start = now_s();
        for (int warm = 0; n < MAX_REPS && (n < 5 || now_s() - start < min_time); warm = 1) {
            const double t0 = cpu_s();
            tg_tensor *o = fused ? tg_attention(g, in[0], in[1], in[2], H, TG_ATTN_CAUSAL, 0)
                                 : composed(g, in[0], in[1], in[2], H);
            if (!o || (backward && tg_graph_backward_seeded(g, o, dO->data) != 0)) {
                fprintf(stderr, "bench_attention: %s\n", tg_graph_error(g));
                return -1;
            }
            if (warm) t[n++] = 1e3 * (cpu_s() - t0);
            if (backward) r->bytes = tg_graph_arena_used(g);
            tg_graph_reset(g);
        }
        qsort(t, (size_t)n, sizeof t[0], cmp_double);
        *(backward ? &r->fwdbwd_ms : &r->fwd_ms) = use_min ? t[0] : t[n / 2];
    }
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 1, bq = 0, bk = 0;
    double min_time = 0.5;
    const char *only = NULL, *Ts = "64,128,256", *path = "both";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--min")) {
            use_min = true;
            continue;
        }
        if (!val) {
            fprintf(stderr, "bench_attention: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--threads")) threads = atoi(val);
        else if (!strcmp(a, "--min-time")) min_time = atof(val);
        else if (!strcmp(a, "--bq")) bq = atoi(val);
        else if (!strcmp(a, "--bk")) bk = atoi(val);
        else if (!strcmp(a, "--only")) only = val;
        else if (!strcmp(a, "--T")) Ts = val;
        else if (!strcmp(a, "--path")) path = val;
        else {
            fprintf(stderr, "bench_attention: unknown flag %s\n", a);
            return 2;
        }
        i++;
    }
    openblas_set_num_threads(threads > 0 ? threads : 1);
    tg_attention_set_blocks(bq, bk);
    tg_attention_get_blocks(&bq, &bk);

    static const struct {
        const char *name;
        int B, H, C;
    } shapes[] = {{"L", 8, 8, 256}, {"M", 16, 4, 128}, {"S", 16, 4, 64}};
    printf("# threads %d, blocks %d x %d, f32, causal; %s CPU ms; arena MB for fwd+bwd\n", threads, bq, bk,
           use_min ? "fastest" : "median");
    printf("%-3s %4s  %10s %10s %8s   %10s %10s %8s   %6s %6s %6s\n", "cfg", "T", "fused fwd", "fwd+bwd", "MB",
           "comp fwd", "fwd+bwd", "MB", "fwd x", "f+b x", "mem x");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (only && strcmp(only, shapes[s].name)) continue;
        for (const char *p = Ts; *p;) {
            const int T = atoi(p), B = shapes[s].B, H = shapes[s].H, C = shapes[s].C;
            while (*p && *p != ',') p++;
            if (*p) p++;
            if (T < 1) continue;
            tg_graph *gi = tg_graph_new(), *g = tg_graph_new();
            tg_rng r;
            tg_rng_seed(&r, 1, 1);
            tg_tensor *in[4];
            for (int i = 0; i < 4; i++) {
                in[i] = tg_tensor_new(gi, TG_F32, 3, (int[]){B, T, C}); /* (B,T,C) */
                if (!in[i]) {
                    fprintf(stderr, "bench_attention: out of memory\n");
                    return 1;
                }
                tg_rng_fill_normal(&r, in[i], 0.0, 1.0);
                if (i < 3) tg_tensor_set_requires_grad(gi, in[i], true);
            }
            result f = {NAN, NAN, 0}, c = {NAN, NAN, 0};
            if ((strcmp(path, "composed") && run(g, in, in[3], H, true, min_time, &f)) ||
                (strcmp(path, "fused") && run(g, in, in[3], H, false, min_time, &c)))
                return 1;
            printf("%-3s %4d  %10.3f %10.3f %8.2f   %10.3f %10.3f %8.2f   %6.2f %6.2f %6.3f\n", shapes[s].name, T,
                   f.fwd_ms, f.fwdbwd_ms, f.bytes / 1e6, c.fwd_ms, c.fwdbwd_ms, c.bytes / 1e6, f.fwd_ms / c.fwd_ms,
                   f.fwdbwd_ms / c.fwdbwd_ms, (double)f.bytes / (double)c.bytes);
            fflush(stdout);
            tg_graph_free(g);
            tg_graph_free(gi);
        }
    }
    return 0;
}
