/* GPT-2's .tiktoken rank files: tg_tok_load_tiktoken on the input, then
 * the tokenizer used whole (fuzz_use_tokenizer). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "ranks.tiktoken", data, size);
    if (!path) return 0;
    tg_error err = {0};
    tg_tokenizer *t = tg_tok_load_tiktoken(path, &err);
    fuzz_report(t != NULL, err.msg);
    if (t) fuzz_use_tokenizer(t);
    tg_tok_free(t);
    return 0;
}
