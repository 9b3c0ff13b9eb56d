/* tapegrad core (internal): a bump allocator made of chunks.
 *
 * Allocation moves a pointer; reset moves it back to the start in O(1).
 * When one step needed several chunks, the next reset replaces them by a
 * single chunk of their total size, so from then on a step of the same
 * shape fits in one chunk and allocates nothing from the heap. */
#ifndef TG_ARENA_H
#define TG_ARENA_H

#include <stddef.h>

#define TG_ARENA_ALIGN 64

typedef struct tg_arena_chunk {
    char *base;
    size_t size, used;
} tg_arena_chunk;

/* Each new chunk is at least twice the size of the one before, so a
 * fixed table of chunks covers any amount of memory. */
#define TG_ARENA_MAX_CHUNKS 40

typedef struct tg_arena {
    tg_arena_chunk chunks[TG_ARENA_MAX_CHUNKS];
    int n; /* chunks allocated */
    int cur; /* chunk being filled */
    size_t min_chunk; /* size of the first chunk; 0: 1 MiB */
} tg_arena;

void *tg_arena_take(tg_arena *a, size_t n); /* NULL when out of memory */
void tg_arena_clear(tg_arena *a);
/* tg_arena_clear, then at least `want` bytes of capacity in one chunk:
 * allocates now, not during the step that follows. */
void tg_arena_clear_reserve(tg_arena *a, size_t want);
void tg_arena_release(tg_arena *a); /* frees everything */
size_t tg_arena_capacity_of(const tg_arena *a);
size_t tg_arena_used_of(const tg_arena *a);

#endif
