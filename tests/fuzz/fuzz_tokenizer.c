/* tapegrad's tokenizer files: tg_tok_load on the input (a tokenizer's
 * safetensors file, a checkpoint holding one; a file that does not start
 * like safetensors goes to the tiktoken reader, as tg_tok_load does),
 * then the tokenizer used whole (fuzz_use_tokenizer). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "tok.safetensors", data, size);
    if (!path) return 0;
    tg_error err = {0};
    tg_tokenizer *t = tg_tok_load(path, &err);
    fuzz_report(t != NULL, err.msg);
    if (t) fuzz_use_tokenizer(t);
    tg_tok_free(t);
    return 0;
}
