/* tiny_gpt's side of checkpoints (checkpoint.h): the vocabulary a
 * command takes for a model, with its flags' messages; the files
 * themselves are the library's (train/train.h, tg_checkpoint_*). */
#include "checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int checkpoint_model_vocab(const tg_st_file *f, const tg_model *m, const char *vocab_file, tg_vocab *v, char *err,
                           size_t errlen)
{
    if (!vocab_file) {
        if (!tg_checkpoint_load_vocab(f, m, v, err, errlen)) return 0;
        if (!tg_st_meta(f, "vocab") && strcmp(m->config.arch, "llama"))
            snprintf(err, errlen, "the checkpoint has no 'vocab' in its metadata (weights from elsewhere, e.g. "
                                  "PyTorch): give --vocab FILE, a text whose bytes are the vocabulary (the training "
                                  "text); docs/safetensors.md describes the 'vocab' entry");
        return -1;
    }
    size_t len;
    char *text = tg_file_read(vocab_file, &len, err, errlen);
    if (!text) return -1;
    tg_vocab_bytes(v, text, len);
    free(text);
    if (!tg_vocab_fits(v, m->config.vocab_size, "the --vocab file's", err, errlen)) return 0;
    tg_vocab_free(v);
    return -1;
}
