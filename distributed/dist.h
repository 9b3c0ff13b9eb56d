/* tapegrad's distributed layer: data-parallel training over MPI.
 *
 * A library of its own: link libtapegrad_dist (pkg-config tapegrad-dist,
 * CMake tapegrad::dist), which links libtapegrad and MPI, so that a
 * program on one process never loads MPI. tapegrad.h does not include
 * this header: include "distributed/dist.h" (installed:
 * <tapegrad/distributed/dist.h>).
 *
 * R processes (ranks) train one model. Each runs the forward and backward
 * pass of its own rows of every batch; the gradients are summed across
 * ranks before the optimizer steps, so every rank holds the same weights
 * and the run follows the losses of one process with an R times larger
 * batch, to float rounding (docs/distributed.md).
 *
 * Processes. tg_dist_init starts MPI when a launcher started the process
 * (mpirun and mpiexec of Open MPI, MPICH's Hydra, Slurm's srun set
 * OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK or PMI_SIZE). Otherwise, and
 * in a build without MPI (CMake did not find it: TG_HAVE_MPI unset), the
 * process is rank 0 of 1 and every function below does what it does for
 * one process (a collective copies or does nothing), so a program needs
 * no #ifdef and a plain start pays nothing for MPI. MPI keeps its default
 * error handler: a failed MPI call ends the whole job. Only the thread
 * that called tg_dist_init calls MPI (MPI_THREAD_FUNNELED); tapegrad's
 * worker threads never do.
 *
 * Gradients (tg_dist_grads). The store's flat gradient buffer is cut into
 * buckets: runs of whole parameters, in reverse registration order (the
 * last layers' gradients are complete first in backward), each about
 * bucket_bytes. Before the backward pass whose gradients finish a step
 * (the last micro-batch's: earlier ones only accumulate, as DDP's
 * no_sync), tg_dist_grads_begin scans the graph's tape once for the
 * earliest node that reads each parameter and installs a backward hook
 * (tg_graph_set_backward_hook). When the reverse walk has passed the
 * earliest reader of every parameter of a bucket, no node left can write
 * those gradients, and the bucket's sum across ranks starts
 * (MPI_Iallreduce in place on that slice of tg_params_grad) while the
 * backward of the earlier layers goes on; the hook also tests the oldest
 * pending bucket after every node, which is what moves Open MPI's
 * non-blocking collectives along. Buckets start in their fixed order on
 * every rank (a bucket ready early waits for the ones before it), as MPI
 * requires of collectives. tg_dist_grads_end starts what is left and
 * waits. Averaging is the caller's: seed each backward with 1 / (R * A)
 * for A micro-batches (tg_graph_backward_seeded), and the sums are the
 * mean gradient of the whole global batch, with no extra pass.
 *
 * ZeRO stage 1 (config.shard). Each rank owns a contiguous range of the
 * flat buffers, its shard (tg_dist_shard_range: sizes differ by at most
 * one element). Buckets are reduce-scattered instead (MPI_Ireduce_scatter,
 * still overlapping backward): each rank receives the summed gradients of
 * its shard only, in a buffer of its own (tg_dist_grads_shard_grad). It
 * steps an AdamW made for that shard (tg_adamw_new_shard: the moments of
 * 1/R of the elements), and tg_dist_grads_gather_params all-gathers the
 * updated shards into every rank's weights (MPI_Allgatherv in place).
 * Clipping takes the global norm from every rank's sum of squares
 * (tg_dist_grads_clip), so the coefficient is the same everywhere.
 *
 * A training run (train/run.h's tg_run) reaches the processes through
 * tg_dist_run_backend(), which implements the table of functions the run
 * needs over the above.
 *
 * Errors: functions return 0, or -1 for a bad argument (NULL, a size MPI
 * cannot count); constructors write a message into their tg_error *err
 * (core/error.h). Collectives must be called by every rank in the same
 * order with matching sizes. */
#ifndef TG_DIST_H
#define TG_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../core/graph.h"
#include "../core/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- processes ---------------------------------------------------------- */

/* Starts MPI when a launcher started this process (see above), else makes
 * this process rank 0 of 1; call it once, first thing in main (argc and
 * argv may be NULL). A second call does nothing. -1, with a message in
 * err, when a launcher started several processes but this build has no
 * MPI (each would otherwise run alone). */
TG_API int tg_dist_init(int *argc, char ***argv, tg_error *err);
/* Ends MPI if tg_dist_init started it (every rank must call it); nothing
 * otherwise, or a second time. */
