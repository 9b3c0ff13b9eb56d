/* All-or-nothing output files, the checkpoint --ckpt names, and a text
 * buffer (see files.h). */
#include "files.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (tg_atomic_begin(f, path) != 0 || tg_atomic_write(f, data, len) != 0 || tg_atomic_finish(f) != 0) {
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
        if (tg_atomic_commit(&s->files[i]) != 0) {
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

/* ---- the checkpoint --ckpt names ---------------------------------------- */

const char *ckpt_resolve(const char *path, const char *cmd, char *buf, size_t size, char *err, size_t errlen)
{
    tg_error e = {0};
    tg_run_file which;
    const char *got = tg_run_checkpoint(path, buf, size, &which, &e);
    if (!got) {
        snprintf(err, errlen, "--ckpt %s", e.msg);
        return NULL;
    }
    if (which != TG_RUN_FILE_GIVEN)
        fprintf(stderr, "tiny_gpt %s: %s is a run's directory: reading %s (%s)\n", cmd, path, got,
                which == TG_RUN_FILE_LAST ? "its latest weights; it has no best.safetensors"
                                          : "its best weights by val loss");
    return got;
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
