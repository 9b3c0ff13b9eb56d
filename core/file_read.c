/* Opening and reading regular files whole (file.h, file_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_internal.h"

int tg_open_regular(const char *path, size_t *size, const char **why)
{
    struct stat st;
    if (stat(path, &st) != 0) return *why = strerror(errno), -1;
    if (!S_ISREG(st.st_mode)) return *why = "not a regular file", -1;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return *why = strerror(errno), -1;
    int flags;
    if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        *why = strerror(errno);
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uintmax_t)st.st_size > SIZE_MAX - 1) {
        *why = S_ISREG(st.st_mode) ? "too large" : "not a regular file"; /* replaced since the stat */
        close(fd);
        return -1;
    }
    *size = (size_t)st.st_size;
    return fd;
}

int tg_read_exact(int fd, void *buf, size_t n, const char **why)
{
    for (size_t got = 0; got < n;) {
        const ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return *why = strerror(errno), -1;
        if (k == 0) return *why = "the file shrank while being read", -1;
        got += (size_t)k;
    }
    return 0;
}

char *tg_file_read(const char *path, size_t *len, tg_error *err)
{
    if (!path || !len) {
        tg_error_set(err, "file_read: %s is NULL", path ? "len" : "the path");
        return NULL;
    }
    /* only st_size bytes of a regular file: a FIFO, a device or a
     * directory is refused before anything is read or allocated */
    const char *why = NULL;
    size_t n = 0;
    const int fd = tg_open_regular(path, &n, &why);
    if (fd < 0) {
        tg_error_set(err, "%s: %s", path, why);
        return NULL;
    }
    char *buf = malloc(n + 1);
    if (!buf) {
        tg_error_set(err, "%s: out of memory for its %zu bytes", path, n);
    } else if (tg_read_exact(fd, buf, n, &why)) {
        tg_error_set(err, "%s: %s", path, why);
        free(buf);
        buf = NULL;
    } else {
        buf[n] = 0;
        *len = n;
    }
    close(fd);
    return buf;
}
