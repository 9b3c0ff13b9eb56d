/* Config files (train/config_file.c, tg_config_file_read: tiny_gpt train
 * --config reads its FILE with it): the input as a config file, each line
 * then set into a run's config as tiny_gpt sets it (tg_run_config_set;
 * an unknown name is refused there, as tiny_gpt refuses it), and every
 * value read back. A refusal's message is printable ASCII whatever the
 * file holds (a BOM and binary were once echoed raw): a raw byte aborts,
 * as a finding; so does a line whose name or value is not within the
 * file's text. */
#include "fuzz_util.h"

static void printable(const char *msg)
{
    for (const char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e) {
            fprintf(stderr, "fuzz: the message '%s' holds the byte 0x%02x unescaped\n", msg, (unsigned char)*p);
            abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "train.conf", data, size);
    if (!path) return 0;
    tg_config_file f;
    tg_error e = {0};
    const int rc = tg_config_file_read(&f, path, &e);
    fuzz_report(rc == 0, e.msg);
    if (rc) {
        printable(e.msg);
        return 0;
    }
    tg_run_config c;
    tg_run_config_init(&c);
    for (int i = 0; i < f.n; i++) {
        const tg_config_line *l = &f.lines[i];
        if (l->line < 1 || l->name < f.text || l->value < f.text || !*l->name) {
            fprintf(stderr, "fuzz: line %d of %d: a name or value outside the text\n", i, f.n);
            abort();
        }
        tg_error s = {0};
        char what[64];
        snprintf(what, sizeof what, "train.conf:%d: setting", l->line);
        if (tg_run_config_set(&c, l->name, l->value, what, &s)) printable(s.msg);
    }
    int n_settings;
    const tg_run_setting *t = tg_run_settings(&n_settings);
    char buf[128];
    for (int i = 0; i < n_settings; i++) tg_run_config_get(&c, t[i].name, buf, sizeof buf); /* every value readable */
    tg_run_config_release(&c);
    tg_config_file_release(&f);
    return 0;
}
