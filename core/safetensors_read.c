/* safetensors files: the validating reader (copying into tapegrad tensors
 * is safetensors_convert.c, the writer safetensors_write.c).
 *
 * File layout (https://github.com/huggingface/safetensors, the format
 * PyTorch users exchange weights in):
 *
 *   bytes [0, 8)          N, the header length, a little-endian u64
 *   bytes [8, 8+N)        UTF-8 JSON object, optionally padded with
 *                         trailing spaces:
 *                           {"__metadata__": {"key": "value", ...},
 *                            "name": {"dtype": "F32", "shape": [2, 3],
 *                                     "data_offsets": [begin, end]}, ...}
 *   bytes [8+N, size)     the data section; tensor "name" is the bytes
 *                         [begin, end) of it, row-major, little-endian.
 *
 * Rules the reader enforces (each failure its own message in err):
 * end - begin = numel * dtype size (numel = product of the shape, 1 for
 * shape []); ranges lie inside the data section; no two ranges overlap;
 * together they cover the whole data section (no holes); names are unique;
 * metadata values are strings. Integers in the JSON must be exact
 * non-negative integers below 2^53 (cJSON reads numbers as doubles, so
 * "2.0" is taken as 2; larger values are rejected as inexact).
 *
 * The reader loads the whole file into one buffer; tensors point into it.
 * cJSON parses the header. Its allocations are NOT routed through
 * tg_malloc: cJSON_InitHooks is process-global and would replace the
 * hooks of an application that uses cJSON itself. cJSON's tree is freed
 * before tg_st_load returns, so nothing of it outlives the call. */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "err_internal.h"
#include "file_internal.h"
#include "safetensors_internal.h"
#include "stb_ds_internal.h"

/* ---- reading ----------------------------------------------------------- */

struct tg_st_file {
    unsigned char *buf; /* the whole file */
    size_t size;
    tg_st_tensor *tensors; /* stb_ds array, in header order */
    st_name_index *by_name; /* stb_ds string map (owns the names) */
    st_meta_entry *meta; /* stb_ds string map (owns keys and values) */
};

/* Load context: every message starts "safetensors: <path>: ". */
typedef struct loader {
    const char *path;
    tg_error *err;
} loader;

static int lfail(const loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lfail(const loader *L, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tg_error_set(L->err, "safetensors: %s: %s", L->path, msg);
}

/* Reads the whole regular file into a new buffer (anything else is
 * refused before it is opened for reading: file_internal.h). */
static int read_whole(const loader *L, unsigned char **out, size_t *out_size)
{
    const char *why = NULL;
    size_t size = 0;
    const int fd = tg_open_regular(L->path, &size, &why);
    if (fd < 0) return lfail(L, "%s%s", strcmp(why, "not a regular file") ? "cannot open: " : "", why);
    /* a large file's buffer in 2 MiB pages (tg_malloc_big): a few faults
     * instead of one per 4 KiB page as read() fills it, which in a VM were
     * most of the time reading a 60 MB checkpoint took */
    size_t cap = size;
    unsigned char *buf = tg_malloc_big(&cap);
    if (!buf) {
        close(fd);
        return lfail(L, "out of memory reading %zu bytes", size);
    }
    const int rc = tg_read_exact(fd, buf, size, &why);
    close(fd);
    if (rc) {
        tg_free(buf);
        return lfail(L, "read failed: %s", why);
    }
    *out = buf;
    *out_size = size;
    return 0;
}

/* An exact non-negative integer JSON number (below 2^53: a double
 * holds every such integer, but 2^53 + 1 parses as 2^53). */
static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d < ST_MAX_EXACT) || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}

/* What a bad JSON value is, for messages: the number, or its kind. */
static const char *json_desc(const cJSON *v, char *buf, size_t size)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, size, v->valuedouble >= ST_MAX_EXACT ? "%.17g (2^53 or more: not exact)" : "%.17g",
                 v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(buf, size, "a string");
    else if (cJSON_IsArray(v)) snprintf(buf, size, "an array");
    else if (cJSON_IsObject(v)) snprintf(buf, size, "an object");
    else if (cJSON_IsBool(v)) snprintf(buf, size, "a boolean");
    else snprintf(buf, size, "null");
    return buf;
}

typedef struct st_range {
    uint64_t begin, end;
    int idx;
} st_range;

