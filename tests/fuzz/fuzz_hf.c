/* A Hugging Face model directory, read by tg_hf_import (formats/hf.c;
 * `tiny_gpt import --format hf`).
 *
 * One input holds the directory: a first byte (bit 0: ids_only), then up
 * to seven files, each a little-endian uint32 length and that many bytes
 * (a length past the end takes the rest), in this order: config.json,
 * model.safetensors, tokenizer.json, model.safetensors.index.json,
 * shard.safetensors (for an index to name), vocab.json, merges.txt. A
 * file of length 0, or one the input ends before, is absent. Bit k + 1 of
 * the first byte makes file k something that is not a regular file, by
 * its length: 0 a directory, 1 a named pipe, more a link to /dev/zero
 * (the reader must refuse each, without waiting on the pipe). What the
 * import accepts is loaded back as a model and a vocabulary, and removed. */
#include <sys/stat.h>

#include "fuzz_util.h"

static const char *const NAMES[7] = {
    "config.json",       "model.safetensors", "tokenizer.json", "model.safetensors.index.json",
    "shard.safetensors", "vocab.json",        "merges.txt"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_dir();
    const char *out = fuzz_path(3, "out.safetensors");
    if (!dir || !out) return 0;
    const bool ids_only = size > 0 && (data[0] & 1);
    const unsigned odd = size > 0 ? data[0] >> 1 : 0;
    size_t at = size > 0 ? 1 : 0;
    for (int k = 0; k < 7; k++) {
        const char *p = fuzz_path(0, NAMES[k]);
        if (!p) return 0;
        if (unlink(p)) rmdir(p);
        if (size - at < 4) continue;
        const uint32_t l = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 | (uint32_t)data[at + 2] << 16 |
            (uint32_t)data[at + 3] << 24;
        at += 4;
        const size_t n = l <= size - at ? l : size - at;
        if (odd >> k & 1) {
            if (n == 0 ? mkdir(p, 0700) : n == 1 ? mkfifo(p, 0600) : symlink("/dev/zero", p)) return 0;
        } else if (n && !fuzz_write(0, NAMES[k], data + at, n)) {
            return 0;
        }
        at += n;
    }
    tg_error err = {0};
    char notice[1024];
    const tg_hf_import_options o = {.ids_only = ids_only};
    const int rc = tg_hf_import(dir, out, &o, notice, sizeof notice, &err);
    fuzz_report(rc == 0, err.msg);
    if (rc == 0) { /* what it wrote is a checkpoint tapegrad loads */
        tg_st_file *f = tg_st_load(out, &err);
        tg_model m;
        tg_vocab v;
        if (!f || tg_checkpoint_load_model(f, TG_F32, -1, &m, &err) || tg_vocab_read(&v, f, &err)) {
            fprintf(stderr, "fuzz: the import wrote a checkpoint that does not load: %s\n", err.msg);
            abort();
        }
        if (v.kind == TG_VOCAB_TOKENIZER) fuzz_use_tokenizer(v.tok);
        tg_vocab_release(&v);
        tg_model_release(&m);
        tg_st_free(f);
        unlink(out);
    }
    for (int k = 0; k < 7; k++) /* fuzz_cleanup removes files only */
        if (odd >> k & 1) {
            const char *p = fuzz_path(0, NAMES[k]);
            if (p && unlink(p)) rmdir(p);
        }
    return 0;
}
