#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_number(const arg_spec *s, const char *v, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x)) {
        snprintf(err, errlen, "--%s: '%s' is not a number", s->name, v);
        return -1;
    }
    if ((s->kind == ARG_INT || s->kind == ARG_I64) && x != floor(x)) {
        snprintf(err, errlen, "--%s: '%s' is not a whole number", s->name, v);
        return -1;
    }
    if (x < s->min || x > s->max) {
        snprintf(err, errlen, "--%s: %s is outside [%g, %g]", s->name, v, s->min, s->max);
        return -1;
    }
    if (s->kind == ARG_INT) *(int *)s->dest = (int)x;
    else if (s->kind == ARG_I64) *(int64_t *)s->dest = (int64_t)x;
    else *(double *)s->dest = x;
    return 0;
}

int args_parse(arg_spec *specs, int n_specs, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (flags start with --)", a);
            return -1;
        }
        arg_spec *s = NULL;
        for (int k = 0; k < n_specs; k++)
            if (!strcmp(specs[k].name, a + 2)) s = &specs[k];
        if (!s) {
            snprintf(err, errlen, "unknown flag '%s' (see --help)", a);
            return -1;
        }
        s->seen = true;
        if (s->kind == ARG_SWITCH) {
            *(bool *)s->dest = true;
            continue;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "--%s needs a value", s->name);
            return -1;
        }
        const char *v = argv[++i];
        if (s->kind == ARG_STRING) {
            *(const char **)s->dest = v;
        } else if (s->kind == ARG_BOOL) {
            if (!strcmp(v, "true") || !strcmp(v, "1")) *(bool *)s->dest = true;
            else if (!strcmp(v, "false") || !strcmp(v, "0")) *(bool *)s->dest = false;
            else {
                snprintf(err, errlen, "--%s: '%s' is not true/false", s->name, v);
                return -1;
            }
        } else if (parse_number(s, v, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

void args_usage(const arg_spec *specs, int n_specs, const char *prefix)
{
    for (int k = 0; k < n_specs; k++) {
        const arg_spec *s = &specs[k];
        char def[64] = "";
        switch (s->kind) {
        case ARG_INT: snprintf(def, sizeof def, "%d", *(int *)s->dest); break;
        case ARG_I64: snprintf(def, sizeof def, "%lld", (long long)*(int64_t *)s->dest); break;
        case ARG_DOUBLE: snprintf(def, sizeof def, "%g", *(double *)s->dest); break;
        case ARG_STRING: snprintf(def, sizeof def, "%s", *(const char **)s->dest ? *(const char **)s->dest : "-"); break;
        case ARG_BOOL: snprintf(def, sizeof def, "%s", *(bool *)s->dest ? "true" : "false"); break;
        case ARG_SWITCH: break;
        }
        fprintf(stderr, "%s--%-16s %s%s%s%s\n", prefix, s->name, s->help, s->kind == ARG_SWITCH ? "" : " [",
                def, s->kind == ARG_SWITCH ? "" : "]");
    }
}

bool args_seen(const arg_spec *specs, int n_specs, const char *name)
{
    for (int k = 0; k < n_specs; k++)
        if (!strcmp(specs[k].name, name)) return specs[k].seen;
    return false;
}
