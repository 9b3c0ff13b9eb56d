/* train_custom: a model of one's own, trained with tapegrad's training
 * layer and nothing else (docs/adding-a-model.md walks through it).
 *
 * The model is a causal MLP-mixer over characters: no attention. Each block
 * mixes the positions with a learned (T,T) matrix, lower-triangular so that
 * position t sees only positions <= t, then mixes the channels with a GELU
 * MLP; both are pre-norm residuals. As a tg_model_family it gets
 * checkpoints, evaluation and resume from the library.
 *
 *   train_custom --data FILE | --data-tokens F [--val-tokens F] --vocab-size V
 *                [--steps N] [--stop-at S] [--out DIR]
 *   train_custom --resume [--out DIR] [--steps N] [--stop-at S]
 *                continues the run in DIR from its last checkpoint, which
 *                records the run's data (the file and its identity) and
 *                step count; data given again must be the same
 *   mpirun -np 2 train_custom ...   the same losses, each process half the batch */
#define _XOPEN_SOURCE 700   /* realpath */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tapegrad.h"
#include "distributed/dist.h"

/* ---- the model ------------------------------------------------------------------- */

typedef struct block {
    tg_tensor *mix;                 /* (block_size, block_size): position t from positions <= t */
    tg_rmsnorm_mod norm1, norm2;
    tg_mlp_mod mlp;                 /* C -> 4C -> C */
} block;

typedef struct mixer {
    tg_params *p;
    tg_tensor *wte;                 /* (V,C) token embedding */
    block *blocks;
    tg_rmsnorm_mod norm_f;
    tg_linear_mod head;             /* (V,C) */
    int L;
} mixer;

static void mixer_free(void *impl)
{
    mixer *m = impl;
    tg_params_free(m->p);
    free(m->blocks), free(m);
}

static void *mixer_new(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    const int L = c->n_layer, C = c->n_embd, T = c->block_size, V = c->vocab_size;
    mixer *m = calloc(1, sizeof *m);
    if (!m || !(m->p = tg_params_new(dt, err)) || !(m->blocks = calloc(L, sizeof *m->blocks))) {
        tg_error_set(err, "mixer: out of memory");
        if (m) mixer_free(m);
        return NULL;
    }
    m->L = L;
    tg_rng r;
    tg_rng_seed(&r, seed, 0);
    int bad = !(m->wte = tg_params_add(m->p, "wte.weight", 2, (int[]){V, C}, err));
    char name[64];
    for (int l = 0; l < L && !bad; l++) {
        block *k = &m->blocks[l];
        snprintf(name, sizeof name, "blocks.%d.mix.weight", l);
        bad = !(k->mix = tg_params_add(m->p, name, 2, (int[]){T, T}, err));
        snprintf(name, sizeof name, "blocks.%d.norm1", l);
        bad = bad || tg_rmsnorm_init(&k->norm1, m->p, name, C, 1e-5, err);
        snprintf(name, sizeof name, "blocks.%d.norm2", l);
        bad = bad || tg_rmsnorm_init(&k->norm2, m->p, name, C, 1e-5, err);
        snprintf(name, sizeof name, "blocks.%d.mlp", l);
        bad = bad || tg_mlp_init(&k->mlp, m->p, name, C, 4 * C, NULL, err);
        if (!bad) {   /* each position starts as the mean of the ones it sees, give or take */
            for (int t = 0; t < T; t++)
                for (int s = 0; s <= t; s++) tg_tensor_set(k->mix, t * T + s, 1.0 / (t + 1) + 0.02 * tg_rng_normal(&r));
            tg_mlp_init_normal(&k->mlp, &r, 0.02, 0.02, 0.02 / sqrt(2.0 * L));
        }
    }
    bad = bad || tg_rmsnorm_init(&m->norm_f, m->p, "norm_f", C, 1e-5, err) ||
          tg_linear_init(&m->head, m->p, "head", C, V, false, err);
    if (bad) {
        tg_error_prefix(err, "mixer");
        mixer_free(m);
        return NULL;
    }
    tg_linear_init_uniform(&m->head, &r);   /* nn.Linear's start */
    tg_rng_fill_normal(&r, m->wte, 0, 0.02);
    return m;
}

