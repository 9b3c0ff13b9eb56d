/* Opening and reading regular files whole (file_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "file_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
        *why = S_ISREG(st.st_mode) ? "too large" : "not a regular file";   /* replaced since the stat */
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
