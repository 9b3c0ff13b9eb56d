/* A program on several processes built against an installed tapegrad
 * with pkg-config's tapegrad-dist (tests/install_consumers.sh): the sum
 * of the ranks' numbers across processes, and the version of both
 * libraries. Run without a launcher it is rank 0 of 1. */
#include <stdio.h>
#include <string.h>

#include "tapegrad.h"
#include "distributed/dist.h"

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (tg_dist_init(&argc, &argv, &err) != 0) {
        fprintf(stderr, "c_dist: %s\n", err.msg);
        return 1;
    }
    const int R = tg_dist_size(), r = tg_dist_rank();
    double x = r + 1;
    int bad = tg_dist_allreduce_f64(&x, 1, TG_DIST_SUM) != 0 || x != R * (R + 1) / 2.0;
    if (strcmp(tg_version(), TG_VERSION) != 0) bad = 1;
    printf("c_dist: rank %d of %d, sum %g, tapegrad %s (%s)\n", r, R, x, tg_version(), tg_build_options());
    tg_dist_finalize();
    return bad;
}
