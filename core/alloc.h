/* tapegrad core: the one place the library allocates from the heap.
 *
 * Every allocation the library makes (arena chunks, the tape, parameter
 * buffers, stb_ds arrays) goes through these functions, so a test can
 * count them: a steady-state training step makes none. */
#ifndef TG_ALLOC_H
#define TG_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* malloc(n), counted; n = 0 is taken as 1, so NULL always means out of
 * memory. */
void *tg_malloc(size_t n);
/* calloc(count, n): zero-filled, counted; 0 is taken as 1. NULL when out
 * of memory. */
void *tg_calloc(size_t count, size_t n);
/* realloc(p, n), counted; n = 0 is taken as 1. NULL when out of memory,
 * and then p is still valid. */
void *tg_realloc(void *p, size_t n);
/* free(p) for memory from the three above; accepts NULL. Not counted. */
void tg_free(void *p);

/* Heap allocations (malloc, calloc, realloc) the library has made since
 * the program started. */
uint64_t tg_alloc_calls(void);

#endif
