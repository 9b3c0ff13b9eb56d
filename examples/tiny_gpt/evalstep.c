/* tiny_gpt eval / step.
 *
 *   eval --ckpt F [--data F]  a checkpoint's train and val loss on its
 *         run's split (the text, block size, batch size and eval batches
 *         its metadata records), printed as training prints an evaluation.
 *         Of an --ema run, the weights training evaluated for the file
 *         (best.safetensors: those it holds; last.safetensors: the raw
 *         weights and the averages), or those --weights ema|raw picks.
 *   eval --ckpt F --text FILE  the mean negative log-likelihood of a text:
 *         its ids as sample encodes a prompt (a Llama's BOS first), the
 *         first block_size of them in one window, position i predicting
 *         id i + 1; "nll X nats per token over N predictions (perplexity
 *         P)", the number llama.cpp's perplexity and transformers compute.
 *
 * The bridge to PyTorch: both read nanoGPT-named weights (F32 or F64,
 * config in __metadata__) and a batch file holding idx and targets (I32
 * or I64, shape (B,T); target -1 is ignored).
 *
 *   eval --init W --batch B  prints "loss <value>" and can write the
 *         gradient of every parameter under its name (the tied head's
 *         under transformer.wte.weight).
 *   step  runs K AdamW steps on that batch at a constant learning rate
 *         (nanoGPT's decay groups, global-norm clipping) and writes the
 *         updated weights. */
#include "tiny_gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"

typedef struct inputs {
    tg_st_file *wf, *bf;
    tg_model m;
    int B, T;
    tg_graph *batch_graph; /* holds idx and targets; never reset */
    tg_tensor *idx, *targets; /* (B,T) i32 */
} inputs;

static void inputs_free(inputs *in)
{
    tg_model_release(&in->m);
    tg_st_free(in->wf);
    tg_st_free(in->bf);
    tg_graph_free(in->batch_graph);
}

/* Loads weights and batch. idx/targets live on their own graph, so the
 * graph the steps run on can be reset without losing them. */
static int load_inputs(inputs *in, const char *init, const char *batch, tg_dtype dt, bool attn_composed, tg_error *err)
{
    memset(in, 0, sizeof *in);
    if (!init || !batch) {
        tg_error_set(err, "--init and --batch are required");
        return -1;
    }
    tg_error e = {0};
    if (!(in->wf = tg_st_load(init, &e)) || !(in->bf = tg_st_load(batch, &e))) return tg_error_set(err, "%s", e.msg);
    if (tg_checkpoint_load_model(in->wf, dt, 0.0, &in->m, err)) return -1;
    tg_model_set_composed(&in->m, attn_composed);
    const tg_st_tensor *idx = tg_st_find(in->bf, "idx"), *tgt = tg_st_find(in->bf, "targets");
    if (!idx || !tgt) {
        tg_error_set(err, "%s: needs tensors 'idx' and 'targets'", batch);
        return -1;
    }
    if (idx->ndim != 2 || tgt->ndim != 2 || idx->shape[0] != tgt->shape[0] || idx->shape[1] != tgt->shape[1] ||
        idx->shape[0] < 1 || idx->shape[1] < 1 || idx->shape[0] > (1 << 20) || idx->shape[1] > (1 << 20)) {
        tg_error_set(err, "%s: 'idx' and 'targets' must both have the same shape (B,T)", batch);
        return -1;
    }
    in->B = (int)idx->shape[0];
    in->T = (int)idx->shape[1];
    if (in->T > in->m.config.block_size) {
        tg_error_set(err, "%s: sequence length T = %d exceeds the model's block_size %d", batch, in->T,
                     in->m.config.block_size);
        return -1;
    }
    tg_graph *g = in->batch_graph = tg_graph_new();
    in->idx = g ? tg_tensor_new(g, TG_I32, 2, (int[]){in->B, in->T}) : NULL;
    in->targets = g ? tg_tensor_new(g, TG_I32, 2, (int[]){in->B, in->T}) : NULL;
    if (!in->idx || !in->targets) {
        tg_error_set(err, "out of memory for the batch");
        return -1;
    }
    if (tg_st_copy_to(idx, in->idx, &e) || tg_st_copy_to(tgt, in->targets, &e)) return tg_error_set(err, "%s", e.msg);
    return 0;
}

