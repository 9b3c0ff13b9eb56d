/* tiny_gpt sample: generate text from a checkpoint with the library's
 * generation (train/generate.h): the prompt encoded as tg_prompt_ids
 * encodes it, fed through the model once, then one token at a time
 * through the KV cache, each token's bytes written as it comes. Past the
 * block size a Llama shifts its cache (it keeps its BOS and drops half of
 * the rest, as llama.cpp does); a GPT, whose positions are learned,
 * re-reads its last block_size tokens from position 0 for every token, as
 * nanoGPT's generate does.
 *
 * A model with llama2.c's vocabulary (a Llama) follows run.c's
 * conventions, so both programs see the same ids for the same prompt: the
 * prompt is BOS, the id of " " (the dummy prefix; only for a prompt that
 * is not empty) and its bytes (id 3 + byte); a space right after BOS is
 * not printed; generation stops when the model produces BOS (a notice on
 * stderr says so: the text may be much shorter than --tokens). (run.c also
 * stops at seq_len, where this program shifts its cache, and does not
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

/* What the writer of the generated text keeps: when the first token came,
 * and the id that ended the text (-1 while none). */
typedef struct writer {
    double t_first;
    int32_t end;
} writer;

/* tg_generate's callback: each token's bytes to stdout as they come. */
static bool write_token(void *ctx, const tg_generated *t)
{
    writer *w = ctx;
    fwrite(t->bytes, 1, t->len, stdout);
    fflush(stdout);
    if (t->ends) w->end = t->id;
    if (!w->t_first && t->id >= 0) w->t_first = now_seconds();
    return true;
}