/* idx (B,T) -> logits (B,T,V) */
static tg_tensor *mixer_forward(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **unused)
{
    (void)unused;
    mixer *m = impl;
    const int T = idx->ndim == 2 ? idx->shape[1] : 0;
    tg_tensor *x = tg_embedding(g, m->wte, idx), *mask = tg_tensor_new(g, m->wte->dtype, 2, (int[]){T, T});
    for (int t = 0; mask && t < T; t++)   /* the causal mask: 1 on and below the diagonal */
        for (int s = 0; s <= t; s++) tg_tensor_set(mask, t * T + s, 1);
    for (int l = 0; l < m->L; l++) {
        block *k = &m->blocks[l];
        tg_tensor *w = tg_mul(g, tg_slice(g, tg_slice(g, k->mix, 0, 0, T), 1, 0, T), mask);   /* (T,T) */
        x = tg_add(g, x, tg_matmul(g, w, tg_rmsnorm_forward(g, &k->norm1, x)));              /* positions */
        x = tg_add(g, x, tg_mlp_forward(g, &k->mlp, tg_rmsnorm_forward(g, &k->norm2, x)));  /* channels */
    }
    return tg_linear_forward(g, &m->head, tg_rmsnorm_forward(g, &m->norm_f, x));
}

static tg_tensor *mixer_loss(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets)
{
    return tg_cross_entropy(g, mixer_forward(g, impl, idx, NULL), targets);
}
static tg_params *mixer_params(void *impl) { return ((mixer *)impl)->p; }
static int64_t mixer_count(const tg_model_config *c)
{
    const int64_t C = c->n_embd, T = c->block_size, V = c->vocab_size;
    return 2 * V * C + C + c->n_layer * (T * T + 2 * C + 8 * C * C);
}

/* no composed path, no KV cache; the config is the library's plain one
 * (n_layer, n_embd, block_size, vocab_size) */
static const tg_model_family MIXER = {.arch = "mixer", .embedding = "wte.weight", .create = mixer_new,
                                      .destroy = mixer_free, .params = mixer_params, .num_params = mixer_count,
                                      .forward = mixer_forward, .loss = mixer_loss};

/* ---- training ---------------------------------------------------------------------- */

static void sum_ranks(void *ctx, double *x) { (void)ctx, tg_dist_allreduce_f64(x, 1, TG_DIST_SUM); }

static void die(const char *what, const char *err)
{
    char msg[1200];
    snprintf(msg, sizeof msg, "train_custom: %s%s%s", what, *err ? ": " : "", err);
    tg_dist_abort(1, msg);
}

static long number(const char *flag, const char *v)   /* a whole number >= 0, or the run ends */
{
    char *end;
    const long n = strtol(v, &end, 10);
    if (end == v || *end || n < 0 || v[0] < '0' || v[0] > '9') die(flag, "takes a whole number >= 0");
    return n;
}

/* ---- what a checkpoint records of the run ---------------------------------------------- */

/* The run's own settings, besides the training state, as checkpoint
 * metadata, so that --resume --out DIR alone continues the run:
 * "train.steps", and the data: "train.data" (a text) or "train.data_tokens"
 * and "train.val_tokens" ("" when the train file is split 90/10), each
 * file's absolute path, with its identity under "<key>_id" ("N:fnv1a64:HEX":
 * bytes of the text, or ids of a token file, and their FNV-1a). */
enum { TEXT, TOKENS, VAL, N_FILES };
static const char *const FILE_KEY[N_FILES] = {"train.data", "train.data_tokens", "train.val_tokens"};
static const char *const FILE_FLAG[N_FILES] = {"--data", "--data-tokens", "--val-tokens"};

typedef struct run_record {
    char steps[24];
    char path[N_FILES][4096], id[N_FILES][64];   /* "" for a file the run has not */
    char key_id[N_FILES][32];
    const char *meta[2 + 4 * N_FILES];
    int n_meta;
} run_record;

