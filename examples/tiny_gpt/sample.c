/* tiny_gpt sample: generate text from a checkpoint. The prompt is fed
 * through the model once, then one token at a time through the KV cache.
 * Once the context reaches block_size, each step re-reads the last
 * block_size tokens from position 0 (learned absolute positions leave no
 * other exact choice), as nanoGPT's generate does.
 *
 * A model with llama2.c's vocabulary (a Llama) follows run.c's
 * conventions, so both programs see the same ids for the same prompt: the
 * prompt is BOS, the id of " " (the dummy prefix; only for a prompt that
 * is not empty) and its bytes (id 3 + byte); a space right after BOS is
 * not printed; generation stops when the model produces BOS (a notice on
 * stderr says so: the text may be much shorter than --tokens). (run.c also
 * stops at seq_len, where this program slides its window, and does not
 * print single bytes that are not printable ASCII: the two agree on ASCII
 * text within seq_len.)
 *
 * A model trained with a tokenizer (TG_VOCAB_TOKENIZER) encodes the prompt
 * with it (a Llama's as run.c does: BOS, then " " + the prompt encoded
 * together) and writes its output through the streaming decoder, so a
 * UTF-8 character split across tokens is written whole; generation stops
 * at the tokenizer's BOS or EOS. A model of token ids without a
 * tokenizer (TG_VOCAB_IDS) takes the prompt as ids separated by spaces and
 * prints ids the same way (`tiny_gpt tokenizer decode` turns them into
 * text). */
#include "tiny_gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "files.h"

/* Row `row` of logits (V per row) as doubles into out (exact for f32). */
static void logits_row(const tg_tensor *logits, int64_t row, int V, double *out)
{
    if (logits->dtype == TG_F32) {
        const float *l = (const float *)logits->data + row * V;
        for (int j = 0; j < V; j++) out[j] = l[j];
    } else {
        memcpy(out, (const double *)logits->data + row * V, (size_t)V * sizeof *out);
    }
}

/* The k-th largest of x[0..n) (1 <= k <= n, duplicates counted), x
 * reordered: Hoare's selection, O(n) on average where picking the k-th
 * largest k times over (the loop this replaces) was O(k n). */
