#define _DEFAULT_SOURCE /* madvise */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define STB_DS_IMPLEMENTATION
#include "stb_ds_internal.h"

static uint64_t n_calls;

/* No object may be larger than PTRDIFF_MAX bytes: such a request (an
 * overflowed size) is refused here, before the allocator sees it. */
void *tg_malloc(size_t n)
{
    if (n > PTRDIFF_MAX) return NULL;
    n_calls++;
    return malloc(n ? n : 1);
}

void *tg_calloc(size_t count, size_t n)
{
    if (n && count > PTRDIFF_MAX / n) return NULL;
    n_calls++;
    return calloc(count ? count : 1, n ? n : 1);
}

void *tg_realloc(void *p, size_t n)
{
    if (n > PTRDIFF_MAX) return NULL;
    n_calls++;
    return realloc(p, n ? n : 1);
}
void tg_free(void *p) { free(p); }

#define HUGE_PAGE ((size_t)2 << 20)

void *tg_malloc_big(size_t *n)
{
    if (!n) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (*n >= HUGE_PAGE && *n <= PTRDIFF_MAX - HUGE_PAGE) {
        const size_t size = (*n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        void *p = aligned_alloc(HUGE_PAGE, size);
        if (p) {
            n_calls++;
            (void)madvise(p, size, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
            *n = size;
            return p;
        }
    }
#endif
    return tg_malloc(*n);
}

void *tg_calloc_big(size_t count, size_t n)
{
    if (n && count > PTRDIFF_MAX / n) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_DONTNEED)
    const size_t bytes = count * n;
    if (bytes >= HUGE_PAGE) {
        size_t size = bytes;
        char *p = tg_malloc_big(&size);
        /* whole pages that are the block's alone (tg_malloc_big's): dropped,
         * they read as zero, each filled by the kernel when first used */
        if (p && madvise(p, size, MADV_DONTNEED) != 0) memset(p, 0, size);
        return p;
    }
#endif
    return tg_calloc(count, n);
}

uint64_t tg_alloc_calls(void) { return n_calls; }