static uint64_t fnv1a64(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3u;
    return h;
}

/* File k of the run: its absolute path and identity, checked against the
 * identity the checkpoint f records (when resuming): other data is
 * another run. */
static void record_file(run_record *rec, const tg_st_file *f, int k, const char *path, int64_t count, uint64_t fnv)
{
    snprintf(rec->key_id[k], sizeof rec->key_id[k], "%s_id", FILE_KEY[k]);
    snprintf(rec->id[k], sizeof rec->id[k], "%lld:fnv1a64:%016" PRIx64, (long long)count, fnv);
    if (!realpath(path, rec->path[k])) snprintf(rec->path[k], sizeof rec->path[k], "%s", path);
    const char *was = f ? tg_st_meta(f, rec->key_id[k]) : NULL;
    if (was && strcmp(was, rec->id[k])) {
        char msg[9000];
        if (!*was) snprintf(msg, sizeof msg, "the run had none (its --data-tokens split 90/10)");
        else snprintf(msg, sizeof msg, "%s (%s) is not the run's: it was trained on %s (%s)", path, rec->id[k],
                      tg_st_meta(f, FILE_KEY[k]) ? tg_st_meta(f, FILE_KEY[k]) : "?", was);
        die(FILE_FLAG[k], msg);
    }
}

/* The metadata pairs of rec for tg_checkpoint_save (rec->meta, rec->n_meta). */
static void record_meta(run_record *rec, long steps, bool tokens)
{
    snprintf(rec->steps, sizeof rec->steps, "%ld", steps);
    int n = 0;
    rec->meta[n++] = "train.steps", rec->meta[n++] = rec->steps;
    for (int k = 0; k < N_FILES; k++) {
        if (k == TEXT ? tokens : !tokens) continue;
        snprintf(rec->key_id[k], sizeof rec->key_id[k], "%s_id", FILE_KEY[k]);
        rec->meta[n++] = FILE_KEY[k], rec->meta[n++] = rec->path[k];
        rec->meta[n++] = rec->key_id[k], rec->meta[n++] = rec->id[k];
    }
    rec->n_meta = n / 2;
}

/* --resume: what the flags leave out, from the checkpoint f (path): the
 * data files and the step count. A flag given names the same kind of
 * data as the run's (its identity is checked once it is read). */
static void restore_run(const tg_st_file *f, const char *path, const char **data, const char **tokens,
                        const char **val_tokens, long *steps)
{
    tg_error err = {0};
    const char *text = tg_st_meta(f, FILE_KEY[TEXT]), *tok = tg_st_meta(f, FILE_KEY[TOKENS]),
               *val = tg_st_meta(f, FILE_KEY[VAL]);
    if (!text && !tok) {
        if (!*data && !*tokens) die(path, "records no data (a checkpoint of an older train_custom): give --data or "
                                          "--data-tokens again");
    } else if ((*data && !text) || (*tokens && !tok)) {
        snprintf(err.msg, sizeof err.msg, "the run was trained on %s %s", text ? "--data" : "--data-tokens",
                 text ? text : tok);
        die(*data ? "--data" : "--data-tokens", err.msg);
    } else if (!*data && !*tokens) {
        *data = text, *tokens = tok;
    }
    if (*tokens && !*val_tokens && val && *val) *val_tokens = val;   /* the run's val file, unless given */
    int64_t n = 0;
    if (*steps < 0 && !tg_st_meta(f, "train.steps")) die(path, "records no step count: give --steps");
    if (*steps < 0 && tg_st_meta_int(f, "train.steps", 1, INT32_MAX, &n, &err)) die(path, err.msg);
    if (*steps < 0) *steps = (long)n;
}

static const char USAGE[] = "train_custom --data FILE | --data-tokens F [--val-tokens F] --vocab-size V "
                            "[--steps N] [--stop-at S] [--out DIR] | --resume [--out DIR] [--steps N] [--stop-at S]";

