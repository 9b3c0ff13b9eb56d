/* Data-parallel training over MPI (dist.h): the processes and the small
 * collectives; the gradient buckets are in grads.c.
 *
 * Compiled with MPI when CMake finds it (TG_HAVE_MPI); without, every
 * function is its one-process form and nothing here calls MPI. With MPI
 * but no launcher (a plain start) MPI is never initialised, so
 * tg_dist_size() is 1 and the same one-process paths run. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/err_internal.h"
#include "dist_internal.h"

#ifdef TG_HAVE_MPI
#include <mpi.h>
#endif

double tg_dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- processes ---------------------------------------------------------- */

static struct {
    bool init, mpi, finalized;
    int rank, size, local_rank, local_size;
} st = {.size = 1, .local_size = 1};

/* The process count a launcher announced, or 0 when none did. */
static int launcher_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v) > 0 ? atoi(v) : 1;
    }
    return getenv("PMIX_RANK") || getenv("PMI_RANK") ? 1 : 0;
}

int tg_dist_init(int *argc, char ***argv, tg_error *err)
{
    if (st.init) return 0;
    int launched = launcher_size();
#ifdef TG_HAVE_MPI
    if (launched) {
        int provided;
        MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &st.size);
        MPI_Comm local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &st.local_rank);
        MPI_Comm_size(local, &st.local_size);
        MPI_Comm_free(&local);
        st.mpi = true;
    }
#else
    (void)argc;
    (void)argv;
    if (launched > 1) {
        tg_error_set(err,
                     "dist_init: a launcher started %d processes, but this tapegrad was built without "
                     "MPI (each would train alone); install libopenmpi-dev and rebuild",
                     launched);
        return -1;
    }
#endif
    (void)err;
    st.init = true;
    return 0;
}

void tg_dist_finalize(void)
{
#ifdef TG_HAVE_MPI
    if (st.mpi && !st.finalized) MPI_Finalize();
#endif
    st.finalized = true;
    st.mpi = false;
}

bool tg_dist_built_with_mpi(void)
{
#ifdef TG_HAVE_MPI
    return true;
#else
    return false;
#endif
}

bool tg_dist_mpi_running(void) { return st.mpi; }
int tg_dist_rank(void) { return st.rank; }
int tg_dist_size(void) { return st.size; }
int tg_dist_local_size(void) { return st.local_size; }
int tg_dist_local_rank(void) { return st.local_rank; }

void tg_dist_abort(int code, const char *msg)
{
    if (msg) fprintf(stderr, "%s\n", msg);
    fflush(stdout);
    fflush(stderr);
#ifdef TG_HAVE_MPI
    if (st.mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code);
}

/* Whether collectives have anyone to talk to. */
bool tg_dist_multi(void) { return st.mpi && st.size > 1; }

void tg_dist_barrier(void)
{
#ifdef TG_HAVE_MPI
    if (tg_dist_multi()) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

#ifdef TG_HAVE_MPI
static MPI_Op mpi_op(tg_dist_op op) { return op == TG_DIST_SUM ? MPI_SUM : op == TG_DIST_MIN ? MPI_MIN : MPI_MAX; }
#endif

static bool op_ok(tg_dist_op op) { return op == TG_DIST_SUM || op == TG_DIST_MIN || op == TG_DIST_MAX; }

int tg_dist_allreduce_f64(double *x, int n, tg_dist_op op)
{
    if ((!x && n > 0) || n < 0 || !op_ok(op)) return -1;
#ifdef TG_HAVE_MPI
    if (tg_dist_multi() && n > 0) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD);
#endif
    return 0;
}

int tg_dist_allreduce_i64(int64_t *x, int n, tg_dist_op op)
{
    if ((!x && n > 0) || n < 0 || !op_ok(op)) return -1;
#ifdef TG_HAVE_MPI
    if (tg_dist_multi() && n > 0) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT64_T, mpi_op(op), MPI_COMM_WORLD);
#endif
    return 0;
}

int tg_dist_bcast(void *buf, size_t bytes, int root)
{
    if ((!buf && bytes > 0) || root < 0 || root >= st.size) return -1;
#ifdef TG_HAVE_MPI
    for (size_t at = 0; tg_dist_multi() && at < bytes;) { /* MPI counts are ints */
        size_t n = bytes - at < ((size_t)1 << 30) ? bytes - at : (size_t)1 << 30;
        MPI_Bcast((char *)buf + at, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        at += n;
    }
#endif
    return 0;
}

int tg_dist_first_failure(bool failed, char *msg, size_t msglen)
{
    int64_t who = failed ? st.rank : st.size;
    tg_dist_allreduce_i64(&who, 1, TG_DIST_MIN);
    if (who == st.size) return -1;
    if (msg && msglen) {
        int64_t len = st.rank == who ? (int64_t)strnlen(msg, msglen - 1) : 0;
        tg_dist_allreduce_i64(&len, 1, TG_DIST_MAX); /* only `who` says a length */
        tg_dist_bcast(msg, (size_t)len, (int)who);
        msg[len] = 0;
    }
    return (int)who;
}

void tg_dist_shard_range(int64_t n, int r, int size, int64_t *lo, int64_t *hi)
{
    if (size < 1 || r < 0 || r >= size || n < 0) return;
    int64_t base = n / size, rem = n % size;
    int64_t a = r * base + (r < rem ? r : rem);
    if (lo) *lo = a;
    if (hi) *hi = a + base + (r < rem);
}
