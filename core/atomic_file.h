/* tapegrad core: files written all or nothing.
 *
 * The bytes go to a temporary file beside the path,
 * "<path>.tmp.<pid>.XXXXXX" (the writer's process id, and six characters
 * as mkstemp(3) makes them), which is written, flushed, given its mode and
 * synced to the disk, then renamed over the path; the directory is synced
 * too (best effort), so that the rename lasts. A failure at any step
 * removes the temporary file and leaves the path as it was: no
 * half-written file, no stray temporary.
 *
 * A process killed while writing (kill -9, a crash, the power) cannot
 * remove its temporary; the final name is never touched, so the path
 * still holds its last whole version (or nothing), and the temporary
 * stays beside it until the next tg_atomic_begin of the same path, which
 * removes every temporary of that path whose pid is no live process's
 * (kill(pid, 0) fails with ESRCH), best effort and in a single readdir of
 * the directory. What remains: a dead writer's temporary until the path
 * is written again; one whose pid now belongs to another live process
 * (a reused pid) until that process ends; temporaries of the old form
 * "<path>.tmp.XXXXXX", which name no writer. A directory shared with
 * processes this one cannot see (another machine, another pid namespace)
 * can lose a live writer's temporary to such a cleanup: that write then
 * fails at its rename, with the path as it was. The file gets
 * the mode of the regular file it replaces, or 0666 minus the umask when
 * it is new (the umask is read with umask(2), which is not thread-safe
 * against a concurrent umask change).
 *
 *   one file, from memory:   tg_atomic_write_file
 *   one file, in pieces:     tg_atomic_begin, tg_atomic_write ...,
 *                            tg_atomic_commit
 *   several files, all or none: each begun, written and
 *                            tg_atomic_finish'ed; then each committed,
 *                            or every one not yet committed aborted
 *
 * A begun tg_atomic_file ends with a tg_atomic_commit that returned 0 or
 * with tg_atomic_abort, whatever happened before (abort after a failure
 * frees what the file still holds). A failed call writes into its err
 * the sentence for the first failure: "'<path>': cannot create a
 * temporary file beside it: <reason>", "'<path>': <step> of the temporary
 * file failed: <reason> ('<path>' left as it was)", "'<path>': out of
 * memory", or "'<path>': a NULL argument, or the file is not open" (a
 * NULL path counts as "(null)"; a NULL f gives "atomic_<call>: the file
 * is NULL"). */
#ifndef TG_ATOMIC_FILE_H
#define TG_ATOMIC_FILE_H

#include <stdio.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_atomic_file {
    /* What failed: the step ("create" the temporary, "fdopen", "write",
     * "flush", "fchmod", "fsync", "close", "rename"; "allocate" when out
     * of memory; "argument" for a NULL argument or a file that is not
     * open) and its errno (0 when the step set none). NULL and 0 while
     * nothing has failed. A failure sticks: every later call on the file
     * fails with the first step. */
    const char *step;
    int errnum;
    /* The path being written (NULL once released); read-only. */
    const char *path;
    /* The library's own. */
    char *tmp; /* the temporary's name; NULL once it is gone */
    FILE *fp; /* the open temporary; NULL once it is closed */
    unsigned mode; /* the mode the file will have */
} tg_atomic_file;

/* Starts writing path: decides its mode and creates the temporary file
 * beside it. f need not be initialised. 0, or -1 with a message, f->step
 * and f->errnum set and nothing created (also for a NULL path). */
TG_API int tg_atomic_begin(tg_atomic_file *f, const char *path, tg_error *err);
/* Appends n bytes of data (data may be NULL when n is 0). 0, or -1 with
 * a message and the temporary removed. */
TG_API int tg_atomic_write(tg_atomic_file *f, const void *data, size_t n, tg_error *err);
/* Flushes, sets the mode, syncs and closes the temporary: it is whole
 * and waits under its temporary name for tg_atomic_commit. 0 (also when
 * already finished), or -1 with a message and the temporary removed. */
TG_API int tg_atomic_finish(tg_atomic_file *f, tg_error *err);
/* Finishes f if it is not yet, renames the temporary over the path and
 * syncs the directory. 0 with f released, or -1 with a message, the
 * temporary removed and the path as it was (f->path still names it
 * until tg_atomic_abort). */
TG_API int tg_atomic_commit(tg_atomic_file *f, tg_error *err);
/* Removes the temporary file, if there still is one, and releases f
 * (step and errnum are kept). Does nothing for a NULL or zeroed f or one
 * already released. */
TG_API void tg_atomic_abort(tg_atomic_file *f);

/* data[0, len) written to path all or nothing (data may be NULL when len
 * is 0). 0, or -1 with "atomic_write_file: " and the sentence above in
 * err ("atomic_write_file: the path is NULL" / "... the data is NULL"
 * for those). */
TG_API int tg_atomic_write_file(const char *path, const void *data, size_t len, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
