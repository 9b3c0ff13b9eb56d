/* safetensors files: the atomic writer (the reader is safetensors_read.c;
 * the layout is described there).
 *
 * The writer builds the header by hand (integers printed exactly, strings
 * escaped), pads it with spaces to a multiple of 8 bytes, and lays the
 * data out contiguous, the tensors of 8-byte elements first, then 4, 2
 * and 1 (insertion order within each), as the reference writer does: so
 * every tensor starts at a multiple of its element size, and a reader
 * may load its elements in place (a U8 tokenizer piece table of odd
 * length before the weights would misalign them all). It writes the machine's bytes
 * as they are: the format is little-endian and so is every machine
 * tapegrad supports (checked at compile time in safetensors_internal.h).
 * The file is written all or nothing by atomic_file.c. */
#define _POSIX_C_SOURCE 200809L
#include "safetensors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "atomic_file.h"
#include "graph_fields_internal.h"
#include "safetensors_internal.h"
#include "stb_ds_internal.h"

/* ---- writing ------------------------------------------------------------- */

typedef struct w_entry {
    const char *name; /* the name map's copy */
    int dtype; /* index into ST_DTYPES */
    int ndim;
    int64_t shape[TG_ST_MAX_DIMS];
    uint64_t nbytes;
    const void *data; /* referenced, not copied */
} w_entry;

struct tg_st_writer {
    w_entry *entries; /* stb_ds array, insertion order */
    st_name_index *names; /* stb_ds string map */
    st_meta_entry *meta; /* stb_ds string map; iterates in insertion order */
    char error[512]; /* first error; sticks until the writer is freed */
};

