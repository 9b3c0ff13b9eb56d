#include "tensor.h"

#include <stdio.h>
#include <string.h>

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
    if (!size) return buf;
    if (!t) { snprintf(buf, size, "NULL"); return buf; }
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->ndim && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ",%d" : "%d", t->shape[i]);
    if (at < size) snprintf(buf + at, size - at, ")");
    return buf;
}

char *tg_index_str(const tg_tensor *t, int k, int64_t flat, char *buf, size_t size)
{
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
    switch (t->dtype) {
    case TG_F32: return ((const float *)t->data)[i];
    case TG_F64: return ((const double *)t->data)[i];
    case TG_I32: return ((const int32_t *)t->data)[i];
    case TG_BOOL: return ((const uint8_t *)t->data)[i];
    }
    return 0;
}

double tg_tensor_item(const tg_tensor *t) { return tg_tensor_get(t, 0); }

bool tg_tensor_same_shape(const tg_tensor *a, const tg_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    return memcmp(a->shape, b->shape, sizeof a->shape) == 0;
}
