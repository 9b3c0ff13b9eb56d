/* tiny_gpt train: the nanoGPT recipe (AdamW with nanoGPT's decay groups,
 * cosine schedule with warmup, global-norm clipping) on the built-in
 * corpus or any text file.
 *
 * Every --eval-interval steps (and at the end) it estimates train and val
 * loss over --eval-iters batches, keeps the best-val weights in
 * OUT/best.safetensors and the full training state in OUT/last.safetensors;
 * --resume continues from the latter exactly (same batches, same dropout
 * masks, same losses). Each step appends a row to OUT/metrics.csv; at each
 * evaluation (and when stopped) OUT/loss.png redraws the curves from it. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "corpus.h"
#include "data.h"
#include "lossplot.h"
#include "tiny_gpt.h"

typedef struct train_opts {
    const char *data, *out, *dtype, *init, *attn;
    int n_layer, n_head, n_embd, block_size, batch_size;
    int64_t steps, warmup, eval_interval, eval_iters, stop_at, log_interval;
    double lr, min_lr, weight_decay, beta2, grad_clip, dropout;
    bool bias, resume, attn_composed;
    int64_t seed;
    int threads, corpus_chars;
} train_opts;

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

/* Mean loss over n batches of a split, in eval mode without grad. The
 * batches come from their own stream, seeded by (seed, step), so an
 * estimate never disturbs training and a resumed run sees the same ones. */
static double estimate_loss(tg_graph *g, tg_gpt *m, const dataset *d, bool val, const train_opts *o,
                            int64_t step, int32_t *x, int32_t *y, char *err, size_t errlen)
{
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)o->seed * 1000003u + (uint64_t)step, val ? 2 : 3);
    bool grad = tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    double sum = 0;
    const int B = o->batch_size, T = o->block_size;
    for (int64_t i = 0; i < o->eval_iters; i++) {
        dataset_batch(d, val, B, T, &r, x, y);
        tg_tensor *xt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, x);   /* (B,T) */
        tg_tensor *yt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, y);   /* (B,T) */
        tg_tensor *loss = tg_gpt_loss(g, m, xt, yt);                      /* () */
        if (!loss) {
            snprintf(err, errlen, "%s", tg_graph_error(g));
            sum = NAN;
            break;
        }
        sum += tg_tensor_item(loss);
        tg_graph_reset(g);
    }
    tg_graph_reset(g);
    tg_graph_set_training(g, true);
    tg_graph_set_grad_enabled(g, grad);
    return sum / (double)o->eval_iters;
}

static void fmt_eta(double s, char *buf, size_t size)
{
    if (s >= 3600) snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60) snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, size, "%.0fs", s);
}

static int check_against_ckpt(const arg_spec *specs, int n, const char *flag, int have, int want, char *err,
                              size_t errlen)
{
    if (args_seen(specs, n, flag) && have != want) {
        snprintf(err, errlen, "--%s %d does not match the checkpoint's %d", flag, have, want);
        return -1;
    }
    return 0;
}

/* Redraws OUT/loss.png. A picture that cannot be written is a warning,
 * not a reason to lose the run: the metrics and checkpoints still matter. */
static void plot_losses(const char *metrics, const char *png)
{
    char err[512];
    if (lossplot_write(metrics, png, err, sizeof err))
        fprintf(stderr, "tiny_gpt train: warning: %s (training goes on)\n", err);
}

