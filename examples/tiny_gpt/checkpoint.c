#include "checkpoint.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "state:inc:has_spare:spare-bits", all hexadecimal: exact round trip */
static void rng_to_string(const tg_rng *r, char *buf, size_t size)
{
    uint64_t bits;
    memcpy(&bits, &r->spare, sizeof bits);
    snprintf(buf, size, "%016" PRIx64 ":%016" PRIx64 ":%d:%016" PRIx64, r->state, r->inc, r->has_spare ? 1 : 0,
             bits);
}

static int rng_from_string(tg_rng *r, const char *s)
{
    uint64_t st, inc, bits;
    int spare;
    if (!s || sscanf(s, "%" SCNx64 ":%" SCNx64 ":%d:%" SCNx64, &st, &inc, &spare, &bits) != 4) return -1;
    r->state = st;
    r->inc = inc;
    r->has_spare = spare != 0;
    memcpy(&r->spare, &bits, sizeof bits);
    return 0;
}

int checkpoint_save(const char *path, tg_gpt *m, const vocab *v, tg_adamw *opt, const train_state *ts,
                    const char *const *extra_meta, int n_extra, char *err, size_t errlen)
{
    const tg_gpt_config *c = &m->cfg;
    char nl[16], nh[16], ne[16], bs[16], vs[16], dr[32], vocab_s[1200], step[32], best[40], rd[80], rr[80];
    snprintf(nl, sizeof nl, "%d", c->n_layer);
    snprintf(nh, sizeof nh, "%d", c->n_head);
    snprintf(ne, sizeof ne, "%d", c->n_embd);
    snprintf(bs, sizeof bs, "%d", c->block_size);
    snprintf(vs, sizeof vs, "%d", c->vocab_size);
    snprintf(dr, sizeof dr, "%.17g", c->dropout);
    vocab_s[0] = 0;
    if (v) vocab_to_string(v, vocab_s, sizeof vocab_s);

    tg_st_writer *w = tg_st_writer_new();
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = 0;
    const char *meta[] = {"n_layer", nl, "n_head", nh, "n_embd", ne, "block_size", bs, "vocab_size", vs,
                          "bias", c->bias ? "true" : "false", "dropout", dr, "format", "tapegrad tiny_gpt"};
    for (size_t i = 0; i + 1 < sizeof meta / sizeof meta[0]; i += 2) rc |= tg_st_writer_meta(w, meta[i], meta[i + 1]);
    if (v && v->size) rc |= tg_st_writer_meta(w, "vocab", vocab_s);
    for (int i = 0; i + 1 < 2 * n_extra; i += 2) rc |= tg_st_writer_meta(w, extra_meta[i], extra_meta[i + 1]);
    for (int i = 0; i < tg_params_count(m->params); i++) {
        tg_tensor *t = tg_params_at(m->params, i);
        rc |= tg_st_writer_add_tensor(w, t->name, t);
    }
    if (opt && ts) {
        int64_t n = tg_params_numel(m->params);
        const char *dt = tg_params_dtype(m->params) == TG_F32 ? "F32" : "F64";
        rc |= tg_st_writer_add(w, "optimizer.m", dt, 1, &n, tg_adamw_m(opt));
        rc |= tg_st_writer_add(w, "optimizer.v", dt, 1, &n, tg_adamw_v(opt));
        snprintf(step, sizeof step, "%lld", (long long)ts->step);
        snprintf(best, sizeof best, "%.17g", ts->best_val);
        rng_to_string(&ts->data_rng, rd, sizeof rd);
        rng_to_string(&ts->drop_rng, rr, sizeof rr);
        char adam_steps[32];
        snprintf(adam_steps, sizeof adam_steps, "%lld", (long long)tg_adamw_steps(opt));
        rc |= tg_st_writer_meta(w, "train.step", step);
        rc |= tg_st_writer_meta(w, "train.best_val", best);
        rc |= tg_st_writer_meta(w, "train.data_rng", rd);
        rc |= tg_st_writer_meta(w, "train.dropout_rng", rr);
        rc |= tg_st_writer_meta(w, "optimizer.steps", adam_steps);
    }
    if (rc) {
        snprintf(err, errlen, "%s: could not assemble the checkpoint", path);
        tg_st_writer_free(w);
        return -1;
    }
    rc = tg_st_writer_save(w, path, err, errlen);
    tg_st_writer_free(w);
    return rc;
}

