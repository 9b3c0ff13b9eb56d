/* tapegrad core: writing a tg_error (error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int tg_error_set(tg_error *e, const char *fmt, ...)
{
    if (!e || !fmt) return -1;
    char buf[TG_ERROR_SIZE]; /* the arguments may include e->msg itself */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(e->msg, buf, sizeof buf);
    return -1;
}

int tg_error_prefix(tg_error *e, const char *prefix)
{
    if (!e || !prefix) return -1;
    return tg_error_set(e, "%s: %s", prefix, e->msg);
}

bool tg_error_failed(const tg_error *e) { return e && e->msg[0]; }