static double kth_largest(double *x, int n, int k)
{
    int lo = 0, hi = n - 1;
    const int at = k - 1;   /* its index in descending order */
    while (lo < hi) {
        const double a = x[lo], b = x[lo + (hi - lo) / 2], c = x[hi];   /* the median of three as the pivot */
        const double pivot = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
        int i = lo, j = hi;
        while (i <= j) {   /* descending: [lo, j] >= pivot >= [i, hi] */
            while (x[i] > pivot) i++;
            while (x[j] < pivot) j--;
            if (i <= j) {
                const double t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (at <= j) hi = j;
        else if (at >= i) lo = i;
        else break;   /* between j and i: x[at] is the pivot */
    }
    return x[at];
}

/* Picks the next token from logits (V) with temperature and top-k;
 * temperature 0 is greedy (the first of the largest logits). probs is V
 * doubles of scratch. */
static int pick(const tg_tensor *logits, int64_t row, int V, double temperature, int top_k, tg_rng *r,
                double *probs)
{
    double *l = probs;   /* the row, then the probabilities in place */
    logits_row(logits, row, V, l);
    int best = 0;
    for (int j = 1; j < V; j++)
        if (l[j] > l[best]) best = j;
    if (temperature <= 0) return best;
    const double top = l[best], mx = top / temperature;
    /* the k-th largest logit is the cut-off */
    double cut = -INFINITY;
    if (top_k > 0 && top_k < V) {
        cut = kth_largest(l, V, top_k);
        logits_row(logits, row, V, l);   /* back in order */
    }
    double sum = 0;
    for (int j = 0; j < V; j++) {
        l[j] = l[j] < cut ? 0 : exp(l[j] / temperature - mx);
        sum += l[j];
    }
    double u = tg_rng_uniform(r) * sum;
    for (int j = 0; j < V; j++) {
        if (u < probs[j]) return j;
        u -= probs[j];
    }
    return best;
}

/* How generated ids are written: the streaming decoder of a tokenizer. */
typedef struct writer {
    tg_tok_stream st;
    unsigned char *buf;   /* tg_tok_max_piece_len + 3 bytes */
    size_t cap;
} writer;

/* Writes id; returns false when generation ends there (run.c's BOS, a
 * tokenizer's BOS or EOS). */
static bool write_id(const tg_vocab *v, writer *w, int32_t prev, int32_t id)
{
    if (v->kind == TG_VOCAB_IDS) {
        printf(" %d", (int)id);
    } else if (v->kind == TG_VOCAB_TOKENIZER) {
        if (id == tg_tok_bos(v->tok) || id == tg_tok_eos(v->tok)) return false;
        int64_t n = tg_tok_stream_push(&w->st, id, w->buf, w->cap);   /* -1: an id past the tokenizer's (padding) */
        const int skip = n > 0 && v->docs && prev == tg_tok_bos(v->tok) && w->buf[0] == ' ';
        if (n > 0) fwrite(w->buf + skip, 1, (size_t)(n - skip), stdout);
    } else {
        if (v->kind == TG_VOCAB_LLAMA2C && id == TG_VOCAB_BOS) return false;   /* run.c's end of a sequence */
        char piece[8];
        int len = tg_vocab_decode(v, id, piece);
        const int skip = v->kind == TG_VOCAB_LLAMA2C && prev == TG_VOCAB_BOS && len && piece[0] == ' ';
        fwrite(piece + skip, 1, (size_t)(len - skip), stdout);
    }
    fflush(stdout);
    return true;
}

/* Continues ctx[0..n) by `tokens` tokens, writing each as it comes (and
 * stopping where write_id says: *stop is then the id that ended it, else
 * -1). The prompt's last
 * block_size tokens prime the cache; once the context reaches block_size,
 * each step re-reads the last block_size tokens from position 0. 0, or -1
 * with the message. */
static int generate(tg_model *m, tg_graph *g, const tg_vocab *v, writer *w, int32_t *ctx, size_t n, int tokens,
                    double temperature, int top_k, tg_rng *r, double *probs, double *t_first, int64_t *made,
                    int32_t *stop, char *err, size_t errlen)
{
    *stop = -1;
    const int bs = m->config.block_size, V = m->config.vocab_size;
    size_t fed = n > (size_t)bs ? n - (size_t)bs : 0;
    tg_model_cache_clear(m);
    for (int i = 0; i < tokens; i++) {
        if (tg_model_cache_len(m) + (int)(n - fed) > bs) {
            /* window full: restart from position 0 on the last bs tokens */
            tg_model_cache_clear(m);
            fed = n - (size_t)bs;
        }
        int T = (int)(n - fed);
        tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ctx + fed);   /* (1,T) */
        tg_tensor *logits = tg_model_forward(g, m, idx, NULL);                        /* (1,T,V) */
        if (!logits) {
            snprintf(err, errlen, "%s", tg_graph_error(g));
            return -1;
        }
        int next = pick(logits, T - 1, V, temperature, top_k, r, probs);
        tg_graph_reset(g);
        const bool more = write_id(v, w, ctx[n - 1], next);
        if (!*t_first) *t_first = now_seconds();
        ++*made;
        if (!more) {
            *stop = next;
            break;
        }
        fed = n;
        ctx[n++] = next;
    }
    return 0;
}

/* The prompt's ids after the head (BOS, for a tokenizer's documents) into
 * *ids (malloc'd): a tokenizer's encoding (of " " + prompt for documents),
 * or ids given as numbers for TG_VOCAB_IDS. -1 with a message. */
static int64_t token_prompt(const tg_vocab *v, int V, const char *prompt, size_t plen, int32_t **ids, char *err,
                            size_t errlen)
{
    *ids = malloc((plen + 2) * sizeof **ids);
    char *text = malloc(plen + 2);
    int64_t n = 0;
    if (!*ids || !text) {
        snprintf(err, errlen, "out of memory");
        n = -1;
    } else if (v->kind == TG_VOCAB_IDS) {
        memcpy(text, prompt, plen);
        text[plen] = 0;
        for (char *p = text, *end; n >= 0; p = end) {
            while (*p == ' ' || *p == '\n' || *p == '\t') p++;
            if (!*p) break;
            long id = strtol(p, &end, 10);
            if (end == p || id < 0 || id >= V || (*end && !strchr(" \n\t", *end))) {
                snprintf(err, errlen, "this model has token ids and no tokenizer: the prompt is ids below %d separated "
                                      "by spaces, and \"%.20s\" is not one", V, p);
                n = -1;
            } else {
                (*ids)[n++] = (int32_t)id;
            }
        }
    } else if (plen) {
        int32_t *enc;
        /* llama2.c's dummy prefix, for a Llama's documents (a vocabulary of pieces with scores has its own rule) */
        const int pre = tg_vocab_space_before_text(v);
        text[0] = ' ';
        memcpy(text + 1, prompt, plen);
        n = tg_tok_encode(v->tok, text + !pre, plen + pre, &enc, err, errlen);
        int32_t *grown = n > 0 ? realloc(*ids, (size_t)n * sizeof **ids) : *ids;
        if (n > 0 && grown) memcpy(grown, enc, (size_t)n * sizeof *enc);
        if (n > 0 && !grown) snprintf(err, errlen, "out of memory"), n = -1;
        if (grown) *ids = grown;
        tg_free(enc);
    }
    free(text);
    return n;
}

int64_t prompt_ids(const tg_vocab *v, int V, const char *text, size_t len, int32_t **ids, char *err, size_t errlen)
{
    *ids = NULL;
    const bool tokenized = v->kind == TG_VOCAB_TOKENIZER || v->kind == TG_VOCAB_IDS;
    const bool llama = v->kind == TG_VOCAB_LLAMA2C || (v->kind == TG_VOCAB_TOKENIZER && v->docs);
    const size_t head = llama ? (len && !tokenized ? 2 : 1) : 0;   /* BOS, and the dummy " " of the bytes */
    int32_t *body = NULL;
    int64_t n = (int64_t)len;
    if (tokenized && (n = token_prompt(v, V, text, len, &body, err, errlen)) < 0) {
        free(body);
        return -1;
    }
    int32_t *all = malloc((head + (size_t)n + 1) * sizeof *all);
    if (!all) {
        free(body);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    if (llama) {
        all[0] = v->kind == TG_VOCAB_TOKENIZER ? tg_tok_bos(v->tok) : TG_VOCAB_BOS;
        if (len && !tokenized) all[1] = v->ids[' '];
    }
    size_t bad = 0;
    if (tokenized) {
        if (n) memcpy(all + head, body, (size_t)n * sizeof *all);
    } else if (tg_vocab_encode(v, text, len, all + head, &bad) != 0) {
        snprintf(err, errlen, "the text's character '%c' (byte %d, offset %zu) is not in the vocabulary",
                 text[bad] >= 32 && text[bad] < 127 ? text[bad] : '?', (uint8_t)text[bad], bad);
        free(body);
        free(all);
        return -1;
    }
    free(body);
    *ids = all;
    return (int64_t)head + n;
}

int cmd_sample(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *prompt = NULL, *prompt_file = NULL, *vocab_file = NULL,
               *tok_file = NULL,
               *dtype = "f32", *attn = "fused", *config = NULL;
    bool composed = false;
    int tokens = 200, top_k = 200, threads = 1, num_samples = 1;
    bool stats = false;
    double temperature = 0.8;
    int64_t seed = 1337;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "checkpoint written by tiny_gpt train, or its --out directory (the best, "
         "else the last)", 0, ROLE_NONE},
        {"prompt", ARG_STRING, &prompt, 0, 0, "text to continue (default: a newline; a Llama's: nothing)", 0,
         ROLE_NONE},
        {"prompt-file", ARG_STRING, &prompt_file, 0, 0, "read the prompt from this file instead", 0, ROLE_NONE},
        {"tokens", ARG_INT, &tokens, 0, 1 << 24, "tokens to generate per sample (a byte vocabulary's are "
         "characters; it may stop sooner, at a token that ends a text)", 0, ROLE_NONE},
        {"num-samples", ARG_INT, &num_samples, 1, 1 << 20, "samples, each from the prompt, separated by a line of dashes", 0, ROLE_NONE},
        {"temperature", ARG_DOUBLE, &temperature, 0, 100, "softmax temperature (0: greedy)", 0, ROLE_NONE},
        {"top-k", ARG_INT, &top_k, 0, 1 << 20, "sample among the k likeliest (0: all)", 0, ROLE_NONE},
        {"seed", ARG_I64, &seed, 0, 9e15, "random seed", 0, ROLE_NONE},
        {"vocab", ARG_STRING, &vocab_file, 0, 0,
         "a text whose bytes are the vocabulary (for weights without 'vocab' metadata, e.g. from PyTorch)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok_file, 0, 0, "a tokenizer (tok.safetensors, a checkpoint holding one, llama2.c's "
         "tokenizer.bin, a .tiktoken file) for weights that came without one; its size must be the model's", 0,
         ROLE_NONE},
        {"stats", ARG_SWITCH, &stats, 0, 0, "print the decoding speed and heap allocations to stderr", 0, ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_ATTN(&attn),
        SPEC_THREADS(&threads),
        SPEC_CONFIG(&config),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[1024];
    tg_dtype dt;
    int setup = command_setup("sample", "[flags]", specs, n_specs, argc, argv, &dtype, &dt, &attn, &composed, &threads);
    if (setup >= 0) return setup;
    const double t_start = now_seconds();   /* --stats: loading is the time from here to t0 */

    int rc = 1;
    tg_st_file *f = NULL;
    tg_model m = {0};
    tg_graph *g = NULL;
    int32_t *ctx = NULL;
    double *probs = NULL;
    char *file_text = NULL;
    int32_t *pids = NULL;
    writer w = {0};
    tg_vocab v = {0};
    size_t plen = 0, bad = 0;
    if (prompt_file && args_seen(specs, n_specs, "prompt")) {
        snprintf(err, sizeof err, "--prompt and --prompt-file exclude each other");
        goto fail;
    }
    if (prompt_file && !(prompt = file_text = tg_file_read(prompt_file, &plen, err, sizeof err))) goto fail;
    char picked[4096];
    if (!(ckpt = ckpt_resolve(ckpt, "sample", picked, sizeof picked, err, sizeof err)) ||
        !(f = tg_st_load(ckpt, err, sizeof err)) || tg_checkpoint_load_model(f, dt, 0.0, &m, err, sizeof err) ||
        checkpoint_model_vocab(f, &m, vocab_file, tok_file, &v, err, sizeof err))
        goto fail;
    tg_model_set_composed(&m, composed);
    const bool tokenized = v.kind == TG_VOCAB_TOKENIZER || v.kind == TG_VOCAB_IDS;
    const bool llama = v.kind == TG_VOCAB_LLAMA2C || (v.kind == TG_VOCAB_TOKENIZER && v.docs);
    if (!prompt && v.kind == TG_VOCAB_IDS) {
        snprintf(err, sizeof err, "this model has token ids and no tokenizer: give the prompt as ids, e.g. --prompt "
                                  "\"0 1 2\" (or train with --tokenizer)");
        goto fail;
    }
    if (!prompt) prompt = llama ? "" : "\n";
    if (!prompt_file) plen = strlen(prompt);
    int64_t np = (int64_t)plen;   /* the prompt's ids after the head */
    if (tokenized && (np = token_prompt(&v, m.config.vocab_size, prompt, plen, &pids, err, sizeof err)) < 0) goto fail;
    if (np == 0 && !llama) {
        snprintf(err, sizeof err, "%s is empty; give at least one %s", prompt_file ? prompt_file : "--prompt",
                 v.kind == TG_VOCAB_IDS ? "id" : "character");
        goto fail;
    }
    const size_t head = llama ? (plen && !tokenized ? 2 : 1) : 0;   /* BOS, and the dummy " " of the bytes */
    w.cap = v.kind == TG_VOCAB_TOKENIZER ? tg_tok_max_piece_len(v.tok) + 3 : 1;
    w.buf = malloc(w.cap);
    ctx = malloc((head + (size_t)np + (size_t)tokens) * sizeof *ctx);
    probs = malloc((size_t)m.config.vocab_size * sizeof *probs);
    g = tg_graph_new();
    if (!ctx || !probs || !g || !w.buf) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (llama) {
        ctx[0] = v.kind == TG_VOCAB_TOKENIZER ? tg_tok_bos(v.tok) : TG_VOCAB_BOS;
        if (plen && !tokenized) ctx[1] = v.ids[' '];
    }
    if (tokenized) memcpy(ctx + head, pids, (size_t)np * sizeof *ctx);
    else if (tg_vocab_encode(&v, prompt, plen, ctx + head, &bad) != 0) {
        snprintf(err, sizeof err, "the prompt's character '%c' (byte %d, offset %zu) is not in the vocabulary",
                 prompt[bad] >= 32 && prompt[bad] < 127 ? prompt[bad] : '?', (uint8_t)prompt[bad], bad);
        goto fail;
    }
    if (tg_model_cache_enable(&m, 1, err, sizeof err)) goto fail;
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)seed, 5);
    const double t0 = now_seconds();
    double t_first = 0;   /* when the first token was written */
    int64_t made = 0;     /* tokens generated (a sample may stop early) */
    uint64_t a0 = tg_alloc_calls();
    for (int k = 0; k < num_samples; k++) {
        if (k) fputs("---------------\n", stdout);
        const int64_t made0 = made;
        int32_t stop;
        if (v.kind == TG_VOCAB_IDS)
            for (int64_t i = 0; i < np; i++) printf(i ? " %d" : "%d", (int)pids[i]);
        else fwrite(prompt, 1, plen, stdout);
        if (v.kind == TG_VOCAB_TOKENIZER) tg_tok_stream_init(&w.st, v.tok);
        if (generate(&m, g, &v, &w, ctx, head + (size_t)np, tokens, temperature, top_k, &r, probs, &t_first, &made,
                     &stop, err, sizeof err))
            goto fail;
        if (v.kind == TG_VOCAB_TOKENIZER) fwrite(w.buf, 1, (size_t)tg_tok_stream_flush(&w.st, w.buf, w.cap), stdout);
        fputc('\n', stdout);
        fflush(stdout);   /* the text before what stderr says of it */
        if (stop >= 0) {
            char which[32] = "";
            if (num_samples > 1) snprintf(which, sizeof which, "sample %d ", k + 1);
            const bool bos = v.kind == TG_VOCAB_LLAMA2C || stop == tg_tok_bos(v.tok);
            fprintf(stderr, "tiny_gpt sample: notice: %sstopped at token %lld of %d: the model produced %s (id %d), "
                            "which ends a text\n", which, (long long)(made - made0), tokens, bos ? "BOS" : "EOS",
                    (int)stop);
        }
    }
    if (stats) {
        /* the whole, then its parts: loading, the first token (the prompt
         * through the model), the rest one by one (run.c's "achieved tok/s") */
        const double t1 = now_seconds(), s = t1 - t0, rest = t_first ? t1 - t_first : 0;
        const int64_t after = made > 0 ? made - 1 : 0;
        char asked[64] = "";
        if (made != (int64_t)num_samples * tokens)
            snprintf(asked, sizeof asked, " (of %lld asked for)", (long long)num_samples * tokens);
        fprintf(stderr, "tiny_gpt sample: %lld token%s made%s in %.3f s: %.1f tokens/s (loading %.3f s, first token "
                        "%.4f s, then %lld token%s at %.1f tokens/s); %llu heap allocations\n",
                (long long)made, made == 1 ? "" : "s", asked, s, s > 0 ? made / s : 0.0, t0 - t_start,
                t_first ? t_first - t0 : 0.0, (long long)after, after == 1 ? "" : "s", rest > 0 ? after / rest : 0.0,
                (unsigned long long)(tg_alloc_calls() - a0));
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "tiny_gpt sample: %s\n", err);
done:
    free(ctx);
    free(pids);
    free(w.buf);
    tg_vocab_free(&v);
    free(probs);
    free(file_text);
    tg_graph_free(g);
    tg_model_free(&m);
    tg_st_free(f);
    return rc;
}
