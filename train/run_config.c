/* A run's config in its checkpoints (train/run.h): recorded into each one,
 * read back, and a config compared with a checkpoint's on resume. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run_internal.h"

/* ---- metadata pairs -------------------------------------------------------- */

static char *dup_str(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int tg_run_kv_add(tg_run_kv *l, const char *key, const char *value)
{
    if (2 * l->n + 2 > l->cap) {
        const int cap = l->cap ? 2 * l->cap : 32;
        char **kv = realloc(l->kv, (size_t)cap * sizeof *kv);
        if (!kv) return -1;
        l->kv = kv;
        l->cap = cap;
    }
    char *k = dup_str(key), *v = dup_str(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    l->kv[2 * l->n] = k;
    l->kv[2 * l->n + 1] = v;
    l->n++;
    return 0;
}

int tg_run_kv_set(tg_run_kv *l, const char *key, const char *value)
{
    for (int i = 0; i < l->n; i++) {
        if (strcmp(l->kv[2 * i], key)) continue;
        char *v = dup_str(value);
        if (!v) return -1;
        free(l->kv[2 * i + 1]);
        l->kv[2 * i + 1] = v;
        return 0;
    }
    return tg_run_kv_add(l, key, value);
}

const char *tg_run_kv_get(const tg_run_kv *l, const char *key)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->kv[2 * i], key)) return l->kv[2 * i + 1];
    return NULL;
}

void tg_run_kv_free(tg_run_kv *l)
{
    for (int i = 0; i < 2 * l->n; i++) free(l->kv[i]);
    free(l->kv);
    memset(l, 0, sizeof *l);
}

/* ---- notices and names ----------------------------------------------------- */

void tg_run_notify(const tg_run_say *say, tg_run_notice kind, const char *fmt, ...)
{
    if (!say || !say->fn) return;
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    say->fn(say->ctx, kind, msg);
}

const char *tg_run_label(const tg_run_say *say, const char *name, char buf[80])
{
    const bool flags = say && say->flags;
    snprintf(buf, 80, "%s%s", flags ? "--" : "", name);
    for (char *p = buf; *p; p++)
        if (*p == (flags ? '_' : '-')) *p = flags ? '-' : '_';
    return buf;
}

void tg_run_key(const tg_run_setting *s, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", s->role == TG_SETTING_MODEL ? "" : "train.", s->name);
    for (char *p = buf; *p; p++)
        if (*p == '-') *p = '_';
}

/* ---- copies, and what was given --------------------------------------------- */

int tg_run_config_copy(tg_run_config *dst, const tg_run_config *src)
{
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    *dst = *src;
    memset(&dst->own, 0, sizeof dst->own);
    memcpy(dst->own.given, src->own.given, sizeof dst->own.given);
    for (int k = 0; k < n; k++) {
        if (t[k].kind != TG_SETTING_STRING) continue;
        const char **f = tg_run_field(dst, &t[k]);
        if (*f && !(*f = tg_run_config_keep(dst, *f))) {
            tg_run_config_release(dst);
            return -1;
        }
    }
    return 0;
}

bool tg_run_given(const tg_run_config *c, const tg_run_config *base, const char *name)
{
    const tg_run_setting *s = tg_run_setting_find(name);
    return s && (tg_run_config_marked(c, s) || !tg_run_setting_equal(s, tg_run_field(c, s), tg_run_field(base, s)));
}

/* ---- into a checkpoint, and back ----------------------------------------------- */

int tg_run_config_record(const tg_run_config *c, tg_run_kv *l)
{
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    for (int k = 0; k < n; k++) {
        if (t[k].role != TG_SETTING_RUN && t[k].role != TG_SETTING_FREE) continue;
        char key[96], val[4096];
        tg_run_key(&t[k], key, sizeof key);
        if (tg_run_setting_format(&t[k], tg_run_field(c, &t[k]), val, sizeof val) || tg_run_kv_add(l, key, val))
            return -1;
    }
    return 0;
}

/* The recorded value of s in f into *dest (a field's worth): 1, 0 when f
 * has no key for it, -1 (a message naming the key) when it does not parse. */
static int recorded(const tg_st_file *f, const tg_run_setting *s, tg_run_value *dest, tg_error *err)
{
    char key[96], what[128];
    tg_run_key(s, key, sizeof key);
    const char *v = tg_st_meta(f, key);
    if (!v) return 0;
    snprintf(what, sizeof what, "metadata '%s'", key);
    return tg_run_setting_parse(s, v, what, dest, err) ? -1 : 1;
}

