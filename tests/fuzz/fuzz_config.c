/* tiny_gpt --config files (examples/tiny_gpt/args.c): the input as the
 * config file of `tiny_gpt train --config FILE`, parsed against train's
 * own flag table (train_flags.c), then args_free. A refusal's message is
 * printable ASCII whatever the file holds (issue 20: a BOM and binary
 * were echoed raw): a raw byte aborts, as a finding. */
#include "fuzz_util.h"

#include "train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "train.conf", data, size);
    if (!path) return 0;
    static train_opts o;
    static arg_spec specs[TRAIN_MAX_SPECS];
    const int n = train_specs(&o, specs);
    char *argv[] = {"--config", (char *)path, NULL};
    tg_error err = {0};
    const int rc = args_parse(specs, n, 2, argv, err.msg, sizeof err.msg);
    fuzz_report(rc == 0, err.msg);
    for (const char *p = err.msg; rc && *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
            fprintf(stderr, "fuzz: the message '%s' holds the byte 0x%02x unescaped\n", err.msg, (unsigned char)*p);
            abort();
        }
    if (rc == 0) {
        char buf[128];
        for (int i = 0; i < n; i++) arg_value_format(&specs[i], buf, sizeof buf);   /* every value readable */
    }
    args_free();
    return 0;
}
