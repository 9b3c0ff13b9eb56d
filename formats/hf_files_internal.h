/* formats/hf_files.c: reading a Hugging Face directory's files (paths,
 * regular files only, bounded reads, JSON as Python reads it). Not
 * public. */
#ifndef TG_HF_FILES_INTERNAL_H
#define TG_HF_FILES_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "../core/error.h"

/* dir/name, in memory from tg_malloc (NULL when out of memory). */
char *tg_hf_path(const char *dir, const char *name);
/* Whether dir/name is there: 1 a regular file, 0 absent, -1 with a
 * message for anything else (a directory, a pipe, a device: "not a
 * regular file", which a reader must not take for absent). */
int tg_hf_stat(const char *dir, const char *name, tg_error *err);
/* The whole file dir/name, NUL-terminated, its length in *len: at most
 * 64 MiB; NULL with a message. Free with tg_free. */
char *tg_hf_read_small(const char *dir, const char *name, size_t *len, tg_error *err);
/* dir/name parsed as a JSON object; NULL with a message (also for a
 * byte-order mark before it or bytes but whitespace after it, which
 * Python's json refuses). last_wins: a key an object repeats has its last
 * value, as Python's json (transformers' reader of config.json) gives;
 * else the first (the readers refuse what they must not take twice). */
cJSON *tg_hf_read_json(const char *dir, const char *name, bool last_wins, tg_error *err);

#endif
