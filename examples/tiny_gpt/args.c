#include "args.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tg_config_file config; /* the --config file's lines */

/* The flags a config file's line set (and the command line did not): the
 * file, the line and the name as the line writes it (in config), for
 * args_place and args_apply. */
#define ORIGINS 256
static const char *config_path;
static struct origin {
    const arg_spec *spec;
    int line;
    const char *name;
} origins[ORIGINS];
static int n_origins;

/* The values of the settings given (ARG_SETTING), as text, for args_apply. */
static struct given {
    const arg_spec *spec;
    const char *text; /* in argv or config */
} givens[ORIGINS];
static int n_givens;

static void given_set(const arg_spec *spec, const char *text)
{
    for (int i = 0; i < n_givens; i++)
        if (givens[i].spec == spec) {
            givens[i].text = text;
            return;
        }
    if (n_givens < ORIGINS) givens[n_givens++] = (struct given){spec, text};
}

static const char *given_text(const arg_spec *spec)
{
    for (int i = 0; i < n_givens; i++)
        if (givens[i].spec == spec) return givens[i].text;
    return NULL;
}

static struct origin *origin_of(const arg_spec *spec)
{
    for (int i = 0; i < n_origins; i++)
        if (origins[i].spec == spec) return &origins[i];
    return NULL;
}

static void origin_set(const arg_spec *spec, int line, const char *name)
{
    struct origin *o = origin_of(spec);
    if (!o && n_origins < ORIGINS) o = &origins[n_origins++];
    if (o) *o = (struct origin){spec, line, name};
}

static void origin_clear(const arg_spec *spec)
{
    struct origin *o = origin_of(spec);
    if (o) *o = origins[--n_origins];
}

void args_free(void)
{
    tg_config_file_release(&config);
    config_path = NULL;
    n_origins = 0;
    n_givens = 0;
}

void args_place(const arg_spec *specs, int n_specs, const char *name, char *err, size_t errlen)
{
    const arg_spec *s = args_find((arg_spec *)specs, n_specs, name);
    const struct origin *o = s ? origin_of(s) : NULL;
    char flag[80];
    snprintf(flag, sizeof flag, "--%s:", s ? s->name : name);
    const size_t n = strlen(flag);
    if (!o || !config_path || strncmp(err, flag, n) || errlen < 2) return;
    char rest[2048];
    snprintf(rest, sizeof rest, "%s", err + n);
    snprintf(err, errlen, "--config %s:%d: %s:%s", config_path, o->line, o->name, rest);
}

/* s as a message shows it: printable ASCII as it is, any other byte as
 * \xNN (a config file or a command line may hold a BOM, a non-breaking
 * space or binary), at most SHOWN_BYTES bytes of s and then "...". */
#define SHOWN_BYTES 60
#define SHOWN (4 * SHOWN_BYTES + 4)
static const char *shown(const char *s, char buf[SHOWN])
{
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (i == SHOWN_BYTES) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        const unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
    }
    buf[o] = 0;
    return buf;
}

/* Names match with '_' and '-' taken as the same character. */
static bool same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '_' || *a == '-') && (*b == '_' || *b == '-'))) return false;
    return *a == *b;
}

arg_spec *args_find(arg_spec *specs, int n_specs, const char *name)
{
    for (int k = 0; k < n_specs; k++)
        if (same_name(specs[k].name, name)) return &specs[k];
    return NULL;
}

bool args_seen(const arg_spec *specs, int n_specs, const char *name)
{
    const arg_spec *s = args_find((arg_spec *)specs, n_specs, name);
    return s && s->seen;
}

/* Edit distance (insertions, deletions, substitutions), '_' = '-'. */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b), row[64];
    if (la >= 63 || lb >= 63) return 99;
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            bool eq =
                a[i - 1] == b[j - 1] || ((a[i - 1] == '_' || a[i - 1] == '-') && (b[j - 1] == '_' || b[j - 1] == '-'));
            int best = diag + !eq;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = row[j];
            row[j] = best;
        }
    }
    return row[lb];
}

/* "unknown flag '--x'" on the command line (where ""), or "<where>unknown
 * setting 'x'" in a config file, plus the closest known name if one is
 * close. */
