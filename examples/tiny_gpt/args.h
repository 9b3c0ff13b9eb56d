/* tiny_gpt flags: a table of --name value pairs parsed into typed fields,
 * every bad value a message naming the flag. */
#ifndef TINY_GPT_ARGS_H
#define TINY_GPT_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { ARG_INT, ARG_I64, ARG_DOUBLE, ARG_STRING, ARG_BOOL, ARG_SWITCH } arg_kind;

typedef struct arg_spec {
    const char *name;     /* without the leading "--" */
    arg_kind kind;
    void *dest;           /* int*, int64_t*, double*, const char**, bool* */
    double min, max;      /* inclusive bounds for numbers */
    const char *help;
    bool seen;
} arg_spec;

/* Parses argv[0..argc) against specs. ARG_BOOL takes true/false/1/0;
 * ARG_SWITCH takes no value and sets true. Returns 0, or -1 with a
 * message in err (unknown flag, missing value, bad number, out of range). */
int args_parse(arg_spec *specs, int n_specs, int argc, char **argv, char *err, size_t errlen);
void args_usage(const arg_spec *specs, int n_specs, const char *prefix);
bool args_seen(const arg_spec *specs, int n_specs, const char *name);

#endif