static int wfail(tg_st_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wfail(tg_st_writer *w, const char *fmt, ...)
{
    if (w->error[0]) return -1; /* the first error sticks */
    char msg[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(w->error, sizeof w->error, "safetensors: writer: %s", msg);
    return -1;
}

int tg_st_writer_fail(tg_st_writer *w, const char *msg) { return w ? wfail(w, "%s", msg) : -1; }

tg_st_writer *tg_st_writer_new(void)
{
    tg_st_writer *w = tg_calloc(1, sizeof *w);
    if (!w) return NULL;
    stbds_sh_new_strdup(w->names);
    stbds_sh_new_strdup(w->meta);
    return w;
}

void tg_st_writer_free(tg_st_writer *w)
{
    if (!w) return;
    stbds_arrfree(w->entries);
    stbds_shfree(w->names);
    st_meta_free(w->meta);
    tg_free(w);
}

int tg_st_writer_add(tg_st_writer *w, const char *name, const char *dtype, int ndim, const int64_t *shape,
                     const void *data)
{
    if (!w) return -1;
    if (w->error[0]) return -1;
    if (!name || !*name) return wfail(w, "tensor name is empty");
    if (!st_utf8_ok(name)) return wfail(w, "tensor name is not valid UTF-8");
    if (strcmp(name, "__metadata__") == 0) return wfail(w, "tensor name '__metadata__' is reserved");
    if (stbds_shgeti(w->names, name) >= 0) return wfail(w, "duplicate tensor name '%s'", name);
    int k = dtype ? st_dtype_find(dtype) : -1;
    if (k < 0) return wfail(w, "tensor '%s': unknown dtype \"%s\"", name, dtype ? dtype : "(null)");
    if (ndim < 0 || ndim > TG_ST_MAX_DIMS || (ndim > 0 && !shape))
        return wfail(w, "tensor '%s': ndim %d must be 0..%d with a shape", name, ndim, TG_ST_MAX_DIMS);
    w_entry en = {.dtype = k, .ndim = ndim, .data = data};
    uint64_t numel = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; d++) {
        char sh[160];
        if (shape[d] < 0)
            return wfail(w, "tensor '%s': bad shape %s: dimensions must be >= 0", name,
                         st_shape_str(ndim, shape, sh, sizeof sh));
        uint64_t v = (uint64_t)shape[d];
        if (v && numel > (uint64_t)ST_MAX_EXACT / v) overflow = true;
        else numel *= v;
        en.shape[d] = shape[d];
    }
    if (overflow || numel > (uint64_t)ST_MAX_EXACT / ST_DTYPES[k].size)
        return wfail(w, "tensor '%s': too large (more than 2^53 bytes)", name);
    en.nbytes = numel * ST_DTYPES[k].size;
    if (!data && en.nbytes) return wfail(w, "tensor '%s': data is NULL", name);
    stbds_shput(w->names, name, (int)stbds_arrlen(w->entries));
    en.name = stbds_shgets(w->names, name).key;
    stbds_arrput(w->entries, en);
    return 0;
}

int tg_st_writer_add_tensor(tg_st_writer *w, const char *name, const tg_tensor *t)
{
    if (!w) return -1;
    if (!t) return wfail(w, "tensor '%s': tensor is NULL", name ? name : "(null)");
    if (tg_tensor_stale(t))
        return wfail(w, "tensor '%s': made before the last tg_graph_reset of its graph", name ? name : "(null)");
    static const char *const MAP[] = {[TG_F32] = "F32", [TG_F64] = "F64", [TG_I32] = "I32", [TG_BOOL] = "U8"};
    if ((unsigned)t->dtype >= sizeof MAP / sizeof MAP[0])
        return wfail(w, "tensor '%s': bad dtype", name ? name : "(null)");
    int64_t shape[TG_MAX_DIMS];
    int ndim = t->ndim < 0 || t->ndim > TG_MAX_DIMS ? -1 : t->ndim;
    for (int d = 0; d < ndim; d++) shape[d] = t->shape[d];
    return tg_st_writer_add(w, name, MAP[t->dtype], ndim, shape, t->data);
}

int tg_st_writer_add_meta(tg_st_writer *w, const char *key, const char *value)
{
    if (!w) return -1;
    if (w->error[0]) return -1;
    if (!key || !value) return wfail(w, "metadata key or value is NULL");
    if (!st_utf8_ok(key) || !st_utf8_ok(value)) return wfail(w, "metadata '%s' is not valid UTF-8", key);
    if (stbds_shgeti(w->meta, key) >= 0) return wfail(w, "duplicate metadata key '%s'", key);
    char *v = st_strdup(value);
    if (!v) return wfail(w, "out of memory");
    stbds_shput(w->meta, key, v);
    return 0;
}

/* A growable byte buffer that remembers running out of memory. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        char *q = tg_realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* A JSON string: quotes, backslashes and control characters escaped; the
 * rest (valid UTF-8, checked on add) as it is. */
static void sb_json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '"' || *c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*c;
            sb_put(b, esc, 2);
        } else if (*c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *c);
            sb_put(b, esc, 6);
        } else sb_put(b, (const char *)c, 1);
    }
    sb_put(b, "\"", 1);
}

static void sb_u64(sbuf *b, uint64_t v)
{
    char num[24];
    sb_str(b, (snprintf(num, sizeof num, "%" PRIu64, v), num));
}

/* The data section's layout: order[k] is the entry laid out k-th,
 * largest element size first, insertion order within a size. */
static void layout(const tg_st_writer *w, ptrdiff_t *order)
{
    ptrdiff_t k = 0;
    for (size_t size = 8; size >= 1; size /= 2)
        for (ptrdiff_t i = 0; i < stbds_arrlen(w->entries); i++)
            if (ST_DTYPES[w->entries[i].dtype].size == size) order[k++] = i;
}

/* The header, padded with spaces to a multiple of 8 bytes; off[i] is
 * entry i's offset in the data section. */
