/* tiny_gpt's side of checkpoints (checkpoint.h): the vocabulary a
 * command takes for a model, with its flags' messages; the files
 * themselves are the library's (train/train.h, tg_checkpoint_*). */
#include "checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --tokenizer F for model m of f: the tokenizer in F, whose ids must be
 * the model's (or padded up to a multiple of 64, as nanoGPT pads GPT-2's
 * 50257 to 50304); f's own tokenizer, if it has one, must be the same. */
static int tokenizer_vocab(const tg_st_file *f, const tg_model *m, const char *tok_file, tg_vocab *v, tg_error *err)
{
    tg_error e2 = {0};
    tg_tokenizer *t = tg_tok_load(tok_file, &e2);
    if (!t) return tg_error_set(err, "--tokenizer: %s", e2.msg);
    const int V = m->config.vocab_size, n = (int)tg_tok_vocab_size(t);
    if (V != n && V != (n + 63) / 64 * 64) {
        tg_error_set(err,
                     "--tokenizer %s has %d ids and the model %d (vocab_size): a tokenizer of another "
                     "model (the model's ids are the tokenizer's, or padded up to a multiple of 64)",
                     tok_file, n, V);
        tg_tok_free(t);
        return -1;
    }
    const char *s = tg_st_meta(f, "vocab");
    if (s && !strcmp(s, "tokenizer")) {
        tg_tokenizer *own = tg_tok_from_st(f, &e2);
        const bool same = own && tg_tok_same(own, t);
        tg_tok_free(own);
        if (!same) {
            tg_error_set(err,
                         "--tokenizer %s: the checkpoint holds a tokenizer of its own, and this one is "
                         "another (drop --tokenizer to use the checkpoint's)",
                         tok_file);
            tg_tok_free(t);
            return -1;
        }
    }
    return tg_vocab_tokenizer(v, t, !strcmp(m->config.arch, "llama"), V, err);
}

int checkpoint_model_vocab(const tg_st_file *f, const tg_model *m, const char *vocab_file, const char *tok_file,
                           tg_vocab *v, tg_error *err)
{
    if (vocab_file && tok_file) return tg_error_set(err, "--vocab (a text's bytes) and --tokenizer exclude each other");
    if (tok_file) return tokenizer_vocab(f, m, tok_file, v, err);
    if (!vocab_file) {
        if (!tg_checkpoint_load_vocab(f, m, v, err)) return 0;
        if (!tg_st_meta(f, "vocab") && strcmp(m->config.arch, "llama"))
            tg_error_set(err,
                         "the checkpoint has no 'vocab' in its metadata (weights from elsewhere, e.g. "
                         "PyTorch): give --vocab FILE, a text whose bytes are the vocabulary (the training "
                         "text), or --tokenizer F; docs/safetensors.md describes the 'vocab' entry");
        return -1;
    }
    size_t len;
    tg_error e = {0};
    char *text = tg_file_read(vocab_file, &len, &e);
    if (!text) return tg_error_set(err, "%s", e.msg);
    tg_vocab_bytes(v, text, len);
    free(text);
    if (!tg_vocab_check_size(v, m->config.vocab_size, "the --vocab file's", err)) return 0;
    tg_vocab_release(v);
    return -1;
}

const char *ckpt_resolve(const char *path, const char *cmd, char *buf, size_t size, tg_error *err)
{
    tg_error e = {0};
    tg_run_file which;
    const char *got = tg_run_checkpoint(path, buf, size, &which, &e);
    if (!got) {
        tg_error_set(err, "--ckpt %s", e.msg);
        return NULL;
    }
    if (which != TG_RUN_FILE_GIVEN)
        fprintf(stderr, "tiny_gpt %s: %s is a run's directory: reading %s (%s)\n", cmd, path, got,
                which == TG_RUN_FILE_LAST ? "its latest weights; it has no best.safetensors"
                                          : "its best weights by val loss");
    return got;
}
