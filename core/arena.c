#include "arena_internal.h"

#include <stdint.h>

#include "alloc.h"

#define TG_ARENA_MIN_CHUNK ((size_t)1 << 20)

static size_t align_up(size_t n) { return (n + TG_ARENA_ALIGN - 1) & ~(size_t)(TG_ARENA_ALIGN - 1); }

static int add_chunk(tg_arena *a, size_t need)
{
    if (a->n == TG_ARENA_MAX_CHUNKS) return -1;
    size_t size = a->n ? a->chunks[a->n - 1].size * 2 : a->min_chunk ? a->min_chunk : TG_ARENA_MIN_CHUNK;
    if (size < need + TG_ARENA_ALIGN) size = need + TG_ARENA_ALIGN;
    char *base = tg_malloc_big(&size); /* size: what was obtained */
    if (!base) return -1;
    a->chunks[a->n++] = (tg_arena_chunk){base, size, 0};
    return 0;
}

void *tg_arena_take(tg_arena *a, size_t n)
{
    if (n > SIZE_MAX / 4) return NULL;
    n = align_up(n ? n : 1);
    for (;;) {
        if (a->cur >= a->n && add_chunk(a, n) != 0) return NULL;
        tg_arena_chunk *c = &a->chunks[a->cur];
        /* chunk bases come from malloc (16-aligned): align the address */
        uintptr_t at = (uintptr_t)(c->base + c->used);
        size_t pad = (size_t)((TG_ARENA_ALIGN - at % TG_ARENA_ALIGN) % TG_ARENA_ALIGN);
        if (c->used + pad + n <= c->size) {
            void *p = c->base + c->used + pad;
            c->used += pad + n;
            return p;
        }
        a->cur++;
        if (a->cur < a->n) a->chunks[a->cur].used = 0;
    }
}

void tg_arena_clear(tg_arena *a)
{
    if (a->n > 1) { /* merge: from now on one chunk holds a whole step */
        size_t total = 0;
        for (int i = 0; i < a->n; i++) {
            total += a->chunks[i].size;
            tg_free(a->chunks[i].base);
        }
        a->n = 0;
        (void)add_chunk(a, total); /* on failure the arena simply starts empty */
    }
    a->cur = 0;
    if (a->n) a->chunks[0].used = 0;
}

void tg_arena_clear_reserve(tg_arena *a, size_t want)
{
    tg_arena_clear(a);
    if (tg_arena_capacity_of(a) >= want) return;
    tg_arena_release(a);
    /* a chunk of exactly max(min_chunk, want) bytes (as tg_malloc_big
     * rounds it), so that two arenas reserved like each other stay equal */
    (void)add_chunk(a, want > TG_ARENA_ALIGN ? want - TG_ARENA_ALIGN : want);
}

void tg_arena_release(tg_arena *a)
{
    for (int i = 0; i < a->n; i++) tg_free(a->chunks[i].base);
    a->n = a->cur = 0;
}

size_t tg_arena_capacity_of(const tg_arena *a)
{
    size_t s = 0;
    for (int i = 0; i < a->n; i++) s += a->chunks[i].size;
    return s;
}

size_t tg_arena_used_of(const tg_arena *a)
{
    size_t s = 0;
    for (int i = 0; i <= a->cur && i < a->n; i++) s += a->chunks[i].used;
    return s;
}
