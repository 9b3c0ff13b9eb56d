/* Muon (MomentUm Orthogonalized by Newton-Schulz), for the 2-D weight
 * matrices of a model's blocks. For a weight W (rows x cols) with
 * gradient G, momentum m, learning rate lr, weight decay wd:
 *
 *   buf = m buf + (1 - m) G
 *   U   = (1 - m) G + m buf                      (Nesterov)
 *   X   = U / (||U||_F + 1e-7), as X^T when rows > cols (X is r x c, r <= c)
 *   five times:  A = X X^T;  B = b A + c A A;  X = a X + B X
 *                with (a, b, c) = (3.4445, -4.7750, 2.0315)
 *   W   = W (1 - lr wd) - lr sqrt(max(1, rows / cols)) X   (X^T back when transposed)
 *
 * The iteration maps each singular value s of X (all <= 1 after the
 * normalisation) through s -> a s + b s^3 + c s^5 five times, which
 * pushes every one of them towards 1 (into about [0.7, 1.2]) while
 * keeping the singular vectors: X becomes roughly the orthogonal factor
 * of U. Working on the short side (r <= c) keeps A and B r x r.
 *
 * The products go through core's product table (core/product_internal.h),
 * which holds the gemm of ops/ (tapegrad's kernels or OpenBLAS in f32,
 * OpenBLAS in f64, cut across the thread pool by shape only, so the bits
 * do not depend on the thread count): optim/ uses core alone. Elementwise work is in the store's dtype with the
 * scalars rounded to it; the Frobenius norm is summed in double.
 *
 * Which tensors: tg_muon_takes (2-D, inside a numbered block), or a
 * caller's choice (tg_muon_new_select). The momentum of the chosen
 * tensors is one buffer, their elements in store order. */
#include "optim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/product_internal.h"
#include "../core/safetensors_internal.h"
#include "optim_internal.h"

#define NS_A 3.4445
#define NS_B (-4.7750)
#define NS_C 2.0315
#define NS_STEPS 5
#define NORM_EPS 1e-7

struct tg_muon {
    tg_params *p;
    tg_muon_config c;
    int count; /* tensors in the store when made */
    int64_t numel; /* store size when made */
    bool *take; /* per tensor, in store order: Muon updates it */
    int64_t *at; /* per tensor: offset of its momentum in buf (-1 when not taken) */
    void *buf; /* momentum, store dtype, n elements */
    int64_t n; /* elements of the taken tensors */
    void *x, *x2, *a, *b; /* scratch: X and the next X (r x c), A and B (r x r), sized for the largest */
    int64_t steps;
};

bool tg_muon_takes(const tg_tensor *t)
{
    if (!t || t->ndim != 2 || !t->name) return false;
    /* a dot-separated part of the name that is all digits: "layers.3.",
     * "transformer.h.0." (a numbered block); embeddings and heads have none */
    for (const char *s = t->name; (s = strchr(s, '.'));) {
        const char *d = ++s;
        while (*d >= '0' && *d <= '9') d++;
        if (d > s && (*d == '.' || !*d)) return true;
    }
    return false;
}

tg_muon *tg_muon_new(tg_params *p, const tg_muon_config *c, tg_error *err)
{
    return tg_muon_new_select(p, c, NULL, err);
}

