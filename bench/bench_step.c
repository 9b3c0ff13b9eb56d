/* bench_step: times tapegrad GPT or Llama training steps, for bench/bench.py.
 *
 *   bench_step --n-layer L --n-head H --n-embd C --block-size T
 *              --batch-size B [--vocab 65] [--steps 20] [--warmup 3]
 *              [--threads 1] [--seed 1337] [--lr 1e-3]
 *              [--init W.safetensors] [--write-init PATH] [--rss-every K]
 *              [--attn fused|composed] [--chunk K]
 *              [--arch gpt|llama] [--n-kv-head K] [--hidden-dim F]
 *              [--gelu erf|tanh] [--bias]
 *
 * Model, in float32, no bias, no dropout; attention fused (tg_attention,
 * the default) or composed (--attn):
 *   --arch gpt (the default): tapegrad's GPT (nn/gpt.c), its MLP's GELU
 *     the erf form or (--gelu tanh) GPT-2's, biases with --bias;
 *   --arch llama: tapegrad's Llama (nn/llama.c, llama2.c's model.py) with
 *     --n-kv-head key/value heads (default: --n-head), SwiGLU width
 *     --hidden-dim (default: llama2.c's for the width, tg_llama_hidden_dim
 *     with multiple_of 32: 768 for 288), RoPE theta 10000 with interleaved
 *     pairs, RMSNorm eps 1e-5, the head tied to the token embedding.
 * Weights: from --init (nanoGPT or model.py names, config in __metadata__
 * as tiny_gpt writes it, "arch" choosing the family (absent: gpt), which
 * then overrides the size and --arch flags), else the family's init
 * (nanoGPT's, model.py's) seeded with --seed. --write-init writes the
 * initial weights in that format before training (what bench/torch_ref.py
 * loads, so both sides start identical).
 *
 * One training step: forward, loss (mean cross-entropy), backward, global
 * gradient-norm clip to 1.0, AdamW (lr constant --lr, betas 0.9/0.99,
 * eps 1e-8, weight decay 0.1 on 2-D tensors), zero the gradients, reset
 * the graph. W warm-up steps then N timed steps; only the timed ones are
 * reported.
 *
 * Batches: PCG32 (core/rng.c) seeded with (seed, stream 7). For each step,
 * for each row b < B, T+1 tokens: the first tg_rng_below(V), each next
 * (previous + 1 + tg_rng_below(4)) mod V, a chain a model can learn
 * (entropy ln 4 = 1.386 nats per token after the first), so the loss
 * falls from ln V and two implementations that train differently part
 * ways. idx is the first T tokens of a row, targets the last T. All
 * batches are drawn before timing; bench/torch_ref.py draws the
 * identical stream.
 *
 * Output: one JSON object on stdout:
 *   {"impl", "config": {...}, "threads", "warmup", "steps",
 *    "ms": [per timed step], "median_ms", "min_ms", "tokens_per_s"
 *    (B*T / median), "update_ms" (the median time of a step's update:
 *    the clip, AdamW and zeroing the gradients),
 *    "peak_rss_kb" (getrusage ru_maxrss),
 *    "losses": [every step, warm-up included, before its update],
 *    "loss": the last step's loss, "n_params", "params_fnv1a": a 64-bit
 *    FNV-1a hash of the parameters' bytes after the last step, in hex
 *    (two builds or paths that train the same bits give the same hash)}
 *
 * Chunks (for bench.py's interleaving): with --chunk K, before the first
 * timed step and before every K-th timed step after it, the program
 * prints the line "wait" on stdout and blocks until it reads a line on
 * stdin (outside the timed region); it stops with an error if stdin
 * closes.
 *
 * Memory flatness: with --rss-every K (K >= 1), after the first step, every
 * K-th step and the last (steps numbered from 1, warm-up included; outside
 * the timed region) the process's resident set (/proc/self/statm, -1 where
 * unreadable), its peak (getrusage ru_maxrss) and the number of heap
 * allocations tapegrad has made (tg_alloc_calls) are recorded, and the
 * JSON gains "rss_every": K and "rss_samples": {"step": [...],
 * "rss_kb": [...], "peak_rss_kb": [...], "alloc_calls": [...]}. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tapegrad.h"

#include "bench_common.h"

#define DATA_STREAM 7u

typedef struct opts {
    int n_layer, n_head, n_embd, block_size, batch, vocab, steps, warmup, threads, rss_every, chunk;
    int n_kv_head, hidden_dim; /* --arch llama; 0: the defaults */
    long long seed;
    double lr;
    const char *init, *write_init;
    bool attn_composed; /* --attn composed: the composed attention path */
    bool llama; /* --arch llama */
    bool gelu_tanh, bias; /* --gelu tanh, --bias (gpt) */
} opts;