int tg_run_config_read(tg_run_config *c, const tg_st_file *f, tg_error *err)
{
    if (!c) return tg_error_set(err, "run_config_read: NULL config");
    tg_run_config_init(c);
    if (!f) return tg_error_set(err, "run_config_read: NULL file");
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    for (int k = 0; k < n; k++) {
        if (t[k].role == TG_SETTING_NONE) continue;
        tg_run_value value;
        const int rc = recorded(f, &t[k], &value, err);
        if (rc < 0) goto fail;
        if (rc == 0) continue;
        if (t[k].kind == TG_SETTING_STRING && !(value.s = tg_run_config_keep(c, value.s))) goto oom;
        memcpy(tg_run_field(c, &t[k]), &value, t[k].size);
    }
    /* the data: its path ("" the built-in corpus), or its token files ("" none) */
    static const struct {
        const char *key;
        size_t at;
    } DATA[3] = {{"train.data", offsetof(tg_run_config, data)},
                 {"train.data_tokens", offsetof(tg_run_config, data_tokens)},
                 {"train.val_tokens", offsetof(tg_run_config, val_tokens)}};
    for (int i = 0; i < 3; i++) {
        const char *v = tg_st_meta(f, DATA[i].key);
        if (v && *v && !(*(const char **)((char *)c + DATA[i].at) = tg_run_config_keep(c, v))) goto oom;
    }
    /* the model's sizes a family keeps under keys of its own (or none: a size it fixes) from its reading of
     * the file, when it has one (a family not registered here: the keys alone) */
    tg_model_config mc;
    if (tg_model_config_read(f, &mc, NULL) == 0) {
        const char *key[5] = {"n_layer", "n_head", "n_embd", "block_size", "vocab_size"};
        int *field[5] = {&c->n_layer, &c->n_head, &c->n_embd, &c->block_size, &c->vocab_size};
        const int size[5] = {mc.n_layer, mc.n_head, mc.n_embd, mc.block_size, mc.vocab_size};
        for (int i = 0; i < 5; i++)
            if (!tg_st_meta(f, key[i]) && size[i] > 0) *field[i] = size[i];
    }
    /* a checkpoint without train.decay_steps decayed over its steps */
    if (!tg_st_meta(f, "train.decay_steps") && tg_st_meta(f, "train.steps")) c->decay_steps = c->steps;
    return 0;
oom:
    tg_error_set(err, "run_config_read: out of memory");
fail:
    tg_run_config_release(c);
    return -1;
}

int tg_run_config_load(tg_run_config *c, const char *path, tg_error *err)
{
    if (!c || !path) {
        if (c) tg_run_config_init(c);
        return tg_error_set(err, "run_config_load: NULL argument");
    }
    char file[4200];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(file, sizeof file, "%s/last.safetensors", path);
    else snprintf(file, sizeof file, "%s", path);
    tg_st_file *f = tg_st_load(file, err);
    if (!f) {
        tg_run_config_init(c);
        return -1;
    }
    const int rc = tg_run_config_read(c, f, err);
    tg_st_free(f);
    return rc ? tg_error_prefix(err, file) : 0;
}

/* ---- a config against a checkpoint ---------------------------------------------- */

int tg_run_config_against(tg_run_config *c, const tg_st_file *f, const char *from, bool model_only,
                          const tg_run_say *say, tg_error *err)
{
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    tg_run_config defaults;
    tg_run_config_init(&defaults);
    const char *again = say && say->flags ? "another --out, or --force" : "another directory, or force";
    for (int k = 0; k < n; k++) {
        const tg_run_setting *s = &t[k];
        if (s->role == TG_SETTING_NONE || (model_only && s->role != TG_SETTING_MODEL)) continue;
        tg_run_value value;
        char given[4096], rec[4096], name[80], what[128];
        tg_run_label(say, s->name, name);
        tg_run_setting_format(s, tg_run_field(c, s), given, sizeof given);
        const int have = recorded(f, s, &value, err);
        if (have < 0) return tg_error_prefix(err, from);
        if (!have) { /* (a model key another family does not have is no news) */
            if (s->role != TG_SETTING_MODEL)
                tg_run_notify(say, TG_RUN_NOTICE, "%s does not record %s; using %s", from, name, given);
            continue;
        }
        if (tg_run_setting_equal(s, tg_run_field(c, s), &value)) continue;
        if (model_only && !tg_run_given(c, &defaults, s->name)) { /* the weights' shape */
            if (s->kind == TG_SETTING_STRING && !(value.s = tg_run_config_keep(c, value.s)))
                return tg_error_set(err, "out of memory");
            memcpy(tg_run_field(c, s), &value, s->size);
            continue;
        }
        tg_run_setting_format(s, &value, rec, sizeof rec);
        if (s->role == TG_SETTING_FREE) {
            tg_run_notify(say, TG_RUN_NOTICE, "%s %s replaces the run's %s", name, given, rec);
            continue;
        }
        snprintf(what, sizeof what, "%s",
                 s->role == TG_SETTING_MODEL ? "the model's shape is fixed: start a new run"
                                             : "a resumed run keeps it: start a new run");
        return tg_error_set(err, "%s %s differs from the run's %s (%s); %s (%s)%s", name, given, rec, from, what, again,
                            s->role == TG_SETTING_MODEL ? "" : " to change it");
    }
    return 0;
}