static void build_header(const tg_st_writer *w, const uint64_t *off, sbuf *b)
{
    sb_put(b, "{", 1);
    bool first = true;
    if (stbds_shlen(w->meta) > 0) {
        sb_str(b, "\"__metadata__\":{");
        for (ptrdiff_t i = 0; i < stbds_shlen(w->meta); i++) {
            if (i) sb_put(b, ",", 1);
            sb_json_str(b, w->meta[i].key);
            sb_put(b, ":", 1);
            sb_json_str(b, w->meta[i].value);
        }
        sb_put(b, "}", 1);
        first = false;
    }
    for (ptrdiff_t i = 0; i < stbds_arrlen(w->entries); i++) {
        const w_entry *e = &w->entries[i];
        if (!first) sb_put(b, ",", 1);
        first = false;
        sb_json_str(b, e->name);
        sb_str(b, ":{\"dtype\":\"");
        sb_str(b, ST_DTYPES[e->dtype].name);
        sb_str(b, "\",\"shape\":[");
        for (int d = 0; d < e->ndim; d++) {
            if (d) sb_put(b, ",", 1);
            sb_u64(b, (uint64_t)e->shape[d]);
        }
        sb_str(b, "],\"data_offsets\":[");
        sb_u64(b, off[i]);
        sb_put(b, ",", 1);
        sb_u64(b, off[i] + e->nbytes);
        sb_str(b, "]}");
    }
    sb_put(b, "}", 1);
    while (b->len % 8) sb_put(b, " ", 1);
}

int tg_st_writer_save(tg_st_writer *w, const char *path, tg_error *err)
{
    if (!w || !path) return tg_error_set(err, "safetensors: save: %s is NULL", w ? "path" : "writer");
    if (w->error[0]) return tg_error_set(err, "%s (nothing written to '%s')", w->error, path);

    const ptrdiff_t n = stbds_arrlen(w->entries);
    ptrdiff_t *order = tg_malloc((size_t)(n + 1) * sizeof *order);
    uint64_t *off = tg_malloc((size_t)(n + 1) * sizeof *off);
    sbuf hdr = {0};
    const bool have = order && off;
    if (have) {
        layout(w, order);
        uint64_t at = 0;
        for (ptrdiff_t k = 0; k < n; k++) {
            off[order[k]] = at;
            at += w->entries[order[k]].nbytes;
        }
        build_header(w, off, &hdr);
    }
    tg_free(off);
    if (!have || hdr.oom) {
        tg_free(order);
        tg_free(hdr.p);
        return tg_error_set(err, "safetensors: save '%s': out of memory", path);
    }
    if (hdr.len > ST_MAX_HEADER) {
        tg_free(order);
        tg_free(hdr.p);
        return tg_error_set(err, "safetensors: save '%s': header would be %zu bytes, over the %u readers accept", path,
                            hdr.len, ST_MAX_HEADER);
    }

    tg_atomic_file f;
    tg_error e = {0};
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hdr.len >> (8 * i));
    bool ok = tg_atomic_begin(&f, path, &e) == 0 && tg_atomic_write(&f, len8, 8, &e) == 0 &&
        tg_atomic_write(&f, hdr.p, hdr.len, &e) == 0;
    for (ptrdiff_t k = 0; ok && k < n; k++)
        ok = tg_atomic_write(&f, w->entries[order[k]].data, (size_t)w->entries[order[k]].nbytes, &e) == 0;
    if (ok) ok = tg_atomic_commit(&f, &e) == 0;
    tg_free(order);
    tg_free(hdr.p);
    if (ok) return 0;
    tg_atomic_abort(&f);
    return tg_error_set(err, "safetensors: save %s", e.msg);
}

/* ---- parameter stores ------------------------------------------------------ */

int tg_st_save_params(const tg_params *p, const char *path, const char *const *meta, int n_meta, tg_error *err)
{
    if (!p) return tg_error_set(err, "safetensors: save_params: params is NULL");
    if (n_meta < 0 || (n_meta > 0 && !meta))
        return tg_error_set(err, "safetensors: save_params: %d metadata pairs but no array", n_meta);
    tg_st_writer *w = tg_st_writer_new();
    if (!w) return tg_error_set(err, "safetensors: save_params: out of memory");
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *t = tg_params_at(p, i);
        tg_st_writer_add_tensor(w, t->name, t);
    }
    for (int i = 0; i < n_meta; i++) tg_st_writer_add_meta(w, meta[2 * i], meta[2 * i + 1]);
    int rc = tg_st_writer_save(w, path, err);
    tg_st_writer_free(w);
    return rc;
}
