/* AdamW (torch.optim.AdamW, amsgrad off), in PyTorch's order. Step t
 * counts from 1; for each element with value p, gradient g:
 *
 *   p   = p * (1 - lr * weight_decay)          (decayed tensors only)
 *   m   = beta1 * m + (1 - beta1) * g
 *   v   = beta2 * v + ((1 - beta2) * g) * g
 *   den = sqrt(v) / sqrt(1 - beta2^t) + eps
 *   p   = p - ((lr / (1 - beta1^t)) * m) / den
 *
 * The scalar factors are computed in double and rounded to the store's
 * dtype; everything per element is in the store's dtype. At t = 1,
 * m / (1 - beta1) = g and sqrt(v / (1 - beta2)) = |g|, so the first
 * update is lr * g / (|g| + eps), about lr * sign(g).
 *
 * Decay groups follow nanoGPT: tensors with ndim >= 2 decay, the rest
 * (biases, LayerNorm gains) do not; a flag per tensor, in store order,
 * can be changed with tg_adamw_set_decay.
 *
 * A shard (tg_adamw_new_shard, for ZeRO stage 1 in distributed/) keeps the moments
 * of a range [lo, hi) of the flat buffers only and updates those elements:
 * the same loop, over each tensor's part inside the range. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/isa_internal.h"
#include "../core/parallel.h"
#include "../core/safetensors_internal.h"
#include "optim_internal.h"

struct tg_adamw {
    tg_params *p;
    tg_adamw_config c;
    void *m, *v; /* moments of elements [lo, hi) of the flat buffers, store dtype */
    int64_t lo, hi; /* the shard: [0, numel) unless made by tg_adamw_new_shard */
    bool *decay; /* per tensor, in store order */
    bool *leave; /* per tensor: not updated (another optimizer's, tg_adamw_set_update) */
    int64_t numel; /* store size when made */
    int count; /* tensors in the store when made */
    int64_t steps; /* steps taken */
};

static bool unit(double b) { return b >= 0 && b < 1; } /* false for NaN */
static bool nonneg(double x) { return isfinite(x) && x >= 0; }

tg_adamw *tg_adamw_new(tg_params *p, const tg_adamw_config *c, tg_error *err)
{
    return tg_adamw_new_shard(p, c, 0, tg_params_numel(p), err);
}

tg_adamw *tg_adamw_new_shard(tg_params *p, const tg_adamw_config *c, int64_t lo, int64_t hi, tg_error *err)
{
    tg_adamw_config cfg = c ? *c : TG_ADAMW_DEFAULTS;
    if (!p) {
        tg_error_set(err, "adamw_new: params is NULL");
        return NULL;
    }
    if (!unit(cfg.beta1) || !unit(cfg.beta2)) {
        tg_error_set(err, "adamw_new: beta1 and beta2 must be in [0, 1), got %g and %g", cfg.beta1, cfg.beta2);
        return NULL;
    }
    if (!nonneg(cfg.eps) || !nonneg(cfg.weight_decay)) {
        tg_error_set(err, "adamw_new: eps and weight_decay must be finite and >= 0, got %g and %g", cfg.eps,
                     cfg.weight_decay);
        return NULL;
    }
    if (lo < 0 || hi < lo || hi > tg_params_numel(p)) {
        tg_error_set(err, "adamw_new_shard: the shard [%lld, %lld) is not a range of the store's %lld elements",
                     (long long)lo, (long long)hi, (long long)tg_params_numel(p));
        return NULL;
    }
    tg_adamw *o = tg_calloc(1, sizeof *o);
    if (!o) {
        tg_error_set(err, "adamw_new: out of memory");
        return NULL;
    }
    o->p = p;
    o->c = cfg;
    o->numel = tg_params_numel(p);
    o->count = tg_params_count(p);
    o->lo = lo;
    o->hi = hi;
    /* at least one element each, so an empty store is not mistaken for OOM */
    size_t n = (size_t)(hi > lo ? hi - lo : 1), es = tg_dtype_size(tg_params_dtype(p));
    o->m = tg_calloc_big(n, es);
    o->v = o->m ? tg_calloc_big(n, es) : NULL;
    o->decay = o->v ? tg_calloc((size_t)(o->count > 0 ? o->count : 1), sizeof *o->decay) : NULL;
    o->leave = o->decay ? tg_calloc((size_t)(o->count > 0 ? o->count : 1), sizeof *o->leave) : NULL;
    if (!o->leave) {
        tg_error_set(err, "adamw_new: out of memory for the moments of %lld elements", (long long)(hi - lo));
        tg_adamw_free(o);
        return NULL;
    }
    for (int i = 0; i < o->count; i++) o->decay[i] = tg_params_at(p, i)->ndim >= 2;
    return o;
}