/* loss and gradients of the model on the batch; -1 with the message */
static double loss_and_grads(inputs *in, tg_graph *g, tg_error *err)
{
    tg_params_zero_grad(in->m.params);
    tg_tensor *loss = tg_model_loss(g, &in->m, in->idx, in->targets); /* () */
    if (tg_graph_backward(g, loss) != 0) {
        tg_error_set(err, "%s", tg_graph_error(g));
        return NAN;
    }
    return tg_tensor_item(loss);
}

/* The weights of f to evaluate (--weights `want`, NULL: what training
 * evaluated of this file) into sets[0..n): "ema", "raw", or NULL for a
 * run without --ema (its lines name none). A file holding the averages
 * beside its weights (an --ema run's last.safetensors) gives both, in the
 * order training printed them: raw, ema; another file its own. Returns n
 * (1 or 2), or -1 with a message. */
static int pick_weights(const tg_st_file *f, const char *ckpt, const char *want, const char *sets[2], tg_error *err)
{
    const char *w = tg_st_meta(f, "weights"), *holds = tg_checkpoint_weights(f);
    const bool beside = tg_checkpoint_has_averages(f) && holds && !strcmp(holds, "raw");
    if (w && strcmp(w, "ema") && strcmp(w, "raw"))
        return tg_error_set(err, "%s: metadata 'weights' = '%.40s' is not ema or raw", ckpt, w);
    if (want && strcmp(want, "ema") && strcmp(want, "raw"))
        return tg_error_set(err, "--weights: '%s' is not ema or raw", want);
    sets[0] = holds, sets[1] = NULL;
    if (!want) {
        if (beside) sets[1] = "ema";
        return beside ? 2 : 1;
    }
    if (!strcmp(want, "ema")) {
        if (!holds)
            return tg_error_set(err,
                                "--weights ema: the run of %s kept no averages of its weights (it trained "
                                "without --ema)",
                                ckpt);
        if (strcmp(holds, "ema") && !beside)
            return tg_error_set(err,
                                "--weights ema: %s holds the raw weights alone (metadata 'weights' raw: they "
                                "evaluated lower than the averages at its step); the run's last.safetensors holds both",
                                ckpt),
                   -1;
        sets[0] = "ema";
    } else if (holds && strcmp(holds, "raw")) {
        return tg_error_set(err,
                            "--weights raw: %s holds the averages alone (metadata 'weights' ema: they "
                            "evaluated lower than the raw weights at its step); the run's last.safetensors holds both",
                            ckpt),
               -1;
    }
    return 1;
}

static void eval_notice(void *ctx, tg_run_notice kind, const char *msg)
{
    (void)ctx, (void)kind;
    fprintf(stderr, "tiny_gpt eval: notice: %s\n", msg);
}

/* what an estimate's progress line names */
typedef struct estimating {
    int64_t step;
    bool val;
} estimating;

static void est_progress(void *ctx, int64_t done, int64_t iters)
{
    const estimating *e = ctx;
    eval_progress(e->step, e->val, done, iters);
}

/* The loss of m on d as training estimated it at `step` (iters 0: the
 * whole split), with a progress line on a terminal. */
static double estimate(tg_graph *g, tg_model *m, const tg_dataset *d, bool val, const tg_run_config *c, int64_t iters,
                       int64_t step, tg_error *err)
{
    const bool tty = isatty(STDERR_FILENO);
    estimating e = {step, val};
    tg_eval_spec s = tg_run_eval_spec(c, iters, step);
    s.progress = tty ? est_progress : NULL, s.ctx = &e;
    const double loss = tg_eval_loss(g, m, d, val, &s, err);
    if (tty) fprintf(stderr, "\r\033[K");
    return loss;
}

