/* tapegrad core: the version of these headers and of the library, and
 * what the library was built with. */
#ifndef TG_VERSION_H
#define TG_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of these headers. */
#define TG_VERSION_MAJOR 0
#define TG_VERSION_MINOR 3
#define TG_VERSION_PATCH 0
#define TG_VERSION "0.3.0"
/* The library's version, "MAJOR.MINOR.PATCH" (TG_VERSION when it was built). */
TG_API const char *tg_version(void);
/* The optional parts this library was built with, space-separated:
 * "mpi" (data-parallel training over Open MPI, distributed/) when present, then
 * "pcre2" (GPT-2's pre-tokenizer, always). */
TG_API const char *tg_build_options(void);

#ifdef __cplusplus
}
#endif

#endif
