/* tiny_gpt's model interface (see model.h): the table of families, the
 * calls that dispatch to them, and the metadata readers they share. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

static const family *const FAMILIES[] = {&FAMILY_GPT, &FAMILY_LLAMA};
#define N_FAMILIES (int)(sizeof FAMILIES / sizeof FAMILIES[0])

const family *model_family(const char *arch)
{
    for (int i = 0; arch && i < N_FAMILIES; i++)
        if (!strcmp(FAMILIES[i]->arch, arch)) return FAMILIES[i];
    return NULL;
}

const char *model_families(void)
{
    static char names[128];
    if (!names[0])
        for (int i = 0; i < N_FAMILIES; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", FAMILIES[i]->arch);
    return names;
}

int model_new(model *m, const model_config *c, tg_dtype dt, uint64_t seed, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    const family *f = model_family(c->arch);
    if (!f) {
        snprintf(err, errlen, "unknown model architecture '%s' (known: %s)", c->arch ? c->arch : "", model_families());
        return -1;
    }
    if (!(m->impl = f->create(c, dt, seed, err, errlen))) return -1;
    m->fam = f;
    m->cfg = *c;
    m->cfg.arch = f->arch;   /* a static string, whatever c pointed at */
    m->params = f->params(m->impl);
    return 0;
}

void model_free(model *m)
{
    if (m->fam) m->fam->destroy(m->impl);
    memset(m, 0, sizeof *m);
}

int64_t model_num_params(const model_config *c)
{
    const family *f = model_family(c->arch);
    return f ? f->num_params(c) : -1;
}

tg_tensor *model_forward(tg_graph *g, model *m, tg_tensor *idx, tg_tensor **attn_weights)
{
    return m->fam->forward(g, m->impl, idx, attn_weights);
}
tg_tensor *model_loss(tg_graph *g, model *m, tg_tensor *idx, tg_tensor *targets)
{
    return m->fam->loss(g, m->impl, idx, targets);
}
void model_set_composed(model *m, bool composed) { m->fam->set_composed(m->impl, composed); }
int model_cache_enable(model *m, int batch, char *err, size_t errlen) { return m->fam->cache_enable(m->impl, batch, err, errlen); }
void model_cache_clear(model *m) { m->fam->cache_clear(m->impl); }
int model_cache_len(const model *m) { return m->fam->cache_len(m->impl); }

int model_config_record(const model_config *c, kv_list *l)
{
    const family *f = model_family(c->arch);
    return !f || kv_add(l, "arch", f->arch) || f->record(c, l) ? -1 : 0;
}

int model_config_read(const tg_st_file *f, model_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    const char *arch = tg_st_meta(f, "arch");
    const family *fam = model_family(arch ? arch : "gpt");
    if (!fam) {
        snprintf(err, errlen, "checkpoint metadata 'arch' = '%s' is not a model tiny_gpt knows (%s)", arch,
                 model_families());
        return -1;
    }
    c->arch = fam->arch;
    return fam->read(f, c, err, errlen);
}

/* ---- metadata numbers, whole and in range -------------------------------- */

int meta_int_in(const tg_st_file *f, const char *key, int lo, int hi, int *out, char *err, size_t errlen)
{
    int64_t v;
    if (checkpoint_meta_i64(f, key, lo, hi, &v, err, errlen)) return -1;
    *out = (int)v;
    return 0;
}

int meta_double_in(const tg_st_file *f, const char *key, double lo, double hi, double *out, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, key);
    if (!s) {
        snprintf(err, errlen, "checkpoint metadata has no '%s'", key);
        return -1;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < lo || v > hi) {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not a number in [%g, %g]", key, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int meta_bool(const tg_st_file *f, const char *key, bool *out, char *err, size_t errlen)
{
    const char *b = tg_st_meta(f, key);
    if (!b) {
        snprintf(err, errlen, "checkpoint metadata has no '%s'", key);
        return -1;
    }
    if (!strcmp(b, "true") || !strcmp(b, "True") || !strcmp(b, "1")) *out = true;
    else if (!strcmp(b, "false") || !strcmp(b, "False") || !strcmp(b, "0")) *out = false;
    else {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not true/false", key, b);
        return -1;
    }
    return 0;
}
