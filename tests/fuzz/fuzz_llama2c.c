/* llama2.c's model.bin and tokenizer.bin, read by `tiny_gpt import
 * --format llama2c` (examples/tiny_gpt/export.c). Its reader,
 * import_llama2c, is static: this file includes export.c to call it
 * (the smallest function that reads both files), and the other example
 * sources it needs are linked in (tests/CMakeLists.txt).
 *
 * One input holds both files: a little-endian uint32 L, then the model
 * file's L bytes, then the tokenizer file (the rest of the input, maybe
 * empty). When L is more than what follows, the rest is the model file
 * alone and no tokenizer is given (import without --tokenizer); an input
 * shorter than 4 bytes is a model file. A successful import writes its
 * checkpoint, which is removed; stdout (its "wrote" line) goes to /dev/null. */
#include "fuzz_util.h"

#include "export.c"

/* cmd_export and cmd_import call main.c's command_setup, never called here */
int command_setup(const char *cmd, const char *usage, arg_spec *specs, int n_specs, int argc, char **argv,
                  const char *const *dtype, tg_dtype *dt, const char *const *attn, bool *attn_composed,
                  const int *threads)
{
    (void)cmd, (void)usage, (void)specs, (void)n_specs, (void)argc, (void)argv, (void)dtype, (void)dt, (void)attn;
    (void)attn_composed, (void)threads;
    return 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *model = data, *tok = NULL;
    size_t ml = size, tl = 0;
    if (size >= 4) {
        const uint32_t l = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
        model = data + 4;
        ml = size - 4;
        if (l <= ml) {
            tok = model + l;
            tl = ml - l;
            ml = l;
        }
    }
    static int quiet;   /* import prints "wrote ..." on success: not thousands of times a second */
    if (!quiet) quiet = freopen("/dev/null", "w", stdout) != NULL;
    const char *mp = fuzz_write(0, "model.bin", model, ml);
    const char *tp = tok ? fuzz_write(1, "tokenizer.bin", tok, tl) : NULL;
    const char *out = fuzz_path(2, "out.safetensors");
    if (!mp || (tok && !tp) || !out) return 0;
    char err[2048];
    const int rc = import_llama2c(mp, tp, out, err, sizeof err);
    fuzz_report(rc == 0, err);
    if (rc == 0) unlink(out);
    return 0;
}
