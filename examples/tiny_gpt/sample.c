/* tiny_gpt sample: generate text from a checkpoint. The prompt is fed
 * through the model once, then one token at a time through the KV cache.
 * Once the context reaches block_size, each step re-reads the last
 * block_size tokens from position 0 (learned absolute positions leave no
 * other exact choice), as nanoGPT's generate does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "tiny_gpt.h"

/* Picks the next token from logits (V) with temperature and top-k;
 * temperature 0 is greedy. */
static int pick(const tg_tensor *logits, int64_t row, int V, double temperature, int top_k, tg_rng *r,
                double *probs)
{
    int best = 0;
    for (int j = 0; j < V; j++)
        if (tg_tensor_get(logits, row * V + j) > tg_tensor_get(logits, row * V + best)) best = j;
    if (temperature <= 0) return best;
    double mx = tg_tensor_get(logits, row * V + best) / temperature;
    /* the k-th largest logit is the cut-off */
    double cut = -INFINITY;
    if (top_k > 0 && top_k < V) {
        for (int j = 0; j < V; j++) probs[j] = tg_tensor_get(logits, row * V + j);
        for (int k = 0; k < top_k; k++) {
            int at = 0;
            for (int j = 1; j < V; j++)
                if (probs[j] > probs[at]) at = j;
            cut = probs[at];
            probs[at] = -INFINITY;
        }
    }
    double sum = 0;
    for (int j = 0; j < V; j++) {
        double l = tg_tensor_get(logits, row * V + j);
        probs[j] = l < cut ? 0 : exp(l / temperature - mx);
        sum += probs[j];
    }
    double u = tg_rng_uniform(r) * sum;
    for (int j = 0; j < V; j++) {
        if (u < probs[j]) return j;
        u -= probs[j];
    }
    return best;
}

int cmd_sample(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *prompt = "\n", *dtype = "f32", *attn = "fused";
    bool composed = false;
    int tokens = 200, top_k = 200, threads = 1;
    double temperature = 0.8;
    int64_t seed = 1337;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "checkpoint written by tiny_gpt train", 0},
        {"prompt", ARG_STRING, &prompt, 0, 0, "text to continue (characters of the vocabulary)", 0},
        {"tokens", ARG_INT, &tokens, 0, 1 << 24, "characters to generate", 0},
        {"temperature", ARG_DOUBLE, &temperature, 0, 100, "softmax temperature (0: greedy)", 0},
        {"top-k", ARG_INT, &top_k, 0, 1 << 20, "sample among the k likeliest (0: all)", 0},
        {"seed", ARG_I64, &seed, 0, 9e15, "random seed", 0},
        SPEC_DTYPE(&dtype),
        SPEC_ATTN(&attn),
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[1024];
    tg_dtype dt;
    int setup = command_setup("sample", "[flags]", specs, n_specs, argc, argv, &dtype, &dt, &attn, &composed, &threads);
    if (setup >= 0) return setup;

    int rc = 1;
    tg_st_file *f = NULL;
    tg_gpt *m = NULL;
    tg_graph *g = NULL;
    int32_t *ctx = NULL;
    double *probs = NULL;
    vocab v;
    size_t plen = strlen(prompt), bad = 0;
    if (!(f = tg_st_load(ckpt, err, sizeof err)) || checkpoint_vocab(f, &v, err, sizeof err) ||
        !(m = checkpoint_load_model(f, dt, 0.0, err, sizeof err)))
        goto fail;
    tg_gpt_set_attn_composed(m, composed);
    if (m->cfg.vocab_size != v.size) {
        snprintf(err, sizeof err, "the checkpoint's vocab_size %d does not match its vocabulary of %d characters",
                 m->cfg.vocab_size, v.size);
        goto fail;
    }
    if (plen == 0) {
        snprintf(err, sizeof err, "--prompt is empty; give at least one character");
        goto fail;
    }
    size_t total = plen + (size_t)tokens;
    ctx = malloc(total * sizeof *ctx);
    probs = malloc((size_t)v.size * sizeof *probs);
    g = tg_graph_new();
    if (!ctx || !probs || !g) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (vocab_encode(&v, prompt, plen, ctx, &bad) != 0) {
        snprintf(err, sizeof err, "the prompt's character '%c' (byte %d, offset %zu) is not in the vocabulary",
                 prompt[bad] >= 32 && prompt[bad] < 127 ? prompt[bad] : '?', (uint8_t)prompt[bad], bad);
        goto fail;
    }
    if (tg_gpt_cache_enable(m, 1, err, sizeof err)) goto fail;
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)seed, 5);
    fwrite(prompt, 1, plen, stdout);

    const int bs = m->cfg.block_size;
    size_t n = plen;
    /* the prompt's last block_size tokens prime the cache */
    size_t start = n > (size_t)bs ? n - (size_t)bs : 0;
    size_t fed = start;
    for (int i = 0; i < tokens; i++) {
        if (fed == n) break;   /* unreachable: something to feed every round */
        if (m->cache[0].len + (int)(n - fed) > bs) {
            /* window full: restart from position 0 on the last bs tokens */
            tg_gpt_cache_clear(m);
            fed = n - (size_t)bs;
        }
        int T = (int)(n - fed);
        tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ctx + fed);   /* (1,T) */
        tg_tensor *logits = tg_gpt_forward(g, m, idx);                             /* (1,T,V) */
        if (!logits) {
            snprintf(err, sizeof err, "%s", tg_graph_error(g));
            goto fail;
        }
        int next = pick(logits, T - 1, v.size, temperature, top_k, &r, probs);
        tg_graph_reset(g);
        fed = n;
        ctx[n++] = next;
        fputc(v.chars[next], stdout);
        fflush(stdout);
    }
    fputc('\n', stdout);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "tiny_gpt sample: %s\n", err);
done:
    free(ctx);
    free(probs);
    tg_graph_free(g);
    tg_gpt_free(m);
    tg_st_free(f);
    return rc;
}
