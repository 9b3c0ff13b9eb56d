/* stb_ds (Debian's libstb-dev) with its allocations routed through
 * core/alloc.h. The library includes this instead of <stb_ds.h>, so that
 * every stb_ds call site and the implementation (in core/alloc.c) agree. */
#ifndef TG_STB_DS_INTERNAL_H
#define TG_STB_DS_INTERNAL_H

#include "alloc.h"

#define STBDS_NO_SHORT_NAMES
#define STBDS_REALLOC(ctx, p, n) ((void)(ctx), tg_realloc((p), (n)))
#define STBDS_FREE(ctx, p) ((void)(ctx), tg_free(p))
#include <stb_ds.h>

#endif
