/* A run's settings in its checkpoints (see run.h). */
#define _DEFAULT_SOURCE   /* realpath */
#include "run.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int kv_add(kv_list *l, const char *key, const char *value)
{
    if (2 * l->n + 2 > l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
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

int kv_set(kv_list *l, const char *key, const char *value)
{
    for (int i = 0; i < l->n; i++) {
        if (strcmp(l->kv[2 * i], key)) continue;
        char *v = dup_str(value);
        if (!v) return -1;
        free(l->kv[2 * i + 1]);
        l->kv[2 * i + 1] = v;
        return 0;
    }
    return kv_add(l, key, value);
}

void kv_free(kv_list *l)
{
    for (int i = 0; i < 2 * l->n; i++) free(l->kv[i]);
    free(l->kv);
    memset(l, 0, sizeof *l);
}

int config_fields(const tg_model_config *c, kv_list *l)
{
    const char *k[8] = {"n_layer", "n_head", "n_embd", "block_size", "vocab_size", "n_kv_head", "hidden_dim", NULL};
    const int n[7] = {c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, c->n_kv_head, c->hidden_dim};
    const char *b[7] = {"bias", "rope_halves", "tied", "qk_norm", "zero_init_proj", "untie_head", NULL};
    const bool f[6] = {c->bias, c->rope_halves, c->tied, c->qk_norm, c->zero_init_proj, c->untie_head};
    const char *d[4] = {"rope_theta", "norm_eps", "dropout", "logit_softcap"};
    const double x[4] = {c->rope_theta, c->norm_eps, c->dropout, c->logit_softcap};
    char v[40];
    int rc = kv_add(l, "arch", c->arch ? c->arch : "");
    rc |= kv_add(l, "gelu", c->gelu == TG_GELU_TANH ? "tanh" : "erf");
    for (int i = 0; k[i]; i++) snprintf(v, sizeof v, "%d", n[i]), rc |= kv_add(l, k[i], v);
    for (int i = 0; b[i]; i++) rc |= kv_add(l, b[i], f[i] ? "true" : "false");
    for (int i = 0; i < 4; i++) snprintf(v, sizeof v, "%.17g", x[i]), rc |= kv_add(l, d[i], v);
    rc |= kv_add(l, "mlp", tg_ffn_kind_name(c->mlp) ? tg_ffn_kind_name(c->mlp) : "?");
    return rc ? -1 : 0;
}

void run_key(const arg_spec *s, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", s->role == ROLE_MODEL ? "" : "train.", s->name);
    for (char *p = buf; *p; p++)
        if (*p == '-') *p = '_';
}

int run_record(const arg_spec *specs, int n_specs, kv_list *l)
{
    for (int k = 0; k < n_specs; k++) {
        if (specs[k].role != ROLE_RUN && specs[k].role != ROLE_FREE) continue;
        char key[96], val[4096];
        run_key(&specs[k], key, sizeof key);
        arg_value_format(&specs[k], val, sizeof val);
        if (kv_add(l, key, val)) return -1;
    }
    return 0;
}

static bool same_value(const arg_spec *s, arg_value a, arg_value b)
{
    switch (s->kind) {
    case ARG_INT: return a.i == b.i;
    case ARG_I64: return a.l == b.l;
    case ARG_DOUBLE: return a.d == b.d;
    case ARG_STRING: return !strcmp(a.s ? a.s : "", b.s ? b.s : "");
    case ARG_BOOL:
    case ARG_SWITCH: return a.b == b.b;
    }
    return false;
}

/* The value v of flag s, written as arg_value_format writes it. */
static void format_as(const arg_spec *s, arg_value v, char *buf, size_t size)
{
    arg_spec t = *s;
    t.dest = &v;
    arg_value_format(&t, buf, size);
}

int run_restore(arg_spec *specs, int n_specs, unsigned roles, const tg_st_file *f, const char *from,
                const char *cmd, char *err, size_t errlen)
{
    for (int k = 0; k < n_specs; k++) {
        arg_spec *s = &specs[k];
        if (s->role == ROLE_NONE || !(roles & (1u << s->role))) continue;
        char key[96], given[4096], rec[4096], what[256];
        run_key(s, key, sizeof key);
        arg_value_format(s, given, sizeof given);
        const char *stored = tg_st_meta(f, key);
        if (!stored) {   /* (a model key another family does not have is no news) */
            if (cmd && s->role != ROLE_MODEL)
                fprintf(stderr, "tiny_gpt %s: notice: %s does not record --%s; using %s\n", cmd, from, s->name, given);
            continue;
        }
        arg_value v;
        snprintf(what, sizeof what, "%s: metadata '%s'", from, key);
        if (arg_value_parse(s, stored, &v, what, err, errlen)) return -1;
        if (!s->seen) {
            arg_value_store(s, v);
            continue;
        }
        if (same_value(s, arg_value_load(s), v)) continue;
        format_as(s, v, rec, sizeof rec);
        if (s->role == ROLE_FREE) {
            if (cmd) fprintf(stderr, "tiny_gpt %s: notice: --%s %s replaces the run's %s\n", cmd, s->name, given, rec);
            continue;
        }
        snprintf(err, errlen, "--%s %s differs from the run's %s (%s); %s", s->name, given, rec, from,
                 s->role == ROLE_MODEL ? "the model's shape is fixed: start a new run (another --out, or --force)"
                                       : "a resumed run keeps it: start a new run (another --out, or --force) "
                                         "to change it");
        return -1;
    }
    return 0;
}

/* ---- the data's identity ------------------------------------------------ */

uint64_t fnv1a64(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3u;
    return h;
}

void data_id_of(data_id *id, const char *path, const char *text, size_t len)
{
    snprintf(id->path, sizeof id->path, "%s", path ? path : "");
    id->bytes = len;
    id->fnv = fnv1a64(text, len);
}

int data_id_record(const data_id *id, kv_list *l)
{
    char bytes[32], fnv[40];
    snprintf(bytes, sizeof bytes, "%" PRIu64, id->bytes);
    snprintf(fnv, sizeof fnv, "fnv1a64:%016" PRIx64, id->fnv);
    return kv_add(l, "train.data", id->path) || kv_add(l, "train.data_bytes", bytes) ||
           kv_add(l, "train.data_checksum", fnv);
}

int data_id_read(data_id *id, const tg_st_file *f, const char *from, char *err, size_t errlen)
{
    const char *p = tg_st_meta(f, "train.data"), *b = tg_st_meta(f, "train.data_bytes"),
               *c = tg_st_meta(f, "train.data_checksum");
    if (!p && !b && !c) return 0;
    char *end;
    if (!p || !b || !c || strlen(p) >= sizeof id->path || !(*b >= '0' && *b <= '9') ||
        (id->bytes = strtoull(b, &end, 10), *end) || strncmp(c, "fnv1a64:", 8) || strlen(c) != 24 ||
        (id->fnv = strtoull(c + 8, &end, 16), *end)) {
        snprintf(err, errlen, "%s: the data's identity (train.data, train.data_bytes, train.data_checksum) is "
                              "malformed", from);
        return -1;
    }
    snprintf(id->path, sizeof id->path, "%s", p);
    return 1;
}

int run_load_text(run_text *t, data_id *id, const char *data_flag, int corpus_chars, const tg_st_file *f,
                  const char *from, bool must_match, const char *cmd, char *err, size_t errlen)
{
    data_id rec;
    int have = f ? data_id_read(&rec, f, from, err, errlen) : 0;
    if (have < 0) return -1;
    const char *path = data_flag ? data_flag : have ? rec.path : NULL;
    if (run_text_load(t, path, corpus_chars, err, errlen)) {
        if (!data_flag && have && *rec.path) {
            char e2[4096];
            snprintf(e2, sizeof e2, "the run's text: %s (give its new place with --data)", err);
            snprintf(err, errlen, "%s", e2);
        }
        return -1;
    }
    char full[4096] = "";
    if (path && *path && !realpath(path, full)) snprintf(full, sizeof full, "%s", path);
    data_id_of(id, full, t->text, t->len);
    if (!have) return 0;
    const char *now = *id->path ? id->path : "the built-in corpus", *was = *rec.path ? rec.path : "the built-in corpus";
    if (rec.bytes != id->bytes || rec.fnv != id->fnv) {
        if (!must_match) {
            if (cmd) fprintf(stderr, "tiny_gpt %s: notice: %s is not the text the run was trained on (%s)\n", cmd, now, was);
            return 0;
        }
        snprintf(err, errlen, "%s (%" PRIu64 " bytes, checksum %016" PRIx64 ") is not the text the run was trained on: "
                              "%s (%" PRIu64 " bytes, checksum %016" PRIx64 ")", now, id->bytes, id->fnv, was, rec.bytes,
                 rec.fnv);
        run_text_free(t);
        return -1;
    }
    if (strcmp(rec.path, id->path) && cmd)
        fprintf(stderr, "tiny_gpt %s: notice: the run's text, recorded as %s, is now read from %s (the same bytes)\n",
                cmd, was, now);
    return 0;
}
