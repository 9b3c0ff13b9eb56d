/* GGUF's parts (formats/gguf_internal.h): the header, key-values and
 * tensor infos of a file in memory, checked against its size, the typed
 * look-ups of keys, and the data section's values. The layout is the one
 * formats/gguf.c writes (its top comment); this side reads versions 2
 * and 3 and any general.alignment.
 *
 * Every count and length in the file is checked against the bytes left
 * before it is used, so a crafted header costs time and memory
 * proportional to the file, never to what it claims. */
#include "gguf_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"

/* s as a message shows it (tg_shown: the first 60 bytes, escaped) */
const char *tg_gguf_shown(str s, char buf[TG_SHOWN_SIZE])
{
    char t[62];
    const size_t n = s.n < 61 ? (size_t)s.n : 61;
    memcpy(t, s.p, n);
    t[n] = 0;
    return tg_shown(t, buf);
}

static bool take(gguf *g, size_t n, const unsigned char **p)
{
    if (n > g->len - g->at) return false;
    *p = g->buf + g->at;
    g->at += n;
    return true;
}
static bool u32(gguf *g, uint32_t *v)
{
    const unsigned char *p;
    return take(g, 4, &p) ? memcpy(v, p, 4), true : false;
}
static bool u64(gguf *g, uint64_t *v)
{
    const unsigned char *p;
    return take(g, 8, &p) ? memcpy(v, p, 8), true : false;
}
static bool gstr(gguf *g, str *s)
{
    const unsigned char *p;
    return u64(g, &s->n) && s->n <= g->len - g->at && take(g, (size_t)s->n, &p) ? s->p = (const char *)p, true : false;
}

