/* tiny_gpt train: the settings of a run, recorded in its checkpoints and
 * restored by --resume, so that `train --resume --out DIR` continues the
 * same run.
 *
 * Every flag with a role (args.h) is recorded: ROLE_MODEL flags under the
 * model config's keys (n_layer, block_size, bias, ...; checkpoint.c writes
 * them), ROLE_RUN and ROLE_FREE flags as "train.<name>" (dashes become
 * underscores: train.min_lr). The data is recorded by identity: its path,
 * size and checksum. */
#ifndef TINY_GPT_RUN_H
#define TINY_GPT_RUN_H

#include "../../tapegrad.h"
#include "args.h"
#include "data.h"

/* Key/value pairs for checkpoint metadata (malloc'd strings). */
typedef struct kv_list {
    int n, cap;
    char **kv;   /* kv[2i] key, kv[2i+1] value */
} kv_list;

int kv_add(kv_list *l, const char *key, const char *value);   /* 0, or -1 out of memory */
/* key's value replaced, or the pair added: 0, or -1 out of memory. */
int kv_set(kv_list *l, const char *key, const char *value);
void kv_free(kv_list *l);

/* Every field of a model config as pairs (for comparing runs across
 * processes): "arch", "n_layer", ..., numbers exactly. 0, or -1. */
int config_fields(const tg_model_config *c, kv_list *l);

/* The metadata key of a flag: "train.<name>" (or the config key for
 * ROLE_MODEL), '-' written '_'. */
void run_key(const arg_spec *s, char *buf, size_t size);

/* Adds every ROLE_RUN and ROLE_FREE flag's current value to l. */
int run_record(const arg_spec *specs, int n_specs, kv_list *l);

/* For every flag whose role is in `roles` (a bit per arg_role: 1 << ROLE_X)
 * and that f records: a flag not given takes the recorded value; one
 * given with the same value is fine; one given with another value is an
 * error for ROLE_MODEL and ROLE_RUN (naming the flag and both values)
 * and a notice on stderr for ROLE_FREE (the given value wins). A recorded
 * value that does not parse or is out of the flag's range is an error
 * naming the key. A flag f does not record is a notice (the flag's value
 * is used), except a model flag (another family's key). `from` names f in messages; notices go to stderr prefixed
 * with "tiny_gpt <cmd>: notice:", or nowhere when cmd is NULL. 0, or -1
 * with the message. */
int run_restore(arg_spec *specs, int n_specs, unsigned roles, const tg_st_file *f, const char *from,
                const char *cmd, char *err, size_t errlen);

/* What identifies a run's text: its path ("" for the built-in corpus),
 * size and checksum (FNV-1a, 64 bits). */
typedef struct data_id {
    char path[4096];
    uint64_t bytes, fnv;
} data_id;

/* FNV-1a, 64 bits, of n bytes: the checksum tiny_gpt records and compares. */
uint64_t fnv1a64(const void *p, size_t n);

void data_id_of(data_id *id, const char *path, const char *text, size_t len);
int data_id_record(const data_id *id, kv_list *l);
/* Reads the data identity f records: 1 when it records one, 0 when it
 * does not (a checkpoint of an older tiny_gpt), -1 on malformed values. */
int data_id_read(data_id *id, const tg_st_file *f, const char *from, char *err, size_t errlen);

/* The run's text: data_flag if given, else the file f records (f may be
 * NULL: a new run), else the built-in corpus of corpus_chars characters.
 * When f records a text, the text read must be that one (same size and
 * checksum; another path is a notice) if must_match, else a different
 * one is a notice. id receives what identifies the text read. 0, or -1
 * with the message. */
int run_load_text(run_text *t, data_id *id, const char *data_flag, int corpus_chars, const tg_st_file *f,
                  const char *from, bool must_match, const char *cmd, char *err, size_t errlen);

#endif