/* the model being timed: one of the two families */
typedef struct bench_model {
    tg_model m;
    tg_gpt *gpt; /* m's model, when it is a GPT */
    tg_llama *llama; /* ... or a Llama */
    tg_params *params;
    int block_size, vocab_size;
} bench_model;

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_step --n-layer L --n-head H --n-embd C --block-size T --batch-size B\n"
            "                  [--vocab 65] [--steps 20] [--warmup 3] [--threads 1] [--seed 1337]\n"
            "                  [--lr 1e-3] [--init W.safetensors] [--write-init PATH] [--rss-every K]\n"
            "                  [--attn fused|composed] [--chunk K]\n"
            "                  [--arch gpt|llama] [--n-kv-head K] [--hidden-dim F] [--gelu erf|tanh] [--bias]\n");
}

/* --name value pairs; returns 0, or -1 with a message in err */
static int parse_args(int argc, char **argv, opts *o, tg_error *err)
{
    const bench_int_flag ints[] = {
        {"--n-layer", &o->n_layer, 1, 1024},          {"--n-head", &o->n_head, 1, 1024},
        {"--n-embd", &o->n_embd, 1, 65536},           {"--block-size", &o->block_size, 1, 1 << 20},
        {"--batch-size", &o->batch, 1, 1 << 20},      {"--vocab", &o->vocab, 1, 1 << 24},
        {"--steps", &o->steps, 1, 1 << 24},           {"--warmup", &o->warmup, 0, 1 << 24},
        {"--threads", &o->threads, 1, 1024},          {"--rss-every", &o->rss_every, 0, 1 << 24},
        {"--chunk", &o->chunk, 0, 1 << 24},           {"--n-kv-head", &o->n_kv_head, 1, 1024},
        {"--hidden-dim", &o->hidden_dim, 1, 1 << 20},
    };
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--bias")) { /* the one flag without a value */
            o->bias = true;
            i--;
            continue;
        }
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            tg_error_set(err, "%s needs a value", a);
            return -1;
        }
        const int set = bench_set_int(ints, sizeof ints / sizeof ints[0], a, v, err);
        if (set < 0) return -1;
        if (set) continue;
        char *end;
        if (!strcmp(a, "--seed")) {
            o->seed = strtoll(v, &end, 10);
            if (end == v || *end || o->seed < 0) {
                tg_error_set(err, "--seed: '%s' is not a non-negative integer", v);
                return -1;
            }
        } else if (!strcmp(a, "--lr")) {
            o->lr = strtod(v, &end);
            if (end == v || *end || !(o->lr >= 0)) {
                tg_error_set(err, "--lr: '%s' is not a non-negative number", v);
                return -1;
            }
        } else if (!strcmp(a, "--attn")) {
            if (strcmp(v, "fused") && strcmp(v, "composed")) {
                tg_error_set(err, "--attn: '%s' is not fused or composed", v);
                return -1;
            }
            o->attn_composed = !strcmp(v, "composed");
        } else if (!strcmp(a, "--arch")) {
            if (strcmp(v, "gpt") && strcmp(v, "llama")) {
                tg_error_set(err, "--arch: '%s' is not gpt or llama", v);
                return -1;
            }
            o->llama = !strcmp(v, "llama");
        } else if (!strcmp(a, "--gelu")) {
            if (strcmp(v, "erf") && strcmp(v, "tanh")) {
                tg_error_set(err, "--gelu: '%s' is not erf or tanh", v);
                return -1;
            }
            o->gelu_tanh = !strcmp(v, "tanh");
        } else if (!strcmp(a, "--init")) o->init = v;
        else if (!strcmp(a, "--write-init")) o->write_init = v;
        else {
            tg_error_set(err, "unknown flag '%s'", a);
            return -1;
        }
    }
    return 0;
}