int cmd_train(int argc, char **argv)
{
    train_opts o = {.data = NULL, .init = NULL, .out = "out-tiny-gpt", .dtype = "f32", .attn = "fused", .n_layer = 4, .n_head = 4,
                    .n_embd = 128, .block_size = 64, .batch_size = 12, .steps = 2000, .warmup = 100,
                    .eval_interval = 250, .eval_iters = 200, .stop_at = 0, .log_interval = 10,
                    .lr = 1e-3, .min_lr = 1e-4, .weight_decay = 0.1, .beta2 = 0.99, .grad_clip = 1.0,
                    .dropout = 0.0, .bias = false, .resume = false, .seed = 1337, .threads = 0,
                    .corpus_chars = 300000};
    arg_spec specs[] = {
        {"data", ARG_STRING, &o.data, 0, 0, "text file to train on (default: the built-in corpus)", 0},
        {"n-layer", ARG_INT, &o.n_layer, 1, 256, "transformer blocks", 0},
        {"n-head", ARG_INT, &o.n_head, 1, 1024, "attention heads", 0},
        {"n-embd", ARG_INT, &o.n_embd, 1, 65536, "embedding width (divisible by --n-head)", 0},
        {"block-size", ARG_INT, &o.block_size, 1, 1 << 16, "context length", 0},
        {"batch-size", ARG_INT, &o.batch_size, 1, 1 << 16, "sequences per step", 0},
        {"steps", ARG_I64, &o.steps, 1, 1e12, "training steps (the cosine schedule ends here)", 0},
        {"lr", ARG_DOUBLE, &o.lr, 0, 10, "peak learning rate", 0},
        {"min-lr", ARG_DOUBLE, &o.min_lr, 0, 10, "final learning rate", 0},
        {"warmup", ARG_I64, &o.warmup, 0, 1e12, "linear warmup steps", 0},
        {"weight-decay", ARG_DOUBLE, &o.weight_decay, 0, 10, "AdamW decay of 2-D+ tensors", 0},
        {"beta2", ARG_DOUBLE, &o.beta2, 0, 0.999999999, "AdamW beta2", 0},
        {"grad-clip", ARG_DOUBLE, &o.grad_clip, 0, 1e12, "clip the global gradient norm (0: off)", 0},
        {"dropout", ARG_DOUBLE, &o.dropout, 0, 0.999, "dropout probability", 0},
        {"bias", ARG_BOOL, &o.bias, 0, 0, "biases in Linear and LayerNorm", 0},
        {"eval-interval", ARG_I64, &o.eval_interval, 1, 1e12, "steps between evaluations", 0},
        {"eval-iters", ARG_I64, &o.eval_iters, 1, 1e9, "batches per loss estimate", 0},
        {"seed", ARG_I64, &o.seed, 0, 9e15, "random seed", 0},
        SPEC_THREADS(&o.threads),
        SPEC_DTYPE(&o.dtype),
        SPEC_ATTN(&o.attn),
        {"out", ARG_STRING, &o.out, 0, 0, "output directory", 0},
        {"resume", ARG_SWITCH, &o.resume, 0, 0, "continue from OUT/last.safetensors", 0},
        {"init", ARG_STRING, &o.init, 0, 0, "start from these weights (nanoGPT names; e.g. from PyTorch)", 0},
        {"log-interval", ARG_I64, &o.log_interval, 1, 1e12, "steps between progress lines (when not a terminal)", 0},
        {"stop-at", ARG_I64, &o.stop_at, 0, 1e12, "stop after this step as if interrupted (0: never)", 0},
        {"corpus-chars", ARG_INT, &o.corpus_chars, 1000, 1 << 30, "size of the built-in corpus", 0},
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[8192];
    tg_dtype dt;
    int setup = command_setup("train", "[flags]", specs, n_specs, argc, argv, &o.dtype, &dt, &o.attn, &o.attn_composed,
                              &o.threads);
    if (setup >= 0) return setup;

    int rc = 1;
    char *text = NULL;
    size_t len = 0;
    corpus cp = {0};
    double floor_nats = -1;
    dataset d = {0};
    tg_gpt *m = NULL;
    tg_adamw *opt = NULL;
    tg_graph *g = NULL;
    tg_st_file *resume_file = NULL;
    FILE *metrics = NULL;
    int32_t *x = NULL, *y = NULL;
    char path_best[4096], path_last[4096], path_metrics[4096], path_loss[4096];

    /* the text */
    if (o.data) {
        text = read_file(o.data, &len, err, sizeof err);
        if (!text) goto fail;
    } else {
        if (corpus_generate(&cp, 1, (size_t)o.corpus_chars) != 0) {
            snprintf(err, sizeof err, "out of memory generating the corpus");
            goto fail;
        }
        text = cp.text;
        len = cp.len;
        floor_nats = corpus_nats_per_char(&cp);
    }

    /* the output directory */
    if (mkdir(o.out, 0777) != 0 && errno != EEXIST) {
        snprintf(err, sizeof err, "--out %s: %s", o.out, strerror(errno));
        goto fail;
    }
    snprintf(path_best, sizeof path_best, "%s/best.safetensors", o.out);
    snprintf(path_last, sizeof path_last, "%s/last.safetensors", o.out);
    snprintf(path_metrics, sizeof path_metrics, "%s/metrics.csv", o.out);
    snprintf(path_loss, sizeof path_loss, "%s/loss.png", o.out);

    /* model, vocabulary and state: new, or from the last checkpoint */
    vocab v;
    train_state ts = {.step = 0, .best_val = INFINITY};
    tg_rng_seed(&ts.data_rng, (uint64_t)o.seed, 1);
    tg_rng_seed(&ts.drop_rng, (uint64_t)o.seed, 4);
    tg_adamw_config ac = {0.9, o.beta2, 1e-8, o.weight_decay};
    if (o.resume && o.init) {
        snprintf(err, sizeof err, "--resume and --init exclude each other");
        goto fail;
    }
    if (o.resume || o.init) {
        resume_file = tg_st_load(o.resume ? path_last : o.init, err, sizeof err);
        if (!resume_file) goto fail;
        tg_gpt_config c;
        if (checkpoint_config(resume_file, &c, err, sizeof err)) goto fail;
        if (tg_st_meta(resume_file, "vocab")) {
            if (checkpoint_vocab(resume_file, &v, err, sizeof err)) goto fail;
        } else {
            vocab_build(&v, text, len);   /* weights from elsewhere: the data's sorted bytes */
        }
        if (v.size != c.vocab_size) {
            snprintf(err, sizeof err, "the weights have vocab_size %d but the vocabulary has %d characters",
                     c.vocab_size, v.size);
            goto fail;
        }
        if (check_against_ckpt(specs, n_specs, "n-layer", o.n_layer, c.n_layer, err, sizeof err) ||
            check_against_ckpt(specs, n_specs, "n-head", o.n_head, c.n_head, err, sizeof err) ||
            check_against_ckpt(specs, n_specs, "n-embd", o.n_embd, c.n_embd, err, sizeof err) ||
            check_against_ckpt(specs, n_specs, "block-size", o.block_size, c.block_size, err, sizeof err))
            goto fail;
        o.n_layer = c.n_layer;
        o.n_head = c.n_head;
        o.n_embd = c.n_embd;
        o.block_size = c.block_size;
        o.bias = c.bias;
        if (o.resume) o.dropout = c.dropout;
        m = checkpoint_load_model(resume_file, dt, o.dropout, err, sizeof err);
        if (!m) goto fail;
        tg_gpt_set_attn_composed(m, o.attn_composed);
        opt = tg_adamw_new(m->params, &ac, err, sizeof err);
        if (!opt) goto fail;
        if (o.resume && checkpoint_load_train(resume_file, m, opt, &ts, err, sizeof err)) goto fail;
        size_t bad;
        int32_t probe;
        for (size_t i = 0; i < len; i++)
            if (vocab_encode(&v, text + i, 1, &probe, &bad) != 0) {
                snprintf(err, sizeof err,
                         "the text has byte %d at offset %zu, which the checkpoint's vocabulary lacks",
                         (uint8_t)text[i], i);
                goto fail;
            }
    } else {
        vocab_build(&v, text, len);
        tg_gpt_config c = {o.n_layer, o.n_head, o.n_embd, o.block_size, v.size, o.bias, o.dropout, o.attn_composed};
        m = tg_gpt_new(&c, dt, (uint64_t)o.seed, err, sizeof err);
        if (!m) goto fail;
        opt = tg_adamw_new(m->params, &ac, err, sizeof err);
        if (!opt) goto fail;
    }
    if (dataset_make(&d, &v, text, len, o.block_size, err, sizeof err)) goto fail;
    if (ts.step >= o.steps) {
        snprintf(err, sizeof err, "the checkpoint is at step %lld, not before --steps %lld", (long long)ts.step,
                 (long long)o.steps);
        goto fail;
    }

    g = tg_graph_new();
    x = malloc((size_t)o.batch_size * o.block_size * sizeof *x);
    y = malloc((size_t)o.batch_size * o.block_size * sizeof *y);
    metrics = fopen(path_metrics, o.resume ? "a" : "w");
    if (!g || !x || !y) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (!metrics) {
        snprintf(err, sizeof err, "%s: %s", path_metrics, strerror(errno));
        goto fail;
    }
    if (!o.resume) fprintf(metrics, "step,train_loss,val_loss,lr,ms_per_step,tokens_per_s\n");
    *tg_graph_rng(g) = ts.drop_rng;

    fprintf(stderr, "tiny_gpt: %lld parameters, vocab %d, %zu characters (%s), %s attention; %s\n",
            (long long)tg_params_numel(m->params), v.size, len, o.data ? o.data : "built-in corpus",
            o.attn_composed ? "composed" : "fused", o.resume ? "resuming" : "training");
    if (floor_nats >= 0) fprintf(stderr, "tiny_gpt: the corpus's entropy floor is %.4f nats/char\n", floor_nats);

    signal(SIGINT, on_sigint);
    const bool tty = isatty(STDERR_FILENO);
    const int B = o.batch_size, T = o.block_size;
    double last_val = NAN, ema_ms = 0, t_start = now_seconds();
    int64_t first_step = ts.step;
    for (int64_t step = ts.step;; step++) {
        bool last = step == o.steps;
        /* (a resumed run already evaluated the step it starts at) */
        if ((step % o.eval_interval == 0 && !(o.resume && step == first_step)) || last) {
            double tl = estimate_loss(g, m, &d, false, &o, step, x, y, err, sizeof err);
            double vl = estimate_loss(g, m, &d, true, &o, step, x, y, err, sizeof err);
            if (!isfinite(tl) || !isfinite(vl)) {
                if (!tg_graph_error(g)) snprintf(err, sizeof err, "loss is not finite at step %lld", (long long)step);
                goto fail;
            }
            last_val = vl;
            if (tty) fprintf(stderr, "\r\033[K");
            fprintf(stderr, "step %lld: train loss %.4f, val loss %.4f", (long long)step, tl, vl);
            if (floor_nats >= 0) fprintf(stderr, " (floor %.4f, +%.4f)", floor_nats, vl - floor_nats);
            fprintf(stderr, "\n");
            fprintf(metrics, "%lld,%.6f,%.6f,,,\n", (long long)step, tl, vl);
            fflush(metrics);
            plot_losses(path_metrics, path_loss);
            ts.step = step;
            ts.drop_rng = *tg_graph_rng(g);
            if (vl < ts.best_val) {
                ts.best_val = vl;
                if (checkpoint_save(path_best, m, &v, NULL, NULL, NULL, 0, err, sizeof err)) goto fail;
            }
            if (checkpoint_save(path_last, m, &v, opt, &ts, NULL, 0, err, sizeof err)) goto fail;
        }
        if (last) break;
        if (interrupted || (o.stop_at && step == o.stop_at)) {
            ts.step = step;
            ts.drop_rng = *tg_graph_rng(g);
            if (checkpoint_save(path_last, m, &v, opt, &ts, NULL, 0, err, sizeof err)) goto fail;
            fflush(metrics);
            plot_losses(path_metrics, path_loss);
            fprintf(stderr, "%sstopped at step %lld; continue with --resume --out %s\n", tty ? "\r\033[K" : "",
                    (long long)step, o.out);
            rc = interrupted ? 130 : 0;
            goto done;
        }

        double t0 = now_seconds();
        double lr = tg_lr_cosine(step, o.warmup, o.steps, o.lr, o.min_lr);
        dataset_batch(&d, false, B, T, &ts.data_rng, x, y);
        tg_tensor *xt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, x);   /* (B,T) */
        tg_tensor *yt = tg_tensor_from(g, TG_I32, 2, (int[]){B, T}, y);   /* (B,T) */
        tg_tensor *loss = tg_gpt_loss(g, m, xt, yt);                      /* () */
        if (tg_graph_backward(g, loss) != 0) {
            snprintf(err, sizeof err, "step %lld: %s", (long long)step, tg_graph_error(g));
            goto fail;
        }
        double lv = tg_tensor_item(loss);
        if (!isfinite(lv)) {
            snprintf(err, sizeof err, "step %lld: the loss is %g", (long long)step, lv);
            goto fail;
        }
        if (o.grad_clip > 0) {
            double norm = tg_clip_grad_norm(m->params, o.grad_clip);
            if (!isfinite(norm)) {
                snprintf(err, sizeof err, "step %lld: the gradient norm is %g", (long long)step, norm);
                goto fail;
            }
        }
        tg_adamw_step(opt, lr);
        tg_params_zero_grad(m->params);
        tg_graph_reset(g);

        double ms = 1e3 * (now_seconds() - t0);
        ema_ms = step == first_step ? ms : 0.9 * ema_ms + 0.1 * ms;
        double tps = (double)B * T / (ema_ms / 1e3);
        fprintf(metrics, "%lld,%.6f,,%.6g,%.3f,%.1f\n", (long long)step, lv, lr, ms, tps);
        if (tty || (step + 1) % o.log_interval == 0) {
            char eta[32];
            fmt_eta(ema_ms / 1e3 * (double)(o.steps - step - 1), eta, sizeof eta);
            fprintf(stderr, "%sstep %lld/%lld | loss %.4f | lr %.2e | %.1f ms/step | %.0f tok/s | ETA %s%s",
                    tty ? "\r\033[K" : "", (long long)step + 1, (long long)o.steps, lv, lr, ema_ms, tps, eta,
                    tty ? "" : "\n");
        }
    }
    fprintf(stderr, "tiny_gpt: %lld steps in %.1f s; best val loss %.4f; checkpoints in %s/\n",
            (long long)(o.steps - first_step), now_seconds() - t_start, ts.best_val, o.out);
    printf("val loss %.4f\n", last_val);
    rc = 0;
    goto done;

fail:
    fprintf(stderr, "%stiny_gpt train: %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", err);
    rc = 1;
done:
    if (metrics) fclose(metrics);
    free(x);
    free(y);
    tg_graph_free(g);
    tg_adamw_free(opt);
    tg_gpt_free(m);
    tg_st_free(resume_file);
    dataset_free(&d);
    if (o.data) free(text);
    corpus_free(&cp);
    return rc;
}
