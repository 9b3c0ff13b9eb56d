/* train_custom: a model of one's own trained by the library's run (train/run.h), the loop this program's
 * (docs/adding-a-model.md; mpirun -np 2 gives the same losses). The model, a causal MLP-mixer over characters,
 * has no attention: each block mixes the positions with a learned lower-triangular (T,T) matrix (t sees only
 * positions <= t), then the channels with a GELU MLP, both pre-norm residuals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad.h"
#include "distributed/dist.h"

static const char USAGE[] = "train_custom --data FILE | --data-tokens F [--val-tokens F] --vocab-size V [--steps N] "
                            "[--stop-at S] [--out DIR] | --resume [--out DIR] [--steps N] [--stop-at S]";

typedef struct mixer { /* up to 8 blocks */
    tg_params *p;
    tg_tensor *wte, *mix[8]; /* (V,C) token embedding; (block_size, block_size): position t from those <= t */
    tg_rmsnorm_mod norm1[8], norm2[8], norm_f;
    tg_mlp_mod mlp[8]; /* C -> 4C -> C */
    tg_linear_mod head; /* (V,C) */
    int L;
} mixer;
static void mixer_free(void *m) { tg_params_free(((mixer *)m)->p), free(m); }

static void *mixer_new(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    const int L = c->n_layer, C = c->n_embd, T = c->block_size, V = c->vocab_size;
    mixer *m = calloc(1, sizeof *m);
    if (!m || (m->L = L) > 8 || !(m->p = tg_params_new(dt, err)))
        return tg_error_set(err, "mixer: %s", m && L > 8 ? "at most 8 blocks" : "out of memory"), free(m), NULL;
    tg_rng r;
    tg_rng_seed(&r, seed, 0);
    char n[4][64];
    int bad = !(m->wte = tg_params_add(m->p, "wte.weight", 2, (int[]){V, C}, err));
    for (int l = 0; l < L && !bad; l++) {
        static const char *const part[4] = {"mix.weight", "norm1", "norm2", "mlp"};
        for (int i = 0; i < 4; i++) snprintf(n[i], sizeof n[i], "blocks.%d.%s", l, part[i]);
        bad = !(m->mix[l] = tg_params_add(m->p, n[0], 2, (int[]){T, T}, err)) ||
            tg_rmsnorm_init(&m->norm1[l], m->p, n[1], C, 1e-5, err) ||
            tg_rmsnorm_init(&m->norm2[l], m->p, n[2], C, 1e-5, err) ||
            tg_mlp_init(&m->mlp[l], m->p, n[3], C, 4 * C, NULL, err); /* GELU, no bias */
        for (int t = 0; !bad && t < T; t++) /* each position starts as the mean of the ones it sees, give or take */
            for (int s = 0; s <= t; s++) tg_tensor_set(m->mix[l], t * T + s, 1.0 / (t + 1) + 0.02 * tg_rng_normal(&r));
        if (!bad) tg_mlp_init_normal(&m->mlp[l], &r, 0.02, 0.02, 0.02 / sqrt(2.0 * L));
    }
    bad = bad || tg_rmsnorm_init(&m->norm_f, m->p, "norm_f", C, 1e-5, err) ||
        tg_linear_init(&m->head, m->p, "head", C, V, false, err);
    if (bad) return tg_error_prefix(err, "mixer"), mixer_free(m), NULL;
    tg_linear_init_uniform(&m->head, &r); /* nn.Linear's start */
    tg_rng_fill_normal(&r, m->wte, 0, 0.02);
    return m;
}

/* idx (B,T) -> logits (B,T,V) */
static tg_tensor *mixer_forward(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **unused)
{
    mixer *m = impl;
    const int T = idx->ndim == 2 ? idx->shape[1] : 0;
    tg_tensor *x = tg_embedding(g, m->wte, idx), *mask = tg_tensor_new(g, m->wte->dtype, 2, (int[]){T, T});
    for (int t = 0; mask && t < T; t++) /* the causal mask: 1 on and below the diagonal */
        for (int s = 0; s <= t; s++) tg_tensor_set(mask, t * T + s, 1);
    for (int l = 0; l < m->L; l++) {
        tg_tensor *w = tg_mul(g, tg_slice(g, tg_slice(g, m->mix[l], 0, 0, T), 1, 0, T), mask); /* (T,T) */
        x = tg_add(g, x, tg_matmul(g, w, tg_rmsnorm_forward(g, &m->norm1[l], x))); /* positions */
        x = tg_add(g, x, tg_mlp_forward(g, &m->mlp[l], tg_rmsnorm_forward(g, &m->norm2[l], x))); /* channels */
    }
    return (void)unused, tg_linear_forward(g, &m->head, tg_rmsnorm_forward(g, &m->norm_f, x));
}

