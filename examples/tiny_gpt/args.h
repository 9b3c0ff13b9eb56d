/* tiny_gpt flags: a table of --name value pairs parsed into typed fields,
 * every bad value a message naming the flag.
 *
 * Flags come as `--name value` or `--name=value` (a value that starts
 * with "--" only in the second form), and from a config file (`--config
 * FILE`: `name = value` lines, `#` comments, `_` or `-` in names, a UTF-8
 * BOM at the start skipped); the command line overrides the file. Numbers
 * are decimal ("3", "-0.5", "6e-4"; not "0x1", "inf" or " 3"). Messages
 * show a value's bytes outside printable ASCII as \xNN. Values are read
 * as the training run's settings are (tg_run_setting_parse). */
#ifndef TINY_GPT_ARGS_H
#define TINY_GPT_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../tapegrad.h"

/* ARG_SETTING: one of the training run's settings (train/run.h's table):
 * dest is the tg_run_config, name the setting's; its value is checked as
 * it is parsed (a number's range, ...) but kept as text and stored by
 * args_apply, once the command line has overridden the config file. */
typedef enum { ARG_INT, ARG_I64, ARG_DOUBLE, ARG_STRING, ARG_BOOL, ARG_SWITCH, ARG_SETTING } arg_kind;

/* Tables written before the settings moved into the library name a role:
 * every flag's is ROLE_NONE (the settings' roles are tg_run_setting's). */
typedef enum { ROLE_NONE } arg_role;

typedef struct arg_spec {
    const char *name; /* without the leading "--" */
    arg_kind kind;
    void *dest; /* int*, int64_t*, double*, const char**, bool*; ARG_SETTING: tg_run_config* */
    double min, max; /* inclusive bounds for numbers */
    const char *help;
    bool seen; /* given on the command line or in the config file */
    arg_role role;
} arg_spec;

/* Parses argv[0..argc) against specs, after the file of a --config flag
 * if there is one. ARG_BOOL takes true/false/1/0; ARG_SWITCH takes no
 * value on the command line (true/false in a config file). Returns 0, or
 * -1 with a message in err (unknown flag, with the closest known name;
 * missing value, or a flag where the value should be; bad number; out of
 * range, a subnormal number included; a bad config line, or a config
 * file that sets config, named by file and line). Strings point into argv or into storage that lives
 * until args_free. */
int args_parse(arg_spec *specs, int n_specs, int argc, char **argv, char *err, size_t errlen);
/* Frees what args_parse kept of a config file and of the settings' values. */
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

/* The settings given (ARG_SETTING, seen) into dest, each with
 * tg_run_config_set, its message naming the flag or the config file's
 * line: first those named in `first` (NULL-terminated; a check the
 * commands share runs them first), then the others in table order. 0,
 * or -1 with the message. */
int args_apply(const arg_spec *specs, int n_specs, tg_run_config *dest, const char *const *first, char *err,
               size_t errlen);

#endif
