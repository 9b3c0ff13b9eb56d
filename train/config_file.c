/* A config file (train/run_settings.h): `name = value` lines read into
 * names and values, bounded by TG_CONFIG_FILE_MAX. */
#include "run_settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "run_internal.h"

/* The bytes at path, NUL-terminated, if there are at most
 * TG_CONFIG_FILE_MAX. Opened without blocking (a FIFO without a writer
 * would wait for one forever), then read as usual. */
static char *read_bounded(const char *path, size_t *len, tg_error *err)
{
    const int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return tg_error_set(err, "%s: %s", path, strerror(errno)), NULL;
    struct stat st;
    const bool sized = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (sized && st.st_size > TG_CONFIG_FILE_MAX) {
        close(fd);
        return tg_error_set(err,
                            "%s: %lld bytes; a config file holds at most 1 MiB (%d bytes) of 'name = value' "
                            "lines",
                            path, (long long)st.st_size, TG_CONFIG_FILE_MAX),
               NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    char *buf = tg_malloc((size_t)TG_CONFIG_FILE_MAX + 2);
    size_t n = 0;
    ssize_t got = 1;
    while (buf && n <= TG_CONFIG_FILE_MAX && (got = read(fd, buf + n, (size_t)TG_CONFIG_FILE_MAX + 1 - n)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (!buf) return tg_error_set(err, "%s: out of memory", path), NULL;
    if (got < 0 || n > TG_CONFIG_FILE_MAX) {
        if (got < 0) tg_error_set(err, "%s: %s", path, strerror(errno));
        else
            tg_error_set(err,
                         "%s: more than %d bytes; a config file holds at most 1 MiB (%d bytes) of 'name = "
                         "value' lines",
                         path, TG_CONFIG_FILE_MAX, TG_CONFIG_FILE_MAX);
        tg_free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* s without the spaces, tabs and carriage returns at its ends (cut in place). */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    *e = 0;
    return s;
}

int tg_config_file_read(tg_config_file *f, const char *path, tg_error *err)
{
    if (!f || !path) return tg_error_set(err, "config_file_read: %s is NULL", f ? "the path" : "the file");
    memset(f, 0, sizeof *f);
    size_t len;
    if (!(f->text = read_bounded(path, &len, err))) return -1;
    if (memchr(f->text, 0, len)) {
        tg_config_file_release(f);
        return tg_error_set(err, "%s: not a text file (it holds a NUL byte)", path);
    }
    const bool bom = len >= 3 && !memcmp(f->text, "\xef\xbb\xbf", 3);
    int lineno = 0, cap = 0;
    for (char *line = f->text + (bom ? 3 : 0), *next; *line; line = next) {
        lineno++;
        if ((next = strchr(line, '\n'))) *next++ = 0;
        else next = line + strlen(line);
        bool quoted = false;
        for (char *p = line; *p; p++) {
            if (*p == '"') quoted = !quoted;
            if (*p == '#' && !quoted) {
                *p = 0;
                break;
            }
        }
        char *eq = strchr(line, '=');
        if (eq) *eq = 0;
        char *name = trim(line);
        if (!*name && !eq) continue; /* blank, or a comment */
        if (!eq || !*name) {
            char b[TG_RUN_SHOWN];
            if (eq) *eq = '=';
            tg_error_set(err, "%s:%d: expected 'name = value', got '%s'", path, lineno, tg_run_shown(line, b));
            tg_config_file_release(f);
            return -1;
        }
        char *v = trim(eq + 1);
        const size_t vl = strlen(v);
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') v[vl - 1] = 0, v++;
        if (!strncmp(name, "--", 2)) name += 2;
        if (f->n == cap) {
            tg_config_line *grown = tg_realloc(f->lines, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *grown);
            if (!grown) {
                tg_config_file_release(f);
                return tg_error_set(err, "%s: out of memory", path);
            }
            f->lines = grown;
        }
        f->lines[f->n++] = (tg_config_line){name, v, lineno};
    }
    return 0;
}

void tg_config_file_release(tg_config_file *f)
{
    if (!f) return;
    tg_free(f->text);
    tg_free(f->lines);
    memset(f, 0, sizeof *f);
}
