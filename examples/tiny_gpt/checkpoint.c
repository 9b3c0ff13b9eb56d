#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers in metadata: the whole string, in range ------------------- */

int checkpoint_meta_i64(const tg_st_file *f, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
                        size_t errlen)
{
    const char *s = tg_st_meta(f, key);
    if (!s) {
        snprintf(err, errlen, "checkpoint metadata has no '%s'", key);
        return -1;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi || !((*s >= '0' && *s <= '9') || *s == '-')) {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not an integer in [%lld, %lld]", key, s,
                 (long long)lo, (long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A finite double in [lo, hi], or inf when allow_inf. */
static int meta_double(const tg_st_file *f, const char *key, double lo, double hi, bool allow_inf, double *out,
                       char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, key);
    if (!s) {
        snprintf(err, errlen, "checkpoint metadata has no '%s'", key);
        return -1;
    }
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || isnan(v) || (isinf(v) && !(allow_inf && v > 0)) || (isfinite(v) && (v < lo || v > hi))) {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not a number in [%g, %g]%s", key, s, lo, hi,
                 allow_inf ? " or inf" : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- random streams: "state:inc:has_spare:spare-bits", hexadecimal ------ */

/* Element i of a tensor's data, wherever the file put it. */
static double load_f32(const void *p, int64_t i)
{
    float x;
    memcpy(&x, (const char *)p + i * (int64_t)sizeof x, sizeof x);
    return x;
}
static double load_f64(const void *p, int64_t i)
{
    double x;
    memcpy(&x, (const char *)p + i * (int64_t)sizeof x, sizeof x);
    return x;
}

static void rng_to_string(const tg_rng *r, char *buf, size_t size)
{
    uint64_t bits;
    memcpy(&bits, &r->spare, sizeof bits);
    snprintf(buf, size, "%016" PRIx64 ":%016" PRIx64 ":%d:%016" PRIx64, r->state, r->inc, r->has_spare ? 1 : 0,
             bits);
}

static bool hex16(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Exactly rng_to_string's form, with the odd increment PCG32 needs. */
static int rng_from_string(tg_rng *r, const tg_st_file *f, const char *key, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, key);
    uint64_t st, inc, bits;
    if (!s || strlen(s) != 16 + 1 + 16 + 1 + 1 + 1 + 16 || !hex16(s, &st) || s[16] != ':' || !hex16(s + 17, &inc) ||
        s[33] != ':' || (s[34] != '0' && s[34] != '1') || s[35] != ':' || !hex16(s + 36, &bits) || !(inc & 1)) {
        snprintf(err, errlen, "checkpoint metadata '%s' = '%s' is not a random-stream state", key, s ? s : "(none)");
        return -1;
    }
    r->state = st;
    r->inc = inc;
    r->has_spare = s[34] == '1';
    memcpy(&r->spare, &bits, sizeof bits);
    if (!isfinite(r->spare)) {
        snprintf(err, errlen, "checkpoint metadata '%s' holds a spare normal that is not finite", key);
        return -1;
    }
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

int checkpoint_save(const char *path, const model *m, const vocab *v, const opt_state *opt, const train_state *ts,
                    const char *const *extra_meta, int n_extra, char *err, size_t errlen)
{
    char vocab_s[1200] = "", step[32], best[40], rd[80], rr[80], adam_steps[32];
    if (v) vocab_to_string(v, vocab_s, sizeof vocab_s);
    kv_list meta = {0};
    tg_st_writer *w = tg_st_writer_new();
    int rc = !w || model_config_record(&m->cfg, &meta) || kv_add(&meta, "format", "tapegrad tiny_gpt");
    for (int i = 0; !rc && i < meta.n; i++) rc |= tg_st_writer_meta(w, meta.kv[2 * i], meta.kv[2 * i + 1]);
    kv_free(&meta);
    if (!rc && v && v->size) rc |= tg_st_writer_meta(w, "vocab", vocab_s) || vocab_st_add(v, w);
    for (int i = 0; !rc && i + 1 < 2 * n_extra; i += 2) rc |= tg_st_writer_meta(w, extra_meta[i], extra_meta[i + 1]);
    for (int i = 0; !rc && i < tg_params_count(m->params); i++) {
        tg_tensor *t = tg_params_at(m->params, i);
        rc |= tg_st_writer_add_tensor(w, t->name, t);
    }
    if (!rc && ts) {
        snprintf(step, sizeof step, "%lld", (long long)ts->step);
        rc |= tg_st_writer_meta(w, "train.step", step);
    }
    if (!rc && opt && ts) {
        int64_t n = tg_params_numel(m->params);
        const char *dt = tg_params_dtype(m->params) == TG_F32 ? "F32" : "F64";
        rc |= tg_st_writer_add(w, "optimizer.m", dt, 1, &n, opt->m);
        rc |= tg_st_writer_add(w, "optimizer.v", dt, 1, &n, opt->v);
        snprintf(best, sizeof best, "%.17g", ts->best_val);
        rng_to_string(&ts->data_rng, rd, sizeof rd);
        rng_to_string(&ts->drop_rng, rr, sizeof rr);
        snprintf(adam_steps, sizeof adam_steps, "%lld", (long long)opt->steps);
        rc |= tg_st_writer_meta(w, "train.best_val", best);
        rc |= tg_st_writer_meta(w, "train.data_rng", rd);
        rc |= tg_st_writer_meta(w, "train.dropout_rng", rr);
        rc |= tg_st_writer_meta(w, "optimizer.steps", adam_steps);
        rc |= tg_st_writer_meta(w, "train.isa", tg_isa_name(tg_isa_active()));   /* the kernel path it ran on */
    }
    if (rc) {
        snprintf(err, errlen, "%s: could not assemble the checkpoint: %s", path,
                 w && tg_st_writer_error(w) ? tg_st_writer_error(w) : "out of memory");
        tg_st_writer_free(w);
        return -1;
    }
    rc = tg_st_writer_save(w, path, err, errlen);
    tg_st_writer_free(w);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

int checkpoint_config(const tg_st_file *f, model_config *cfg, char *err, size_t errlen)
{
    return model_config_read(f, cfg, err, errlen);
}

/* The file's tensor `name` must exist with shape (d0, d1). */
static int expect_2d(const tg_st_file *f, const char *name, int d0, int d1, const char *why, char *err,
                     size_t errlen)
{
    const tg_st_tensor *e = tg_st_find(f, name);
    if (!e) {
        snprintf(err, errlen, "the checkpoint has no tensor '%s'", name);
        return -1;
    }
    if (e->ndim != 2 || e->shape[0] != d0 || e->shape[1] != d1) {
        char s[96] = "(";
        for (int i = 0; i < e->ndim; i++)
            snprintf(s + strlen(s), sizeof s - strlen(s), i ? ",%lld" : "%lld", (long long)e->shape[i]);
        snprintf(err, errlen, "the checkpoint's metadata says %s, so '%s' should be (%d,%d), but it is %s)", why, name,
                 d0, d1, s);
        return -1;
    }
    return 0;
}

/* Before a model is built: the file must hold at least as many float
 * values as the config needs, and the embeddings must have its shape, so
 * a small file claiming a huge config is refused without allocating. */
static int check_config_against_tensors(const tg_st_file *f, const model_config *c, char *err, size_t errlen)
{
    const family *fam = model_family(c->arch);
    char why[160];
    snprintf(why, sizeof why, "vocab_size %d, n_embd %d", c->vocab_size, c->n_embd);
    if (expect_2d(f, fam->embedding, c->vocab_size, c->n_embd, why, err, errlen)) return -1;
    snprintf(why, sizeof why, "block_size %d, n_embd %d", c->block_size, c->n_embd);
    if (fam->position && expect_2d(f, fam->position, c->block_size, c->n_embd, why, err, errlen)) return -1;
    int64_t need = model_num_params(c), have = 0;
    for (int i = 0; i < tg_st_count(f); i++) {
        const tg_st_tensor *e = tg_st_at(f, i);
        if ((!strcmp(e->dtype, "F32") || !strcmp(e->dtype, "F64")) && strncmp(e->name, "optimizer.", 10))
            have += e->numel;
    }
    if (need < 0 || have < need) {
        snprintf(err, errlen,
                 "the checkpoint's metadata (%s: n_layer %d, n_head %d, n_embd %d, block_size %d, vocab_size %d) "
                 "describes %lld parameters, but the file holds only %lld float values: a tensor is missing, or the "
                 "metadata is wrong",
                 c->arch, c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size, (long long)need,
                 (long long)have);
        return -1;
    }
    return 0;
}

/* Every value of p's tensors is finite. */
static int check_finite(const tg_params *p, char *err, size_t errlen)
{
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *t = tg_params_at(p, i);
        for (int64_t k = 0; k < t->numel; k++) {
            double x = tg_tensor_get(t, k);
            if (!isfinite(x)) {
                snprintf(err, errlen, "the checkpoint's '%s' holds %g at element %lld", t->name, x, (long long)k);
                return -1;
            }
        }
    }
    return 0;
}

int checkpoint_load_model(const tg_st_file *f, tg_dtype dt, double dropout, model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    model_config cfg;
    if (checkpoint_config(f, &cfg, err, errlen) != 0) return -1;
    if (dropout >= 0) cfg.dropout = dropout;
    if (model_num_params(&cfg) < 0) return model_new(m, &cfg, dt, 0, err, errlen);   /* says what is wrong */
    if (check_config_against_tensors(f, &cfg, err, errlen) || model_new(m, &cfg, dt, 0, err, errlen)) return -1;
    if (tg_st_load_params(m->params, f, err, errlen) != 0 || check_finite(m->params, err, errlen)) {
        model_free(m);
        return -1;
    }
    const family *fam = m->fam;
    const tg_st_tensor *head = cfg.tied ? tg_st_find(f, fam->head) : NULL;
    if (head) {
        /* the head is tied: accept it only if it is the embedding */
        const tg_st_tensor *emb = tg_st_find(f, fam->embedding);
        if (!emb || head->nbytes != emb->nbytes || strcmp(head->dtype, emb->dtype) ||
            memcmp(head->data, emb->data, head->nbytes)) {
            snprintf(err, errlen, "%s differs from %s; this %s ties the head to the token embedding", fam->head,
                     fam->embedding, fam->arch);
            model_free(m);
            return -1;
        }
    }
    return 0;
}

/* 0 when the model's vocab_size fits v: equal for a VOCAB_CHARS
 * vocabulary, at least its 259 ids for VOCAB_LLAMA2C (the rest unused) */
static int vocab_fits(const vocab *v, const model *m, const char *whose, char *err, size_t errlen)
{
    const int V = m->cfg.vocab_size;
    if (v->kind == VOCAB_CHARS ? V == v->size : V >= v->size) return 0;
    snprintf(err, errlen, "the checkpoint's vocab_size %d does not match %s vocabulary of %d %s", V, whose, v->size,
             v->kind == VOCAB_CHARS ? "characters" : "ids");
    return -1;
}

int checkpoint_model_vocab(const tg_st_file *f, const model *m, const char *vocab_file, vocab *v, char *err,
                           size_t errlen)
{
    if (vocab_file) {
        size_t len;
        char *text = read_file(vocab_file, &len, err, errlen);
        if (!text) return -1;
        vocab_build(v, text, len);
        free(text);
    } else if (tg_st_meta(f, "vocab") || strcmp(m->cfg.arch, "llama")) {
        if (checkpoint_vocab(f, v, err, errlen)) return -1;
    } else {
        vocab_llama2c(v);
    }
    if (!vocab_fits(v, m, vocab_file ? "the --vocab file's" : "its", err, errlen)) return 0;
    vocab_free(v);
    return -1;
}

int checkpoint_vocab(const tg_st_file *f, vocab *v, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, "vocab");
    if (!s) {
        snprintf(err, errlen,
                 "the checkpoint has no 'vocab' in its metadata (weights from elsewhere, e.g. PyTorch): give "
                 "--vocab FILE, a text whose bytes are the vocabulary (the training text); docs/safetensors.md "
                 "describes the 'vocab' entry");
        return -1;
    }
    return vocab_from_st(v, f, err, errlen);
}

int checkpoint_load_train(const tg_st_file *f, const model *m, tg_adamw *opt, train_state *ts, int64_t max_step,
                          char *err, size_t errlen)
{
    const tg_st_tensor *mt = tg_st_find(f, "optimizer.m"), *vt = tg_st_find(f, "optimizer.v");
    int64_t n = tg_params_numel(m->params);
    const char *dt = tg_params_dtype(m->params) == TG_F32 ? "F32" : "F64";
    if (!mt || !vt || !tg_st_meta(f, "train.step")) {
        snprintf(err, errlen, "not a training checkpoint: optimizer state or train.step missing (a best.safetensors "
                              "holds weights only: start from it with --init)");
        return -1;
    }
    if (mt->numel != n || vt->numel != n || mt->ndim != 1 || vt->ndim != 1 || strcmp(mt->dtype, dt) ||
        strcmp(vt->dtype, dt)) {
        snprintf(err, errlen, "optimizer state does not match the model (%lld %s parameters)", (long long)n, dt);
        return -1;
    }
    int64_t step, asteps;
    double best;
    if (checkpoint_meta_i64(f, "train.step", 0, max_step, &step, err, errlen) ||
        checkpoint_meta_i64(f, "optimizer.steps", 0, INT64_MAX, &asteps, err, errlen) ||
        meta_double(f, "train.best_val", 0, 1e300, true, &best, err, errlen) ||
        rng_from_string(&ts->data_rng, f, "train.data_rng", err, errlen) ||
        rng_from_string(&ts->drop_rng, f, "train.dropout_rng", err, errlen))
        return -1;
    if (asteps != step) {
        snprintf(err, errlen, "checkpoint metadata 'optimizer.steps' = %lld differs from 'train.step' = %lld "
                              "(one optimizer step per training step)", (long long)asteps, (long long)step);
        return -1;
    }
    /* the moments, checked (finite, and v, a running mean of squares, not
     * negative); then the optimizer's range of them (the whole, or its
     * shard), copied as they are: the file's dtype is the store's */
    const bool f32 = tg_params_dtype(m->params) == TG_F32;
    for (int64_t i = 0; i < n; i++) {   /* memcpy: another writer's file may not align the tensors */
        const double a = f32 ? load_f32(mt->data, i) : load_f64(mt->data, i);
        const double b = f32 ? load_f32(vt->data, i) : load_f64(vt->data, i);
        if (!isfinite(a) || !isfinite(b) || b < 0) {
            snprintf(err, errlen, "checkpoint optimizer state at element %lld is m %g, v %g (must be finite, v >= 0)",
                     (long long)i, a, b);
            return -1;
        }
    }
    int64_t lo, hi;
    tg_adamw_shard(opt, &lo, &hi);
    const size_t es = tg_dtype_size(tg_params_dtype(m->params));
    memcpy(tg_adamw_m(opt), (const char *)mt->data + (size_t)lo * es, (size_t)(hi - lo) * es);
    memcpy(tg_adamw_v(opt), (const char *)vt->data + (size_t)lo * es, (size_t)(hi - lo) * es);
    tg_adamw_set_steps(opt, asteps);
    ts->step = step;
    ts->best_val = best;
    return 0;
}
