/* Files written all or nothing (see atomic_file.h): a temporary file
 * beside the path, named with the writer's pid, renamed over it once
 * whole and on the disk; and the temporaries of the same path that dead
 * writers left behind, removed when the path is written again. */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "err_internal.h"

#define TMP_MARK ".tmp."
#define TMP_RANDOM "XXXXXX"

/* The mode a new file gets from open(2): 0666 minus the umask (mkstemp
 * makes 0600). An existing file keeps its own mode. */
static mode_t target_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* The directory path is in, malloc'd: "." for a bare name, "/" for one
 * at the root. NULL when out of memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    const size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = tg_malloc(n + 1);
    if (!dir) return NULL;
    memcpy(dir, slash ? path : ".", n);
    dir[n] = 0;
    return dir;
}

/* Best effort: make the rename itself durable. */
static void sync_dir_of(const char *path)
{
    char *dir = dir_of(path);
    int fd = dir ? open(dir, O_RDONLY) : -1;
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    tg_free(dir);
}

/* The pid in a temporary's name: name is base, ".tmp.", a pid in decimal
 * (no leading zero), "." and six letters or digits, as mkstemp makes
 * them; else 0. */
static pid_t temp_owner(const char *name, const char *base, size_t blen)
{
    if (strncmp(name, base, blen) || strncmp(name + blen, TMP_MARK, sizeof TMP_MARK - 1)) return 0;
    const char *p = name + blen + sizeof TMP_MARK - 1;
    intmax_t pid = 0;
    if (*p < '1' || *p > '9') return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((pid = pid * 10 + (*p - '0')) > INT32_MAX) return 0;
    if (*p++ != '.' || strlen(p) != sizeof TMP_RANDOM - 1) return 0;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return 0;
    return (pid_t)pid;
}

/* Best effort: removes the temporaries of path whose writer is gone (a
 * kill during a write leaves one): those whose pid is no process's
 * (kill(pid, 0) fails with ESRCH). A live writer's, this process's
 * included, stays; so does a file of any other name. */
static void remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const size_t blen = strlen(base);
    char *dir = blen ? dir_of(path) : NULL;
    if (!dir) return;
    DIR *d = opendir(dir);
    const size_t dlen = strlen(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const pid_t pid = temp_owner(e->d_name, base, blen);
        if (!pid || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
        char *full = tg_malloc(dlen + strlen(e->d_name) + 2);
        if (!full) break;
        memcpy(full, dir, dlen);
        full[dlen] = '/';
        memcpy(full + dlen + 1, e->d_name, strlen(e->d_name) + 1);
        (void)unlink(full);
        tg_free(full);
    }
    if (d) closedir(d);
    tg_free(dir);
}

/* Records the first failure; returns -1. */
static int failed(tg_atomic_file *f, const char *step, int errnum)
{
    if (!f->step) {
        f->step = step;
        f->errnum = errnum;
    }
    return -1;
}

/* After a failed step: closes and removes the temporary; the path stays
 * for the caller's message. */
static int drop_temp(tg_atomic_file *f, const char *step, int errnum)
{
    failed(f, step, errnum);
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    if (f->tmp) unlink(f->tmp);
    f->tmp = NULL;
    return -1;
}

/* A call on f may go on: f is open (or finished) and nothing has failed. */
static bool usable(tg_atomic_file *f)
{
    if (f->step) return false; /* the first failure sticks */
    if (f->tmp) return true;
    failed(f, "argument", EINVAL); /* never begun, released, or its temporary gone */
    return false;
}

/* The sentence for f's failure (f->step, f->errnum) writing its path, into
 * err; returns -1. */
static int report(const tg_atomic_file *f, tg_error *err)
{
    const char *path = f->path ? f->path : "(null)";
    const char *step = f->step;
    const char *why = f->errnum ? strerror(f->errnum) : "unknown error";
    if (!step) return tg_error_set(err, "'%s': nothing failed", path);
    if (!strcmp(step, "allocate")) return tg_error_set(err, "'%s': out of memory", path);
    if (!strcmp(step, "argument")) return tg_error_set(err, "'%s': a NULL argument, or the file is not open", path);
    if (!strcmp(step, "create"))
        return tg_error_set(err, "'%s': cannot create a temporary file beside it: %s", path, why);
    return tg_error_set(err, "'%s': %s of the temporary file failed: %s ('%s' left as it was)", path, step, why, path);
}