int main(int argc, char **argv)
{
    tg_error err = {0};
    char path[4200];
    if (tg_dist_init(&argc, &argv, &err)) die("MPI", err.msg);
    const char *data = NULL, *tokens = NULL, *val_tokens = NULL, *out = "out-custom";
    long steps = -1, stop_at = -1, vocab_size = 0, B = 16, eval_every = 100;
    int resume = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) return printf("%s\n", USAGE), tg_dist_finalize(), 0;
        if (!strcmp(a, "--resume")) resume = 1;
        else if (!v) die(a, "needs a value");
        else if (!strcmp(a, "--data")) data = v, i++;
        else if (!strcmp(a, "--data-tokens")) tokens = v, i++;
        else if (!strcmp(a, "--val-tokens")) val_tokens = v, i++;
        else if (!strcmp(a, "--vocab-size")) vocab_size = number(a, v), i++;
        else if (!strcmp(a, "--out")) out = v, i++;
        else if (!strcmp(a, "--steps")) steps = number(a, v), i++;
        else if (!strcmp(a, "--stop-at")) stop_at = number(a, v), i++;
        else die(a, USAGE);
    }
    if ((data && tokens) || (!resume && ((!data && !tokens) || (tokens && vocab_size < 1))) || steps == 0)
        die("give --data or --data-tokens (with --vocab-size), or --resume; and --steps >= 1", "");
    if (tg_model_register(&MIXER, &err)) die("register", err.msg);
    const int r = tg_dist_rank(), R = tg_dist_size();
    if (B % R) die("the batch of 16 rows must split evenly among the processes", "");

    /* resuming: the run's last checkpoint, its model, and what it records of the run */
    snprintf(path, sizeof path, "%s/last.safetensors", out);
    tg_model m;
    tg_st_file *f = resume ? tg_st_load(path, &err) : NULL;
    if (resume && !f) die("--resume", err.msg);
    if (f && tg_checkpoint_load_model(f, TG_F32, -1, &m, err.msg, sizeof err.msg)) die("model", err.msg);
    const bool given = data || tokens;   /* else the run's own files, from the checkpoint */
    if (f) restore_run(f, path, &data, &tokens, &val_tokens, &steps);
    if (steps < 0) steps = 300;
    if (f && tokens && !vocab_size) vocab_size = m.config.vocab_size;

    /* the data: a text's bytes, or token files */
    run_record rec = {0};
    tg_vocab vocab;
    tg_dataset d;
    const int T = 32;
    size_t len = 0;
    char *text = data ? tg_file_read(data, &len, &err) : NULL;
    if (data && !text) die(given ? "--data" : "the run's text (give its new place with --data)", err.msg);
    if (data) tg_vocab_bytes(&vocab, text, len);
    else tg_vocab_ids(&vocab, (int)vocab_size);
    tg_token_file_id ids[2];
    if (data ? tg_dataset_from_text(&d, &vocab, text, len, T, err.msg, sizeof err.msg)
             : tg_dataset_from_token_files(&d, &vocab, tokens, val_tokens, T, ids, err.msg, sizeof err.msg))
        die(given ? "data" : "the run's token files (give their new place with --data-tokens, --val-tokens)", err.msg);
    if (data) record_file(&rec, f, TEXT, data, (int64_t)len, fnv1a64(text, len));
    else record_file(&rec, f, TOKENS, tokens, ids[0].count, ids[0].fnv);
    if (val_tokens) record_file(&rec, f, VAL, val_tokens, ids[1].count, ids[1].fnv);
    record_meta(&rec, steps, tokens != NULL);
    free(text);
    if (f && tg_vocab_fits(&vocab, m.config.vocab_size, "the data's", err.msg, sizeof err.msg)) die("data", err.msg);

    /* the model (new, unless resumed), optimizer and state */
    tg_adamw_config ac = {0.9, 0.99, 1e-8, 0.1};
    tg_adamw *opt = NULL;
    tg_train_state ts;
    tg_train_state_init(&ts, 1337);
    if (!f && tg_model_init(&m, &(tg_model_config){.arch = "mixer", .n_layer = 2, .n_embd = 64, .block_size = T,
                                                  .vocab_size = vocab.size}, TG_F32, 1337, &err))
        die("model", err.msg);
    if (!(opt = tg_adamw_new(m.params, &ac, &err))) die("optimizer", err.msg);
    if (f && tg_checkpoint_load_train(f, opt, NULL, NULL, &ts, steps, err.msg, sizeof err.msg)) die(path, err.msg);
    tg_st_free(f);
    tg_dist_grads *dg = tg_dist_grads_new(m.params, NULL, &err);
    if (!dg) die("gradients", err.msg);
    if (r == 0) mkdir(out, 0777);
    if (r == 0) printf("train_custom: a %d-block mixer of %lld parameters, %zu train tokens, %d process%s\n",
                       m.config.n_layer, (long long)tg_params_numel(m.params), d.n_train, R, R > 1 ? "es" : "");

    /* the loop: this process's rows of each batch, gradients summed across processes */
    tg_graph *g = tg_graph_new();
    const int b = (int)B / R;
    int32_t x[16 * 32], y[16 * 32];
    const float seed = 1.0f / (float)R;   /* each process's mean, summed: the batch's mean */
    tg_eval_spec es = {.batch = b, .accum = 1, .T = T, .iters = 20, .seed = 1337, .rank = r, .ranks = R,
                       .sum = sum_ranks};
    while (ts.step < steps) {
        tg_dataset_rows(&d, false, (int)B, r * b, b, T, &ts.data_rng, x, y);
        tg_tensor *loss = tg_model_loss(g, &m, tg_tensor_from(g, TG_I32, 2, (int[]){b, T}, x),
                                        tg_tensor_from(g, TG_I32, 2, (int[]){b, T}, y));
        tg_dist_grads_begin(dg, g);
        const int rc = tg_graph_backward_seeded(g, loss, &seed);
        tg_dist_grads_end(dg);
        if (rc) die("step", tg_graph_error(g));
        double l = tg_tensor_item(loss);
        tg_graph_reset(g);
        sum_ranks(NULL, &l);
        tg_clip_grad_norm(m.params, 1.0);
        tg_error se = {0};
        if (tg_adamw_step(opt, tg_lr_cosine(ts.step, 20, steps, 3e-3, 3e-4), &se)) die("step", se.msg);
        tg_params_zero_grad(m.params);
        ts.step++;
        const bool stop = ts.step == stop_at, eval = ts.step % eval_every == 0 || ts.step == steps;
        if (!eval && !stop) continue;
        if (eval) {   /* the estimate, and the checkpoint; at --stop-at the checkpoint alone, as if interrupted */
            es.step = ts.step;
            const double tl = tg_eval_loss(g, &m, &d, false, &es, err.msg, sizeof err.msg);
            const double vl = tg_eval_loss(g, &m, &d, true, &es, err.msg, sizeof err.msg);
            if (isnan(tl) || isnan(vl)) die("eval", err.msg);
            if (vl < ts.best_val) ts.best_val = vl;
            char bpb[48] = "";   /* none for token ids without a tokenizer: their bytes are unknown */
            if (!isnan(d.bytes_per_token[1]))
                snprintf(bpb, sizeof bpb, " (%.3f bits per byte)", tg_bits_per_byte(vl, d.bytes_per_token[1]));
            if (r == 0) printf("step %ld: loss %.4f, train %.4f, val %.4f%s\n", (long)ts.step, l / R, tl, vl, bpb);
        }
        if (r == 0 &&
            tg_checkpoint_save(path, &m, &vocab, opt, NULL, NULL, NULL, NULL, &ts, rec.meta, rec.n_meta, err.msg,
                               sizeof err.msg))
            die("checkpoint", err.msg);
        if (stop) break;
    }
    tg_graph_free(g);
    tg_dist_grads_free(dg);
    tg_adamw_free(opt);
    tg_model_release(&m);
    tg_dataset_free(&d);
    tg_vocab_free(&vocab);
    tg_dist_finalize();
    return 0;
}
