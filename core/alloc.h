/* tapegrad core: the one place the library allocates from the heap.
 *
 * Every allocation the library makes (arena chunks, the tape, parameter
 * buffers, stb_ds arrays) goes through these functions, so a test can
 * count them: a steady-state training step makes none. */
#ifndef TG_ALLOC_H
#define TG_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *tg_malloc(size_t n);
void *tg_calloc(size_t count, size_t n);
void *tg_realloc(void *p, size_t n);
void tg_free(void *p);

/* Heap allocations (malloc, calloc, realloc) the library has made since
 * the program started. */
uint64_t tg_alloc_calls(void);

#endif
