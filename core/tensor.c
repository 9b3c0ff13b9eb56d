#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph_fields_internal.h"

size_t tg_dtype_size(tg_dtype dt)
{
    switch (dt) {
    case TG_F32: return sizeof(float);
    case TG_F64: return sizeof(double);
    case TG_I32: return sizeof(int32_t);
    case TG_BOOL: return sizeof(uint8_t);
    }
    return 0;
}

const char *tg_dtype_name(tg_dtype dt)
{
    switch (dt) {
    case TG_F32: return "f32";
    case TG_F64: return "f64";
    case TG_I32: return "i32";
    case TG_BOOL: return "bool";
    }
    return "?";
}

char *tg_shape_str(const tg_tensor *t, char *buf, size_t size)
{
    if (!buf || !size) return buf;
    if (!t) {
        snprintf(buf, size, "NULL");
        return buf;
    }
    const int nd = t->ndim < 0 ? 0 : t->ndim > TG_MAX_DIMS ? TG_MAX_DIMS : t->ndim;
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < nd && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ",%d" : "%d", t->shape[i]);
    if (at < size) snprintf(buf + at, size - at, ")");
    return buf;
}

char *tg_index_str(const tg_tensor *t, int k, int64_t flat, char *buf, size_t size)
{
    if (!buf || !size) return buf;
    if (!t) {
        snprintf(buf, size, "NULL");
        return buf;
    }
    if (k < 0 || k > t->ndim || k > TG_MAX_DIMS) {
        snprintf(buf, size, "(index over %d dimensions of a %d-D tensor)", k, t->ndim);
        return buf;
    }
    int64_t count = 1; /* elements over the k dimensions (a size < 1 makes it 0) */
    for (int d = 0; d < k && count; d++)
        count = t->shape[d] < 1 ? 0 : count > INT64_MAX / t->shape[d] ? INT64_MAX : count * t->shape[d];
    if (flat < 0 || flat >= count) {
        snprintf(buf, size, "(flat index %lld outside [0, %lld))", (long long)flat, (long long)count);
        return buf;
    }
    int idx[TG_MAX_DIMS] = {0};
    for (int d = k - 1; d >= 0; d--) {
        idx[d] = (int)(flat % t->shape[d]);
        flat /= t->shape[d];
    }
    size_t at = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < k && at < size; d++) at += (size_t)snprintf(buf + at, size - at, d ? ",%d" : "%d", idx[d]);
    if (at < size) snprintf(buf + at, size - at, ")");
    return buf;
}

double tg_tensor_get(const tg_tensor *t, int64_t i)
{
    if (!t || !t->data || i < 0 || i >= t->numel || tg_tensor_stale(t)) return NAN;
    switch (t->dtype) {
    case TG_F32: return ((const float *)t->data)[i];
    case TG_F64: return ((const double *)t->data)[i];
    case TG_I32: return ((const int32_t *)t->data)[i];
    case TG_BOOL: return ((const uint8_t *)t->data)[i];
    }
    return NAN;
}

int tg_tensor_set(tg_tensor *t, int64_t i, double v)
{
    if (!t || !t->data || i < 0 || i >= t->numel || tg_tensor_stale(t)) return -1;
    switch (t->dtype) {
    case TG_F32: ((float *)t->data)[i] = (float)v; return 0;
    case TG_F64: ((double *)t->data)[i] = v; return 0;
    case TG_I32:
        if (!(v >= INT32_MIN && v <= INT32_MAX) || v != floor(v)) return -1;
        ((int32_t *)t->data)[i] = (int32_t)v;
        return 0;
    case TG_BOOL:
        if (v != 0 && v != 1) return -1;
        ((uint8_t *)t->data)[i] = (uint8_t)v;
        return 0;
    }
    return -1;
}

double tg_tensor_item(const tg_tensor *t) { return t && t->numel == 1 ? tg_tensor_get(t, 0) : NAN; }

bool tg_tensor_same_shape(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || a->ndim != b->ndim) return false;
    return memcmp(a->shape, b->shape, sizeof a->shape) == 0;
}