TG_API void tg_dist_finalize(void);
/* True when this build has MPI (CMake found it). */
TG_API bool tg_dist_built_with_mpi(void);
/* True between tg_dist_init and tg_dist_finalize when MPI runs (a
 * launcher started the process), even as a single rank. */
TG_API bool tg_dist_mpi_running(void);
/* This process's rank, 0 .. tg_dist_size() - 1 (0 before tg_dist_init). */
TG_API int tg_dist_rank(void);
/* Processes in the job (1 before tg_dist_init or without MPI). */
TG_API int tg_dist_size(void);
/* Processes of the job on this machine (those sharing its memory), at
 * least 1: to divide the machine's cores among them. */
TG_API int tg_dist_local_size(void);
/* This process's index among them, 0 .. tg_dist_local_size() - 1. */
TG_API int tg_dist_local_rank(void);
/* Ends every process of the job with exit code `code`, after writing msg
 * (when not NULL) and a newline to stderr: MPI_Abort when MPI runs (the
 * launcher kills the other ranks, so none stays blocked in a collective),
 * exit(code) otherwise. Never returns. */
TG_API void tg_dist_abort(int code, const char *msg) __attribute__((noreturn));
/* Returns once every rank has called it. */
TG_API void tg_dist_barrier(void);

/* Reductions of small arrays (losses, flags, checksums). */
typedef enum tg_dist_op { TG_DIST_SUM, TG_DIST_MIN, TG_DIST_MAX } tg_dist_op;
/* Replaces x[0..n) on every rank with the elementwise op over all ranks'
 * x. 0, or -1 (nothing done) for a NULL x, n < 0 or an op outside
 * tg_dist_op. */
TG_API int tg_dist_allreduce_f64(double *x, int n, tg_dist_op op);
/* The same for 64-bit integers. */
TG_API int tg_dist_allreduce_i64(int64_t *x, int n, tg_dist_op op);
/* Copies `bytes` bytes at buf on rank `root` into buf on every other
 * rank (bytes the same on all). 0, or -1 for a NULL buf with bytes > 0
 * or a root outside [0, size). */
TG_API int tg_dist_bcast(void *buf, size_t bytes, int root);
/* Agreement on a failure: every rank calls it with whether it failed and
 * its message. Returns -1 when no rank failed; otherwise the lowest
 * failing rank, whose message (truncated to msglen - 1 bytes) is then in
 * msg on every rank, so that one of them can print it once. msg must
 * hold msglen >= 1 bytes. */
TG_API int tg_dist_first_failure(bool failed, char *msg, size_t msglen);

/* Rank r's shard of n elements split among `size` ranks: [*lo, *hi),
 * contiguous, in rank order, the first n % size shards one element
 * longer. Nothing is written for size < 1, r outside [0, size) or n < 0. */
TG_API void tg_dist_shard_range(int64_t n, int r, int size, int64_t *lo, int64_t *hi);

/* ---- gradients ---------------------------------------------------------- */

typedef struct tg_dist_grads tg_dist_grads;

#define TG_DIST_BUCKET_BYTES ((size_t)1 << 20) /* the default bucket size: 1 MiB */

typedef struct tg_dist_grads_config {
    size_t bucket_bytes; /* a bucket is closed once it holds this many bytes (0: TG_DIST_BUCKET_BYTES) */
    bool shard; /* ZeRO stage 1: reduce-scatter into this rank's shard (see above) */
} tg_dist_grads_config;

/* The reduction of p's gradients across the job's ranks (see above);
 * make it after every parameter is added, on every rank alike. c NULL
 * means the defaults (1 MiB buckets, no shard). NULL, with a message in
 * err, for a NULL or empty p, a bucket or shard of more elements than
 * MPI can count (INT_MAX), or out of memory. On one process nothing is
 * ever sent: begin and end do nothing and the shard is the whole store. */
TG_API tg_dist_grads *tg_dist_grads_new(tg_params *p, const tg_dist_grads_config *c, tg_error *err);
/* Frees d; it must not be between begin and end. Accepts NULL. */
TG_API void tg_dist_grads_free(tg_dist_grads *d);

/* Call after the forward of the last micro-batch of a step, before its
 * backward on g: scans g's tape for each parameter's earliest reader and
 * installs the hook that starts each bucket's reduction once its
 * gradients are complete. 0, or -1 for a NULL d or g, or a d already
 * begun (then nothing changes). */
TG_API int tg_dist_grads_begin(tg_dist_grads *d, tg_graph *g);
/* Call after that backward (also when it failed: every rank must): starts
 * the buckets not started yet, waits for all, and removes the hook.
 * Afterwards tg_params_grad holds the sum over ranks (without shard), or
 * tg_dist_grads_shard_grad this rank's shard of it (with shard). 0, or -1
 * for a NULL d or one not begun. */