static int index_of(const tg_adamw *o, const tg_tensor *param)
{
    for (int i = 0; i < o->count && i < tg_params_count(o->p); i++)
        if (tg_params_at(o->p, i) == param) return i;
    return -1;
}

int tg_adamw_set_decay(tg_adamw *o, const tg_tensor *param, bool decay, tg_error *err)
{
    if (!o) return tg_error_set(err, "adamw_set_decay: the optimizer is NULL");
    int i = param ? index_of(o, param) : -1;
    if (i < 0) {
        return tg_error_set(err, "adamw_set_decay: tensor '%s' is not a parameter of the optimizer's store",
                            param && param->name ? param->name : "(unnamed)");
    }
    o->decay[i] = decay;
    return 0;
}

int tg_adamw_set_update(tg_adamw *o, const tg_tensor *param, bool update, tg_error *err)
{
    if (!o) return tg_error_set(err, "adamw_set_update: the optimizer is NULL");
    int i = param ? index_of(o, param) : -1;
    if (i < 0) {
        return tg_error_set(err, "adamw_set_update: tensor '%s' is not a parameter of the optimizer's store",
                            param && param->name ? param->name : "(unnamed)");
    }
    o->leave[i] = !update;
    return 0;
}

bool tg_adamw_updates(const tg_adamw *o, const tg_tensor *param)
{
    int i = o && param ? index_of(o, param) : -1;
    return i >= 0 && !o->leave[i];
}

bool tg_adamw_decays(const tg_adamw *o, const tg_tensor *param)
{
    int i = o && param ? index_of(o, param) : -1;
    return i >= 0 && o->decay[i];
}

/* The per-step scalars, in double. */
typedef struct scalars {
    double keep, b1, a1, b2, a2, bc2_sqrt, eps, step_size;
} scalars;

/* The update of n elements; the f32 loop is compiled once per kernel path
 * (core/isa_internal.h: 16, 8 or 4 lanes, fused multiply-adds on the
 * AVX2 and AVX-512 paths), the f64 one once. */
#define ADAMW_LOOP(T, SQRT)                                                                                            \
    const T keep = (T)s->keep, b1 = (T)s->b1, a1 = (T)s->a1, b2 = (T)s->b2, a2 = (T)s->a2;                             \
    const T bc2_sqrt = (T)s->bc2_sqrt, eps = (T)s->eps, step_size = (T)s->step_size;                                   \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
        if (decay) p[i] *= keep;                                                                                       \
        m[i] = b1 * m[i] + a1 * g[i];                                                                                  \
        v[i] = b2 * v[i] + a2 * g[i] * g[i];                                                                           \
        T den = SQRT(v[i]) / bc2_sqrt + eps;                                                                           \
        p[i] -= step_size * m[i] / den;                                                                                \
    }

TG_KERNEL_BODY void adamw_float_body(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                                     int64_t n, const scalars *s, bool decay){
    ADAMW_LOOP(float, sqrtf)} TG_ISA_CLONES_VOID(adamw_float,
                                                 (float *restrict p, const float *restrict g, float *restrict m,
                                                  float *restrict v, int64_t n, const scalars *s, bool decay),
                                                 (p, g, m, v, n, s, decay))

    static void adamw_double(double *p, const double *g, double *m, double *v, int64_t n, const scalars *s, bool decay)
{
    ADAMW_LOOP(double, sqrt)
}

/* One tensor's update, its elements shared out among threads. */
typedef struct adamw_job {
    bool f32, decay;
    void *p, *m, *v;
    const void *g;
    const scalars *s;
} adamw_job;

static void adamw_part(void *ctx, int64_t lo, int64_t hi)
{
    const adamw_job *j = ctx;
    if (j->f32)
        adamw_float((float *)j->p + lo, (const float *)j->g + lo, (float *)j->m + lo, (float *)j->v + lo, hi - lo, j->s,
                    j->decay);
    else
        adamw_double((double *)j->p + lo, (const double *)j->g + lo, (double *)j->m + lo, (double *)j->v + lo, hi - lo,
                     j->s, j->decay);
}

