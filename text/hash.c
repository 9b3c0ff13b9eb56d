/* text hash tables: open addressing with linear probing, capacity a power
 * of two kept at most half full.
 *
 * tg_hash_bytes mixes 8 bytes at a time: h = (h ^ word) * K, then a final
 * xor-shift-multiply, where K is the 64-bit golden-ratio constant; the
 * length seeds h, so "a" and "a\0" differ. Good enough for the words and
 * pieces of a text, and about a byte per cycle faster than FNV-1a. */
#include "text_internal.h"

#include <string.h>

#include "../core/alloc.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

uint64_t tg_hash_bytes(const void *p, size_t len)
{
    const unsigned char *s = p;
    uint64_t h = (uint64_t)len * GOLDEN + 1;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * GOLDEN;
        s += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, s, len);
        h = (h ^ w) * GOLDEN;
    }
    return mix(h);
}

/* ---- (a, b) pairs -> id -------------------------------------------------- */

int32_t tg_pairmap_get(const tg_pairmap *m, uint64_t key)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = (size_t)mix(key) & mask;
    for (;;) {
        if (m->keys[i] == key) return m->vals[i];
        if (m->keys[i] == UINT64_MAX) return -1;
        i = (i + 1) & mask;
    }
}

static int pairmap_grow(tg_pairmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = tg_malloc(cap * sizeof *keys);
    int32_t *vals = tg_malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        tg_free(keys);
        tg_free(vals);
        return -1;
    }
    memset(keys, 0xff, cap * sizeof *keys);
    for (size_t j = 0; j < m->cap; j++) {
        if (m->keys[j] == UINT64_MAX) continue;
        size_t i = (size_t)mix(m->keys[j]) & (cap - 1);
        while (keys[i] != UINT64_MAX) i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        vals[i] = m->vals[j];
    }
    tg_free(m->keys);
    tg_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int tg_pairmap_put(tg_pairmap *m, uint64_t key, int32_t val)
{
    if (2 * (m->n + 1) > m->cap && pairmap_grow(m)) return -1;
    size_t mask = m->cap - 1, i = (size_t)mix(key) & mask;
    while (m->keys[i] != UINT64_MAX && m->keys[i] != key) i = (i + 1) & mask;
    if (m->keys[i] == UINT64_MAX) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void tg_pairmap_free(tg_pairmap *m)
{
    tg_free(m->keys);
    tg_free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- byte strings -> int64 ------------------------------------------------ */

int64_t tg_strmap_find(const tg_strmap *m, const void *p, uint32_t len, uint64_t hash)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, i = (size_t)hash & mask;
    for (;;) {
        uint32_t s = m->slots[i];
        if (!s) return -1;
        const struct tg_strent *e = &m->ents[s - 1];
        if (e->hash == hash && e->len == len && (!len || !memcmp(m->pool + e->off, p, len))) return (int64_t)s - 1;
        i = (i + 1) & mask;
    }
}

static int strmap_rehash(tg_strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint32_t *slots = tg_calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t e = 0; e < m->n; e++) {
        size_t i = (size_t)m->ents[e].hash & (cap - 1);
        while (slots[i]) i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    tg_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int64_t tg_strmap_add(tg_strmap *m, const void *p, uint32_t len, uint64_t hash, int64_t val)
{
    if (m->n >= UINT32_MAX - 1) return -1;
    if (2 * (m->n + 1) > m->cap && strmap_rehash(m)) return -1;
    if (m->n == m->ents_cap) {
        size_t cap = m->ents_cap ? m->ents_cap * 2 : 64;
        struct tg_strent *e = tg_realloc(m->ents, cap * sizeof *e);
        if (!e) return -1;
        m->ents = e;
        m->ents_cap = cap;
    }
    if (!m->pool || m->pool_len + len > m->pool_cap) {
        size_t cap = m->pool_cap ? m->pool_cap : 4096;
        while (cap < m->pool_len + len) cap *= 2;
        unsigned char *pool = tg_realloc(m->pool, cap);
        if (!pool) return -1;
        m->pool = pool;
        m->pool_cap = cap;
    }
    if (len) memcpy(m->pool + m->pool_len, p, len);
    m->ents[m->n] = (struct tg_strent){.off = m->pool_len, .hash = hash, .len = len, .val = val};
    m->pool_len += len;
    size_t mask = m->cap - 1, i = (size_t)hash & mask;
    while (m->slots[i]) i = (i + 1) & mask;
    m->slots[i] = (uint32_t)(m->n + 1);
    return (int64_t)m->n++;
}

void tg_strmap_free(tg_strmap *m)
{
    tg_free(m->slots);
    tg_free(m->ents);
    tg_free(m->pool);
    memset(m, 0, sizeof *m);
}
