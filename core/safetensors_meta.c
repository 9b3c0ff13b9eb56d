/* A safetensors file's metadata values read as numbers and booleans
 * (safetensors.h: tg_st_meta_int, tg_st_meta_double, tg_st_meta_bool),
 * each refused naming its key and value. */
#include "safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err_internal.h"

/* The value of key, or -1 with "has no" in err. */
static const char *meta_value(const tg_st_file *f, const char *key, tg_error *err)
{
    const char *s = f && key ? tg_st_meta(f, key) : NULL;
    if (!s) {
        tg_error_set(err, "checkpoint metadata has no '%s'", key ? key : "(NULL)");
        return NULL;
    }
    return s;
}

/* "checkpoint metadata 'key' = 'value' is not <what>": the value's first
 * 60 bytes, bytes outside printable ASCII as \xNN. Returns -1. */
static int meta_refuse(const char *key, const char *s, const char *what, tg_error *err)
{
    char shown[TG_SHOWN_SIZE];
    return tg_error_set(err, "checkpoint metadata '%s' = '%s' is not %s", key, tg_shown(s, shown), what);
}

int tg_st_meta_int(const tg_st_file *f, const char *key, int64_t lo, int64_t hi, int64_t *out, tg_error *err)
{
    const char *s = meta_value(f, key, err);
    if (!s || !out) return -1;
    const char *d = s + (*s == '-');
    bool ok = *d != 0 && strlen(d) <= 18; /* 18 digits fit int64 */
    int64_t v = 0;
    for (; ok && *d; d++) {
        ok = *d >= '0' && *d <= '9';
        v = v * 10 + (*d - '0');
    }
    if (*s == '-') v = -v;
    if (!ok || v < lo || v > hi) {
        char what[80];
        snprintf(what, sizeof what, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        return meta_refuse(key, s, what, err);
    }
    *out = v;
    return 0;
}

int tg_st_meta_double(const tg_st_file *f, const char *key, double lo, double hi, double *out, tg_error *err)
{
    const char *s = meta_value(f, key, err);
    if (!s || !out) return -1;
    /* the form: -?digits[.digits][e[+-]digits], at least one digit before the exponent */
    const char *c = s + (*s == '-');
    int digits = 0;
    while (*c >= '0' && *c <= '9') c++, digits++;
    if (*c == '.')
        for (c++; *c >= '0' && *c <= '9'; c++) digits++;
    bool ok = digits > 0;
    if (ok && (*c == 'e' || *c == 'E')) {
        c += 1 + (c[1] == '+' || c[1] == '-');
        ok = *c >= '0' && *c <= '9';
        while (*c >= '0' && *c <= '9') c++;
    }
    double v = ok && !*c ? strtod(s, NULL) : NAN;
    if (!ok || *c || !isfinite(v) || v < lo || v > hi) {
        char what[80];
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
        return meta_refuse(key, s, what, err);
    }
    *out = v;
    return 0;
}

int tg_st_meta_bool(const tg_st_file *f, const char *key, bool *out, tg_error *err)
{
    const char *s = meta_value(f, key, err);
    if (!s || !out) return -1;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "1")) *out = true;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "0")) *out = false;
    else return meta_refuse(key, s, "true or false", err);
    return 0;
}