tg_muon *tg_muon_new_select(tg_params *p, const tg_muon_config *c, const bool *take, tg_error *err)
{
    tg_muon_config cfg = c ? *c : TG_MUON_DEFAULTS;
    if (!p) {
        tg_error_set(err, "muon_new: params is NULL");
        return NULL;
    }
    if (!(cfg.momentum >= 0 && cfg.momentum < 1)) {
        tg_error_set(err, "muon_new: momentum must be in [0, 1), got %g", cfg.momentum);
        return NULL;
    }
    if (!(isfinite(cfg.weight_decay) && cfg.weight_decay >= 0)) {
        tg_error_set(err, "muon_new: weight_decay must be finite and >= 0, got %g", cfg.weight_decay);
        return NULL;
    }
    const int count = tg_params_count(p);
    for (int i = 0; take && i < count; i++)
        if (take[i] && tg_params_at(p, i)->ndim != 2) {
            tg_error_set(err,
                         "muon_new: tensor '%s' has %d dimensions; Muon takes 2-D matrices only "
                         "(leave it to AdamW)",
                         tg_params_at(p, i)->name ? tg_params_at(p, i)->name : "(unnamed)", tg_params_at(p, i)->ndim);
            return NULL;
        }
    tg_muon *o = tg_calloc(1, sizeof *o);
    if (!o) {
        tg_error_set(err, "muon_new: out of memory");
        return NULL;
    }
    o->p = p;
    o->c = cfg;
    o->count = count;
    o->numel = tg_params_numel(p);
    size_t nt = (size_t)(count > 0 ? count : 1);
    o->take = tg_calloc(nt, sizeof *o->take);
    o->at = o->take ? tg_calloc(nt, sizeof *o->at) : NULL;
    if (!o->at) goto oom;
    int64_t xs = 1, as = 1; /* the largest r x c and r x r */
    for (int i = 0; i < count; i++) {
        const tg_tensor *w = tg_params_at(p, i);
        o->take[i] = take ? take[i] : tg_muon_takes(w);
        o->at[i] = -1;
        if (!o->take[i]) continue;
        o->at[i] = o->n;
        o->n += w->numel;
        int64_t r = w->shape[0] < w->shape[1] ? w->shape[0] : w->shape[1];
        if (w->numel > xs) xs = w->numel;
        if (r * r > as) as = r * r;
    }
    size_t es = tg_dtype_size(tg_params_dtype(p));
    o->buf = tg_calloc_big((size_t)(o->n > 0 ? o->n : 1), es);
    o->x = o->buf ? tg_calloc((size_t)xs, es) : NULL;
    o->x2 = o->x ? tg_calloc((size_t)xs, es) : NULL;
    o->a = o->x2 ? tg_calloc((size_t)as, es) : NULL;
    o->b = o->a ? tg_calloc((size_t)as, es) : NULL;
    if (!o->b) goto oom;
    return o;
oom:
    tg_error_set(err, "muon_new: out of memory for the momentum of %lld elements", (long long)o->n);
    tg_muon_free(o);
    return NULL;
}

static int index_of(const tg_muon *o, const tg_tensor *param)
{
    for (int i = 0; i < o->count && i < tg_params_count(o->p); i++)
        if (tg_params_at(o->p, i) == param) return i;
    return -1;
}

bool tg_muon_updates(const tg_muon *o, const tg_tensor *param)
{
    int i = o && param ? index_of(o, param) : -1;
    return i >= 0 && o->take[i];
}

#define T float
#define KERNEL(name) name##_f32
#include "muon_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "muon_kernels.inc"

/* The step of tensor i (one Muon takes). */
static void step_tensor(tg_muon *o, int i, double lr)
{
    tg_tensor *w = tg_params_at(o->p, i);
    if (tg_params_dtype(o->p) == TG_F32)
        muon_matrix_f32(o, w->data, w->grad, (float *)o->buf + o->at[i], w->shape[0], w->shape[1], lr);
    else muon_matrix_f64(o, w->data, w->grad, (double *)o->buf + o->at[i], w->shape[0], w->shape[1], lr);
}

int tg_muon_step(tg_muon *o, double lr, tg_error *err) { return tg_muon_step_part(o, lr, 0, 1, err); }

int tg_muon_step_part(tg_muon *o, double lr, int part, int parts, tg_error *err)
{
    if (!o) return tg_error_set(err, "muon_step: the optimizer is NULL");
    if (!isfinite(lr)) {
        tg_error_set(err, "muon_step: lr must be finite, got %g; nothing done", lr);
        return -1;
    }
    if (parts < 1 || part < 0 || part >= parts) {
        tg_error_set(err, "muon_step_part: part %d of %d is not one of [0, parts); nothing done", part, parts);
        return -1;
    }
    if (tg_params_numel(o->p) != o->numel || tg_params_count(o->p) != o->count) {
        tg_error_set(err,
                     "muon_step: the store has grown from %lld to %lld elements since the optimizer was made; "
                     "nothing done",
                     (long long)o->numel, (long long)tg_params_numel(o->p));
        return -1;
    }
    o->steps++;
    for (int i = 0, k = 0; i < o->count; i++)
        if (o->take[i] && k++ % parts == part) step_tensor(o, i, lr);
    return 0;
}

int tg_muon_owner(const tg_muon *o, const tg_tensor *param, int parts)
{
    int i = o && param && parts >= 1 ? index_of(o, param) : -1;
    if (i < 0 || !o->take[i]) return -1;
    int k = 0;
    for (int j = 0; j < i; j++) k += o->take[j];
    return k % parts;
}

int64_t tg_muon_steps(const tg_muon *o) { return o ? o->steps : 0; }

int tg_muon_set_steps(tg_muon *o, int64_t steps, tg_error *err)
{
    if (!o) return tg_error_set(err, "muon_set_steps: the optimizer is NULL");
    if (steps < 0) return tg_error_set(err, "muon_set_steps: step count %lld is negative", (long long)steps);
    o->steps = steps;
    return 0;
}