static void unknown(const arg_spec *specs, int n_specs, const char *where, const char *text, const char *name,
                    char *err, size_t errlen)
{
    const char *best = NULL;
    int bd = 99;
    for (int k = 0; k < n_specs; k++) {
        int d = distance(name, specs[k].name);
        if (d < bd) bd = d, best = specs[k].name;
    }
    const bool cfg = where[0] != 0;
    const int limit = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
    char hint[96] = "", b[SHOWN];
    if (best && bd <= limit) snprintf(hint, sizeof hint, "; did you mean %s%s?", cfg ? "" : "--", best);
    snprintf(err, errlen, "%sunknown %s '%s'%s (see --help)", where, cfg ? "setting" : "flag", shown(text, b), hint);
}

/* The library's description of a flag's value: the setting itself for
 * ARG_SETTING, else one of the same kind and range. */
static tg_run_setting as_setting(const arg_spec *s)
{
    if (s->kind == ARG_SETTING) return *tg_run_setting_find(s->name);
    static const tg_setting_kind KIND[] = {TG_SETTING_INT,    TG_SETTING_I64,  TG_SETTING_DOUBLE,
                                           TG_SETTING_STRING, TG_SETTING_BOOL, TG_SETTING_SWITCH};
    return (tg_run_setting){.name = s->name, .kind = KIND[s->kind], .min = s->min, .max = s->max};
}

/* A flag's value: stored into dest, or for a setting checked (but for a
 * word, which args_apply checks in its turn) and kept as text. */
static int set_flag(arg_spec *s, const char *v, const char *what, char *err, size_t errlen)
{
    const tg_run_setting t = as_setting(s);
    tg_error e = {0};
    union {
        int i;
        int64_t l;
        double d;
        const char *s;
        bool b;
    } scratch;
    void *dest = s->kind == ARG_SETTING ? (void *)&scratch : s->dest;
    if ((s->kind != ARG_SETTING || t.kind != TG_SETTING_WORD) && tg_run_setting_parse(&t, v, what, dest, &e)) {
        snprintf(err, errlen, "%s", e.msg);
        return -1;
    }
    if (s->kind == ARG_SETTING) given_set(s, v);
    s->seen = true;
    return 0;
}

/* The --config file's lines (the library's reader: train/run_settings.h),
 * each a flag of the table, set as the command line sets one. */
static int parse_config(arg_spec *specs, int n_specs, const char *path, char *err, size_t errlen)
{
    tg_error e = {0};
    tg_config_file_release(&config);
    config_path = path;
    n_origins = 0;
    if (tg_config_file_read(&config, path, &e)) {
        snprintf(err, errlen, "--config %s", e.msg);
        return -1;
    }
    for (int i = 0; i < config.n; i++) {
        const tg_config_line *l = &config.lines[i];
        arg_spec *s = args_find(specs, n_specs, l->name);
        char where[600];
        snprintf(where, sizeof where, "--config %s:%d: ", path, l->line);
        if (!s) {
            unknown(specs, n_specs, where, l->name, l->name, err, errlen);
            return -1;
        }
        if (!strcmp(s->name, "config")) {
            snprintf(err, errlen,
                     "%s'%s' cannot be set in a config file: a config file does not name another "
                     "(give one --config on the command line)",
                     where, l->name);
            return -1;
        }
        snprintf(where, sizeof where, "--config %s:%d: %s", path, l->line, l->name);
        if (set_flag(s, l->value, where, err, errlen)) return -1;
        origin_set(s, l->line, l->name);
    }
    return 0;
}

/* The message for --NAME at argv[i] without a value: the last argument,
 * or followed by another flag (a value that starts with "--" is given as
 * --NAME=VALUE, so that a forgotten value never swallows the next flag). */
static void needs_value(const char *name, int i, int argc, char **argv, char *err, size_t errlen)
{
    char b[SHOWN];
    if (i + 1 < argc)
        snprintf(err, errlen,
                 "--%s needs a value, and '%s' after it is a flag (write --%s=VALUE for a value that "
                 "starts with --)",
                 name, shown(argv[i + 1], b), name);
    else snprintf(err, errlen, "--%s needs a value", name);
}

