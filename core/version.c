/* The library's version and build options (version.h). */
#include "version.h"

const char *tg_version(void) { return TG_VERSION; }

const char *tg_build_options(void)
{
#ifdef TG_BUILD_MPI
    return "mpi pcre2";
#else
    return "pcre2";
#endif
}
