/* Weight averaging (optim.h, tg_ema): an exponential moving average of a
 * store's values, kept beside them. Per update, for each element with
 * value p and average a:
 *
 *   a = decay * a + (1 - decay) * p
 *
 * The average starts as the values when it is made. Arithmetic is in the
 * store's dtype, decay and 1 - decay rounded to it, one element at a
 * time (the same bits on any thread count). To evaluate or save the
 * averages, tg_ema_swap exchanges them with the values; a second swap
 * exchanges them back. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/safetensors_internal.h"
#include "optim_internal.h"

struct tg_ema {
    tg_params *p;
    double decay;
    void *avg; /* numel elements of the store's dtype */
    int64_t numel; /* store size when made */
    int count; /* tensors in the store when made */
};

tg_ema *tg_ema_new(tg_params *p, double decay, tg_error *err)
{
    if (!p) {
        tg_error_set(err, "ema_new: params is NULL");
        return NULL;
    }
    if (!(decay >= 0 && decay < 1)) {
        tg_error_set(err, "ema_new: decay must be in [0, 1), got %g", decay);
        return NULL;
    }
    tg_ema *e = tg_calloc(1, sizeof *e);
    const size_t es = tg_dtype_size(tg_params_dtype(p));
    const int64_t n = tg_params_numel(p);
    if (e) e->avg = tg_calloc_big((size_t)(n > 0 ? n : 1), es);
    if (!e || !e->avg) {
        tg_error_set(err, "ema_new: out of memory for the averages of %lld elements", (long long)n);
        tg_free(e);
        return NULL;
    }
    e->p = p;
    e->decay = decay;
    e->numel = n;
    e->count = tg_params_count(p);
    tg_ema_reset(e, NULL); /* the averages start as the values */
    return e;
}

/* -1 with the message when e is NULL or its store is not the one the average was made for. */
static int check_store(const tg_ema *e, const char *fn, tg_error *err)
{
    if (!e) return tg_error_set(err, "%s: the average is NULL", fn);
    if (tg_params_numel(e->p) == e->numel && tg_params_count(e->p) == e->count) return 0;
    return tg_error_set(err,
                        "%s: the store has grown from %lld to %lld elements since the average was made; "
                        "nothing done",
                        fn, (long long)e->numel, (long long)tg_params_numel(e->p));
}

int tg_ema_update(tg_ema *e, tg_error *err)
{
    if (check_store(e, "ema_update", err)) return -1;
    const int64_t n = e->numel;
    if (tg_params_dtype(e->p) == TG_F32) {
        const float d = (float)e->decay, c = (float)(1 - e->decay), *p = tg_params_data(e->p);
        float *a = e->avg;
        for (int64_t i = 0; i < n; i++) a[i] = d * a[i] + c * p[i];
    } else {
        const double d = e->decay, c = 1 - e->decay, *p = tg_params_data(e->p);
        double *a = e->avg;
        for (int64_t i = 0; i < n; i++) a[i] = d * a[i] + c * p[i];
    }
    return 0;
}

int tg_ema_swap(tg_ema *e, tg_error *err)
{
    if (check_store(e, "ema_swap", err)) return -1;
    const size_t es = tg_dtype_size(tg_params_dtype(e->p)), bytes = (size_t)e->numel * es;
    unsigned char *a = e->avg, *p = tg_params_data(e->p), tmp[4096];
    for (size_t at = 0; at < bytes; at += sizeof tmp) {
        const size_t k = bytes - at < sizeof tmp ? bytes - at : sizeof tmp;
        memcpy(tmp, a + at, k);
        memcpy(a + at, p + at, k);
        memcpy(p + at, tmp, k);
    }
    return 0;
}

int tg_ema_reset(tg_ema *e, tg_error *err)
{
    if (check_store(e, "ema_reset", err)) return -1;
    memcpy(e->avg, tg_params_data(e->p), (size_t)e->numel * tg_dtype_size(tg_params_dtype(e->p)));
    return 0;
}