/* eval --ckpt: the loss estimate of `train` at the checkpoint's step, on
 * the split of the run's text, from the settings the checkpoint records. */
static int eval_ckpt(const char *ckpt, const char *data, const char *vocab_file, const char *tok_file,
                     const char *weights, const arg_spec *specs, int n_specs, tg_dtype dt, bool composed,
                     int64_t eval_iters, int batch_size, bool full_val)
{
    tg_error err = {0};
    int rc = 1;
    tg_run_config c;
    tg_run_config_init(&c);
    tg_st_file *f = NULL;
    tg_model m = {0};
    tg_graph *g = NULL;
    tg_run_text text = {0};
    tg_dataset d = {0};
    tg_vocab v = {0};
    int64_t step = 0;
    char picked[4096];
    tg_error e = {0};
    const tg_run_options ro = {.flag_names = true, .notice = eval_notice};
    if (!(ckpt = ckpt_resolve(ckpt, "eval", picked, sizeof picked, &err)) || !(f = tg_st_load(ckpt, &err))) goto fail;
    if (tg_run_config_read(&c, f, &err)) {
        tg_error_prefix(&err, ckpt);
        goto fail;
    }
    /* the run's dtype and attention path unless given: the same numbers as training printed */
    if (!args_seen(specs, n_specs, "dtype")) dt = c.dtype;
    if (!args_seen(specs, n_specs, "attn")) composed = c.attn_composed;
    if (args_seen(specs, n_specs, "eval-iters")) c.eval_iters = eval_iters;
    if (args_seen(specs, n_specs, "full-val")) c.full_val = full_val;
    if (args_seen(specs, n_specs, "batch-size")) { /* the whole batch, in one piece */
        c.batch_size = batch_size;
        c.grad_accum = 1;
    } else if (tg_st_meta(f, "train.ranks")) { /* a run of R processes evaluated R x B windows at a time */
        int64_t ranks;
        if (tg_st_meta_int(f, "train.ranks", 1, 1 << 20, &ranks, &err)) goto fail;
        if (ranks * c.batch_size > 1 << 20) {
            snprintf(err.msg, sizeof err.msg, "%s: train.ranks %lld x train.batch_size %d is too large", ckpt,
                     (long long)ranks, c.batch_size);
            goto fail;
        }
        c.batch_size *= (int)ranks;
    }
    if (tg_st_meta(f, "train.step") && tg_st_meta_int(f, "train.step", 0, INT64_MAX, &step, &err)) goto fail;
    const bool tokens = c.data_tokens != NULL; /* the run's token files, as it recorded them */
    if (tokens && data) {
        snprintf(err.msg, sizeof err.msg, "--data: %s trained on token files, not on a text", ckpt);
        goto fail;
    }
    if (!data && !tokens && !tg_st_meta(f, "train.data")) {
        snprintf(err.msg, sizeof err.msg, "%s does not record the text it was trained on: give it with --data", ckpt);
        goto fail;
    }
    if (data) c.data = data;
    if (!tokens && tg_run_text_load(&text, &c, f, false, &ro, &e)) goto fail_e;
    /* the vocabulary and the data (token files checked whole) from the
     * config, before the model exists: a bad file is refused at once, as
     * train refuses it */
    tg_model shape = {0};
    if (tg_model_config_read(f, &shape.config, &err)) goto fail;
    if ((vocab_file || tok_file || tg_st_meta(f, "vocab") || !strcmp(shape.config.arch, "llama"))
            ? checkpoint_model_vocab(f, &shape, vocab_file, tok_file, &v, &err)
            : (tg_vocab_bytes(&v, text.text, text.len), 0)) /* weights from elsewhere: the text's bytes */
        goto fail;
    c.block_size = shape.config.block_size;
    c.vocab_size = shape.config.vocab_size;
    if (tokens ? tg_run_tokens_load(&d, &v, &c, f, false, &ro, &e)
               : tg_dataset_from_text(&d, &v, text.text, text.len, c.block_size, &e))
        goto fail_e;
    const char *sets[2];
    const int n_sets = pick_weights(f, ckpt, weights, sets, &err);
    if (n_sets < 0 || tg_checkpoint_load_model(f, dt, 0.0, &m, &err) || !(g = tg_graph_new())) goto fail;
    tg_model_set_composed(&m, composed);
    const char *holds = tg_checkpoint_weights(f);
    for (int k = 0; k < n_sets; k++) { /* each as training evaluated it: the same windows */
        if (sets[k] && !strcmp(sets[k], "ema") && strcmp(holds, "ema") && tg_checkpoint_load_averages(f, &m, &err))
            goto fail;
        tg_run_loss l = {.step = step, .weights = sets[k]};
        l.train = estimate(g, &m, &d, false, &c, c.eval_iters, step, &err);
        l.val = isnan(l.train) ? NAN : estimate(g, &m, &d, true, &c, c.full_val ? 0 : c.eval_iters, step, &err);
        if (isnan(l.val)) goto fail;
        l.val_bpb = tg_bits_per_byte(l.val, d.bytes_per_token[1]);
        char line[256];
        tg_run_loss_format(&l, line, sizeof line);
        printf("%s\n", line);
    }
    rc = 0;
    goto done;
fail_e:
    err = e;
fail:
    fprintf(stderr, "tiny_gpt eval: %s\n", err.msg);
done:
    tg_graph_free(g);
    tg_model_release(&m);
    tg_st_free(f);
    tg_dataset_release(&d);
    tg_vocab_release(&v);
    tg_run_text_release(&text);
    tg_run_config_release(&c);
    return rc;
}