/* Parses and checks one tensor entry; fills t (but name) and its range. */
static int parse_entry(const loader *L, const cJSON *e, uint64_t data_size, const unsigned char *data, tg_st_tensor *t,
                       st_range *r)
{
    const char *name = e->string;
    if (!cJSON_IsObject(e)) return lfail(L, "tensor '%s': entry is not an object", name);
    const cJSON *fdt = NULL, *fsh = NULL, *fof = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
        const cJSON **slot = strcmp(f->string, "dtype") == 0 ? &fdt
            : strcmp(f->string, "shape") == 0                ? &fsh
            : strcmp(f->string, "data_offsets") == 0         ? &fof
                                                             : NULL;
        if (!slot) return lfail(L, "tensor '%s': unexpected field \"%s\"", name, f->string);
        if (*slot) return lfail(L, "tensor '%s': field \"%s\" appears twice", name, f->string);
        *slot = f;
    }
    if (!fdt) return lfail(L, "tensor '%s': missing field \"dtype\"", name);
    if (!fsh) return lfail(L, "tensor '%s': missing field \"shape\"", name);
    if (!fof) return lfail(L, "tensor '%s': missing field \"data_offsets\"", name);

    if (!cJSON_IsString(fdt)) return lfail(L, "tensor '%s': \"dtype\" is not a string", name);
    int k = st_dtype_find(fdt->valuestring);
    if (k < 0) return lfail(L, "tensor '%s': unknown dtype \"%s\"", name, fdt->valuestring);

    if (!cJSON_IsArray(fsh)) return lfail(L, "tensor '%s': \"shape\" is not an array", name);
    int ndim = cJSON_GetArraySize(fsh);
    if (ndim > TG_ST_MAX_DIMS)
        return lfail(L, "tensor '%s': shape has %d dimensions, more than %d", name, ndim, TG_ST_MAX_DIMS);
    char desc[64];
    uint64_t numel = 1;
    bool overflow = false;
    int d = 0;
    for (const cJSON *s = fsh->child; s; s = s->next, d++) {
        uint64_t v;
        if (!json_uint(s, &v))
            return lfail(L, "tensor '%s': shape[%d] must be a non-negative integer, got %s", name, d,
                         json_desc(s, desc, sizeof desc));
        t->shape[d] = (int64_t)v;
        if (v && numel > (uint64_t)INT64_MAX / v) overflow = true; /* as the reference: no early 0 */
        else numel *= v;
    }
    t->ndim = ndim;
    size_t es = ST_DTYPES[k].size;
    char sh[160];
    if (overflow || numel > (uint64_t)INT64_MAX / es)
        return lfail(L, "tensor '%s': shape %s of %s overflows: element count times %zu bytes exceeds 2^63", name,
                     st_shape_str(ndim, t->shape, sh, sizeof sh), ST_DTYPES[k].name, es);
    uint64_t nbytes = numel * es;

    uint64_t b, en;
    if (!cJSON_IsArray(fof) || cJSON_GetArraySize(fof) != 2 || !json_uint(fof->child, &b) ||
        !json_uint(fof->child->next, &en))
        return lfail(L, "tensor '%s': \"data_offsets\" must be [begin, end], two non-negative integers", name);
    if (b > en) return lfail(L, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] have begin > end", name, b, en);
    if (en - b != nbytes)
        return lfail(
            L, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64 " bytes but %s %s needs %" PRIu64,
            name, b, en, en - b, ST_DTYPES[k].name, st_shape_str(ndim, t->shape, sh, sizeof sh), nbytes);
    if (en > data_size)
        return lfail(L,
                     "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                     "] run past the end of the data section (%" PRIu64 " bytes)",
                     name, b, en, data_size);
    t->dtype = ST_DTYPES[k].name;
    t->numel = (int64_t)numel;
    t->data = data + b;
    t->nbytes = (size_t)nbytes;
    r->begin = b;
    r->end = en;
    return 0;
}

static int parse_meta(const loader *L, tg_st_file *f, const cJSON *m)
{
    if (!cJSON_IsObject(m)) return lfail(L, "__metadata__ is not an object");
    for (const cJSON *v = m->child; v; v = v->next) {
        if (!cJSON_IsString(v)) return lfail(L, "__metadata__ value for '%s' is not a string", v->string);
        if (stbds_shgeti(f->meta, v->string) >= 0) return lfail(L, "__metadata__ key '%s' appears twice", v->string);
        char *val = st_strdup(v->valuestring);
        if (!val) return lfail(L, "out of memory");
        stbds_shput(f->meta, v->string, val);
    }
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const st_range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Sorted by (begin, end), the ranges must tile [0, data_size) exactly. */
static int check_tiling(const loader *L, const tg_st_file *f, st_range *r, uint64_t data_size)
{
    ptrdiff_t n = stbds_arrlen(r);
    if (n) qsort(r, (size_t)n, sizeof *r, range_cmp);
    uint64_t at = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        if (r[i].begin < at)
            return lfail(L, "tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64 ", %" PRIu64 "] overlap",
                         f->tensors[r[i - 1].idx].name, r[i - 1].begin, r[i - 1].end, f->tensors[r[i].idx].name,
                         r[i].begin, r[i].end);
        if (r[i].begin > at)
            return lfail(L, "data section bytes [%" PRIu64 ", %" PRIu64 ") are covered by no tensor", at, r[i].begin);
        at = r[i].end;
    }
    if (at < data_size)
        return lfail(L, "data section bytes [%" PRIu64 ", %" PRIu64 ") are covered by no tensor", at, data_size);
    return 0;
}

