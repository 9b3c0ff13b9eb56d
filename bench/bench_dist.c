/* bench_dist: data-parallel training steps over MPI (distributed/), and the
 * communication probe the cost model in docs/distributed.md takes its
 * parameters from. Run under mpirun (on one process it runs, but there is
 * nothing to sum).
 *
 *   mpirun -np R bench_dist --n-layer L --n-head H --n-embd C --block-size T
 *                           --batch-size G [--vocab 65] [--steps 20]
 *                           [--warmup 3] [--threads 1] [--seed 1337]
 *                           [--lr 1e-3] [--init W.safetensors] [--bucket-mb 1]
 *                           [--zero 1]
 *   mpirun -np R bench_dist --probe [--max-mb 64]
 *
 * Steps: bench_step's GPT (float32, no bias, no dropout, fused
 * attention), its batches (PCG32 stream 7, the learnable chain) and its
 * step (clip 1.0, AdamW 0.9/0.99, eps 1e-8, decay 0.1 on 2-D tensors), on
 * a global batch of G rows, rank r taking rows [r G/R, (r+1) G/R) (G a
 * multiple of R), backward seeded with 1/R and the gradients summed by
 * tg_dist_grads. Steps alternate between two ways of summing, inside one
 * run so that both see the same seconds of this machine's drifting
 * speed: buckets of --bucket-mb that start while backward runs
 * ("overlapped"), and one bucket of everything that can only start when
 * backward is done ("after backward"). The numbers are the same either
 * way (the same sums); the time per step is the slowest rank's. Printed:
 * the median step, backward and wait (time in tg_dist_grads_end) of each
 * way, their difference (the communication the overlap hid), the probe
 * (the sum of all buckets alone), and a timeline of the last overlapped
 * step on rank 0: when each bucket started and finished, against
 * backward. Then one JSON line ("bench_dist": {...}).
 *
 * --probe: the time of one sum across ranks (MPI_Iallreduce + wait, as
 * the buckets do) of 8 bytes to --max-mb MiB of floats, the median of
 * many; then alpha and the bandwidth of the ring model
 *   t(n) = 2 (R - 1) alpha + 2 (R - 1) / R * n / bandwidth
 * fitted to the smallest and the largest sizes. Then one JSON line. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad.h"
#include "distributed/dist.h"

#include "bench_common.h"

#define DATA_STREAM 7u

typedef struct opts {
    int n_layer, n_head, n_embd, block_size, batch, vocab, steps, warmup, threads, zero;
    long long seed;
    double lr, bucket_mb, max_mb;
    const char *init;
    bool probe;
} opts;

static int rank, size;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (rank) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static int parse_args(int argc, char **argv, opts *o, tg_error *err)
{
    const bench_int_flag ints[] = {
        {"--n-layer", &o->n_layer, 1, 1024},     {"--n-head", &o->n_head, 1, 1024},
        {"--n-embd", &o->n_embd, 1, 65536},      {"--block-size", &o->block_size, 1, 1 << 20},
        {"--batch-size", &o->batch, 1, 1 << 20}, {"--vocab", &o->vocab, 1, 1 << 24},
        {"--steps", &o->steps, 2, 1 << 24},      {"--warmup", &o->warmup, 0, 1 << 24},
        {"--threads", &o->threads, 1, 1024},     {"--zero", &o->zero, 0, 1},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--probe")) {
            o->probe = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            tg_error_set(err, "%s needs a value", a);
            return -1;
        }
        const int set = bench_set_int(ints, sizeof ints / sizeof ints[0], a, v, err);
        if (set < 0) return -1;
        if (set) continue;
        char *end;
        double *dp = !strcmp(a, "--lr") ? &o->lr
            : !strcmp(a, "--bucket-mb") ? &o->bucket_mb
            : !strcmp(a, "--max-mb")    ? &o->max_mb
                                        : NULL;
        if (dp) {
            *dp = strtod(v, &end);
            if (end == v || *end || !(*dp > 0)) {
                tg_error_set(err, "%s: '%s' is not a positive number", a, v);
                return -1;
            }
        } else if (!strcmp(a, "--seed")) {
            o->seed = strtoll(v, &end, 10);
            if (end == v || *end || o->seed < 0) {
                tg_error_set(err, "--seed: '%s' is not a non-negative integer", v);
                return -1;
            }
        } else if (!strcmp(a, "--init")) {
            o->init = v;
        } else {
            tg_error_set(err, "unknown flag '%s'", a);
            return -1;
        }
    }
    return 0;
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* ---- the probe ------------------------------------------------------------ */

