/* llama2.c's tokenizer.bin alone: tg_tok_load_llama2c on the input (any
 * count of pieces), then the tokenizer used whole (fuzz_use_tokenizer:
 * every piece, and encode + decode of a fixed text, which must give it
 * back). fuzz_llama2c feeds the same reader through tiny_gpt import. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "tokenizer.bin", data, size);
    if (!path) return 0;
    tg_error err = {0};
    tg_tokenizer *t = tg_tok_load_llama2c(path, 0, &err);
    fuzz_report(t != NULL, err.msg);
    if (t) fuzz_use_tokenizer(t);
    tg_tok_free(t);
    return 0;
}
