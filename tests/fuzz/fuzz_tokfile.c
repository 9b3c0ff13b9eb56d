/* Token files: tg_tokfile_open on the input as each format (AUTO,
 * nanoGPT's raw uint16, llm.c's .bin) with a few vocabulary sizes, then
 * every token read back with tg_tokfile_read (and reads out of range). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "tokens.bin", data, size);
    if (!path) return 0;
    static const struct {
        tg_tokfile_format format;
        int64_t vocab;
    } runs[] = {{TG_TOKFILE_AUTO, 50304},
                {TG_TOKFILE_NANOGPT, 65536},
                {TG_TOKFILE_LLMC, TG_TOKFILE_MAX_VOCAB},
                {TG_TOKFILE_AUTO, 259}};
    static int32_t buf[4096];
    tg_error err = {0};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        tg_tokfile *f = tg_tokfile_open(path, runs[r].format, runs[r].vocab, &err);
        fuzz_report(f != NULL, err.msg);
        if (!f) continue;
        const int64_t n = tg_tokfile_count(f);
        (void)tg_tokfile_format_of(f);
        for (int64_t at = 0; at < n; at += 4096) {
            const int64_t k = n - at < 4096 ? n - at : 4096;
            if (tg_tokfile_read(f, at, k, buf)) abort(); /* a range inside the file reads */
            for (int64_t i = 0; i < k; i++)
                if (buf[i] < 0 || buf[i] >= runs[r].vocab) abort(); /* open checked every id */
        }
        if (!tg_tokfile_read(f, n, 1, buf) || !tg_tokfile_read(f, -1, 1, buf) || !tg_tokfile_read(f, 0, n + 1, buf) ||
            !tg_tokfile_read(f, INT64_MAX, 2, buf))
            abort(); /* out of range is refused */
        tg_tokfile_free(f);
    }
    return 0;
}