int cmd_sample(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *prompt = NULL, *prompt_file = NULL, *vocab_file = NULL,
               *tok_file = NULL, *dtype = "f32", *attn = "fused", *config = NULL;
    bool composed = false;
    int tokens = 200, top_k = 200, threads = 1, num_samples = 1;
    bool stats = false;
    double temperature = 0.8, top_p = 1;
    int64_t seed = 1337;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0,
         "checkpoint written by tiny_gpt train, or its --out directory (the best, "
         "else the last)",
         0, ROLE_NONE},
        {"prompt", ARG_STRING, &prompt, 0, 0, "text to continue (default: a newline; a Llama's: nothing)", 0,
         ROLE_NONE},
        {"prompt-file", ARG_STRING, &prompt_file, 0, 0, "read the prompt from this file instead", 0, ROLE_NONE},
        {"tokens", ARG_INT, &tokens, 0, 1 << 24,
         "tokens to generate per sample (a byte vocabulary's are "
         "characters; it may stop sooner, at a token that ends a text)",
         0, ROLE_NONE},
        {"num-samples", ARG_INT, &num_samples, 1, 1 << 20,
         "samples, each from the prompt, separated by a line of dashes", 0, ROLE_NONE},
        {"temperature", ARG_DOUBLE, &temperature, 0, 100, "softmax temperature (0: greedy)", 0, ROLE_NONE},
        {"top-k", ARG_INT, &top_k, 0, 1 << 20, "sample among the k likeliest (0: all)", 0, ROLE_NONE},
        {"top-p", ARG_DOUBLE, &top_p, 0, 1,
         "nucleus: sample among the fewest likeliest tokens whose probabilities sum to "
         "at least P (after --top-k; 1: all)",
         0, ROLE_NONE},
        {"seed", ARG_I64, &seed, 0, 9e15, "random seed", 0, ROLE_NONE},
        {"vocab", ARG_STRING, &vocab_file, 0, 0,
         "a text whose bytes are the vocabulary (for weights without 'vocab' metadata, e.g. from PyTorch)", 0,
         ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok_file, 0, 0,
         "a tokenizer (tok.safetensors, a checkpoint holding one, llama2.c's "
         "tokenizer.bin, a .tiktoken file) for weights that came without one; its size must be the model's",
         0, ROLE_NONE},
        {"stats", ARG_SWITCH, &stats, 0, 0, "print the decoding speed and heap allocations to stderr", 0, ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_ATTN(&attn),
        SPEC_THREADS(&threads),
        SPEC_CONFIG(&config),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    int setup = command_setup("sample", "[flags]", specs, n_specs, argc, argv, &dtype, &dt, &attn, &composed, &threads);
    if (setup >= 0) return setup;
    const double t_start = now_seconds(); /* --stats: loading is the time from here to t0 */

    int rc = 1;
    tg_st_file *f = NULL;
    tg_model m = {0};
    tg_sampler *sampler = NULL;
    char *file_text = NULL;
    int32_t *ids = NULL;
    tg_vocab v = {0};
    tg_error e = {0};
    size_t plen = 0;
    if (prompt_file && args_seen(specs, n_specs, "prompt")) {
        snprintf(err.msg, sizeof err.msg, "--prompt and --prompt-file exclude each other");
        goto fail;
    }
    if (prompt_file && !(prompt = file_text = tg_file_read(prompt_file, &plen, &err))) goto fail;
    char picked[4096];
    if (!(ckpt = ckpt_resolve(ckpt, "sample", picked, sizeof picked, &err)) || !(f = tg_st_load(ckpt, &err)) ||
        tg_checkpoint_load_model(f, dt, 0.0, &m, &err) || checkpoint_model_vocab(f, &m, vocab_file, tok_file, &v, &err))
        goto fail;
    tg_model_set_composed(&m, composed);
    const bool llama = v.kind == TG_VOCAB_LLAMA2C || (v.kind == TG_VOCAB_TOKENIZER && v.docs);
    if (!prompt && v.kind == TG_VOCAB_IDS) {
        snprintf(err.msg, sizeof err.msg,
                 "this model has token ids and no tokenizer: give the prompt as ids, e.g. --prompt "
                 "\"0 1 2\" (or train with --tokenizer)");
        goto fail;
    }
    if (!prompt) prompt = llama ? "" : "\n";
    if (!prompt_file) plen = strlen(prompt);
    const int64_t n = tg_prompt_ids(&v, m.config.vocab_size, prompt, plen, &ids, &e);
    if (n < 0) goto fail_e;
    if (n == 0) {
        snprintf(err.msg, sizeof err.msg, "%s is empty; give at least one %s", prompt_file ? prompt_file : "--prompt",
                 v.kind == TG_VOCAB_IDS ? "id" : "character");
        goto fail;
    }
    const tg_sampler_options so = {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = (uint64_t)seed};
    if (!(sampler = tg_sampler_new(&so, m.config.vocab_size, &e))) goto fail_e;
    writer w = {0};
    const tg_generate_options go = {.sampler = sampler, .vocab = &v, .on_token = write_token, .ctx = &w};
    const double t0 = now_seconds();
    int64_t made = 0; /* tokens generated (a sample may stop early) */
    uint64_t a0 = tg_alloc_calls();
    for (int k = 0; k < num_samples; k++) {
        if (k) fputs("---------------\n", stdout);
        if (v.kind == TG_VOCAB_IDS)
            for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
        else fwrite(prompt, 1, plen, stdout);
        w.end = -1;
        const int64_t got = tg_generate(&m, ids, n, tokens, &go, &e);
        if (got < 0) goto fail_e;
        made += got;
        fputc('\n', stdout);
        fflush(stdout); /* the text before what stderr says of it */
        if (w.end >= 0) {
            char which[32] = "";
            if (num_samples > 1) snprintf(which, sizeof which, "sample %d ", k + 1);
            const bool bos = v.kind == TG_VOCAB_LLAMA2C || w.end == tg_tok_bos(v.tok);
            fprintf(stderr,
                    "tiny_gpt sample: notice: %sstopped at token %lld of %d: the model produced %s (id %d), "
                    "which ends a text\n",
                    which, (long long)got, tokens, bos ? "BOS" : "EOS", (int)w.end);
        }
    }
    if (stats) {
        /* the whole, then its parts: loading, the first token (the prompt
         * through the model), the rest one by one (run.c's "achieved tok/s") */
        const double t1 = now_seconds(), s = t1 - t0, rest = w.t_first ? t1 - w.t_first : 0;
        const int64_t after = made > 0 ? made - 1 : 0;
        char asked[64] = "";
        if (made != (int64_t)num_samples * tokens)
            snprintf(asked, sizeof asked, " (of %lld asked for)", (long long)num_samples * tokens);
        fprintf(stderr,
                "tiny_gpt sample: %lld token%s made%s in %.3f s: %.1f tokens/s (loading %.3f s, first token "
                "%.4f s, then %lld token%s at %.1f tokens/s); %llu heap allocations\n",
                (long long)made, made == 1 ? "" : "s", asked, s, s > 0 ? made / s : 0.0, t0 - t_start,
                w.t_first ? w.t_first - t0 : 0.0, (long long)after, after == 1 ? "" : "s",
                rest > 0 ? after / rest : 0.0, (unsigned long long)(tg_alloc_calls() - a0));
    }
    rc = 0;
    goto done;
fail_e:
    snprintf(err.msg, sizeof err.msg, "%s", e.msg);
fail:
    fprintf(stderr, "tiny_gpt sample: %s\n", err.msg);
done:
    tg_free(ids);
    tg_sampler_free(sampler);
    tg_vocab_release(&v);
    free(file_text);
    tg_model_release(&m);
    tg_st_free(f);
    return rc;
}
