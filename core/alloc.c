#include "alloc.h"

#include <stdlib.h>

#define STB_DS_IMPLEMENTATION
#include "stb_ds_internal.h"

static uint64_t n_calls;

void *tg_malloc(size_t n) { n_calls++; return malloc(n ? n : 1); }
void *tg_calloc(size_t count, size_t n) { n_calls++; return calloc(count ? count : 1, n ? n : 1); }
void *tg_realloc(void *p, size_t n) { n_calls++; return realloc(p, n ? n : 1); }
void tg_free(void *p) { free(p); }
uint64_t tg_alloc_calls(void) { return n_calls; }