static int probe(const opts *o, tg_error *err)
{
    const double max_bytes = o->max_mb * (1 << 20);
    double sizes[16] = {0}, times[16] = {0};
    int n = 0;
    say("bench_dist --probe: %d ranks; one sum across them (MPI_Iallreduce + wait) of n bytes, median of many\n", size);
    say("%12s %12s %14s\n", "bytes", "us", "bus GB/s");
    for (double bytes = 8; bytes <= max_bytes && n < 16; bytes *= 8) {
        tg_params *p = tg_params_new(TG_F32, err);
        int64_t elems = (int64_t)(bytes / 4) > 0 ? (int64_t)(bytes / 4) : 1;
        if (!p || !tg_params_add(p, "g", 1, (int[]){(int)elems}, NULL)) {
            tg_error_set(err, "out of memory for %lld floats", (long long)elems);
            tg_params_free(p);
            return -1;
        }
        tg_dist_grads *d = tg_dist_grads_new(p, &(tg_dist_grads_config){.bucket_bytes = (size_t)elems * 4}, err);
        if (!d) {
            tg_params_free(p);
            return -1;
        }
        int reps = bytes < 1e5 ? 200 : bytes < 1e7 ? 20 : 5;
        double t[200];
        tg_dist_grads_probe(d, 2); /* connections and pages first */
        for (int k = 0; k < reps; k++) {
            t[k] = tg_dist_grads_probe(d, 1);
            tg_dist_allreduce_f64(&t[k], 1, TG_DIST_MAX);
        }
        sizes[n] = (double)elems * 4;
        times[n] = median(t, reps);
        say("%12.0f %12.2f %14.3f\n", sizes[n], 1e6 * times[n],
            size > 1 ? 2.0 * (size - 1) / size * sizes[n] / times[n] / 1e9 : 0.0);
        n++;
        tg_dist_grads_free(d);
        tg_params_free(p);
    }
    if (size < 2 || n < 1) {
        say("one process: nothing to fit (run under mpirun -np 2 or more)\n");
        return 0;
    }
    /* the ring model: alpha from the smallest size, the bandwidth the
     * median of what the sizes from 256 KiB on give once alpha is taken off */
    const double steps = 2.0 * (size - 1), frac = 2.0 * (size - 1) / size;
    double alpha = times[0] / steps, bws[16];
    int nbw = 0;
    for (int i = 0; i < n; i++)
        if (sizes[i] >= 262144 && times[i] > steps * alpha) bws[nbw++] = frac * sizes[i] / (times[i] - steps * alpha);
    if (!nbw) bws[nbw++] = frac * sizes[n - 1] / times[n - 1];
    double bw = median(bws, nbw);
    say("ring allreduce model t(n) = 2 (R-1) alpha + 2 (R-1)/R n / bandwidth: alpha from %.0f bytes, the bandwidth "
        "the median of the sizes from 256 KiB:\n  alpha %.2f us, bandwidth %.3f GB/s\n",
        sizes[0], 1e6 * alpha, bw / 1e9);
    for (int i = 0; i < n; i++)
        say("  %12.0f bytes: model %10.2f us, measured %10.2f us\n", sizes[i],
            1e6 * (steps * alpha + frac * sizes[i] / bw), 1e6 * times[i]);
    say("{\"bench_dist_probe\": {\"ranks\": %d, \"alpha_s\": %.4g, \"bandwidth_Bps\": %.4g, \"bytes\": [", size, alpha,
        bw);
    for (int i = 0; i < n; i++) say("%s%.0f", i ? ", " : "", sizes[i]);
    say("], \"seconds\": [");
    for (int i = 0; i < n; i++) say("%s%.4g", i ? ", " : "", times[i]);
    say("]}}\n");
    return 0;
}

/* ---- training steps ------------------------------------------------------- */

/* the two ways of summing */
enum { OVERLAP, AFTER, N_WAYS };
static const char *const WAY[N_WAYS] = {"buckets overlapped with backward", "one bucket after backward"};