/* the size of one value of a fixed-size type, 0 for strings and arrays */
static size_t fixed_size(uint32_t t)
{
    static const size_t SIZES[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? SIZES[t] : 0;
}

/* Skips one value of type t (not an array), false past the end. */
static bool skip_value(gguf *g, uint32_t t)
{
    const unsigned char *p;
    str s;
    if (t == T_STRING) return gstr(g, &s);
    return t < 13 && t != T_ARRAY && take(g, fixed_size(t), &p);
}

static int cmp_names(const void *pa, const void *pb)
{
    const str *a = *(const str *const *)pa, *b = *(const str *const *)pb;
    const int c = memcmp(a->p, b->p, (size_t)(a->n < b->n ? a->n : b->n));
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* The names of n items of `size` bytes from base, each starting with its
 * name (a kv, a tinfo), sorted (malloc'd; NULL out of memory). *a and *b:
 * the indices of the first two items with one name, else equal. */
static const str **sorted_names(const void *base, uint64_t n, size_t size, uint64_t *a, uint64_t *b)
{
    const str **s = malloc((size_t)(n ? n : 1) * sizeof *s);
    *a = *b = 0;
    if (!s) return NULL;
    for (uint64_t i = 0; i < n; i++) s[i] = (const str *)((const char *)base + i * size);
    qsort(s, (size_t)n, sizeof *s, cmp_names);
    for (uint64_t i = 1; i < n && *a == *b; i++)
        if (!cmp_names(&s[i - 1], &s[i])) {
            const uint64_t x = (uint64_t)((const char *)s[i - 1] - (const char *)base) / size,
                           y = (uint64_t)((const char *)s[i] - (const char *)base) / size;
            *a = x < y ? x : y, *b = x < y ? y : x;
        }
    return s;
}

int tg_gguf_parse(gguf *g, tg_error *err)
{
    char sb[TG_SHOWN_SIZE];
    const unsigned char *magic;
    uint32_t version = 0;
    if (!take(g, 4, &magic) || memcmp(magic, "GGUF", 4))
        return tg_error_set(err, "the file does not start with \"GGUF\""), -1;
    if (!u32(g, &version) || version < 2 || version > 3)
        return tg_error_set(err, "GGUF version %u: only versions 2 and 3 are read", version), -1;
    if (!u64(g, &g->n_t) || !u64(g, &g->n_kv)) return tg_error_set(err, "the header is cut short"), -1;
    /* every key-value takes at least 12 bytes, every tensor info 28: counts past that are lies */
    if (g->n_kv > (g->len - g->at) / 12 || g->n_t > (g->len - g->at) / 28)
        return tg_error_set(err,
                            "the header claims %llu key-values and %llu tensors, more than the file's "
                            "%zu bytes hold",
                            (unsigned long long)g->n_kv, (unsigned long long)g->n_t, g->len),
               -1;
    if (!(g->kvs = calloc(g->n_kv + 1, sizeof *g->kvs)) || !(g->ts = calloc(g->n_t + 1, sizeof *g->ts)))
        return tg_error_set(err, "out of memory"), -1;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        kv *k = &g->kvs[i];
        const size_t start = g->at;
        if (!gstr(g, &k->key) || !u32(g, &k->type))
            return tg_error_set(err, "offset %zu: key-value %llu is cut short", start, (unsigned long long)i), -1;
        k->val = g->buf + g->at;
        bool ok;
        if (k->type == T_ARRAY) {
            ok = u32(g, &k->elem) && u64(g, &k->count) && k->elem != T_ARRAY && k->elem < 13;
            k->val = g->buf + g->at;
            const size_t es = ok ? fixed_size(k->elem) : 0;
            if (ok && es) ok = k->count <= (g->len - g->at) / es && take(g, (size_t)k->count * es, &k->val);
            else if (ok) /* strings: each at least 8 bytes */
                for (uint64_t j = 0; ok && j < k->count; j++)
                    ok = k->count <= (g->len - g->at) / 8 + j && skip_value(g, T_STRING);
        } else {
            ok = skip_value(g, k->type);
        }
        if (!ok)
            return tg_error_set(err, "offset %zu: key '%s' has a bad type or runs past the end", start,
                                tg_gguf_shown(k->key, sb)),
                   -1;
    }
    for (uint64_t i = 0; i < g->n_t; i++) {
        tinfo *t = &g->ts[i];
        const size_t start = g->at;
        bool ok = gstr(g, &t->name) && u32(g, &t->ndim) && t->ndim >= 1 && t->ndim <= 4;
        t->numel = 1;
        for (uint32_t d = 0; ok && d < t->ndim; d++)
            ok = u64(g, &t->dims[d]) && t->dims[d] >= 1 && t->dims[d] <= (1ull << 40) / t->numel &&
                (t->numel *= t->dims[d]);
        ok = ok && u32(g, &t->type) && u64(g, &t->offset);
        if (!ok)
            return tg_error_set(err, "offset %zu: tensor info %llu is cut short or has a bad shape", start,
                                (unsigned long long)i),
                   -1;
    }
    /* the names in order, for look-ups in log time and to find one given twice, which
     * llama.cpp refuses (which of the two would count is the reader's guess) */
    uint64_t a, b;
    if (!(g->kv_names = sorted_names(g->kvs, g->n_kv, sizeof *g->kvs, &a, &b)))
        return tg_error_set(err, "out of memory"), -1;
    if (a != b)
        return tg_error_set(err,
                            "key '%s' is given twice (key-values %llu and %llu): llama.cpp refuses such "
                            "a file",
                            tg_gguf_shown(g->kvs[a].key, sb), (unsigned long long)a, (unsigned long long)b),
               -1;
    if (!(g->t_names = sorted_names(g->ts, g->n_t, sizeof *g->ts, &a, &b)))
        return tg_error_set(err, "out of memory"), -1;
    if (a != b)
        return tg_error_set(err,
                            "tensor '%s' is given twice (tensor infos %llu and %llu): llama.cpp refuses "
                            "such a file",
                            tg_gguf_shown(g->ts[a].name, sb), (unsigned long long)a, (unsigned long long)b),
               -1;
    return 0;
}

void tg_gguf_release(gguf *g)
{
    free(g->kvs);
    free(g->ts);
    free(g->kv_names);
    free(g->t_names);
    *g = (gguf){0};
}

static const str *lookup(const str *const *sorted, uint64_t n, const char *name)
{
    const str key = {name, strlen(name)}, *kp = &key;
    const str *const *hit = n ? bsearch(&kp, sorted, (size_t)n, sizeof *sorted, cmp_names) : NULL;
    return hit ? *hit : NULL;
}

const kv *tg_gguf_find(const gguf *g, const char *key)
{
    return (const kv *)lookup(g->kv_names, g->n_kv, key); /* a kv starts with its key */
}

/* An unsigned or signed integer value of key: 0, 1 when absent, or -1
 * with a message (another type, or outside [lo, hi]). */
int tg_gguf_get_int(const gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *v, tg_error *err)
{
    const kv *k = tg_gguf_find(g, key);
    if (!k) return 1;
    if (k->type == T_ARRAY || k->type == T_STRING || k->type == T_F32 || k->type == T_F64 || k->type == T_BOOL)
        return tg_error_set(err, "key '%s' is not an integer", key), -1;
    /* each signed width read as its own type, so the conversion extends the sign */
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t s;
    uint64_t u = 0;
    switch (k->type) {
    case T_I8: memcpy(&i8, k->val, 1), s = i8; break;
    case T_I16: memcpy(&i16, k->val, 2), s = i16; break;
    case T_I32: memcpy(&i32, k->val, 4), s = i32; break;
    case T_I64: memcpy(&s, k->val, 8); break;
    default: /* unsigned: its bytes are u's low ones (the reader takes a little-endian host throughout) */
        memcpy(&u, k->val, fixed_size(k->type));
        s = u > INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    if (s < lo || s > hi)
        return tg_error_set(err, "key '%s' = %lld is outside [%lld, %lld]", key, (long long)s, (long long)lo,
                            (long long)hi),
               -1;
    *v = s;
    return 0;
}
int tg_gguf_get_float(const gguf *g, const char *key, double *v, tg_error *err)
{
    const kv *k = tg_gguf_find(g, key);
    if (!k) return 1;
    if (k->type == T_F32) {
        float f;
        memcpy(&f, k->val, 4);
        *v = f;
    } else if (k->type == T_F64) {
        memcpy(v, k->val, 8);
    } else {
        return tg_error_set(err, "key '%s' is not a number", key), -1;
    }
    return isfinite(*v) ? 0 : (tg_error_set(err, "key '%s' is %g", key, *v), -1);
}
bool tg_gguf_get_bool(const gguf *g, const char *key, bool dflt)
{
    const kv *k = tg_gguf_find(g, key);
    return k && k->type == T_BOOL ? k->val[0] != 0 : dflt;
}
/* a string value: true with *s, false when absent or not a string */
bool tg_gguf_get_str(const gguf *g, const char *key, str *s)
{
    const kv *k = tg_gguf_find(g, key);
    if (!k || k->type != T_STRING) return false;
    memcpy(&s->n, k->val, 8);
    s->p = (const char *)k->val + 8;
    return true;
}
bool tg_gguf_str_is(str s, const char *z) { return s.n == strlen(z) && !memcmp(s.p, z, s.n); }

/* ---- tensors ------------------------------------------------------------------ */

/* Places the data section and checks every tensor's bytes lie in it, each
 * tensor's right after the one before. */
int tg_gguf_place_data(gguf *g, tg_error *err)
{
    int64_t align = 32;
    if (tg_gguf_get_int(g, "general.alignment", 1, 1 << 16, &align, err) < 0) return -1;
    if (align & (align - 1))
        return tg_error_set(err, "general.alignment %lld is not a power of two", (long long)align), -1;
    const size_t start = (g->at + (size_t)align - 1) / (size_t)align * (size_t)align;
    if (start > g->len) return tg_error_set(err, "the file ends before its data section"), -1;
    g->data = g->buf + start;
    g->data_len = g->len - start;
    uint64_t end = 0; /* where the tensors so far end, padded */
    for (uint64_t i = 0; i < g->n_t; i++) {
        tinfo *t = &g->ts[i];
        char sb[TG_SHOWN_SIZE];
        const char *name = tg_gguf_shown(t->name, sb);
        switch (t->type) {
        case G_F32: t->nbytes = t->numel * 4; break;
        case G_F16:
        case G_BF16: t->nbytes = t->numel * 2; break;
        case G_Q8_0:
            if (t->dims[0] % 32)
                return tg_error_set(err,
                                    "tensor '%s' is Q8_0 with rows of %llu, not a multiple "
                                    "of 32",
                                    name, (unsigned long long)t->dims[0]),
                       -1;
            t->nbytes = t->numel / 32 * 34;
            break;
        default:
            return tg_error_set(err, "tensor '%s' is of ggml type %u: tapegrad reads F32, F16, BF16 and Q8_0", name,
                                t->type),
                   -1;
        }
        /* llama.cpp's layout: each tensor's data right after the one before, so no two share bytes
         * and the values a file describes are at most its bytes (llama.cpp refuses another offset) */
        if (t->offset != end)
            return tg_error_set(err,
                                "tensor '%s': its data is at offset %llu of the data section, where the "
                                "tensors before it end at %llu (padded to %lld bytes): GGUF puts each tensor's data "
                                "right after the one before, and llama.cpp refuses other offsets",
                                name, (unsigned long long)t->offset, (unsigned long long)end, (long long)align),
                   -1;
        if (t->nbytes > g->data_len - t->offset)
            return tg_error_set(err,
                                "tensor '%s': its %llu bytes at offset %llu are not within the data "
                                "section's %zu",
                                name, (unsigned long long)t->nbytes, (unsigned long long)t->offset, g->data_len),
                   -1;
        end = t->offset + (t->nbytes + (uint64_t)align - 1) / (uint64_t)align * (uint64_t)align;
    }
    return 0;
}

const tinfo *tg_gguf_find_tensor(const gguf *g, const char *name)
{
    return (const tinfo *)lookup(g->t_names, g->n_t, name); /* a tinfo starts with its name */
}

static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact */
        const float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    const uint32_t bits = sign | (e == 31 ? 0x7f800000u | m << 13 : (e + 112) << 23 | m << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Value i of a tensor of ggml type `type` whose data starts at q. */
float tg_gguf_value_at(const unsigned char *q, uint32_t type, int64_t i)
{
    float x;
    if (type == G_F32) {
        memcpy(&x, q + 4 * i, 4);
    } else if (type == G_F16 || type == G_BF16) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        if (type == G_F16) {
            x = half_to_float(h);
        } else {
            const uint32_t bits = (uint32_t)h << 16;
            memcpy(&x, &bits, 4);
        }
    } else { /* Q8_0: a half scale, then 32 int8 */
        const unsigned char *b = q + i / 32 * 34;
        uint16_t d;
        memcpy(&d, b, 2);
        x = half_to_float(d) * (float)(int8_t)b[2 + i % 32];
    }
    return x;
}