int tg_adamw_step(tg_adamw *o, double lr, tg_error *err)
{
    if (!o) return tg_error_set(err, "adamw_step: the optimizer is NULL");
    const size_t lo = (size_t)o->lo * tg_dtype_size(tg_params_dtype(o->p));
    return tg_adamw_step_grad(o, lr, (char *)tg_params_grad(o->p) + lo, err);
}

int tg_adamw_step_grad(tg_adamw *o, double lr, const void *grad, tg_error *err)
{
    if (!o) return tg_error_set(err, "adamw_step_grad: the optimizer is NULL");
    if (!isfinite(lr)) {
        tg_error_set(err, "adamw_step: lr must be finite, got %g; nothing done", lr);
        return -1;
    }
    if (tg_params_numel(o->p) != o->numel || tg_params_count(o->p) != o->count) {
        tg_error_set(err,
                     "adamw_step: the store has grown from %lld to %lld elements since the optimizer was made; "
                     "nothing done",
                     (long long)o->numel, (long long)tg_params_numel(o->p));
        return -1;
    }
    if (!grad && o->hi > o->lo) {
        tg_error_set(err, "adamw_step_grad: grad is NULL; nothing done");
        return -1;
    }
    int64_t t = ++o->steps;
    const tg_adamw_config *c = &o->c;
    scalars s = {
        .keep = 1 - lr * c->weight_decay,
        .b1 = c->beta1,
        .a1 = 1 - c->beta1,
        .b2 = c->beta2,
        .a2 = 1 - c->beta2,
        .bc2_sqrt = sqrt(1 - pow(c->beta2, (double)t)),
        .eps = c->eps,
        .step_size = lr / (1 - pow(c->beta1, (double)t)),
    };
    bool f32 = tg_params_dtype(o->p) == TG_F32;
    size_t es = tg_dtype_size(tg_params_dtype(o->p));
    char *base = tg_params_data(o->p);
    /* each tensor's part inside the shard [lo, hi): a shard may begin or end
     * inside a tensor, whose decay flag then holds for both parts. Offsets
     * into m, v and grad count from lo. */
    for (int i = 0; i < o->count; i++) {
        const tg_tensor *w = tg_params_at(o->p, i);
        int64_t start = ((char *)w->data - base) / (int64_t)es, end = start + w->numel;
        int64_t a = start > o->lo ? start : o->lo, b = end < o->hi ? end : o->hi;
        if (a >= b || o->leave[i]) continue;
        size_t at = (size_t)(a - o->lo) * es;
        adamw_job j = {
            f32, o->decay[i], base + (size_t)a * es, (char *)o->m + at, (char *)o->v + at, (const char *)grad + at, &s};
        tg_parallel_for(b - a, 16384, adamw_part, &j);
    }
    return 0;
}

void tg_adamw_shard(const tg_adamw *o, int64_t *lo, int64_t *hi)
{
    if (lo) *lo = o ? o->lo : 0;
    if (hi) *hi = o ? o->hi : 0;
}

int64_t tg_adamw_steps(const tg_adamw *o) { return o ? o->steps : 0; }
const tg_params *tg_adamw_store(const tg_adamw *o) { return o ? o->p : NULL; }

int tg_adamw_set_steps(tg_adamw *o, int64_t steps, tg_error *err)
{
    if (!o) return tg_error_set(err, "adamw_set_steps: the optimizer is NULL");
    if (steps < 0) { return tg_error_set(err, "adamw_set_steps: step count %lld is negative", (long long)steps); }
    o->steps = steps;
    return 0;
}

void *tg_adamw_m(tg_adamw *o) { return o ? o->m : NULL; }
void *tg_adamw_v(tg_adamw *o) { return o ? o->v : NULL; }

void tg_adamw_free(tg_adamw *o)
{
    if (!o) return;
    tg_free(o->m);
    tg_free(o->v);
    tg_free(o->decay);
    tg_free(o->leave);
    tg_free(o);
}

/* ---- state, for checkpoints ------------------------------------------------ */

