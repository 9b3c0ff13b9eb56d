/* tiny_gpt flags: a table of --name value pairs parsed into typed fields,
 * every bad value a message naming the flag.
 *
 * Flags come as `--name value` or `--name=value` (a value that starts
 * with "--" only in the second form), and from a config file (`--config
 * FILE`: `name = value` lines, `#` comments, `_` or `-` in names, a UTF-8
 * BOM at the start skipped); the command line overrides the file. Numbers
 * are decimal ("3", "-0.5", "6e-4"; not "0x1", "inf" or " 3"). Messages
 * show a value's bytes outside printable ASCII as \xNN. A flag's role
 * says what a resumed training run does with it (train.c, run.c). */
#ifndef TINY_GPT_ARGS_H
#define TINY_GPT_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { ARG_INT, ARG_I64, ARG_DOUBLE, ARG_STRING, ARG_BOOL, ARG_SWITCH } arg_kind;

/* What a training checkpoint records of a flag, and what --resume does
 * when the flag is given again with another value. */
typedef enum {
    ROLE_NONE,   /* not recorded (--threads, --out, ...) */
    ROLE_MODEL,  /* the model's config (n_layer, ...): a different value is an error */
    ROLE_RUN,    /* the run's identity (optimizer, seed, data, dtype): an error */
    ROLE_FREE    /* schedule, evaluation, batch split: allowed, printed as a notice */
} arg_role;

typedef struct arg_spec {
    const char *name;     /* without the leading "--" */
    arg_kind kind;
    void *dest;           /* int*, int64_t*, double*, const char**, bool* */
    double min, max;      /* inclusive bounds for numbers */
    const char *help;
    bool seen;            /* given on the command line or in the config file */
    arg_role role;
} arg_spec;

/* A parsed value of any kind (what dest points to). */
typedef union arg_value {
    int i;
    int64_t l;
    double d;
    const char *s;
    bool b;
} arg_value;

/* Parses argv[0..argc) against specs, after the file of a --config flag
 * if there is one. ARG_BOOL takes true/false/1/0; ARG_SWITCH takes no
 * value on the command line (true/false in a config file). Returns 0, or
 * -1 with a message in err (unknown flag, with the closest known name;
 * missing value, or a flag where the value should be; bad number; out of
 * range, a subnormal number included; a bad config line, or a config
 * file that sets config, named by file and line). Strings point into argv or into storage that lives
 * until args_free. */
int args_parse(arg_spec *specs, int n_specs, int argc, char **argv, char *err, size_t errlen);
/* Frees what args_parse kept of a config file. */
void args_free(void);
/* For a message about flag `name` that a check after parsing wrote into
 * err as "--name: ..." (a word that is not one of the flag's values):
 * when the value came from a config file's line (not overridden on the
 * command line), "--name" becomes that line's place, "--config FILE:LINE:
 * name", as args_parse names a bad number there. Else err stays. */
void args_place(const arg_spec *specs, int n_specs, const char *name, char *err, size_t errlen);
/* One line per flag: name, help, default (the value dest holds now). */
void args_usage(FILE *out, const arg_spec *specs, int n_specs, const char *prefix);
bool args_seen(const arg_spec *specs, int n_specs, const char *name);
arg_spec *args_find(arg_spec *specs, int n_specs, const char *name);

/* Parses v as s's kind into *out with the same checks as a flag (a
 * message naming `what` in err). 0 or -1. */
int arg_value_parse(const arg_spec *s, const char *v, arg_value *out, const char *what, char *err,
                    size_t errlen);
/* The value s's dest holds now, written so that arg_value_parse reads it
 * back exactly (doubles as format_double writes them). */
void arg_value_format(const arg_spec *s, char *buf, size_t size);
/* The shortest %g form (6 to 17 digits) that reads back as exactly x. */
void format_double(double x, char *buf, size_t size);
/* The value s's dest holds now. */
arg_value arg_value_load(const arg_spec *s);
/* Stores v into s's dest. */
void arg_value_store(arg_spec *s, arg_value v);

#endif
