/* All-or-nothing output files, the output directory, and a text buffer
 * (see files.h). */
#define _DEFAULT_SOURCE   /* flock */
#include "files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The mode a new file would get, or the mode of the file it replaces. */
static mode_t target_mode(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return st.st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int staged_add(staged_files *s, const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        char **tmp = realloc(s->tmp, (size_t)cap * sizeof *tmp);
        if (tmp) s->tmp = tmp;
        char **pth = tmp ? realloc(s->path, (size_t)cap * sizeof *pth) : NULL;
        if (pth) s->path = pth;
        if (!tmp || !pth) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        s->cap = cap;
    }
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp.XXXXXX"), *final = dup_str(path);
    if (!tmp || !final) {
        free(tmp);
        free(final);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    mode_t mode = target_mode(path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a file there: %s", path, strerror(errno));
        free(tmp);
        free(final);
        return -1;
    }
    const char *step = "write";
    FILE *fp = fdopen(fd, "wb");
    bool ok = fp != NULL;
    if (!fp) {
        step = "open";
        close(fd);
    }
    int e = 0;
    if (ok) ok = fwrite(data, 1, len, fp) == len;
    if (ok) ok = fflush(fp) == 0;
    if (ok) {
        step = "chmod";
        ok = fchmod(fileno(fp), mode) == 0;
    }
    if (!ok) e = errno;
    if (fp && fclose(fp) != 0 && ok) {
        ok = false;
        e = errno;
        step = "close";
    }
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "%s: %s failed: %s", path, step, e ? strerror(e) : "unknown error");
        free(tmp);
        free(final);
        return -1;
    }
    s->tmp[s->n] = tmp;
    s->path[s->n] = final;
    s->n++;
    return 0;
}

static void staged_free(staged_files *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->tmp[i]);
        free(s->path[i]);
    }
    free(s->tmp);
    free(s->path);
    memset(s, 0, sizeof *s);
}

void staged_abort(staged_files *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->tmp[i]) unlink(s->tmp[i]);
    staged_free(s);
}

int staged_commit(staged_files *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->n; i++) {
        if (rename(s->tmp[i], s->path[i]) != 0) {
            snprintf(err, errlen, "%s: rename into place failed: %s", s->path[i], strerror(errno));
            staged_abort(s);
            return -1;
        }
        free(s->tmp[i]);
        s->tmp[i] = NULL;
    }
    staged_free(s);
    return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    staged_files s = {0};
    if (staged_add(&s, path, data, len, err, errlen)) {
        staged_abort(&s);
        return -1;
    }
    return staged_commit(&s, err, errlen);
}

/* ---- the output directory ------------------------------------------------ */

/* name is "<one of names>.tmp." and six characters, as mkstemp makes them */
static bool is_stale_temp(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (strncmp(name, names[i], l) || strncmp(name + l, ".tmp.", 5) || strlen(name + l + 5) != 6) continue;
        bool ok = true;
        for (const char *p = name + l + 5; *p; p++)
            ok &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (ok) return true;
    }
    return false;
}

int outdir_claim(const char *dir, const char *const *names, int n, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "--out %s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "--out %s: %s", dir, errno == ENOTDIR ? "exists and is not a directory" : strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "--out %s: %s", dir,
                 errno == EWOULDBLOCK ? "another tiny_gpt is training in this directory" : strerror(errno));
        close(fd);
        return -1;
    }
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!is_stale_temp(e->d_name, names, n)) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) fprintf(stderr, "tiny_gpt: removed %s, left by a run stopped while saving\n", path);
    }
    if (d) closedir(d);
    return fd;
}

/* ---- text buffer -------------------------------------------------------- */

static bool tb_reserve(textbuf *b, size_t extra)
{
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void tb_put(textbuf *b, const char *s, size_t n)
{
    if (!tb_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void tb_puts(textbuf *b, const char *s) { tb_put(b, s, strlen(s)); }

void tb_printf(textbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !tb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tb_free(textbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
