/* tiny_gpt train on several processes (`mpirun -np R tiny_gpt train`):
 * what train.c needs besides distributed/'s gradient buckets. On one process
 * every function here is the plain single-process behaviour.
 *
 * Three ways a run stops when something is wrong, by where it happens:
 *   - before training, every rank goes through the same stages and then
 *     ranks_agree: if any failed, rank 0 prints the first failing rank's
 *     message once and every rank exits 1 (nobody is left waiting);
 *   - ranks_check_same: every rank's run (settings, data, vocabulary,
 *     weights, checkpoint) must be rank 0's; a difference is one message
 *     naming the rank and the field;
 *   - during training a rank that fails on its own (a NaN, a file, out of
 *     memory) cannot wait for the others, which are inside a collective:
 *     ranks_abort prints "tiny_gpt train: rank R: message" and MPI_Abort
 *     ends the job. */
#ifndef TINY_GPT_RANKS_H
#define TINY_GPT_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../distributed/dist.h"
#include "run.h"

/* Every rank calls it after the same stage with whether it failed and
 * its message. 0 when no rank failed. Otherwise rank 0 prints "tiny_gpt
 * cmd: message" (all failed), or "tiny_gpt cmd: rank R: message" (R the
 * first that did; on one process the plain form), and it returns -1 on
 * every rank. */
int ranks_agree(const char *cmd, bool failed, const char *err);

/* Every rank's fields (key/value pairs, in the same order on every rank)
 * must equal rank 0's. 0 when they do; else -1 on every rank with the
 * same message in err, naming the first rank that differs, the field and
 * both values. */
int ranks_check_same(const kv_list *fields, char *err, size_t errlen);

/* A failure on this rank alone, while the others may be inside a
 * collective: prints "tiny_gpt cmd: rank R: err" and ends the whole job
 * (tg_dist_abort). */
void ranks_abort(const char *cmd, const char *err) __attribute__((noreturn));

/* The test suite's fault injection (tests/tiny_gpt_mpi.sh): true when the
 * environment variable TINY_GPT_FAULT is "nan:K" and step is K, so that
 * this process alone sees a loss of NaN there. Read once. */
bool ranks_fault_nan(int64_t step);

#endif
