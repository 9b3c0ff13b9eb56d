/* A run's directory (train/run.h): claimed for one run at a time, the
 * temporaries of a killed one removed, the checkpoint a path names, and
 * the metrics file with its columns. */
#define _DEFAULT_SOURCE /* flock */
#include "train.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_internal.h"

const char *const TG_RUN_FILES[TG_RUN_N_FILES] = {"best.safetensors", "last.safetensors", "metrics.csv", "loss.png"};

/* name is "<one of the run's files>.tmp.", the writer's pid and ".", then
 * six characters as mkstemp makes them (tg_atomic_file's temporaries); or
 * without the pid, as older versions named them */
static bool is_stale_temp(const char *name)
{
    for (int i = 0; i < TG_RUN_N_FILES; i++) {
        const size_t l = strlen(TG_RUN_FILES[i]);
        if (strncmp(name, TG_RUN_FILES[i], l) || strncmp(name + l, ".tmp.", 5)) continue;
        const char *p = name + l + 5, *dot = strchr(p, '.');
        if (dot) {
            if (dot == p || p[0] == '0' || strspn(p, "0123456789") != (size_t)(dot - p)) continue;
            p = dot + 1;
        }
        if (strlen(p) != 6) continue;
        bool ok = true;
        for (; *p; p++) ok &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (ok) return true;
    }
    return false;
}

int tg_run_lock(const char *dir, bool *made, const char *program, const tg_run_say *say, tg_error *err)
{
    char name[80];
    tg_run_label(say, "out", name);
    *made = mkdir(dir, 0777) == 0;
    if (!*made && errno != EEXIST) return tg_error_set(err, "%s %s: %s", name, dir, strerror(errno));
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        tg_error_set(err, "%s %s: %s", name, dir, errno == ENOTDIR ? "exists and is not a directory" : strerror(errno));
        if (*made) rmdir(dir);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            tg_error_set(err, "%s %s: another %s is training in this directory", name, dir, program ? program : "run");
        else tg_error_set(err, "%s %s: %s", name, dir, strerror(errno));
        close(fd);
        if (*made) rmdir(dir);
        return -1;
    }
    DIR *d = opendir(dir); /* the lock makes sure no other process is writing these */
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!is_stale_temp(e->d_name)) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) tg_run_notify(say, TG_RUN_SAY, "removed %s, left by a run stopped while saving", path);
    }
    if (d) closedir(d);
    return fd;
}

const char *tg_run_checkpoint(const char *path, char *buf, size_t size, tg_run_file *which, tg_error *err)
{
    struct stat st;
    if (which) *which = TG_RUN_FILE_GIVEN;
    if (!path || !buf || !size) return tg_error_set(err, "run_checkpoint: NULL argument"), NULL;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return path; /* its reader names what is wrong with it */
    for (int i = 0; i < 2; i++) {
        snprintf(buf, size, "%s/%s", path, TG_RUN_FILES[i]);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            if (which) *which = i ? TG_RUN_FILE_LAST : TG_RUN_FILE_BEST;
            return buf;
        }
    }
    tg_error_set(err,
                 "%s is a directory without best.safetensors or last.safetensors (what a run writes into its "
                 "directory): give a checkpoint file or a run's directory",
                 path);
    return NULL;
}

/* ---- the metrics file ------------------------------------------------------------ */

tg_metrics *tg_run_metrics_open(const char *path, int64_t resume_step, int digits, const tg_run_say *say, tg_error *err)
{
    char loss[16], notice[512];
    if (digits > 0) snprintf(loss, sizeof loss, "%%.%dg", digits);
    else snprintf(loss, sizeof loss, "%%.6f");
    const tg_metrics_column cols[8] = {{"loss", loss},           {"lr", "%.6g"},       {"ms_per_step", "%.3f"},
                                       {"tokens_per_s", "%.1f"}, {"train_loss", loss}, {"val_loss", loss},
                                       {"train_bpb", loss},      {"val_bpb", loss}};
    tg_metrics *m = tg_metrics_open(path, cols, 8, resume_step, notice, sizeof notice, err);
    if (m && notice[0]) tg_run_notify(say, TG_RUN_NOTICE, "%s", notice);
    return m;
}

int tg_run_metrics_write(tg_metrics *m, const tg_run_row *r)
{
    const double v[8] = {r->loss, r->lr, r->ms, r->tokens_per_s, r->train, r->val, r->train_bpb, r->val_bpb};
    return tg_metrics_write(m, r->step, v);
}

int tg_run_loss_format(const tg_run_loss *l, char *buf, size_t size)
{
    if (!l || !buf || !size) return -1;
    char bpb[80];
    if (isnan(l->val_bpb)) snprintf(bpb, sizeof bpb, "no bits per byte: token ids without a tokenizer");
    else snprintf(bpb, sizeof bpb, "%.4f bits per byte", l->val_bpb);
    const int n =
        snprintf(buf, size, "step %lld: train loss %.4f, val loss %.4f (%s)%s%s%s", (long long)l->step, l->train,
                 l->val, bpb, l->weights ? " of the " : "", l->weights ? l->weights : "", l->weights ? " weights" : "");
    return n < 0 || (size_t)n >= size ? -1 : 0;
}