/* config from the file's __metadata__ (as examples/tiny_gpt writes it) */
static int meta_int(const tg_st_file *f, const char *key, int *out, tg_error *err)
{
    const char *s = tg_st_meta(f, key);
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || v < 1 || v > (1 << 24)) {
        tg_error_set(err, "weights metadata '%s' is missing or not a positive integer", key);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* a finite double from the file's __metadata__ */
static int meta_double(const tg_st_file *f, const char *key, double *out, tg_error *err)
{
    const char *s = tg_st_meta(f, key);
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !isfinite(v)) {
        tg_error_set(err, "weights metadata '%s' is missing or not a number", key);
        return -1;
    }
    *out = v;
    return 0;
}

static int gpt_model(bench_model *bm, const opts *o, const tg_st_file *f, tg_error *err)
{
    tg_gpt_config cfg = {.n_layer = o->n_layer,
                         .n_head = o->n_head,
                         .n_embd = o->n_embd,
                         .block_size = o->block_size,
                         .vocab_size = o->vocab,
                         .attn_composed = o->attn_composed,
                         .bias = o->bias,
                         .gelu = o->gelu_tanh ? TG_GELU_TANH : TG_GELU_ERF};
    if (f) {
        const char *b = tg_st_meta(f, "bias");
        if (meta_int(f, "n_layer", &cfg.n_layer, err) || meta_int(f, "n_head", &cfg.n_head, err) ||
            meta_int(f, "n_embd", &cfg.n_embd, err) || meta_int(f, "block_size", &cfg.block_size, err) ||
            meta_int(f, "vocab_size", &cfg.vocab_size, err))
            return -1;
        cfg.bias = b && !strcmp(b, "true");
    }
    const tg_model_config mc = {.arch = "gpt",
                                .n_layer = cfg.n_layer,
                                .n_head = cfg.n_head,
                                .n_embd = cfg.n_embd,
                                .block_size = cfg.block_size,
                                .vocab_size = cfg.vocab_size,
                                .bias = cfg.bias};
    if (tg_model_init(&bm->m, &mc, TG_F32, f ? 0 : (uint64_t)o->seed, err)) return -1;
    tg_model_set_composed(&bm->m, cfg.attn_composed);
    bm->gpt = bm->m.impl;
    bm->params = bm->m.params;
    bm->block_size = cfg.block_size;
    bm->vocab_size = cfg.vocab_size;
    return 0;
}

static int llama_model(bench_model *bm, const opts *o, const tg_st_file *f, tg_error *err)
{
    tg_llama_config cfg = {.n_layer = o->n_layer,
                           .n_head = o->n_head,
                           .n_kv_head = o->n_kv_head ? o->n_kv_head : o->n_head,
                           .n_embd = o->n_embd,
                           .block_size = o->block_size,
                           .vocab_size = o->vocab,
                           .hidden_dim = o->hidden_dim ? o->hidden_dim : tg_llama_hidden_dim(o->n_embd, 32),
                           .rope_theta = 10000,
                           .rope_flags = TG_ROPE_INTERLEAVED,
                           .norm_eps = 1e-5,
                           .tied = true,
                           .attn_composed = o->attn_composed};
    if (f) {
        const char *tied = tg_st_meta(f, "tied"), *rope = tg_st_meta(f, "rope");
        if (meta_int(f, "n_layer", &cfg.n_layer, err) || meta_int(f, "n_head", &cfg.n_head, err) ||
            meta_int(f, "n_kv_head", &cfg.n_kv_head, err) || meta_int(f, "n_embd", &cfg.n_embd, err) ||
            meta_int(f, "hidden_dim", &cfg.hidden_dim, err) || meta_int(f, "block_size", &cfg.block_size, err) ||
            meta_int(f, "vocab_size", &cfg.vocab_size, err) || meta_double(f, "rope_theta", &cfg.rope_theta, err) ||
            meta_double(f, "norm_eps", &cfg.norm_eps, err))
            return -1;
        if (!tied || (strcmp(tied, "true") && strcmp(tied, "false")) ||
            (rope && strcmp(rope, "interleaved") && strcmp(rope, "halves"))) {
            tg_error_set(err, "weights metadata: 'tied' must be true or false, 'rope' interleaved or halves");
            return -1;
        }
        cfg.tied = !strcmp(tied, "true");
        cfg.rope_flags = rope && !strcmp(rope, "halves") ? TG_ROPE_HALVES : TG_ROPE_INTERLEAVED;
    }
    const tg_model_config mc = {.arch = "llama",
                                .n_layer = cfg.n_layer,
                                .n_head = cfg.n_head,
                                .n_kv_head = cfg.n_kv_head,
                                .n_embd = cfg.n_embd,
                                .hidden_dim = cfg.hidden_dim,
                                .block_size = cfg.block_size,
                                .vocab_size = cfg.vocab_size,
                                .rope_theta = cfg.rope_theta,
                                .norm_eps = cfg.norm_eps,
                                .rope_halves = cfg.rope_flags == TG_ROPE_HALVES,
                                .tied = cfg.tied};
    if (tg_model_init(&bm->m, &mc, TG_F32, f ? 0 : (uint64_t)o->seed, err)) return -1;
    tg_model_set_composed(&bm->m, cfg.attn_composed);
    bm->llama = bm->m.impl;
    bm->params = bm->m.params;
    bm->block_size = cfg.block_size;
    bm->vocab_size = cfg.vocab_size;
    return 0;
}