int tg_atomic_begin(tg_atomic_file *f, const char *path, tg_error *err)
{
    if (!f) return tg_error_set(err, "atomic_begin: the file is NULL");
    memset(f, 0, sizeof *f);
    if (!path) return failed(f, "argument", EINVAL), report(f, err);
    /* one buffer: "<path>\0<path>.tmp.<pid>.XXXXXX\0" */
    const size_t plen = strlen(path), tlen = plen + sizeof TMP_MARK + 24 + sizeof TMP_RANDOM;
    char *buf = tg_malloc(plen + 1 + tlen);
    if (!buf) return failed(f, "allocate", ENOMEM), tg_error_set(err, "'%s': out of memory", path);
    memcpy(buf, path, plen + 1);
    char *tmp = buf + plen + 1;
    snprintf(tmp, tlen, "%s" TMP_MARK "%jd." TMP_RANDOM, path, (intmax_t)getpid());
    f->path = buf;
    f->mode = (unsigned)target_mode(path);
    remove_stale(path);
    int fd = mkstemp(tmp);
    if (fd < 0) return failed(f, "create", errno), report(f, err);
    f->tmp = tmp;
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        return drop_temp(f, "fdopen", e), report(f, err);
    }
    return 0;
}

int tg_atomic_write(tg_atomic_file *f, const void *data, size_t n, tg_error *err)
{
    if (!f) return tg_error_set(err, "atomic_write: the file is NULL");
    if (!usable(f)) return report(f, err);
    if (!f->fp || (!data && n)) return drop_temp(f, "argument", EINVAL), report(f, err);
    if (n && fwrite(data, 1, n, f->fp) != n) return drop_temp(f, "write", errno), report(f, err);
    return 0;
}

int tg_atomic_finish(tg_atomic_file *f, tg_error *err)
{
    if (!f) return tg_error_set(err, "atomic_finish: the file is NULL");
    if (!usable(f)) return report(f, err);
    if (!f->fp) return 0; /* finished already */
    const char *step = "flush";
    bool ok = fflush(f->fp) == 0;
    if (ok) {
        step = "fchmod";
        ok = fchmod(fileno(f->fp), (mode_t)f->mode) == 0;
    }
    if (ok) {
        step = "fsync";
        ok = fsync(fileno(f->fp)) == 0;
    }
    int e = ok ? 0 : errno;
    if (fclose(f->fp) != 0 && ok) {
        step = "close";
        ok = false;
        e = errno;
    }
    f->fp = NULL;
    return ok ? 0 : (drop_temp(f, step, e), report(f, err));
}

int tg_atomic_commit(tg_atomic_file *f, tg_error *err)
{
    if (!f) return tg_error_set(err, "atomic_commit: the file is NULL");
    if (tg_atomic_finish(f, err) != 0) return -1;
    if (rename(f->tmp, f->path) != 0) return drop_temp(f, "rename", errno), report(f, err);
    f->tmp = NULL;
    sync_dir_of(f->path);
    tg_atomic_abort(f); /* nothing left to remove: releases f */
    return 0;
}

void tg_atomic_abort(tg_atomic_file *f)
{
    if (!f) return;
    if (f->fp) fclose(f->fp);
    if (f->tmp) unlink(f->tmp);
    tg_free((char *)f->path);
    f->fp = NULL;
    f->tmp = NULL;
    f->path = NULL;
}

int tg_atomic_write_file(const char *path, const void *data, size_t len, tg_error *err)
{
    if (!path) return tg_error_set(err, "atomic_write_file: the path is NULL");
    if (!data && len) return tg_error_set(err, "atomic_write_file: the data is NULL");
    tg_atomic_file f;
    tg_error e = {0};
    if (tg_atomic_begin(&f, path, &e) == 0 && tg_atomic_write(&f, data, len, &e) == 0 && tg_atomic_commit(&f, &e) == 0)
        return 0;
    tg_atomic_abort(&f);
    return tg_error_set(err, "atomic_write_file: %s", e.msg);
}