static tg_tensor *mixer_loss(tg_graph *g, void *m, tg_tensor *x, tg_tensor *y)
{
    return tg_cross_entropy(g, mixer_forward(g, m, x, NULL), y);
}
static tg_params *mixer_params(void *m) { return ((mixer *)m)->p; }
static int64_t mixer_count(const tg_model_config *c) /* wte, head; norm_f; per block mix, norms, MLP */
{
    const int64_t C = c->n_embd, T = c->block_size;
    return 2 * (int64_t)c->vocab_size * C + C + c->n_layer * (T * T + 2 * C + 8 * C * C);
}

/* no composed path, no KV cache; the config is the library's plain one (n_layer, n_embd, block_size, vocab_size) */
static const tg_model_family MIXER = {.arch = "mixer",
                                      .embedding = "wte.weight",
                                      .create = mixer_new,
                                      .destroy = mixer_free,
                                      .params = mixer_params,
                                      .num_params = mixer_count,
                                      .forward = mixer_forward,
                                      .loss = mixer_loss};

static const char *out = "out-custom";
static bool resume;

/* The command line into c (the run's settings) and o (--stop-at): 0, 1 for --help, or -1 with a message. */
static int parse(int argc, char **argv, tg_run_config *c, tg_run_options *o, tg_error *err)
{
    const tg_run_setting stop_at = {.kind = TG_SETTING_I64, .max = 1e12}; /* a whole number >= 0 */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) return puts(USAGE), 1;
        if (!strcmp(a, "--resume") && (resume = true)) continue;
        if (!v || !strncmp(v, "--", 2)) return tg_error_set(err, "%s needs a value", a);
        if (i++, !strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--stop-at")           ? tg_run_setting_parse(&stop_at, v, a, &o->stop_at, err)
                     : !tg_run_setting_find(a + 2) ? tg_error_set(err, "%s: unknown flag (see --help)", a)
                                                   : tg_run_config_set(c, a + 2, v, a, err))
            return -1;
    }
    return 0;
}

static int fail(const char *msg)
{
    return (tg_dist_rank() ? 0 : fprintf(stderr, "train_custom: %s\n", msg)), tg_dist_finalize(), 1;
}

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (tg_dist_init(&argc, &argv, &err) || tg_model_register(&MIXER, &err)) return fail(err.msg);
    tg_run_config c; /* a 2-block mixer of width 64 on windows of 32, batches of 16, AdamW at 3e-3 */
    tg_run_config_init(&c);
    c.arch = "mixer", c.n_layer = 2, c.n_embd = 64, c.block_size = 32, c.batch_size = 16 / tg_dist_size();
    c.steps = 300, c.lr = 3e-3, c.min_lr = 3e-4, c.warmup = 20, c.eval_interval = 100, c.eval_iters = 20;
    tg_run_options o = {.backend = tg_dist_run_backend(), .flag_names = true, .program = "train_custom"};
    int rc = parse(argc, argv, &c, &o, &err); /* a resume: the run's recorded settings, the flags over them */
    if (rc == 0 && resume)
        tg_run_config_release(&c), rc = tg_run_config_load(&c, out, &err) || parse(argc, argv, &c, &o, &err) ? -1 : 0;
    if (rc) return rc > 0 ? (tg_dist_finalize(), 0) : fail(err.msg);
    if (!resume && !c.data && !c.data_tokens) return fail("give --data or --data-tokens (--vocab-size), or --resume");
    tg_run *r = resume ? tg_run_resume(out, &c, &o, &err) : tg_run_new(out, &c, &o, &err);
    if (!r) return fail(err.msg);
    tg_run_info info;
    if (!tg_run_describe(r, &info) && info.rank == 0)
        printf("train_custom: a %d-block mixer of %lld parameters, %zu train tokens, %d process%s\n", c.n_layer,
               (long long)tg_params_numel(info.model->params), info.data->n_train, info.ranks,
               info.ranks > 1 ? "es" : "");
    tg_run_stop why = TG_RUN_GO; /* the loop: a step, an evaluation when one is due, until the end or --stop-at */
    while (!rc && (why = tg_run_should_stop(r, NULL)) == TG_RUN_GO) {
        tg_run_step_info s;
        tg_run_eval ev;
        rc = tg_run_step(r, tg_run_lr(r), &s, &err);
        if (rc || !tg_run_eval_due(r) || (rc = tg_run_evaluate(r, &ev, &err))) continue;
        char bpb[48] = ""; /* none for token ids without a tokenizer: their bytes are unknown */
        if (!isnan(ev.loss[0].val_bpb)) snprintf(bpb, sizeof bpb, " (%.3f bits per byte)", ev.loss[0].val_bpb);
        if (info.rank == 0)
            printf("step %lld: loss %.4f, train %.4f, val %.4f%s\n", (long long)s.step, s.loss, ev.loss[0].train,
                   ev.loss[0].val, bpb);
    }
    if (!rc && why != TG_RUN_DONE) rc = tg_run_save(r, &err); /* --stop-at: saved as if interrupted */
    if (rc && tg_run_failed_alone(r)) tg_run_abort(r, err.msg); /* the other processes may wait in a collective */
    tg_run_free(r), tg_run_config_release(&c);
    return rc ? fail(err.msg) : (tg_dist_finalize(), 0);
}
