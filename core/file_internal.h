/* tapegrad (internal): opening a file another program wrote, to read it
 * whole. A reader of outside files must refuse what is not a regular
 * file before reading: a FIFO would block its open (and a read waits for
 * a writer), a device such as /dev/zero never ends, and a directory's
 * "size" is no length of data. */
#ifndef TG_FILE_INTERNAL_H
#define TG_FILE_INTERNAL_H

#include <stddef.h>

/* Opens path read-only when it is a regular file, without blocking: it is
 * looked at (stat) before it is opened, then opened with O_NONBLOCK (so
 * a FIFO put in its place meanwhile cannot block) and looked at again
 * (fstat) before O_NONBLOCK is cleared. The descriptor (close-on-exec),
 * with *size the file's length; or -1 with *why the reason:
 * "not a regular file", "too large" (beyond SIZE_MAX - 1 bytes), or
 * strerror's sentence. */
int tg_open_regular(const char *path, size_t *size, const char **why);
/* Reads exactly n bytes from fd into buf (retrying short reads and
 * EINTR). 0, or -1 with *why "the file shrank while being read" (end of
 * file first) or strerror's sentence. */
int tg_read_exact(int fd, void *buf, size_t n, const char **why);

#endif
