/* A GGUF file, read by tg_gguf_import (formats/gguf_read.c; `tiny_gpt
 * import --format gguf`). The input is the file; a successful import
 * writes its checkpoint, which is removed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = fuzz_write(0, "model.gguf", data, size);
    const char *out = fuzz_path(1, "out.safetensors");
    if (!in || !out) return 0;
    tg_error err = {0};
    const int rc = tg_gguf_import(in, out, TG_F32, &err);
    fuzz_report(rc == 0, err.msg);
    if (rc == 0) unlink(out);
    return 0;
}