TG_API int tg_dist_grads_end(tg_dist_grads *d);

/* The range [lo, hi) of the flat buffers this rank's optimizer updates:
 * its shard with shard, else [0, numel). Either pointer may be NULL; 0
 * and 0 for a NULL d. */
TG_API void tg_dist_grads_shard(const tg_dist_grads *d, int64_t *lo, int64_t *hi);
/* The summed gradients of that range after tg_dist_grads_end (hi - lo
 * elements, element k for flat element lo + k): a buffer of d's own with
 * shard on several ranks, else tg_params_grad itself. For
 * tg_adamw_step_grad. NULL for a NULL d. */
TG_API void *tg_dist_grads_shard_grad(tg_dist_grads *d);
/* Global-norm clipping of the summed gradients (tg_clip_grad_norm's rule
 * and return value): with shard, every rank's sum of squares of its shard
 * is summed across ranks and each scales its own shard; without, each
 * rank clips the whole summed gradient it holds. Call it on every rank.
 * NaN for a NULL d. */
TG_API double tg_dist_grads_clip(tg_dist_grads *d, double max_norm);
/* With shard on several ranks: after each rank updated its shard of the
 * weights, copies every shard into every rank's tg_params_data
 * (MPI_Allgatherv in place). Nothing otherwise. 0, or -1 for a NULL d. */
TG_API int tg_dist_grads_gather_params(tg_dist_grads *d);
/* Gathers every rank's `part` (its shard's hi - lo elements: e.g. its
 * optimizer moments) into `full` (tg_params_numel elements) on rank 0,
 * for a checkpoint; full is not touched, and may be NULL, elsewhere. On
 * one process, or without shard, part is the whole: copied (when full is
 * another buffer). 0, or -1 for a NULL d or part, or a NULL full on
 * rank 0. */
TG_API int tg_dist_grads_gather_shard(const tg_dist_grads *d, const void *part, void *full);

/* ---- a training run on the job's processes (distributed/run_backend.c) ------ */

typedef struct tg_run_backend tg_run_backend; /* train/run.h */

/* The backend of train/run.h's tg_run over this job's processes: MPI's
 * collectives and the gradient buckets above (shard: ZeRO stage 1), on
 * one process what tg_run_local_backend does. Give it as
 * tg_run_options.backend after tg_dist_init; it describes the job as it
 * is then (its rank and size). */
TG_API const tg_run_backend *tg_dist_run_backend(void);

/* Seconds per reduction of every bucket, started all at once with nothing
 * to hide them behind, averaged over reps (at least 1) runs: the
 * communication time an overlapped step saves. It reduces the gradients as
 * they are, so call it with zeroed gradients (sums of zeros stay 0).
 * Every rank must call it. 0 on one process; NaN for a NULL d. */
TG_API double tg_dist_grads_probe(tg_dist_grads *d, int reps);

/* One bucket, for reports: where it lies, what it holds and, for the
 * last step, when it started and finished. */
typedef struct tg_dist_bucket {
    int64_t offset, numel; /* flat elements [offset, offset + numel) */
    int first_param, n_params; /* parameters first_param .. first_param + n_params - 1 */
    int ready_node; /* the tape index the walk had to pass (the earliest reader) */
    double launched, done; /* seconds after tg_dist_grads_begin */
    bool in_backward; /* started by the hook, i.e. while backward ran */
} tg_dist_bucket;
/* Buckets of d, in the order they start (0 for a NULL d). */
TG_API int tg_dist_grads_bucket_count(const tg_dist_grads *d);
/* Bucket i into *out. 0, or -1 for a NULL d or out, or i out of range. */
TG_API int tg_dist_grads_bucket(const tg_dist_grads *d, int i, tg_dist_bucket *out);

/* Time accounting over every begin/end pair so far. */
typedef struct tg_dist_stats {
    int64_t steps; /* begin/end pairs */
    int64_t bytes; /* gradient bytes one step reduces */
    double backward_s; /* total from begin to end: the backward passes */
    double wait_s; /* total inside end: communication backward did not hide */
    double last_backward_s, last_wait_s; /* the same for the last step */
    int last_in_backward; /* buckets the last step started during its backward */
} tg_dist_stats;
/* d's accounting into *s (zeros for a NULL d). */
TG_API void tg_dist_grads_stats(const tg_dist_grads *d, tg_dist_stats *s);

#ifdef __cplusplus
}
#endif

#endif
