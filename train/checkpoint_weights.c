/* Which weights a checkpoint of an averaging run holds, and its averages
 * taken as a model's weights (train/train.h). */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool tg_checkpoint_has_averages(const tg_st_file *f) { return f && tg_st_find(f, "ema.values") != NULL; }

const char *tg_checkpoint_weights(const tg_st_file *f)
{
    if (!f) return NULL;
    const char *w = tg_st_meta(f, "weights"), *d = tg_st_meta(f, "train.ema");
    if (w && (!strcmp(w, "ema") || !strcmp(w, "raw"))) return !strcmp(w, "ema") ? "ema" : "raw";
    if (tg_checkpoint_has_averages(f)) return "raw";
    return d && strtod(d, NULL) > 0 ? "ema" : NULL;
}

/* Element i of a tensor's F32 or F64 data, as a double (the data may be unaligned). */
static double value_at(const tg_st_tensor *t, bool f32, int64_t i)
{
    if (f32) {
        float x;
        memcpy(&x, (const char *)t->data + i * (int64_t)sizeof x, sizeof x);
        return x;
    }
    double x;
    memcpy(&x, (const char *)t->data + i * (int64_t)sizeof x, sizeof x);
    return x;
}

int tg_checkpoint_load_averages(const tg_st_file *f, tg_model *m, tg_error *err)
{
    if (!f || !m || !m->params)
        return tg_error_set(err, "checkpoint_load_averages: %s is NULL", !f ? "the file" : "the model");
    const tg_st_tensor *t = tg_st_find(f, "ema.values");
    const int64_t n = tg_params_numel(m->params);
    const bool f32 = t && !strcmp(t->dtype, "F32");
    if (!t) return tg_error_set(err, "the checkpoint holds no averages of its weights (no 'ema.values')");
    if (t->ndim != 1 || t->numel != n || (!f32 && strcmp(t->dtype, "F64")))
        return tg_error_set(err,
                            "the checkpoint's 'ema.values' (%s, %lld values in %d dimensions) is not the "
                            "averages of its %lld weights",
                            t->dtype, (long long)t->numel, t->ndim, (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(value_at(t, f32, i)))
            return tg_error_set(err, "the checkpoint's 'ema.values' holds %g at element %lld", value_at(t, f32, i),
                                (long long)i);
    void *w = tg_params_data(m->params);
    const bool to32 = tg_params_dtype(m->params) == TG_F32;
    for (int64_t i = 0; i < n; i++) {
        const double x = value_at(t, f32, i);
        if (to32) ((float *)w)[i] = (float)x;
        else ((double *)w)[i] = x;
    }
    return 0;
}