static int meta_int(const tg_st_file *f, const char *key, int *out, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, key);
    char *end;
    if (!s) {
        snprintf(err, errlen, "checkpoint metadata has no '%s'", key);
        return -1;
    }
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1 || v > 1 << 24) {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not a positive integer", key, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int checkpoint_config(const tg_st_file *f, tg_gpt_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    if (meta_int(f, "n_layer", &cfg->n_layer, err, errlen) || meta_int(f, "n_head", &cfg->n_head, err, errlen) ||
        meta_int(f, "n_embd", &cfg->n_embd, err, errlen) || meta_int(f, "block_size", &cfg->block_size, err, errlen) ||
        meta_int(f, "vocab_size", &cfg->vocab_size, err, errlen))
        return -1;
    const char *b = tg_st_meta(f, "bias");
    if (!b) {
        snprintf(err, errlen, "checkpoint metadata has no 'bias'");
        return -1;
    }
    if (!strcmp(b, "true") || !strcmp(b, "True") || !strcmp(b, "1")) cfg->bias = true;
    else if (!strcmp(b, "false") || !strcmp(b, "False") || !strcmp(b, "0")) cfg->bias = false;
    else {
        snprintf(err, errlen, "checkpoint metadata 'bias' = '%s' is not true/false", b);
        return -1;
    }
    const char *d = tg_st_meta(f, "dropout");
    cfg->dropout = d ? strtod(d, NULL) : 0.0;
    return 0;
}

tg_gpt *checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, char *err, size_t errlen)
{
    tg_gpt_config cfg;
    if (checkpoint_config(f, &cfg, err, errlen) != 0) return NULL;
    if (dropout >= 0) cfg.dropout = dropout;
    tg_gpt *m = tg_gpt_new(&cfg, dt, 0, err, errlen);
    if (!m) return NULL;
    if (tg_st_load_params(m->params, f, err, errlen) != 0) {
        tg_gpt_free(m);
        return NULL;
    }
    const tg_st_tensor *head = tg_st_find(f, "lm_head.weight");
    if (head) {
        /* the head is tied: accept it only if it is the embedding */
        const tg_st_tensor *wte = tg_st_find(f, "transformer.wte.weight");
        if (!wte || head->nbytes != wte->nbytes || strcmp(head->dtype, wte->dtype) ||
            memcmp(head->data, wte->data, head->nbytes)) {
            snprintf(err, errlen,
                     "lm_head.weight differs from transformer.wte.weight; tapegrad's GPT ties the head to the "
                     "token embedding");
            tg_gpt_free(m);
            return NULL;
        }
    }
    return m;
}

int checkpoint_vocab(const tg_st_file *f, vocab *v, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, "vocab");
    if (!s) {
        snprintf(err, errlen, "checkpoint has no 'vocab' in its metadata (was it written by tiny_gpt train?)");
        return -1;
    }
    return vocab_from_string(v, s, err, errlen);
}

int checkpoint_load_train(const tg_st_file *f, tg_gpt *m, tg_adamw *opt, train_state *ts, char *err,
                          size_t errlen)
{
    const tg_st_tensor *mt = tg_st_find(f, "optimizer.m"), *vt = tg_st_find(f, "optimizer.v");
    int64_t n = tg_params_numel(m->params);
    size_t es = tg_dtype_size(tg_params_dtype(m->params));
    const char *dt = tg_params_dtype(m->params) == TG_F32 ? "F32" : "F64";
    const char *step = tg_st_meta(f, "train.step"), *best = tg_st_meta(f, "train.best_val");
    const char *asteps = tg_st_meta(f, "optimizer.steps");
    if (!mt || !vt || !step || !best || !asteps) {
        snprintf(err, errlen, "not a training checkpoint: optimizer state or train.* metadata missing");
        return -1;
    }
    if (mt->numel != n || vt->numel != n || strcmp(mt->dtype, dt) || strcmp(vt->dtype, dt)) {
        snprintf(err, errlen, "optimizer state does not match the model (%lld %s parameters)", (long long)n, dt);
        return -1;
    }
    if (rng_from_string(&ts->data_rng, tg_st_meta(f, "train.data_rng")) ||
        rng_from_string(&ts->drop_rng, tg_st_meta(f, "train.dropout_rng"))) {
        snprintf(err, errlen, "checkpoint random-stream state is malformed");
        return -1;
    }
    memcpy(tg_adamw_m(opt), mt->data, (size_t)n * es);
    memcpy(tg_adamw_v(opt), vt->data, (size_t)n * es);
    tg_adamw_set_steps(opt, strtoll(asteps, NULL, 10));
    ts->step = strtoll(step, NULL, 10);
    ts->best_val = strtod(best, NULL);
    return 0;
}