static void free_model(bench_model *bm)
{
    tg_model_release(&bm->m);
    memset(bm, 0, sizeof *bm);
}

/* the model of --arch and the size flags, or of --init's metadata and weights */
static int load_model(bench_model *bm, const opts *o, tg_error *err)
{
    memset(bm, 0, sizeof *bm);
    if (!o->init) return o->llama ? llama_model(bm, o, NULL, err) : gpt_model(bm, o, NULL, err);
    tg_st_file *f = tg_st_load(o->init, err);
    if (!f) return -1;
    const char *arch = tg_st_meta(f, "arch");
    int rc = -1;
    if (arch && strcmp(arch, "gpt") && strcmp(arch, "llama"))
        tg_error_set(err, "%s: weights metadata 'arch' = '%s' is not gpt or llama", o->init, arch);
    else if (!((arch && !strcmp(arch, "llama")) ? llama_model(bm, o, f, err) : gpt_model(bm, o, f, err)))
        rc = tg_st_load_params(bm->params, f, err);
    if (rc) free_model(bm);
    tg_st_free(f);
    return rc;
}

/* FNV-1a over n bytes */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* resident set size in kB from /proc/self/statm (its second field, in
 * pages), or -1 where it cannot be read */
static long current_rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size, resident;
    int n = f ? fscanf(f, "%ld %ld", &size, &resident) : 0;
    if (f) fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? resident * (page / 1024) : -1;
}

typedef struct rss_sample {
    long step, rss_kb, peak_kb;
    unsigned long long allocs;
} rss_sample;

static int write_init(const bench_model *bm, const char *path, tg_error *err)
{
    if (bm->gpt) {
        const tg_gpt_config *c = &bm->gpt->cfg;
        char v[5][16];
        int x[5] = {c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size};
        for (int i = 0; i < 5; i++) snprintf(v[i], sizeof v[i], "%d", x[i]);
        const char *meta[] = {"n_layer",    v[0], "n_head",     v[1],
                              "n_embd",     v[2], "block_size", v[3],
                              "vocab_size", v[4], "bias",       c->bias ? "true" : "false",
                              "dropout",    "0",  "format",     "tapegrad bench_step"};
        return tg_st_save_params(bm->params, path, meta, 8, err);
    }
    /* tiny_gpt's keys for a Llama (examples/tiny_gpt/model_llama.c) */
    const tg_llama_config *c = &bm->llama->cfg;
    char v[7][16], theta[40], eps[40];
    int x[7] = {c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->hidden_dim, c->block_size, c->vocab_size};
    for (int i = 0; i < 7; i++) snprintf(v[i], sizeof v[i], "%d", x[i]);
    snprintf(theta, sizeof theta, "%.17g", c->rope_theta);
    snprintf(eps, sizeof eps, "%.17g", c->norm_eps);
    const char *meta[] = {"arch",       "llama",
                          "n_layer",    v[0],
                          "n_head",     v[1],
                          "n_kv_head",  v[2],
                          "n_embd",     v[3],
                          "hidden_dim", v[4],
                          "block_size", v[5],
                          "vocab_size", v[6],
                          "rope_theta", theta,
                          "norm_eps",   eps,
                          "tied",       c->tied ? "true" : "false",
                          "rope",       c->rope_flags == TG_ROPE_HALVES ? "halves" : "interleaved",
                          "dropout",    "0",
                          "bias",       "false",
                          "format",     "tapegrad bench_step"};
    return tg_st_save_params(bm->params, path, meta, (int)(sizeof meta / sizeof meta[0]) / 2, err);
}

