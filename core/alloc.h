/* tapegrad core: the one place the library allocates from the heap.
 *
 * Every allocation the library makes (arena chunks, the tape, parameter
 * buffers, stb_ds arrays) goes through these functions, so a test can
 * count them: a steady-state training step makes none. */
#ifndef TG_ALLOC_H
#define TG_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* malloc(n), counted; n = 0 is taken as 1, so NULL always means out of
 * memory. More than PTRDIFF_MAX bytes (an overflowed size) is refused:
 * NULL, nothing asked of the allocator, nothing counted. */
TG_API void *tg_malloc(size_t n);
/* calloc(count, n): zero-filled, counted; 0 is taken as 1. NULL when out
 * of memory, or when count * n exceeds PTRDIFF_MAX (not counted). */
TG_API void *tg_calloc(size_t count, size_t n);
/* realloc(p, n), counted; n = 0 is taken as 1. NULL when out of memory
 * or n exceeds PTRDIFF_MAX, and then p is still valid. */
TG_API void *tg_realloc(void *p, size_t n);
/* At least *n bytes for a large, long-lived block (an arena chunk), counted;
 * *n is set to the size obtained. On Linux, from 2 MiB up: rounded up to
 * whole 2 MiB pages, aligned to one, and advised as transparent huge pages
 * (madvise MADV_HUGEPAGE), so a step's working set of tens of MB needs a
 * handful of TLB entries instead of thousands (docs/decisions.md, Speed).
 * Elsewhere, or when that fails, malloc(*n). NULL when out of memory, or
 * for a NULL n. */
TG_API void *tg_malloc_big(size_t *n);
/* tg_calloc(count, n) for a large, long-lived buffer streamed whole
 * every step (a parameter store's values and gradients, an optimizer's
 * moments): from 2 MiB up on Linux, tg_malloc_big's whole 2 MiB pages,
 * aligned and advised as transparent huge pages, dropped (MADV_DONTNEED)
 * so that each reads as zero and costs memory only once it is used.
 * Streaming a buffer of 4 KiB pages costs a TLB miss every 4 KiB: on a
 * virtual machine AdamW's update of 5.4 M elements took 33-43 ms a step,
 * 6-7 in huge pages (bench/README.md). Elsewhere, or below 2 MiB,
 * tg_calloc.
 * NULL as tg_calloc. */
TG_API void *tg_calloc_big(size_t count, size_t n);
/* free(p) for memory from the functions above; accepts NULL. Not counted. */
TG_API void tg_free(void *p);

/* Heap allocations (malloc, calloc, realloc, tg_malloc_big) the library
 * has made since the program started. */
TG_API uint64_t tg_alloc_calls(void);

#ifdef __cplusplus
}
#endif

#endif
