/* tapegrad core (internal): what the safetensors files share: the limits,
 * the format's dtype table and small helpers. Included by
 * safetensors_read.c, safetensors_convert.c and safetensors_write.c, and
 * by text/tok_file.c for tg_st_writer_fail. */
#ifndef TG_SAFETENSORS_INTERNAL_H
#define TG_SAFETENSORS_INTERNAL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "err_internal.h"
#include "safetensors.h"
#include "stb_ds_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tapegrad's safetensors I/O copies bytes as they are: it needs a little-endian machine"
#endif

/* Records msg as w's error, the way the writer's own checks do (the first
 * error sticks; tg_st_writer_save reports "safetensors: writer: " msg), for
 * a library function that adds to a caller's writer and finds its own
 * argument bad. Returns -1; nothing for a NULL w. */
int tg_st_writer_fail(tg_st_writer *w, const char *msg);

#define ST_MAX_HEADER 100000000u /* bytes; the reference reader's limit */
#define ST_MAX_EXACT 9007199254740992.0 /* 2^53: larger JSON numbers are inexact */

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
    const char *name;
    size_t size;
} ST_DTYPES[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8},
};
enum { ST_N_DTYPES = sizeof ST_DTYPES / sizeof ST_DTYPES[0] };

static inline int st_dtype_find(const char *name)
{
    for (int i = 0; i < ST_N_DTYPES; i++)
        if (strcmp(ST_DTYPES[i].name, name) == 0) return i;
    return -1;
}

/* ---- small helpers ------------------------------------------------------- */

/* "(2,3)" for an int64 shape. */
static inline char *st_shape_str(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, d ? ",%" PRId64 : "%" PRId64, shape[d]);
    if (at < size) snprintf(buf + at, size - at, ")");
    return buf;
}

/* Index of the first byte of s[0, n) that does not start a well-formed
 * UTF-8 sequence (overlong forms and surrogates are malformed), or n. */
static inline size_t st_utf8_bad_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t c = s[i], min;
        size_t len;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            min = 0x80;
            c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            min = 0x800;
            c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            min = 0x10000;
            c &= 0x07;
        } else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            c = c << 6 | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

static inline bool st_utf8_ok(const char *s)
{
    return st_utf8_bad_at((const unsigned char *)s, strlen(s)) == strlen(s);
}

typedef struct st_name_index {
    char *key;
    int value;
} st_name_index;
typedef struct st_meta_entry {
    char *key;
    char *value;
} st_meta_entry;

static inline char *st_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = tg_malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

static inline void st_meta_free(st_meta_entry *m)
{
    for (ptrdiff_t i = 0; i < stbds_shlen(m); i++) tg_free(m[i].value);
    stbds_shfree(m);
}

#endif