/* eval --ckpt F --text FILE: the text's mean nll in one window. */
static int eval_text(const char *ckpt, const char *path, const char *vocab_file, const char *tok_file,
                     const char *weights, tg_dtype dt, bool composed)
{
    tg_error err = {0};
    int rc = 1;
    tg_st_file *f = NULL;
    tg_model m = {0};
    tg_vocab v = {0};
    char *text = NULL;
    int32_t *ids = NULL;
    size_t len;
    char picked[4096];
    tg_error e = {0};
    if (!(text = tg_file_read(path, &len, &err)) || !(ckpt = ckpt_resolve(ckpt, "eval", picked, sizeof picked, &err)) ||
        !(f = tg_st_load(ckpt, &err)) || tg_checkpoint_load_model(f, dt, 0.0, &m, &err) ||
        checkpoint_model_vocab(f, &m, vocab_file, tok_file, &v, &err))
        goto fail;
    const char *sets[2]; /* the file's own weights unless --weights picks */
    if (weights &&
        (pick_weights(f, ckpt, weights, sets, &err) < 0 ||
         (!strcmp(weights, "ema") && strcmp(tg_checkpoint_weights(f), "ema") &&
          tg_checkpoint_load_averages(f, &m, &err))))
        goto fail;
    tg_model_set_composed(&m, composed);
    int64_t n = tg_prompt_ids(&v, m.config.vocab_size, text, len, &ids, &e);
    if (n < 0) goto fail_e;
    if (n > m.config.block_size) n = m.config.block_size; /* one window: the first block_size ids */
    if (n < 2) {
        snprintf(err.msg, sizeof err.msg, "%s gives %lld id%s: at least two are needed for one prediction", path,
                 (long long)n, n == 1 ? "" : "s");
        goto fail;
    }
    int64_t preds;
    const double nll = tg_text_nll(&m, ids, n, 1, &preds, &e);
    if (isnan(nll)) goto fail_e;
    printf("nll %.6f nats per token over %lld predictions (perplexity %.4f)\n", nll, (long long)preds, exp(nll));
    rc = 0;
    goto done;
fail_e:
    err = e;
fail:
    fprintf(stderr, "tiny_gpt eval: %s\n", err.msg);
done:
    tg_free(ids);
    free(text);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    const char *init = NULL, *batch = NULL, *dump = NULL, *dtype = "f32", *attn = "fused", *ckpt = NULL, *data = NULL,
               *vocab_file = NULL, *tok_file = NULL, *config = NULL, *text = NULL, *dump_logits = NULL, *weights = NULL;
    int threads = 1, batch_size = 12;
    int64_t eval_iters = 200;
    bool composed = false, full_val = false;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0,
         "a checkpoint of tiny_gpt train (or its --out directory: the best, else the "
         "last): its train and val loss",
         0, ROLE_NONE},
        {"data", ARG_STRING, &data, 0, 0, "with --ckpt: the text (default: the one the run recorded)", 0, ROLE_NONE},
        {"text", ARG_STRING, &text, 0, 0,
         "with --ckpt: the mean nll per token of this file's text instead (its "
         "first block_size ids, encoded as sample encodes a prompt)",
         0, ROLE_NONE},
        {"weights", ARG_STRING, &weights, 0, 0,
         "with --ckpt, of an --ema run: ema (the averages) or raw (the "
         "weights trained) (default: what training evaluated of the file: best.safetensors the one it holds, "
         "last.safetensors both)",
         0, ROLE_NONE},
        {"eval-iters", ARG_I64, &eval_iters, 1, 1e9, "with --ckpt: batches per estimate (default: the run's)", 0,
         ROLE_NONE},
        {"batch-size", ARG_INT, &batch_size, 1, 1 << 16, "with --ckpt: sequences per batch (default: the run's)", 0,
         ROLE_NONE},
        {"full-val", ARG_SWITCH, &full_val, 0, 0,
         "with --ckpt: the val loss over the whole val split, each token "
         "once (default: the run's --full-val)",
         0, ROLE_NONE},
        {"vocab", ARG_STRING, &vocab_file, 0, 0,
         "with --ckpt: a text whose bytes are the vocabulary (for weights "
         "without 'vocab' metadata)",
         0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok_file, 0, 0,
         "with --ckpt: a tokenizer (tok.safetensors, a checkpoint holding "
         "one, llama2.c's tokenizer.bin, a .tiktoken file) for weights that came without one",
         0, ROLE_NONE},
        {"init", ARG_STRING, &init, 0, 0, "weights (safetensors, nanoGPT names, config in metadata)", 0, ROLE_NONE},
        {"batch", ARG_STRING, &batch, 0, 0, "batch (safetensors with idx and targets (B,T))", 0, ROLE_NONE},
        {"dump-grads", ARG_STRING, &dump, 0, 0, "write every parameter's gradient here", 0, ROLE_NONE},
        {"dump-logits", ARG_STRING, &dump_logits, 0, 0, "write the batch's logits (B,T,V) here, as 'logits'", 0,
         ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_ATTN(&attn),
        SPEC_THREADS(&threads),
        SPEC_CONFIG(&config),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    int setup =
        command_setup("eval", "--ckpt F [--data F | --text F] | --init W.safetensors --batch B.safetensors [flags]",
                      specs, n_specs, argc, argv, &dtype, &dt, &attn, &composed, &threads);
    if (setup >= 0) return setup;
    if (ckpt && (init || batch || dump || dump_logits)) {
        fprintf(stderr,
                "tiny_gpt eval: --ckpt (loss on the run's data) excludes --init, --batch, --dump-grads and "
                "--dump-logits (one batch)\n");
        return 2;
    }
    if (!ckpt &&
        (data || text || vocab_file || tok_file || weights || args_seen(specs, n_specs, "eval-iters") ||
         args_seen(specs, n_specs, "batch-size") || full_val)) {
        fprintf(stderr,
                "tiny_gpt eval: --data, --text, --vocab, --weights, --tokenizer, --eval-iters, --batch-size "
                "and --full-val go with --ckpt\n");
        return 2;
    }
    if (text &&
        (data || args_seen(specs, n_specs, "eval-iters") || args_seen(specs, n_specs, "batch-size") || full_val)) {
        fprintf(stderr,
                "tiny_gpt eval: --text (one window of a text) excludes --data, --eval-iters, --batch-size "
                "and --full-val (the run's split)\n");
        return 2;
    }
    if (text) return eval_text(ckpt, text, vocab_file, tok_file, weights, dt, composed);
    if (ckpt)
        return eval_ckpt(ckpt, data, vocab_file, tok_file, weights, specs, n_specs, dt, composed, eval_iters,
                         batch_size, full_val);
    int rc = 1;
    inputs in;
    tg_graph *g = tg_graph_new();
    if (!g) return 1;
    if (load_inputs(&in, init, batch, dt, composed, &err)) goto fail;
    double loss = loss_and_grads(&in, g, &err);
    if (isnan(loss)) goto fail;
    printf("loss %.17g\n", loss);
    if (dump_logits) { /* the forward alone, on a graph of its own */
        tg_graph *lg = tg_graph_new();
        tg_tensor *logits = lg ? tg_model_forward(lg, &in.m, in.idx, NULL) : NULL; /* (B,T,V) */
        tg_st_writer *w = logits ? tg_st_writer_new() : NULL;
        if (w) tg_st_writer_add_tensor(w, "logits", logits); /* a failure sticks: the save reports it */
        const int bad = !w || tg_st_writer_save(w, dump_logits, &err);
        if (bad && !logits) snprintf(err.msg, sizeof err.msg, "%s", lg ? tg_graph_error(lg) : "out of memory");
        tg_st_writer_free(w);
        tg_graph_free(lg);
        if (bad) goto fail;
    }
    if (dump) {
        char nb[32];
        snprintf(nb, sizeof nb, "%d", in.B * in.T);
        const char *meta[] = {"loss", "", "tokens", nb};
        char ls[40];
        snprintf(ls, sizeof ls, "%.17g", loss);
        meta[1] = ls;
        tg_st_writer *w = tg_st_writer_new();
        int bad = !w;
        for (int i = 0; !bad && i < tg_params_count(in.m.params); i++) {
            tg_tensor *p = tg_params_at(in.m.params, i);
            int64_t shape[TG_MAX_DIMS];
            for (int k = 0; k < p->ndim; k++) shape[k] = p->shape[k];
            bad |= tg_st_writer_add(w, p->name, dt == TG_F32 ? "F32" : "F64", p->ndim, shape, p->grad) != 0;
        }
        for (int i = 0; !bad && i < 4; i += 2) bad |= tg_st_writer_add_meta(w, meta[i], meta[i + 1]) != 0;
        if (bad) snprintf(err.msg, sizeof err.msg, "%s: could not assemble the gradients", dump);
        if (bad || tg_st_writer_save(w, dump, &err)) {
            tg_st_writer_free(w);
            goto fail;
        }
        tg_st_writer_free(w);
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "tiny_gpt eval: %s\n", err.msg);
done:
    inputs_free(&in);
    tg_graph_free(g);
    return rc;
}