/* the median of x[0..n), which it sorts */
static double median_of(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int main(int argc, char **argv)
{
    opts o = {.vocab = 65, .steps = 20, .warmup = 3, .threads = 1, .seed = 1337, .lr = 1e-3};
    tg_error err = {0};
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return 0;
    }
    if (parse_args(argc, argv, &o, &err)) {
        fprintf(stderr, "bench_step: %s\n", err.msg);
        usage();
        return 2;
    }
    if (!o.init && (!o.n_layer || !o.n_head || !o.n_embd || !o.block_size)) {
        fprintf(stderr, "bench_step: give --n-layer, --n-head, --n-embd and --block-size, or --init\n");
        return 2;
    }
    if (!o.batch) {
        fprintf(stderr, "bench_step: --batch-size is required\n");
        return 2;
    }
    tg_set_num_threads(o.threads);

    int rc = 1;
    tg_graph *g = NULL;
    tg_adamw *opt = NULL;
    int32_t *toks = NULL;
    double *ms = NULL, *upd = NULL, *sorted = NULL, *losses = NULL;
    rss_sample *rss = NULL;
    int n_rss = 0;
    bench_model m;
    if (load_model(&m, &o, &err)) goto fail;
    if (o.write_init && write_init(&m, o.write_init, &err)) goto fail;

    const int B = o.batch, T = m.block_size, V = m.vocab_size, S = o.warmup + o.steps;
    opt = tg_adamw_new(m.params, &(tg_adamw_config){0.9, 0.99, 1e-8, 0.1}, &err);
    if (!opt) goto fail;
    g = tg_graph_new();
    toks = tg_malloc((size_t)S * B * (T + 1) * sizeof *toks);
    ms = tg_calloc((size_t)S, sizeof *ms);
    upd = tg_calloc((size_t)S, sizeof *upd);
    sorted = tg_calloc((size_t)S, sizeof *sorted);
    losses = tg_calloc((size_t)S, sizeof *losses);
    if (o.rss_every) rss = tg_calloc((size_t)(S / o.rss_every + 2), sizeof *rss);
    if (!g || !toks || !ms || !upd || !sorted || !losses || (o.rss_every && !rss)) {
        tg_error_set(&err, "out of memory");
        goto fail;
    }
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)o.seed, DATA_STREAM);
    bench_chain_rows(&r, toks, (size_t)S * B, T, V); /* a learnable chain: see the top comment */

    tg_graph_set_training(g, true); /* dropout is 0 anyway */
    for (int s = 0; s < S; s++) {
        const int32_t *rows = toks + (size_t)s * B * (T + 1); /* (B,T+1) */
        if (o.chunk && s >= o.warmup && (s - o.warmup) % o.chunk == 0 && !wait_for_turn()) {
            tg_error_set(&err, "--chunk: stdin closed before step %d", s);
            goto fail;
        }
        double t0 = now_ms();
        tg_tensor *x = tg_tensor_new(g, TG_I32, 2, (int[]){B, T}); /* (B,T) */
        tg_tensor *y = tg_tensor_new(g, TG_I32, 2, (int[]){B, T}); /* (B,T) */
        if (!x || !y) {
            tg_error_set(&err, "%s", tg_graph_error(g));
            goto fail;
        }
        for (int b = 0; b < B; b++) {
            memcpy((int32_t *)x->data + (size_t)b * T, rows + (size_t)b * (T + 1), (size_t)T * sizeof(int32_t));
            memcpy((int32_t *)y->data + (size_t)b * T, rows + (size_t)b * (T + 1) + 1, (size_t)T * sizeof(int32_t));
        }
        tg_tensor *loss = tg_model_loss(g, &m.m, x, y); /* () */
        if (tg_graph_backward(g, loss) != 0) {
            tg_error_set(&err, "step %d: %s", s, tg_graph_error(g));
            goto fail;
        }
        losses[s] = tg_tensor_item(loss);
        const double t1 = now_ms();
        double norm = tg_clip_grad_norm(m.params, 1.0);
        if (!isfinite(norm) || !isfinite(losses[s])) {
            tg_error_set(&err, "step %d: loss %g, gradient norm %g", s, losses[s], norm);
            goto fail;
        }
        tg_adamw_step(opt, o.lr, NULL);
        tg_params_zero_grad(m.params);
        upd[s] = now_ms() - t1;
        tg_graph_reset(g);
        ms[s] = now_ms() - t0;
        if (o.rss_every && (s == 0 || (s + 1) % o.rss_every == 0 || s == S - 1)) {
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            rss[n_rss++] = (rss_sample){s + 1, current_rss_kb(), ru.ru_maxrss, (unsigned long long)tg_alloc_calls()};
        }
    }

    const double *timed = ms + o.warmup;
    memcpy(sorted, timed, (size_t)o.steps * sizeof *sorted);
    const double median = median_of(sorted, o.steps), min = sorted[0];
    memcpy(sorted, upd + o.warmup, (size_t)o.steps * sizeof *sorted);
    const double update_median = median_of(sorted, o.steps);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    if (m.gpt) {
        const tg_gpt_config *c = &m.gpt->cfg;
        printf("{\"impl\": \"tapegrad\", \"config\": {\"arch\": \"gpt\", \"n_layer\": %d, \"n_head\": %d, "
               "\"n_embd\": %d, \"block_size\": %d, \"vocab_size\": %d, \"batch_size\": %d, \"bias\": %s, "
               "\"gelu\": \"%s\"}",
               c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, B, c->bias ? "true" : "false",
               c->gelu == TG_GELU_TANH ? "tanh" : "erf");
    } else {
        const tg_llama_config *c = &m.llama->cfg;
        printf("{\"impl\": \"tapegrad\", \"config\": {\"arch\": \"llama\", \"n_layer\": %d, \"n_head\": %d, "
               "\"n_kv_head\": %d, \"n_embd\": %d, \"hidden_dim\": %d, \"block_size\": %d, \"vocab_size\": %d, "
               "\"tied\": %s, \"batch_size\": %d}",
               c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->hidden_dim, c->block_size, c->vocab_size,
               c->tied ? "true" : "false", B);
    }
    printf(", \"threads\": %d, \"warmup\": %d, \"steps\": %d, \"n_params\": %lld, \"ms\": [", o.threads, o.warmup,
           o.steps, (long long)tg_params_numel(m.params));
    for (int s = 0; s < o.steps; s++) printf("%s%.4f", s ? ", " : "", timed[s]);
    printf("], \"median_ms\": %.4f, \"min_ms\": %.4f, \"tokens_per_s\": %.2f, \"update_ms\": %.4f, "
           "\"peak_rss_kb\": %ld, \"losses\": [",
           median, min, (double)B * T / (median / 1e3), update_median, ru.ru_maxrss);
    for (int s = 0; s < S; s++) printf("%s%.9g", s ? ", " : "", losses[s]);
    printf("], \"loss\": %.9g, \"params_fnv1a\": \"%016llx\"", losses[S - 1],
           (unsigned long long)fnv1a(tg_params_data(m.params),
                                     (size_t)tg_params_numel(m.params) * tg_dtype_size(tg_params_dtype(m.params))));
    if (o.rss_every) {
        printf(", \"rss_every\": %d, \"rss_samples\": {\"step\": [", o.rss_every);
        for (int i = 0; i < n_rss; i++) printf("%s%ld", i ? ", " : "", rss[i].step);
        printf("], \"rss_kb\": [");
        for (int i = 0; i < n_rss; i++) printf("%s%ld", i ? ", " : "", rss[i].rss_kb);
        printf("], \"peak_rss_kb\": [");
        for (int i = 0; i < n_rss; i++) printf("%s%ld", i ? ", " : "", rss[i].peak_kb);
        printf("], \"alloc_calls\": [");
        for (int i = 0; i < n_rss; i++) printf("%s%llu", i ? ", " : "", rss[i].allocs);
        printf("]}");
    }
    printf("}\n");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "bench_step: %s\n", err.msg);
done:
    tg_free(toks);
    tg_free(ms);
    tg_free(upd);
    tg_free(sorted);
    tg_free(losses);
    tg_free(rss);
    tg_adamw_free(opt);
    tg_graph_free(g);
    free_model(&m);
    return rc;
}
