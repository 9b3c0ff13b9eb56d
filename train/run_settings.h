/* tapegrad's training layer: the settings of a run (train/run.h).
 *
 * A run's config (tg_run_config) and the table of its settings: each with
 * its kind, range, help and role (what a resumed run must keep, what it
 * may change), set by name from text as a command line does, recorded
 * into every checkpoint and read back from one.
 *
 * The names of the settings are tiny_gpt train's flags without their
 * dashes ("batch-size"); '-' and '_' are the same character in a name, so
 * the field batch_size is found as "batch_size" too. Included by
 * train/run.h. */
#ifndef TG_RUN_SETTINGS_H
#define TG_RUN_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"
#include "../core/safetensors.h"
#include "../core/tensor.h"
#include "../nn/nn.h"
#include "../optim/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a run tells its caller as it goes (tg_run_options.notice): a line
 * of what it did (a tokenizer trained, token files read, temporaries of a
 * killed run removed), a notice (a setting changed on resume, a text that
 * moved), a warning (a schedule that never reaches its peak). */
typedef enum tg_run_notice { TG_RUN_SAY, TG_RUN_NOTICE, TG_RUN_WARNING } tg_run_notice;

/* ---- the settings (train/run_settings.c, train/run_config.c) -------------- */

/* The train windows: each start drawn anew (nanoGPT's), or epochs of the
 * split cut into windows in a shuffled order (tg_dataset_epoch_rows). */
typedef enum tg_run_sampling { TG_RUN_RANDOM, TG_RUN_EPOCHS } tg_run_sampling;
/* AdamW for every tensor, or Muon for the blocks' 2-D matrices
 * (tg_muon_takes) and AdamW for the rest. */
typedef enum tg_run_optimizer { TG_RUN_ADAMW, TG_RUN_MUON } tg_run_optimizer;

/* Everything a run is made of. tg_run_config_init gives tiny_gpt's
 * defaults (nanoGPT's small CPU recipe); a field may be set directly or
 * by name (tg_run_config_set). The strings are the caller's (the config
 * does not free them) unless tg_run_config_set or tg_run_config_read put
 * them there: those are the config's own until tg_run_config_release.
 * A copy made by assignment shares them: release only one of the two. */
typedef struct tg_run_config {
    /* the data */
    const char *data; /* a text file; NULL: the built-in corpus (train/corpus.h) */
    const char *tokenizer; /* a tokenizer file (tg_tok_load), or "bpe:V[:words]" to train one; NULL: bytes */
    const char *data_tokens; /* token files instead of a text (tg_dataset_from_token_files) */
    const char *val_tokens; /*   the val split's (NULL: the last 10% of data_tokens) */
    int vocab_size; /* token files: the model's ids (0: the tokenizer's) */
    /* the model (tg_model_config) */
    const char *arch; /* the family: "gpt", "llama", a registered one */
    int n_layer, n_head, n_embd, block_size;
    bool bias;
    tg_gelu_mode gelu;
    int n_kv_head, hidden_dim, multiple_of; /* a Llama's (0: n_head; 0: from multiple_of) */
    double rope_theta;
    bool rope_halves;
    double norm_eps;
    bool tied;
    tg_ffn_kind mlp;
    bool qk_norm, zero_init_proj, untie_head;
    double logit_softcap;
    double dropout;
    /* the batch and the steps */
    int batch_size, grad_accum; /* rows per micro-batch on each process; micro-batches per step */
    int64_t steps; /* optimizer steps (a time budget's cap) */
    double time_budget; /* seconds for the whole run (0: steps) */
    int64_t decay_steps; /* where the schedule reaches min_lr (0: steps) */
    double lr, min_lr;
    int64_t warmup;
    tg_lr_shape schedule;
    double decay_frac;
    tg_run_sampling sampling;
    /* the optimizers */
    double weight_decay, beta1, beta2, grad_clip;
    tg_run_optimizer optimizer;
    double muon_lr, muon_momentum;
    double ema; /* the weight averages' decay (0: none) */
    /* evaluation */
    int64_t eval_interval, eval_iters;
    bool full_val;
    int64_t seed;
    int corpus_chars;
    tg_dtype dtype; /* TG_F32 or TG_F64 */
    bool attn_composed;
    int64_t log_interval;
    int log_digits;
    int zero; /* 1: ZeRO stage 1 over the processes */
    double bucket_mb;
    /* the library's own: strings it allocated, settings given by name */
    struct {
        char **strings;
        int n, cap;
        uint32_t given[4];
    } own;
} tg_run_config;

/* How a setting's value is written. */
typedef enum tg_setting_kind {
    TG_SETTING_INT, /* int: a whole number in [min, max] */
    TG_SETTING_I64, /* int64_t: the same */
    TG_SETTING_DOUBLE, /* double: a number in [min, max] */
    TG_SETTING_STRING, /* const char * */
    TG_SETTING_BOOL, /* bool: true, false, 1 or 0 */
    TG_SETTING_SWITCH, /* bool, which a command line gives without a value */
    TG_SETTING_WORD /* an enum (or a bool), one of the setting's words: the i-th is value i */
} tg_setting_kind;

/* What a checkpoint records of a setting, and what a resume does when the
 * config it is given has another value. */
typedef enum tg_setting_role {
    TG_SETTING_NONE, /* not recorded (or recorded apart: the data by its identity) */
    TG_SETTING_MODEL, /* the model's shape, under the model config's key: a different value is an error */
    TG_SETTING_RUN, /* the run's identity, as "train.<name>": an error */
    TG_SETTING_FREE /* "train.<name>" (schedule, evaluation, the batch's split): allowed, with a notice */
} tg_setting_role;