void *tg_muon_momentum(tg_muon *o) { return o ? o->buf : NULL; }
int64_t tg_muon_numel(const tg_muon *o) { return o ? o->n : 0; }
size_t tg_muon_state_bytes(const tg_muon *o) { return o ? (size_t)o->n * tg_dtype_size(tg_params_dtype(o->p)) : 0; }
const tg_params *tg_muon_store(const tg_muon *o) { return o ? o->p : NULL; }

void tg_muon_free(tg_muon *o)
{
    if (!o) return;
    tg_free(o->take);
    tg_free(o->at);
    tg_free(o->buf);
    tg_free(o->x);
    tg_free(o->x2);
    tg_free(o->a);
    tg_free(o->b);
    tg_free(o);
}

int tg_muon_exclude(const tg_muon *o, tg_adamw *a, tg_error *err)
{
    if (!o || !a) return tg_error_set(err, "muon_exclude: the %s is NULL", o ? "AdamW" : "Muon");
    if (tg_adamw_store(a) != o->p) return tg_error_set(err, "muon_exclude: the AdamW is not on Muon's store");
    for (int i = 0; i < o->count && i < tg_params_count(o->p); i++)
        if (o->take[i] && tg_adamw_set_update(a, tg_params_at(o->p, i), false, err)) return -1;
    return 0;
}

/* ---- state, for checkpoints ------------------------------------------------ */

int tg_muon_state_write(const tg_muon *o, tg_st_writer *w, const char *prefix)
{
    if (!o || !prefix)
        return tg_st_writer_fail(w, o ? "muon_state_write: prefix is NULL" : "muon_state_write: the optimizer is NULL");
    if (strlen(prefix) > TG_MUON_PREFIX_MAX) return tg_st_writer_fail(w, "muon_state_write: the prefix is too long");
    char key[TG_MUON_PREFIX_MAX + 16], val[32];
    const int64_t n = o->n;
    snprintf(key, sizeof key, "%s.momentum", prefix);
    if (tg_st_writer_add(w, key, tg_params_dtype(o->p) == TG_F32 ? "F32" : "F64", 1, &n, o->buf)) return -1;
    snprintf(key, sizeof key, "%s.steps", prefix);
    snprintf(val, sizeof val, "%lld", (long long)o->steps);
    return tg_st_writer_add_meta(w, key, val);
}

int tg_muon_state_read(tg_muon *o, const tg_st_file *f, const char *prefix, tg_error *err)
{
    if (!o || !f || !prefix)
        return tg_error_set(err, "muon_state_read: %s is NULL", !o ? "the optimizer" : !f ? "the file" : "prefix");
    if (strlen(prefix) > TG_MUON_PREFIX_MAX)
        return tg_error_set(err, "muon_state_read: prefix is longer than %d bytes", TG_MUON_PREFIX_MAX);
    char mk[TG_MUON_PREFIX_MAX + 16], sk[TG_MUON_PREFIX_MAX + 16];
    snprintf(mk, sizeof mk, "%s.momentum", prefix);
    snprintf(sk, sizeof sk, "%s.steps", prefix);
    const bool f32 = tg_params_dtype(o->p) == TG_F32;
    const char *dt = f32 ? "F32" : "F64";
    const tg_st_tensor *t = tg_st_find(f, mk);
    if (!t) return tg_error_set(err, "muon_state_read: the file has no tensor '%s'", mk);
    if (t->ndim != 1 || t->numel != o->n || strcmp(t->dtype, dt))
        return tg_error_set(err,
                            "muon_state_read: '%s' is not the optimizer's state: want %s of %lld "
                            "elements (its matrices'), got %s of %lld elements in %d dimensions",
                            mk, dt, (long long)o->n, t->dtype, (long long)t->numel, t->ndim);
    const char *s = tg_st_meta(f, sk);
    int64_t steps = 0;
    bool ok = s && *s && strlen(s) <= 18;
    for (const char *c = s; ok && *c; c++) ok = *c >= '0' && *c <= '9';
    for (const char *c = s; ok && *c; c++) steps = steps * 10 + (*c - '0');
    if (!ok)
        return tg_error_set(err,
                            "muon_state_read: metadata '%s' %s%.40s%s is not a step count (a whole "
                            "number >= 0)",
                            sk, s ? "= '" : "is missing", s ? s : "", s ? "'" : "");
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    for (int64_t i = 0; i < o->n; i++) {
        const double x = tg_state_at(t->data, f32, i);
        if (!isfinite(x))
            return tg_error_set(err, "muon_state_read: element %lld of '%s' is %g (must be finite)", (long long)i, mk,
                                x);
    }
    memcpy(o->buf, t->data, (size_t)o->n * es);
    o->steps = steps;
    return 0;
}
