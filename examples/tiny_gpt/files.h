/* tiny_gpt output files written all or nothing, on the library's
 * tg_atomic_file (core/atomic_file.h). Each file's bytes first go to a
 * temporary file beside it (PATH.tmp.<pid>.XXXXXX); staged_commit renames them
 * all into place, staged_abort removes them. A failure part way leaves no
 * half-written file and no stray temporary. Also a small growable text
 * buffer for building file contents, and the checkpoint --ckpt names. */
#ifndef TINY_GPT_FILES_H
#define TINY_GPT_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "../../tapegrad.h"

typedef struct staged_files {
    int n, cap;
    tg_atomic_file *files;   /* malloc'd; each finished, waiting for its rename */
} staged_files;

/* Writes data to a new temporary file beside path, flushed and synced
 * (mode as a new file's: 0666 minus the umask, or the mode of the file it
 * will replace). 0, or -1 with a message naming path. */
int staged_add(staged_files *s, const char *path, const void *data, size_t len, char *err, size_t errlen);
/* Renames every staged file into place, in the order added; then frees s.
 * 0, or -1 with a message when a rename failed (the files not yet renamed
 * are removed). */
int staged_commit(staged_files *s, char *err, size_t errlen);
/* Removes the temporaries and frees s. Safe on a zeroed or freed s. */
void staged_abort(staged_files *s);

/* One file, atomically: staged_add + staged_commit. */
int write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* The checkpoint --ckpt names (the library's tg_run_checkpoint): path
 * itself when it is not a directory; for a run's directory (tiny_gpt
 * train's --out) its best.safetensors, else its last.safetensors,
 * written into buf, with a line on stderr ("tiny_gpt <cmd>: DIR is a
 * run's directory: reading DIR/best.safetensors ...") saying which was
 * chosen. NULL with a message when the directory holds neither. */
const char *ckpt_resolve(const char *path, const char *cmd, char *buf, size_t size, char *err, size_t errlen);

typedef struct textbuf {
    char *p;   /* NUL-terminated, malloc'd */
    size_t len, cap;
    bool oom;  /* a failed allocation sticks; the text is then incomplete */
} textbuf;

void tb_put(textbuf *b, const char *s, size_t n);   /* n bytes of s */
void tb_puts(textbuf *b, const char *s);
void tb_printf(textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tb_free(textbuf *b);

#endif