/* One setting: a field of tg_run_config (offset, size), or of the
 * caller's when it parses a value of its own with tg_run_setting_parse. */
typedef struct tg_run_setting {
    const char *name; /* "batch-size" */
    tg_setting_kind kind;
    tg_setting_role role;
    size_t offset, size; /* the field in tg_run_config */
    double min, max; /* numbers: the inclusive range */
    const char *words; /* TG_SETTING_WORD: "adamw|muon" ("default" is taken, never listed in a message) */
    const char *help; /* one line */
} tg_run_setting;

/* The table, in the order of tiny_gpt train's --help; *n (may be NULL)
 * receives its length. */
TG_API const tg_run_setting *tg_run_settings(int *n);
/* The setting called name ('-' and '_' alike), or NULL. */
TG_API const tg_run_setting *tg_run_setting_find(const char *name);
/* Parses text as s's kind into dest (an int, int64_t, double, const
 * char *, bool or, for a word, a value of s->size bytes) with the checks
 * of a command line: numbers written in decimal ("3", "-0.5", "6e-4";
 * not "0x1", "inf" or " 3"), whole where the kind is, in [min, max], not
 * subnormal; true/false/1/0; one of the words. A string points at text.
 * 0, or -1 with a message that starts with `what` (the setting's name
 * when NULL) and shows the bytes of text outside printable ASCII as
 * \xNN; dest is then unchanged. */
TG_API int tg_run_setting_parse(const tg_run_setting *s, const char *text, const char *what, void *dest, tg_error *err);
/* The value at src (as dest above) as text that tg_run_setting_parse
 * reads back exactly (a double in the shortest %g form that does; a NULL
 * string as ""), into buf. -1 for a NULL argument or a buf too small. */
TG_API int tg_run_setting_format(const tg_run_setting *s, const void *src, char *buf, size_t size);

/* c with tiny_gpt train's defaults: nanoGPT's small CPU recipe on the
 * built-in corpus (a 4-layer GPT of width 128, block 64, batch 12, 2000
 * steps of AdamW at 1e-3 with a cosine to 1e-4 after 100 of warmup, an
 * evaluation of 200 batches every 250 steps, seed 1337). Nothing for NULL. */
TG_API void tg_run_config_init(tg_run_config *c);
/* Frees the strings the config owns (the struct stays the caller's, its
 * string fields that pointed at them NULL). Accepts NULL. */
TG_API void tg_run_config_release(tg_run_config *c);
/* Sets the setting called name from text (tg_run_setting_parse; a
 * string is copied into the config), and marks it given: a setting given
 * for a run it does not apply to (muon_lr without Muon, gelu for a
 * Llama, ...) is then refused by tg_run_new, as one given with a value
 * that differs from its default is. 0, or -1 with a message ("unknown
 * setting 'x'", or the parse's, which starts with what). */
TG_API int tg_run_config_set(tg_run_config *c, const char *name, const char *text, const char *what, tg_error *err);
/* The value of the setting called name as text (tg_run_setting_format).
 * -1 for an unknown name, a NULL argument or a buf too small. */
TG_API int tg_run_config_get(const tg_run_config *c, const char *name, char *buf, size_t size);
/* The config a checkpoint records (tg_run_save writes it into every
 * checkpoint): tiny_gpt's defaults, then every recorded setting: the
 * model's from the model config's keys, the others from "train.<name>",
 * the data from "train.data" ("" is the built-in corpus), or
 * "train.data_tokens" and "train.val_tokens". A checkpoint that records no
 * train.decay_steps (an older one) decayed over its steps. c is
 * initialised first, so it may hold anything. 0, or -1 with a message
 * naming the key whose value is malformed (c then released). */
TG_API int tg_run_config_read(tg_run_config *c, const tg_st_file *f, tg_error *err);
/* tg_run_config_read of the checkpoint at path, or, for a run's
 * directory, of its last.safetensors. 0, or -1 with a message. */
TG_API int tg_run_config_load(tg_run_config *c, const char *path, tg_error *err);

/* A config file: settings as `name = value` lines, as tiny_gpt train
 * --config reads them. '#' starts a comment outside double quotes; blank
 * lines are skipped; spaces around the name and the value go, and a value
 * in double quotes loses them; a name may start with "--"; a UTF-8 byte
 * order mark at the start is skipped. The names are not looked up here:
 * tg_run_config_set (or the program's own flags) takes them. */
#define TG_CONFIG_FILE_MAX (1 << 20) /* bytes: a config file is a few lines */
typedef struct tg_config_line {
    const char *name, *value; /* NUL-terminated, in the file's text */
    int line; /* 1-based */
} tg_config_line;
typedef struct tg_config_file {
    char *text; /* the file, cut into the names and values */
    tg_config_line *lines;
    int n;
} tg_config_file;
/* Reads the config file at path into f. A pipe is read as a file is (a
 * FIFO nobody writes to is empty, not a wait). 0, or -1 with a message
 * that starts with path: the file cannot be opened or read, holds more
 * than TG_CONFIG_FILE_MAX bytes (refused before it is read when its size
 * says so), holds a NUL byte, or has a line that is not `name = value`
 * ("PATH:LINE: expected 'name = value', got '...'", bytes outside
 * printable ASCII shown as \xNN); f is then empty. */
TG_API int tg_config_file_read(tg_config_file *f, const char *path, tg_error *err);
/* Frees what f holds and zeroes it. Accepts NULL. */
TG_API void tg_config_file_release(tg_config_file *f);

#ifdef __cplusplus
}
#endif

#endif
