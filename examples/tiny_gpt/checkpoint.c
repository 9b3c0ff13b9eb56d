/* tiny_gpt's side of checkpoints (checkpoint.h): the vocabulary a
 * command takes for a model, with its flags' messages; the files
 * themselves are the library's (train/train.h, tg_checkpoint_*). */
#include "checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0 when the model's vocab_size fits v: equal for a TG_VOCAB_BYTES
 * vocabulary, at least its 259 ids for TG_VOCAB_LLAMA2C (the rest unused) */
static int vocab_fits(const tg_vocab *v, const tg_model *m, const char *whose, char *err, size_t errlen)
{
    const int V = m->config.vocab_size;
    if (v->kind == TG_VOCAB_BYTES ? V == v->size : V >= v->size) return 0;
    snprintf(err, errlen, "the checkpoint's vocab_size %d does not match %s vocabulary of %d %s", V, whose, v->size,
             v->kind == TG_VOCAB_BYTES ? "characters" : "ids");
    return -1;
}

int checkpoint_model_vocab(const tg_st_file *f, const tg_model *m, const char *vocab_file, tg_vocab *v, char *err,
                           size_t errlen)
{
    if (vocab_file) {
        size_t len;
        char *text = tg_file_read(vocab_file, &len, err, errlen);
        if (!text) return -1;
        tg_vocab_bytes(v, text, len);
        free(text);
    } else if (tg_st_meta(f, "vocab") || strcmp(m->config.arch, "llama")) {
        if (checkpoint_vocab(f, v, err, errlen)) return -1;
    } else {
        tg_vocab_llama2c(v);
    }
    if (!vocab_fits(v, m, vocab_file ? "the --vocab file's" : "its", err, errlen)) return 0;
    tg_vocab_free(v);
    return -1;
}

int checkpoint_vocab(const tg_st_file *f, tg_vocab *v, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, "vocab");
    if (!s) {
        snprintf(err, errlen,
                 "the checkpoint has no 'vocab' in its metadata (weights from elsewhere, e.g. PyTorch): give "
                 "--vocab FILE, a text whose bytes are the vocabulary (the training text); docs/safetensors.md "
                 "describes the 'vocab' entry");
        return -1;
    }
    return tg_vocab_read(v, f, err, errlen);
}
