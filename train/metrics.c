/* A run's metrics file (train.h, tg_metrics): CSV rows that survive a
 * kill and a resume without gaps or repeats. */
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/atomic_file.h"
#include "../core/err_internal.h"

struct tg_metrics {
    FILE *fp;
    int n;
    char (*format)[8]; /* per column, checked */
    bool failed;
};

/* "%[.P](f|g|e)" with P <= 17. */
static bool format_ok(const char *f)
{
    if (!f || f[0] != '%') return false;
    const char *c = f + 1;
    if (*c == '.') {
        c++;
        const int p = *c >= '0' && *c <= '9' ? atoi(c) : -1;
        if (p < 0 || p > 17) return false;
        while (*c >= '0' && *c <= '9') c++;
    }
    return (*c == 'f' || *c == 'g' || *c == 'e') && !c[1];
}

/* The header "step,<names>\n" into a malloc'd string, or NULL (err set). */
static char *header_of(const tg_metrics_column *cols, int n, tg_error *err)
{
    size_t len = 6;
    for (int i = 0; i < n; i++) {
        const char *s = cols[i].name;
        bool ok = s && *s && strcmp(s, "step");
        for (const char *c = s; ok && *c; c++)
            ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
        if (!ok || !format_ok(cols[i].format)) {
            tg_error_set(err,
                         "metrics_open: column %d (%.40s, %.20s) is not a name of [A-Za-z0-9_] other than "
                         "step with a format %%[.P](f|g|e), P <= 17",
                         i, s ? s : "NULL", cols[i].format ? cols[i].format : "NULL");
            return NULL;
        }
        len += strlen(s) + 1;
    }
    char *h = malloc(len + 1);
    if (!h) return tg_error_set(err, "metrics_open: out of memory"), NULL;
    strcpy(h, "step");
    for (int i = 0; i < n; i++) strcat(strcat(h, ","), cols[i].name);
    return strcat(h, "\n");
}

/* The step of a complete row (n + 1 fields, the first a whole number), or -1. */
static int64_t row_step(const char *line, size_t len, int n)
{
    if (!len || line[len - 1] != '\n') return -1; /* cut short by a kill */
    int commas = 0;
    for (size_t i = 0; i < len; i++) commas += line[i] == ',';
    int64_t s = 0;
    size_t i = 0;
    for (; i < len && i < 18 && line[i] >= '0' && line[i] <= '9'; i++) s = s * 10 + (line[i] - '0');
    return commas == n && i > 0 && line[i] == ',' ? s : -1;
}

tg_metrics *tg_metrics_open(const char *path, const tg_metrics_column *cols, int n_cols, int64_t resume_step,
                            char *notice, size_t notice_len, tg_error *err)
{
    if (notice && notice_len) notice[0] = 0;
    if (!path || (n_cols > 0 && !cols) || n_cols < 0)
        return tg_error_set(err, "metrics_open: %s", !path ? "the path is NULL" : "bad columns"), NULL;
    char *head = header_of(cols, n_cols, err), *kept = NULL, *old = NULL;
    tg_error e = {0};
    tg_metrics *m = head ? calloc(1, sizeof *m) : NULL;
    if (!head) goto fail; /* a bad column: header_of said which */
    if (!m || !(m->format = calloc((size_t)n_cols + 1, sizeof *m->format))) goto oom;
    const size_t hl = strlen(head);
    size_t len = 0, at = hl;
    struct stat st; /* only whether it is there: tg_file_read refuses what is not a regular file */
    if (resume_step >= 0 && stat(path, &st) != 0) {
        if (notice && notice_len)
            snprintf(notice, notice_len, "%s is missing; its rows start again at step %lld", path,
                     (long long)resume_step + 1);
    } else if (resume_step >= 0 && !(old = tg_file_read(path, &len, &e))) {
        tg_error_set(err, "%s", e.msg);
        goto fail;
    }
    if (!(kept = malloc(hl + len + 1))) goto oom;
    memcpy(kept, head, hl);
    if (old && (len < hl || memcmp(old, head, hl))) {
        if (notice && notice_len) snprintf(notice, notice_len, "%s has another header; its rows are not kept", path);
    } else {
        for (size_t i = hl; old && i < len;) {
            const char *nl = memchr(old + i, '\n', len - i);
            const size_t k = nl ? (size_t)(nl - (old + i)) + 1 : len - i;
            const int64_t s = row_step(old + i, k, n_cols);
            if (s >= 0 && s <= resume_step) memcpy(kept + at, old + i, k), at += k;
            i += k;
        }
    }
    if (tg_atomic_write_file(path, kept, at, &e)) {
        tg_error_set(err, "%s", e.msg);
        goto fail;
    }
    if (!(m->fp = fopen(path, "a"))) {
        tg_error_set(err, "%s: %s", path, strerror(errno));
        goto fail;
    }
    m->n = n_cols;
    for (int i = 0; i < n_cols; i++) snprintf(m->format[i], sizeof m->format[i], "%s", cols[i].format);
    free(head), free(old), free(kept);
    return m;
oom:
    tg_error_set(err, "metrics_open: out of memory");
fail:
    free(head), free(old), free(kept);
    if (m) free(m->format);
    free(m);
    return NULL;
}

int tg_metrics_write(tg_metrics *m, int64_t step, const double *values)
{
    if (!m || (m->n && !values)) return -1;
    fprintf(m->fp, "%lld", (long long)step);
    for (int i = 0; i < m->n; i++) {
        fputc(',', m->fp);
        if (!isnan(values[i])) fprintf(m->fp, m->format[i], values[i]);
    }
    fputc('\n', m->fp);
    if (fflush(m->fp) || ferror(m->fp)) m->failed = true;
    return m->failed ? -1 : 0;
}

int tg_metrics_close(tg_metrics *m)
{
    if (!m) return 0;
    const int rc = fclose(m->fp) || m->failed ? -1 : 0;
    free(m->format);
    free(m);
    return rc;
}