static int train(const opts *o, tg_error *err)
{
    if (!o->n_layer || !o->n_head || !o->n_embd || !o->block_size || !o->batch) {
        tg_error_set(err, "give --n-layer, --n-head, --n-embd, --block-size and --batch-size");
        return -1;
    }
    if (o->batch % size) {
        tg_error_set(err, "--batch-size %d is not a multiple of the %d ranks", o->batch, size);
        return -1;
    }
    int rc = -1;
    const int G = o->batch, B = G / size, T = o->block_size, V = o->vocab, S = o->warmup + o->steps;
    const tg_model_config cfg = {.arch = "gpt",
                                 .n_layer = o->n_layer,
                                 .n_head = o->n_head,
                                 .n_embd = o->n_embd,
                                 .block_size = T,
                                 .vocab_size = V};
    tg_model model, *m = tg_model_init(&model, &cfg, TG_F32, (uint64_t)o->seed, err) ? NULL : &model;
    tg_graph *g = tg_graph_new();
    tg_dist_grads *d[N_WAYS] = {0};
    tg_adamw *opt = NULL;
    int32_t *toks = tg_malloc((size_t)S * G * (T + 1) * sizeof *toks);
    double *ms = tg_calloc((size_t)S, sizeof *ms), *bwd = tg_calloc((size_t)S, sizeof *bwd),
           *wait = tg_calloc((size_t)S, sizeof *wait), *sorted = tg_calloc((size_t)S, sizeof *sorted);
    tg_dist_bucket *tl = NULL;
    if (!m || !g || !toks || !ms || !bwd || !wait || !sorted) {
        if (m) tg_error_set(err, "out of memory");
        goto done;
    }
    if (o->init) {
        tg_st_file *f = tg_st_load(o->init, err);
        int bad = !f || tg_st_load_params(m->params, f, err);
        tg_st_free(f);
        if (bad) goto done;
    }
    for (int w = 0; w < N_WAYS; w++) {
        tg_dist_grads_config dc = {.bucket_bytes = w == OVERLAP ? (size_t)(o->bucket_mb * (1 << 20)) : SIZE_MAX,
                                   .shard = o->zero == 1};
        if (!(d[w] = tg_dist_grads_new(m->params, &dc, err))) goto done;
    }
    int64_t lo, hi;
    tg_dist_grads_shard(d[OVERLAP], &lo, &hi);
    if (!(opt = tg_adamw_new_shard(m->params, &(tg_adamw_config){0.9, 0.99, 1e-8, 0.1}, lo, hi, err))) goto done;
    const int nb = tg_dist_grads_bucket_count(d[OVERLAP]);
    if (!(tl = tg_calloc((size_t)nb, sizeof *tl))) goto done;
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)o->seed, DATA_STREAM);
    bench_chain_rows(&r, toks, (size_t)S * G, T, V);
    double probe_s = tg_dist_grads_probe(d[OVERLAP], 5);
    tg_dist_allreduce_f64(&probe_s, 1, TG_DIST_MAX);
    const float seed = 1.0f / (float)size;
    double last_bwd = 0, loss_last = NAN;
    for (int s = 0; s < S; s++) {
        const int w = s % 2; /* even steps overlapped, odd ones after backward */
        const int32_t *rows = toks + ((size_t)s * G + (size_t)rank * B) * (T + 1); /* (B,T+1) */
        tg_dist_barrier(); /* every rank starts the step together: the time is the step's, not the skew's */
        double t0 = now_ms();
        tg_tensor *x = tg_tensor_new(g, TG_I32, 2, (int[]){B, T}), *y = tg_tensor_new(g, TG_I32, 2, (int[]){B, T});
        if (!x || !y) goto graph_error;
        for (int b = 0; b < B; b++) {
            memcpy((int32_t *)x->data + (size_t)b * T, rows + (size_t)b * (T + 1), (size_t)T * sizeof(int32_t));
            memcpy((int32_t *)y->data + (size_t)b * T, rows + (size_t)b * (T + 1) + 1, (size_t)T * sizeof(int32_t));
        }
        tg_tensor *loss = tg_model_loss(g, m, x, y); /* () */
        tg_dist_grads_begin(d[w], g);
        int bad = tg_graph_backward_seeded(g, loss, &seed);
        tg_dist_grads_end(d[w]);
        if (bad) goto graph_error;
        double lv = tg_tensor_item(loss) / size;
        tg_dist_allreduce_f64(&lv, 1, TG_DIST_SUM);
        double norm = tg_dist_grads_clip(d[w], 1.0);
        if (!isfinite(norm) || !isfinite(lv)) {
            tg_error_set(err, "step %d: loss %g, gradient norm %g", s, lv, norm);
            goto done;
        }
        tg_adamw_step_grad(opt, o->lr, tg_dist_grads_shard_grad(d[w]), NULL);
        tg_dist_grads_gather_params(d[w]);
        tg_params_zero_grad(m->params);
        tg_graph_reset(g);
        ms[s] = now_ms() - t0;
        tg_dist_stats st;
        tg_dist_grads_stats(d[w], &st);
        bwd[s] = 1e3 * st.last_backward_s;
        wait[s] = 1e3 * st.last_wait_s;
        double worst[3] = {ms[s], bwd[s], wait[s]}; /* the slowest rank's */
        tg_dist_allreduce_f64(worst, 3, TG_DIST_MAX);
        ms[s] = worst[0], bwd[s] = worst[1], wait[s] = worst[2];
        loss_last = lv;
        if (w == OVERLAP) {
            for (int i = 0; i < nb; i++) tg_dist_grads_bucket(d[w], i, &tl[i]);
            last_bwd = 1e3 * st.last_backward_s;
        }
    }

    double med[N_WAYS][3];
    for (int w = 0; w < N_WAYS; w++) {
        double *col[3] = {ms, bwd, wait};
        for (int c = 0; c < 3; c++) {
            int n = 0;
            for (int s = o->warmup; s < S; s++)
                if (s % 2 == w) sorted[n++] = col[c][s];
            med[w][c] = n ? median(sorted, n) : NAN;
        }
    }
    const double mb = (double)tg_params_numel(m->params) * 4 / 1e6;
    say("bench_dist: GPT %d layers, %d heads, %d wide, block %d; global batch %d = %d ranks x %d; %d thread%s per "
        "rank; %s\n",
        o->n_layer, o->n_head, o->n_embd, T, G, size, B, tg_num_threads(), tg_num_threads() > 1 ? "s" : "",
        o->zero ? "--zero 1" : "AdamW on every rank");
    say("gradients %.2f MB in %d buckets of %.3g MiB; their sum alone (probe) %.3f ms\n", mb, nb, o->bucket_mb,
        1e3 * probe_s);
    for (int w = 0; w < N_WAYS; w++)
        say("%-34s median step %8.3f ms (backward %7.3f, waited after it %7.3f)\n", WAY[w], med[w][0], med[w][1],
            med[w][2]);
    say("hidden by the overlap: %.3f ms per step (%.1f%% of the step after backward)\n",
        med[AFTER][0] - med[OVERLAP][0], 100 * (med[AFTER][0] - med[OVERLAP][0]) / med[AFTER][0]);
    if (size > 1) {
        say("timeline of the last overlapped step on rank 0 (ms from the start of backward; backward %.3f ms):\n",
            last_bwd);
        double end = last_bwd;
        for (int i = 0; i < nb; i++) end = fmax(end, 1e3 * tl[i].done);
        const int W = 60;
        char bar[64];
        memset(bar, ' ', W);
        for (int c = 0; c < W && c * end / W < last_bwd; c++) bar[c] = '=';
        bar[W] = 0;
        say("  %-36s |%s|\n", "backward", bar);
        for (int i = 0; i < nb; i++) {
            double a = 1e3 * tl[i].launched, z = 1e3 * tl[i].done;
            memset(bar, ' ', W);
            for (int c = 0; c < W; c++)
                if ((c + 1) * end / W > a && c * end / W <= z) bar[c] = '-';
            const char *name = tg_params_at(m->params, tl[i].first_param)->name;
            if (!strncmp(name, "transformer.", 12)) name += 12;
            char what[64];
            snprintf(what, sizeof what, "bucket %d: %s.. (%.2f MB)", i, name, (double)tl[i].numel * 4 / 1e6);
            say("  %-36s |%s| %7.3f .. %7.3f%s\n", what, bar, a, z, tl[i].in_backward ? "" : " (after backward)");
        }
    }
    say("{\"bench_dist\": {\"ranks\": %d, \"threads\": %d, \"global_batch\": %d, \"zero\": %d, \"n_params\": %lld, "
        "\"buckets\": %d, \"probe_ms\": %.4f, \"overlap_ms\": %.4f, \"after_ms\": %.4f, \"overlap_backward_ms\": %.4f, "
        "\"overlap_wait_ms\": %.4f, \"after_wait_ms\": %.4f, \"tokens_per_s\": %.2f, \"loss\": %.9g}}\n",
        size, tg_num_threads(), G, o->zero, (long long)tg_params_numel(m->params), nb, 1e3 * probe_s, med[OVERLAP][0],
        med[AFTER][0], med[OVERLAP][1], med[OVERLAP][2], med[AFTER][2], (double)G * T / (med[OVERLAP][0] / 1e3),
        loss_last);
    rc = 0;
    goto done;
graph_error:
    tg_error_set(err, "%s", tg_graph_error(g));
done:
    tg_free(tl);
    tg_free(toks);
    tg_free(ms);
    tg_free(bwd);
    tg_free(wait);
    tg_free(sorted);
    tg_adamw_free(opt);
    for (int w = 0; w < N_WAYS; w++) tg_dist_grads_free(d[w]);
    tg_graph_free(g);
    tg_model_release(m);
    return rc;
}

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (tg_dist_init(&argc, &argv, &err)) {
        fprintf(stderr, "bench_dist: %s\n", err.msg);
        return 1;
    }
    rank = tg_dist_rank();
    size = tg_dist_size();
    opts o = {
        .vocab = 65, .steps = 20, .warmup = 3, .threads = 1, .seed = 1337, .lr = 1e-3, .bucket_mb = 1, .max_mb = 64};
    int rc = parse_args(argc, argv, &o, &err);
    if (!rc) {
        tg_set_num_threads(o.threads);
        rc = o.probe ? probe(&o, &err) : train(&o, &err);
    }
    if (rc) {
        fprintf(stderr, "bench_dist: rank %d: %s\n", rank, err.msg);
        tg_dist_abort(1, NULL);
    }
    tg_dist_finalize();
    return 0;
}