double tg_ema_decay(const tg_ema *e) { return e ? e->decay : NAN; }
void *tg_ema_values(tg_ema *e) { return e ? e->avg : NULL; }
int64_t tg_ema_numel(const tg_ema *e) { return e ? e->numel : 0; }
size_t tg_ema_state_bytes(const tg_ema *e) { return e ? (size_t)e->numel * tg_dtype_size(tg_params_dtype(e->p)) : 0; }
const tg_params *tg_ema_store(const tg_ema *e) { return e ? e->p : NULL; }

void tg_ema_free(tg_ema *e)
{
    if (!e) return;
    tg_free(e->avg);
    tg_free(e);
}

int tg_ema_state_write(const tg_ema *e, tg_st_writer *w, const char *prefix)
{
    if (!e || !prefix)
        return tg_st_writer_fail(w, e ? "ema_state_write: prefix is NULL" : "ema_state_write: the average is NULL");
    if (strlen(prefix) > TG_EMA_PREFIX_MAX) return tg_st_writer_fail(w, "ema_state_write: the prefix is too long");
    char key[TG_EMA_PREFIX_MAX + 16], val[32];
    snprintf(key, sizeof key, "%s.values", prefix);
    if (tg_st_writer_add(w, key, tg_params_dtype(e->p) == TG_F32 ? "F32" : "F64", 1, &e->numel, e->avg)) return -1;
    snprintf(key, sizeof key, "%s.decay", prefix);
    snprintf(val, sizeof val, "%.17g", e->decay);
    return tg_st_writer_add_meta(w, key, val);
}

int tg_ema_state_read(tg_ema *e, const tg_st_file *f, const char *prefix, tg_error *err)
{
    if (!e || !f || !prefix)
        return tg_error_set(err, "ema_state_read: %s is NULL", !e ? "the average" : !f ? "the file" : "prefix");
    if (strlen(prefix) > TG_EMA_PREFIX_MAX)
        return tg_error_set(err, "ema_state_read: prefix is longer than %d bytes", TG_EMA_PREFIX_MAX);
    char vk[TG_EMA_PREFIX_MAX + 16], dk[TG_EMA_PREFIX_MAX + 16];
    snprintf(vk, sizeof vk, "%s.values", prefix);
    snprintf(dk, sizeof dk, "%s.decay", prefix);
    const bool f32 = tg_params_dtype(e->p) == TG_F32;
    const char *dt = f32 ? "F32" : "F64";
    const tg_st_tensor *t = tg_st_find(f, vk);
    if (!t) return tg_error_set(err, "ema_state_read: the file has no tensor '%s'", vk);
    if (t->ndim != 1 || t->numel != e->numel || strcmp(t->dtype, dt))
        return tg_error_set(err,
                            "ema_state_read: '%s' is not the average of this store: want %s of %lld "
                            "elements, got %s of %lld elements in %d dimensions",
                            vk, dt, (long long)e->numel, t->dtype, (long long)t->numel, t->ndim);
    const char *s = tg_st_meta(f, dk);
    if (!s) return tg_error_set(err, "ema_state_read: the file has no metadata '%s' (the averages' decay)", dk);
    char *end = NULL;
    const double d = strtod(s, &end);
    if (!*s || *end || d != e->decay)
        return tg_error_set(err, "ema_state_read: metadata '%s' = '%.40s' is not this average's decay %.17g", dk, s,
                            e->decay);
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    for (int64_t i = 0; i < e->numel; i++) {
        const double x = tg_state_at(t->data, f32, i);
        if (!isfinite(x))
            return tg_error_set(err, "ema_state_read: element %lld of '%s' is %g (must be finite)", (long long)i, vk,
                                x);
    }
    memcpy(e->avg, t->data, (size_t)e->numel * es);
    return 0;
}