int args_parse(arg_spec *specs, int n_specs, int argc, char **argv, char *err, size_t errlen)
{
    /* the config file first, so that the command line overrides it */
    arg_spec *cfg = args_find(specs, n_specs, "config");
    for (int i = 0; cfg && i < argc; i++) {
        const char *path = NULL;
        if (!strcmp(argv[i], "--config")) path = i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[i + 1] : NULL;
        else if (!strncmp(argv[i], "--config=", 9)) path = argv[i] + 9;
        else continue;
        if (!path) {
            needs_value("config", i, argc, argv, err, errlen);
            return -1;
        }
        if (*(const char **)cfg->dest) {
            snprintf(err, errlen, "--config is given twice");
            return -1;
        }
        *(const char **)cfg->dest = path;
        cfg->seen = true;
        if (parse_config(specs, n_specs, path, err, errlen)) return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        char b[SHOWN];
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (flags start with --)", shown(a, b));
            return -1;
        }
        char name[64];
        const char *eq = strchr(a, '='), *v = NULL;
        size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, a + 2, nl);
        name[nl] = 0;
        arg_spec *s = args_find(specs, n_specs, name);
        if (!s) {
            unknown(specs, n_specs, "", a, name, err, errlen);
            return -1;
        }
        if (eq) v = eq + 1;
        else if (s->kind == ARG_SWITCH || (s->kind == ARG_SETTING && as_setting(s).kind == TG_SETTING_SWITCH))
            v = "true";
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) v = argv[++i];
        else {
            needs_value(s->name, i, argc, argv, err, errlen);
            return -1;
        }
        if (s == cfg) continue; /* read above */
        char what[80];
        snprintf(what, sizeof what, "--%s", s->name);
        if (set_flag(s, v, what, err, errlen)) return -1;
        origin_clear(s); /* the command line's value wins: named as the flag */
    }
    return 0;
}

void args_usage(FILE *out, const arg_spec *specs, int n_specs, const char *prefix)
{
    for (int k = 0; k < n_specs; k++) {
        const arg_spec *s = &specs[k];
        const tg_run_setting t = as_setting(s);
        const void *now = s->kind == ARG_SETTING ? (const char *)s->dest + t.offset : s->dest;
        char def[64] = "-";
        if (t.kind != TG_SETTING_STRING || *(const char *const *)now) tg_run_setting_format(&t, now, def, sizeof def);
        const char *help = s->kind == ARG_SETTING ? t.help : s->help;
        if (t.kind == TG_SETTING_SWITCH) fprintf(out, "%s--%-16s %s\n", prefix, s->name, help);
        else fprintf(out, "%s--%-16s %s [%s]\n", prefix, s->name, help, def);
    }
}

/* The settings given, named as args_place names them, in one pass of
 * args_apply (first: those in `first`, or the others). */
static int apply_pass(const arg_spec *specs, int n_specs, tg_run_config *dest, const char *const *first, bool firsts,
                      char *err, size_t errlen)
{
    for (int k = 0; k < n_specs; k++) {
        const arg_spec *s = &specs[k];
        if (s->kind != ARG_SETTING || !s->seen) continue;
        bool listed = false;
        for (int i = 0; first && first[i]; i++) listed |= !strcmp(first[i], s->name);
        if (listed != firsts) continue;
        const struct origin *o = origin_of(s);
        char what[600];
        if (o && config_path) snprintf(what, sizeof what, "--config %s:%d: %s", config_path, o->line, o->name);
        else snprintf(what, sizeof what, "--%s", s->name);
        tg_error e = {0};
        if (tg_run_config_set(dest, s->name, given_text(s), what, &e)) {
            snprintf(err, errlen, "%s", e.msg);
            return -1;
        }
    }
    return 0;
}

int args_apply(const arg_spec *specs, int n_specs, tg_run_config *dest, const char *const *first, char *err,
               size_t errlen)
{
    return apply_pass(specs, n_specs, dest, first, true, err, errlen) ||
            apply_pass(specs, n_specs, dest, first, false, err, errlen)
        ? -1
        : 0;
}
