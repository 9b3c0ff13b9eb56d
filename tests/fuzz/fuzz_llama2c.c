/* llama2.c's model.bin and tokenizer.bin, read by tg_llama2c_import
 * (formats/llama2c.c; `tiny_gpt import --format llama2c`).
 *
 * One input holds both files: a little-endian uint32 L, then the model
 * file's L bytes, then the tokenizer file (the rest of the input, maybe
 * empty). When L is more than what follows, the rest is the model file
 * alone and no tokenizer is given (import without --tokenizer); an input
 * shorter than 4 bytes is a model file. A successful import writes its
 * checkpoint, which is removed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *model = data, *tok = NULL;
    size_t ml = size, tl = 0;
    if (size >= 4) {
        const uint32_t l =
            (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
        model = data + 4;
        ml = size - 4;
        if (l <= ml) {
            tok = model + l;
            tl = ml - l;
            ml = l;
        }
    }
    const char *mp = fuzz_write(0, "model.bin", model, ml);
    const char *tp = tok ? fuzz_write(1, "tokenizer.bin", tok, tl) : NULL;
    const char *out = fuzz_path(2, "out.safetensors");
    if (!mp || (tok && !tp) || !out) return 0;
    tg_error err = {0};
    const int rc = tg_llama2c_import(mp, tp, out, &err);
    fuzz_report(rc == 0, err.msg);
    if (rc == 0) unlink(out);
    return 0;
}