static int parse_header(const loader *L, tg_st_file *f, const cJSON *root, uint64_t data_size,
                        const unsigned char *data)
{
    if (!cJSON_IsObject(root)) return lfail(L, "header is not a JSON object");
    st_range *ranges = NULL;
    bool seen_meta = false;
    int rc = 0;
    for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (seen_meta) rc = lfail(L, "__metadata__ appears twice");
            else rc = parse_meta(L, f, e);
            seen_meta = true;
            continue;
        }
        if (stbds_shgeti(f->by_name, e->string) >= 0) {
            rc = lfail(L, "tensor name '%s' appears twice", e->string);
            break;
        }
        tg_st_tensor t = {0};
        st_range r = {0};
        rc = parse_entry(L, e, data_size, data, &t, &r);
        if (rc) break;
        r.idx = (int)stbds_arrlen(f->tensors);
        stbds_shput(f->by_name, e->string, r.idx);
        t.name = stbds_shgets(f->by_name, e->string).key; /* the map's own copy */
        stbds_arrput(f->tensors, t);
        stbds_arrput(ranges, r);
    }
    if (rc == 0) rc = check_tiling(L, f, ranges, data_size);
    stbds_arrfree(ranges);
    return rc;
}

static bool json_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

tg_st_file *tg_st_load(const char *path, tg_error *err)
{
    loader L = {path ? path : "(null)", err};
    if (!path) {
        lfail(&L, "path is NULL");
        return NULL;
    }
    tg_st_file *f = tg_calloc(1, sizeof *f);
    if (!f) {
        lfail(&L, "out of memory");
        return NULL;
    }
    stbds_sh_new_strdup(f->by_name);
    stbds_sh_new_strdup(f->meta);
    if (read_whole(&L, &f->buf, &f->size) != 0) goto fail;
    if (f->size < 8) {
        lfail(&L, "file is %zu bytes, too short for the 8-byte header length", f->size);
        goto fail;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->buf[i];
    if (n > ST_MAX_HEADER) {
        lfail(&L, "header length %" PRIu64 " is absurdly large (the limit is %u bytes)", n, ST_MAX_HEADER);
        goto fail;
    }
    if (n > f->size - 8) {
        lfail(&L, "header length %" PRIu64 " runs past the end of the file (%zu bytes after the length)", n,
              f->size - 8);
        goto fail;
    }
    const unsigned char *hdr = f->buf + 8;
    size_t bad = st_utf8_bad_at(hdr, (size_t)n);
    if (bad < n) {
        lfail(&L, "header is not valid UTF-8 (byte %zu)", bad);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) /* JSON allows no raw control bytes; cJSON would let them into strings */
        if (hdr[i] < 0x20 && !json_space(hdr[i])) {
            lfail(&L, "header has control byte 0x%02x at byte %zu, which JSON does not allow", hdr[i], i);
            goto fail;
        }

    /* cJSON gets its own NUL-terminated copy: it never reads past it */
    char *text = tg_malloc((size_t)n + 1);
    if (!text) {
        lfail(&L, "out of memory");
        goto fail;
    }
    memcpy(text, hdr, (size_t)n);
    text[n] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)n, &end, 0);
    int rc;
    if (!root) {
        rc = lfail(&L, "header is not valid JSON (error near byte %td)", end ? end - text : (ptrdiff_t)0);
    } else {
        size_t at = (size_t)(end - text);
        while (at < n && json_space((unsigned char)text[at])) at++;
        if (at < n) rc = lfail(&L, "header has bytes after the JSON value (byte %zu)", at);
        else rc = parse_header(&L, f, root, f->size - 8 - n, hdr + n);
    }
    cJSON_Delete(root);
    tg_free(text);
    if (rc == 0) return f;
fail:
    tg_st_free(f);
    return NULL;
}

void tg_st_free(tg_st_file *f)
{
    if (!f) return;
    stbds_arrfree(f->tensors);
    stbds_shfree(f->by_name);
    st_meta_free(f->meta);
    tg_free(f->buf);
    tg_free(f);
}

int tg_st_count(const tg_st_file *f) { return f ? (int)stbds_arrlen(f->tensors) : 0; }

const tg_st_tensor *tg_st_at(const tg_st_file *f, int i)
{
    return f && i >= 0 && i < tg_st_count(f) ? &f->tensors[i] : NULL;
}

const tg_st_tensor *tg_st_find(const tg_st_file *f, const char *name)
{
    if (!f || !name) return NULL;
    ptrdiff_t i = stbds_shgeti(((tg_st_file *)f)->by_name, name);
    return i < 0 ? NULL : &f->tensors[f->by_name[i].value];
}

const char *tg_st_meta(const tg_st_file *f, const char *key)
{
    if (!f || !key) return NULL;
    ptrdiff_t i = stbds_shgeti(((tg_st_file *)f)->meta, key);
    return i < 0 ? NULL : f->meta[i].value;
}

int tg_st_meta_count(const tg_st_file *f) { return f ? (int)stbds_shlen(f->meta) : 0; }

const char *tg_st_meta_at(const tg_st_file *f, int i, const char **value)
{
    if (value) *value = NULL;
    if (i < 0 || i >= tg_st_meta_count(f)) return NULL;
    if (value) *value = f->meta[i].value;
    return f->meta[i].key;
}
