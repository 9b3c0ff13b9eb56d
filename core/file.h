/* tapegrad core: reading a file whole. */
#ifndef TG_FILE_H
#define TG_FILE_H

#include <stddef.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a whole regular file, the length stat gives it, into a malloc'd
 * buffer with a NUL after its len bytes (free with free()). NULL with a
 * message naming the file; what is not a regular file (a FIFO, a device
 * such as /dev/zero, a directory) is "PATH: not a regular file", told
 * without blocking and before anything is read. */
TG_API char *tg_file_read(const char *path, size_t *len, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
