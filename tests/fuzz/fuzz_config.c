/* tiny_gpt --config files (examples/tiny_gpt/args.c): the input as the
 * config file of `tiny_gpt train --config FILE`, parsed against train's
 * own flag table (train_flags.c: the library's run settings and the
 * command line's), the settings then set into the config
 * (tg_run_config_set), then args_free. A refusal's message is printable
 * ASCII whatever the file holds (a BOM and binary were once echoed raw):
 * a raw byte aborts, as a finding. */
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
    char err[2048];
    int rc = args_parse(specs, n, 2, argv, err, sizeof err);
    if (rc == 0) rc = args_apply(specs, n, &o.c, NULL, err, sizeof err);
    fuzz_report(rc == 0, err);
    for (const char *p = err; rc && *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
            fprintf(stderr, "fuzz: the message '%s' holds the byte 0x%02x unescaped\n", err, (unsigned char)*p);
            abort();
        }
    if (rc == 0) {   /* every value readable */
        int n_settings;
        const tg_run_setting *t = tg_run_settings(&n_settings);
        char buf[128];
        for (int i = 0; i < n_settings; i++) tg_run_config_get(&o.c, t[i].name, buf, sizeof buf);
    }
    tg_run_config_release(&o.c);
    args_free();
    return 0;
}