int tg_adamw_state_write(const tg_adamw *o, tg_st_writer *w, const char *prefix, const void *m, const void *v)
{
    if (!o || !prefix)
        return tg_st_writer_fail(w,
                                 o ? "adamw_state_write: prefix is NULL" : "adamw_state_write: the optimizer is NULL");
    if (!m != !v) return tg_st_writer_fail(w, "adamw_state_write: give both moments m and v, or neither");
    if (!m && (o->lo != 0 || o->hi != o->numel)) /* a shard's own moments are a part */
        return tg_st_writer_fail(w, "adamw_state_write: the optimizer is a shard: give the whole store's moments");
    char key[TG_ADAMW_PREFIX_MAX + 8], steps[32];
    if (strlen(prefix) > TG_ADAMW_PREFIX_MAX) return tg_st_writer_fail(w, "adamw_state_write: the prefix is too long");
    const int64_t n = o->numel;
    const char *dt = tg_params_dtype(o->p) == TG_F32 ? "F32" : "F64";
    snprintf(key, sizeof key, "%s.m", prefix);
    if (tg_st_writer_add(w, key, dt, 1, &n, m ? m : o->m)) return -1;
    snprintf(key, sizeof key, "%s.v", prefix);
    if (tg_st_writer_add(w, key, dt, 1, &n, v ? v : o->v)) return -1;
    snprintf(key, sizeof key, "%s.steps", prefix);
    snprintf(steps, sizeof steps, "%lld", (long long)o->steps);
    return tg_st_writer_add_meta(w, key, steps);
}

int tg_adamw_state_read(tg_adamw *o, const tg_st_file *f, const char *prefix, tg_error *err)
{
    if (!o || !f || !prefix)
        return tg_error_set(err, "adamw_state_read: %s is NULL", !o ? "the optimizer" : !f ? "the file" : "prefix");
    if (strlen(prefix) > TG_ADAMW_PREFIX_MAX)
        return tg_error_set(err, "adamw_state_read: prefix is longer than %d bytes", TG_ADAMW_PREFIX_MAX);
    char mk[TG_ADAMW_PREFIX_MAX + 8], vk[TG_ADAMW_PREFIX_MAX + 8], sk[TG_ADAMW_PREFIX_MAX + 8];
    snprintf(mk, sizeof mk, "%s.m", prefix);
    snprintf(vk, sizeof vk, "%s.v", prefix);
    snprintf(sk, sizeof sk, "%s.steps", prefix);
    const bool f32 = tg_params_dtype(o->p) == TG_F32;
    const char *dt = f32 ? "F32" : "F64";
    const tg_st_tensor *t[2] = {tg_st_find(f, mk), tg_st_find(f, vk)};
    for (int k = 0; k < 2; k++) {
        const char *name = k ? vk : mk;
        if (!t[k]) return tg_error_set(err, "adamw_state_read: the file has no tensor '%s'", name);
        if (t[k]->ndim != 1 || t[k]->numel != o->numel || strcmp(t[k]->dtype, dt))
            return tg_error_set(err,
                                "adamw_state_read: '%s' is not the optimizer's state: want %s of %lld "
                                "elements (the store's), got %s of %lld elements in %d dimensions",
                                name, dt, (long long)o->numel, t[k]->dtype, (long long)t[k]->numel, t[k]->ndim);
    }
    const char *s = tg_st_meta(f, sk);
    int64_t steps = 0;
    bool ok = s && *s && strlen(s) <= 18;
    for (const char *c = s; ok && *c; c++) ok = *c >= '0' && *c <= '9';
    for (const char *c = s; ok && *c; c++) steps = steps * 10 + (*c - '0');
    if (!ok)
        return tg_error_set(err,
                            "adamw_state_read: metadata '%s' %s%.40s%s is not a step count (a whole "
                            "number >= 0)",
                            sk, s ? "= '" : "is missing", s ? s : "", s ? "'" : "");
    /* every moment of the file, not only this shard's: a file that is
     * wrong anywhere is wrong */
    for (int64_t i = 0; i < o->numel; i++) {
        const double a = tg_state_at(t[0]->data, f32, i), b = tg_state_at(t[1]->data, f32, i);
        if (!isfinite(a) || !isfinite(b) || b < 0)
            return tg_error_set(err,
                                "adamw_state_read: element %lld of the state is m %g, v %g (must be "
                                "finite, v >= 0)",
                                (long long)i, a, b);
    }
    const size_t es = tg_dtype_size(tg_params_dtype(o->p));
    memcpy(o->m, (const char *)t[0]->data + (size_t)o->lo * es, (size_t)(o->hi - o->lo) * es);
    memcpy(o->v, (const char *)t[1]->data + (size_t)o->lo * es, (size_t)(o->hi - o->lo) * es);
    o->steps = steps;
    return 0;
}
