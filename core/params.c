/* The persistent parameter store: flat value and gradient buffers with
 * named tensor views into them. */
#include "params.h"

#include <stdio.h>
#include <string.h>

#include "err_internal.h"
#include "op_internal.h"
#include "params_internal.h"
#include "stb_ds_internal.h"

typedef struct name_index {
    char *key;
    int value;
} name_index;

struct tg_params {
    tg_dtype dtype;
    tg_tensor **tensors; /* stb_ds array of owned headers */
    int64_t *offsets; /* stb_ds array: element offset of each */
    name_index *by_name; /* stb_ds string hash map */
    char *data, *grad; /* flat buffers of cap elements, the first numel in use */
    int64_t numel, cap;
    bool zeroed; /* the buffers came zeroed and nothing wrote past numel */
};

#define BIG_STORE ((int64_t)2 << 20) /* bytes from which the buffers grow by doubling, zeroed, in 2 MiB pages */
/* The buffers moved: every view re-pointed. */
static void repoint(tg_params *p)
{
    const size_t es = tg_dtype_size(p->dtype);
    for (ptrdiff_t i = 0; i < stbds_arrlen(p->tensors); i++) {
        p->tensors[i]->data = p->data + p->offsets[i] * es;
        p->tensors[i]->grad = p->grad + p->offsets[i] * es;
    }
}

/* Large buffers of cap elements (at least the numel in use), zeroed past
 * them; false when out of memory (the store unchanged) */
static bool grow_big(tg_params *p, int64_t cap)
{
    const size_t es = tg_dtype_size(p->dtype);
    char *data = tg_calloc_big(1, (size_t)cap * es), *grad = data ? tg_calloc_big(1, (size_t)cap * es) : NULL;
    if (!grad) {
        tg_free(data);
        return false;
    }
    if (p->numel) {
        memcpy(data, p->data, (size_t)p->numel * es);
        memcpy(grad, p->grad, (size_t)p->numel * es);
    }
    tg_free(p->data);
    tg_free(p->grad);
    p->data = data, p->grad = grad, p->cap = cap, p->zeroed = true;
    repoint(p);
    return true;
}

void tg_params_reserve(tg_params *p, int64_t numel)
{
    if (p && numel > p->cap && numel <= TG_MAX_NUMEL && numel * (int64_t)tg_dtype_size(p->dtype) >= BIG_STORE)
        (void)grow_big(p, numel); /* advice: without it, tg_params_add grows the buffers */
}

tg_params *tg_params_new(tg_dtype dt, tg_error *err)
{
    if (!tg_dtype_is_float(dt)) {
        tg_error_set(err, "params_new: dtype must be f32 or f64, got %s (%d)", tg_dtype_name(dt), (int)dt);
        return NULL;
    }
    tg_params *p = tg_calloc(1, sizeof *p);
    if (!p) {
        tg_error_set(err, "params_new: out of memory");
        return NULL;
    }
    p->dtype = dt;
    stbds_sh_new_strdup(p->by_name);
    return p;
}

void tg_params_free(tg_params *p)
{
    if (!p) return;
    for (ptrdiff_t i = 0; i < stbds_arrlen(p->tensors); i++) tg_free(p->tensors[i]);
    stbds_arrfree(p->tensors);
    stbds_arrfree(p->offsets);
    stbds_shfree(p->by_name);
    tg_free(p->data);
    tg_free(p->grad);
    tg_free(p);
}

static tg_tensor *fail(tg_error *err, const char *name, const char *why)
{
    tg_error_set(err, "params_add: '%s': %s", name, why);
    return NULL;
}

tg_tensor *tg_params_add(tg_params *p, const char *name, int ndim, const int *shape, tg_error *err)
{
    if (!p) return tg_error_set(err, "params_add: the store is NULL"), NULL;
    if (!name || !*name) return tg_error_set(err, "params_add: name is empty"), NULL;
    if (stbds_shgeti(p->by_name, name) >= 0) return tg_error_set(err, "params_add: duplicate name '%s'", name), NULL;
    tg_tensor h = {0};
    const char *why = NULL;
    if (!tg_shape_set(&h, ndim, shape, &why)) {
        tg_error_set(err, "params_add: '%s': bad shape: %s", name, why);
        return NULL;
    }
    if (h.numel > TG_MAX_NUMEL - p->numel) return fail(err, name, "the store would hold more than 2^40 elements");

    size_t es = tg_dtype_size(p->dtype);
    tg_tensor *t = tg_malloc(sizeof *t);
    if (!t) return fail(err, name, "out of memory");
    const int64_t need = p->numel + h.numel;
    if (need * (int64_t)es < BIG_STORE) {
        /* a small store: realloc'd to its size, tensor by tensor */
        char *data = tg_realloc(p->data, (size_t)need * es);
        if (data) p->data = data;
        char *grad = data ? tg_realloc(p->grad, (size_t)need * es) : NULL;
        if (grad) p->grad = grad;
        if (!grad) {
            tg_free(t);
            return fail(err, name, "out of memory");
        }
        p->cap = need, p->zeroed = false;
    } else if (need > p->cap && !grow_big(p, need > 2 * p->cap ? need : 2 * p->cap)) {
        /* a large one (loading a 60 MB checkpoint spent most of its time in
         * page faults, zero-filling and copies here) grows to twice its size
         * at least, zeroed, in huge pages (tg_calloc_big): a model of many
         * tensors is copied a few times, not once per tensor, or never when
         * its size was reserved (tg_params_reserve) */
        tg_free(t);
        return fail(err, name, "out of memory");
    }
    if (!p->zeroed) {
        memset(p->data + p->numel * es, 0, (size_t)h.numel * es);
        memset(p->grad + p->numel * es, 0, (size_t)h.numel * es);
    }
    *t = h;
    t->dtype = p->dtype;
    t->requires_grad = true;
    t->is_leaf = true;
    stbds_arrput(p->tensors, t);
    stbds_arrput(p->offsets, p->numel);
    stbds_shput(p->by_name, name, (int)stbds_arrlen(p->tensors) - 1);
    t->name = stbds_shgets(p->by_name, name).key; /* the map's own copy */
    p->numel += h.numel;
    repoint(p); /* the buffers may have moved */
    return t;
}

tg_tensor *tg_params_get(const tg_params *p, const char *name)
{
    if (!p || !name) return NULL;
    ptrdiff_t i = stbds_shgeti(((tg_params *)p)->by_name, name);
    return i < 0 ? NULL : p->tensors[p->by_name[i].value];
}

int tg_params_count(const tg_params *p) { return p ? (int)stbds_arrlen(p->tensors) : 0; }
tg_tensor *tg_params_at(const tg_params *p, int i) { return i >= 0 && i < tg_params_count(p) ? p->tensors[i] : NULL; }
tg_dtype tg_params_dtype(const tg_params *p) { return p ? p->dtype : (tg_dtype)-1; }
int64_t tg_params_numel(const tg_params *p) { return p ? p->numel : 0; }
void *tg_params_data(tg_params *p) { return p ? p->data : NULL; }
void *tg_params_grad(tg_params *p) { return p ? p->grad : NULL; }
void tg_params_zero_grad(tg_params *p)
{
    if (p && p->grad) memset(p->grad, 0, (size_t)p->numel * tg_dtype_size(p->dtype));
}
