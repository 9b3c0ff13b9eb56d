/* tapegrad (internal): what the library's own code uses to write its
 * messages: core/error.h's tg_error, and a message for a (char *err,
 * size_t errlen) buffer, the channel the training layer's functions take
 * (train/train.h) until they move to tg_error too. */
#ifndef TG_ERR_INTERNAL_H
#define TG_ERR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* Formats into err (truncated, always NUL-terminated); writes nothing when
 * err is NULL or errlen is 0. Returns -1, so that a function can
 * `return tg_error_set(err, ...)`. */
static inline int tg_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int tg_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A tg_error as the (char *err, size_t errlen) pair of a training-layer
 * function: its message buffer, or NULL and 0 for a NULL e. */
#define TG_ERR_BUF(e) ((e) ? (e)->msg : NULL), ((e) ? sizeof(e)->msg : 0)

/* Text from outside (a file's value) as a message shows it: its first 60
 * bytes, those outside printable ASCII as \xNN, "..." after when it is
 * longer. Returns buf. */
#define TG_SHOWN_SIZE (4 * 60 + 4)
static inline const char *tg_shown(const char *s, char buf[TG_SHOWN_SIZE])
{
    size_t o = 0, i = 0;
    for (; s[i] && i < 60; i++)
        o += (size_t)snprintf(buf + o, TG_SHOWN_SIZE - o, s[i] >= 32 && s[i] < 127 ? "%c" : "\\x%02x",
                              (unsigned char)s[i]);
    snprintf(buf + o, TG_SHOWN_SIZE - o, "%s", s[i] ? "..." : "");
    return buf;
}

#endif
