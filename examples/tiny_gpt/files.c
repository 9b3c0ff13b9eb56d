/* All-or-nothing output files, the output directory, and a text buffer
 * (see files.h). */
#define _DEFAULT_SOURCE   /* flock */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* tiny_gpt's words for what failed. */
static void file_error(const tg_atomic_file *f, const char *path, char *err, size_t errlen)
{
    const char *why = f->errnum ? strerror(f->errnum) : "unknown error";
    if (!strcmp(f->step, "create")) snprintf(err, errlen, "%s: cannot create a file there: %s", path, why);
    else if (!strcmp(f->step, "allocate")) snprintf(err, errlen, "%s: out of memory", path);
    else if (!strcmp(f->step, "rename")) snprintf(err, errlen, "%s: rename into place failed: %s", path, why);
    else snprintf(err, errlen, "%s: %s failed: %s", path, f->step, why);
}

int staged_add(staged_files *s, const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        tg_atomic_file *files = realloc(s->files, (size_t)cap * sizeof *files);
        if (!files) {
            snprintf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        s->files = files;
        s->cap = cap;
    }
    tg_atomic_file *f = &s->files[s->n];
    if (tg_atomic_begin(f, path, NULL) != 0 || tg_atomic_write(f, data, len, NULL) != 0 ||
        tg_atomic_finish(f, NULL) != 0) {
        file_error(f, path, err, errlen);
        tg_atomic_abort(f);
        return -1;
    }
    s->n++;
    return 0;
}

void staged_abort(staged_files *s)
{
    for (int i = 0; i < s->n; i++) tg_atomic_abort(&s->files[i]);   /* a committed one: nothing */
    free(s->files);
    memset(s, 0, sizeof *s);
}

int staged_commit(staged_files *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->n; i++) {
        if (tg_atomic_commit(&s->files[i], NULL) != 0) {
            file_error(&s->files[i], s->files[i].path, err, errlen);
            staged_abort(s);   /* the files not yet renamed are removed */
            return -1;
        }
    }
    staged_abort(s);
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

/* name is "<one of names>.tmp.", the writer's pid and ".", then six
 * characters as mkstemp makes them (tg_atomic_file's temporaries); or
 * without the pid, as older versions named them */
static bool is_stale_temp(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (strncmp(name, names[i], l) || strncmp(name + l, ".tmp.", 5)) continue;
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

int outdir_claim(const char *dir, const char *const *names, int n, bool *made, char *err, size_t errlen)
{
    *made = mkdir(dir, 0777) == 0;
    if (!*made && errno != EEXIST) {
        snprintf(err, errlen, "--out %s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "--out %s: %s", dir, errno == ENOTDIR ? "exists and is not a directory" : strerror(errno));
        if (*made) rmdir(dir);
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

const char *ckpt_resolve(const char *path, const char *cmd, char *buf, size_t size, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return path;   /* the loader names what is wrong with it */
    static const char *const picks[] = {"best.safetensors", "last.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(buf, size, "%s/%s", path, picks[i]);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            fprintf(stderr, "tiny_gpt %s: %s is a run's directory: reading %s (%s)\n", cmd, path, buf,
                    i ? "its latest weights; it has no best.safetensors" : "its best weights by val loss");
            return buf;
        }
    }
    snprintf(err, errlen, "--ckpt %s is a directory without best.safetensors or last.safetensors (what tiny_gpt "
                          "train writes into --out): give a checkpoint file or a run's directory", path);
    return NULL;
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
