/* tapegrad dist (internal): what grads.c takes from dist.c. */
#ifndef TG_DIST_INTERNAL_H
#define TG_DIST_INTERNAL_H

#include <stdbool.h>

/* True when MPI runs with more than one process. */
bool tg_dist_multi(void);
/* Seconds on a monotonic clock. */
double tg_dist_now(void);

#endif
