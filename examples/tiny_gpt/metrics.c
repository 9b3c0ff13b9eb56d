/* OUT/metrics.csv (see metrics.h). */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data.h"
#include "files.h"

metrics_row metrics_empty(int64_t step)
{
    return (metrics_row){step, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

static void field(FILE *fp, const char *fmt, double v)
{
    fputc(',', fp);
    if (!isnan(v)) fprintf(fp, fmt, v);
}

/* a loss: 6 decimals, or `digits` significant digits when > 0 */
static void loss_field(FILE *fp, double v, int digits)
{
    fputc(',', fp);
    if (isnan(v)) return;
    if (digits > 0) fprintf(fp, "%.*g", digits, v);
    else fprintf(fp, "%.6f", v);
}

void metrics_write(FILE *fp, const metrics_row *r, int digits)
{
    fprintf(fp, "%lld", (long long)r->step);
    loss_field(fp, r->loss, digits);
    field(fp, "%.6g", r->lr);
    field(fp, "%.3f", r->ms);
    field(fp, "%.1f", r->tokens_per_s);
    loss_field(fp, r->train, digits);
    loss_field(fp, r->val, digits);
    loss_field(fp, r->train_bpb, digits);
    loss_field(fp, r->val_bpb, digits);
    fputc('\n', fp);
}

/* The step of a complete row (nine fields, the first a whole number), or -1. */
static int64_t row_step(const char *line, size_t n)
{
    if (!n || line[n - 1] != '\n') return -1;   /* cut short by a kill */
    int commas = 0;
    for (size_t i = 0; i < n; i++) commas += line[i] == ',';
    char *end;
    long long s = strtoll(line, &end, 10);
    return commas == 8 && end != line && *end == ',' && s >= 0 ? s : -1;
}

FILE *metrics_open(const char *path, int64_t resume_step, char *err, size_t errlen)
{
    textbuf kept = {0};
    tb_puts(&kept, METRICS_HEADER "\n");
    struct stat st;
    if (resume_step >= 0 && stat(path, &st) != 0) {
        fprintf(stderr, "tiny_gpt train: notice: %s is missing; it starts again at step %lld\n", path,
                (long long)resume_step + 1);
    } else if (resume_step >= 0) {
        size_t len;
        char *old = tg_file_read(path, &len, err, errlen);
        if (!old) {
            tb_free(&kept);
            return NULL;
        }
        size_t hl = strlen(METRICS_HEADER "\n");
        if (len < hl || memcmp(old, METRICS_HEADER "\n", hl)) {
            fprintf(stderr, "tiny_gpt train: notice: %s does not start with tiny_gpt's header; its rows are not "
                            "kept\n", path);
            hl = len;
        }
        for (size_t at = hl; at < len;) {
            const char *nl = memchr(old + at, '\n', len - at);
            size_t n = nl ? (size_t)(nl - (old + at)) + 1 : len - at;
            int64_t s = row_step(old + at, n);
            if (s >= 0 && s <= resume_step) tb_put(&kept, old + at, n);
            at += n;
        }
        free(old);
    }
    if (kept.oom) {
        snprintf(err, errlen, "%s: out of memory", path);
        tb_free(&kept);
        return NULL;
    }
    int rc = write_file_atomic(path, kept.p, kept.len, err, errlen);
    tb_free(&kept);
    if (rc) return NULL;
    FILE *fp = fopen(path, "a");
    if (!fp) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return fp;
}