int cmd_step(int argc, char **argv)
{
    const char *init = NULL, *batch = NULL, *out = NULL, *dtype = "f32", *attn = "fused", *optimizer = "adamw";
    int threads = 1;
    bool composed = false;
    int64_t steps = 1;
    double lr = 1e-3, wd = 0.1, beta2 = 0.99, clip = 1.0, muon_lr = TG_MUON_LR, muon_mom = 0.95;
    arg_spec specs[] = {
        {"init", ARG_STRING, &init, 0, 0, "weights (safetensors, nanoGPT names, config in metadata)", 0, ROLE_NONE},
        {"batch", ARG_STRING, &batch, 0, 0, "batch (safetensors with idx and targets (B,T))", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "write the updated weights here", 0, ROLE_NONE},
        {"steps", ARG_I64, &steps, 1, 1e9, "optimizer steps on the batch", 0, ROLE_NONE},
        {"lr", ARG_DOUBLE, &lr, 0, 10, "learning rate (constant)", 0, ROLE_NONE},
        {"weight-decay", ARG_DOUBLE, &wd, 0, 10, "AdamW decay of 2-D+ tensors (and Muon's)", 0, ROLE_NONE},
        {"beta2", ARG_DOUBLE, &beta2, 0, 0.999999999, "AdamW beta2", 0, ROLE_NONE},
        {"grad-clip", ARG_DOUBLE, &clip, 0, 1e12, "clip the global gradient norm (0: off)", 0, ROLE_NONE},
        {"optimizer", ARG_STRING, &optimizer, 0, 0, SPEC_OPTIMIZER_HELP, 0, ROLE_NONE},
        {"muon-lr", ARG_DOUBLE, &muon_lr, 0, 10, "Muon's learning rate (constant)", 0, ROLE_NONE},
        {"muon-momentum", ARG_DOUBLE, &muon_mom, 0, 0.999999999, SPEC_MUON_MOMENTUM_HELP, 0, ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_ATTN(&attn),
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    int setup = command_setup("step", "--init W --batch B --out W2 [flags]", specs, n_specs, argc, argv, &dtype, &dt,
                              &attn, &composed, &threads);
    if (setup >= 0) return setup;
    if (!out) {
        fprintf(stderr, "tiny_gpt step: --out is required\n");
        return 2;
    }
    bool muon = false;
    if (parse_optimizer(optimizer, &muon, err.msg, sizeof err.msg)) {
        fprintf(stderr, "tiny_gpt step: %s\n", err.msg);
        return 2;
    }
    int rc = 1;
    inputs in;
    tg_adamw *opt = NULL;
    tg_muon *mu = NULL;
    tg_graph *g = tg_graph_new();
    if (!g) return 1;
    if (load_inputs(&in, init, batch, dt, composed, &err)) goto fail;
    opt = tg_adamw_new(in.m.params, &(tg_adamw_config){0.9, beta2, 1e-8, wd}, &err);
    if (!opt) goto fail;
    /* Muon on the blocks' matrices (its weight decay AdamW's), AdamW on the rest */
    if (muon && !(mu = tg_muon_new(in.m.params, &(tg_muon_config){muon_mom, wd}, &err))) goto fail;
    tg_muon_exclude(mu, opt, NULL);
    for (int64_t s = 0; s < steps; s++) {
        double loss = loss_and_grads(&in, g, &err);
        if (isnan(loss)) goto fail;
        if (clip > 0 && !isfinite(tg_clip_grad_norm(in.m.params, clip))) {
            snprintf(err.msg, sizeof err.msg, "step %lld: the gradient norm is not finite", (long long)s);
            goto fail;
        }
        tg_muon_step(mu, muon_lr, NULL);
        tg_adamw_step(opt, lr, NULL);
        printf("step %lld loss %.17g\n", (long long)s, loss);
        tg_graph_reset(g);
    }
    /* keep the input's vocabulary, if it had one */
    tg_vocab v = {0};
    if (tg_st_meta(in.wf, "vocab") && tg_vocab_read(&v, in.wf, &err)) goto fail;
    int saved = tg_checkpoint_save(out, &(tg_checkpoint){.model = &in.m, .vocab = &v}, &err);
    tg_vocab_release(&v);
    if (saved) goto fail;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "tiny_gpt step: %s\n", err.msg);
done:
    tg_muon_free(mu);
    tg_adamw_free(opt);
    inputs_free(&in);
    tg_graph_free(g);
    return rc;
}
