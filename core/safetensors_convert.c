/* safetensors files: a loaded file's tensors copied into tapegrad
 * tensors (tg_st_copy_to, tg_st_load_params), converting dtypes and
 * checking that every value fits before anything is written. */
#include "safetensors.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph_fields_internal.h"
#include "safetensors_internal.h"

/* ---- converting into tapegrad tensors ------------------------------------ */

/* IEEE half and bfloat16 to float, exactly (every value of both is a
 * float: subnormals, infinities and NaN payloads carry over). */
static float f16_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1F, man = h & 0x3FF;
    uint32_t bits;
    if (exp == 0x1F) bits = sign | 0x7F800000u | man << 13; /* inf, NaN */
    else if (exp) bits = sign | (exp + 112) << 23 | man << 13;
    else if (!man) bits = sign; /* +-0 */
    else { /* subnormal: man 2^-24 */ int e = -1;
        uint32_t m = man;
        do {
            e++;
            m <<= 1;
        } while (!(m & 0x400));
        bits = sign | (uint32_t)(112 - e) << 23 | (m & 0x3FF) << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Checks that e can be copied into dst: convertible dtypes, the same
 * shape, every value representable. Writes nothing. */
static int copy_check(const tg_st_tensor *e, const tg_tensor *dst, tg_error *err)
{
    if (!e || !dst) return tg_error_set(err, "safetensors: copy: %s is NULL", e ? "destination" : "tensor");
    /* a tg_st_tensor a caller filled in must agree with itself: the copy
     * reads nbytes from e->data and writes numel elements to dst->data */
    const int k = e->dtype ? st_dtype_find(e->dtype) : -1;
    if (k < 0 || e->numel < 0 || (uint64_t)e->numel > SIZE_MAX / ST_DTYPES[k].size ||
        e->nbytes != (size_t)e->numel * ST_DTYPES[k].size || (!e->data && e->nbytes))
        return tg_error_set(err, "safetensors: tensor '%s': dtype, numel, nbytes and data do not agree",
                            e->name ? e->name : "(null)");
    if (tg_tensor_stale(dst))
        return tg_error_set(err,
                            "safetensors: tensor '%s': the destination was made before the last "
                            "tg_graph_reset of its graph",
                            e->name ? e->name : "(null)");
    if (!dst->data && dst->numel)
        return tg_error_set(err, "safetensors: tensor '%s': the destination has no data", e->name ? e->name : "(null)");
    const char *dt = e->dtype;
    bool is_f = !strcmp(dt, "F32") || !strcmp(dt, "F64") || !strcmp(dt, "F16") || !strcmp(dt, "BF16");
    bool is_i = !strcmp(dt, "I32") || !strcmp(dt, "I64");
    bool is_b = !strcmp(dt, "U8") || !strcmp(dt, "BOOL");
    if (!((is_f && tg_dtype_is_float(dst->dtype)) || (is_i && dst->dtype == TG_I32) || (is_b && dst->dtype == TG_BOOL)))
        return tg_error_set(err, "safetensors: tensor '%s': cannot convert %s to %s", e->name, dt,
                            tg_dtype_name(dst->dtype));
    bool same = e->ndim == dst->ndim;
    for (int d = 0; same && d < e->ndim; d++) same = e->shape[d] == dst->shape[d];
    same = same && e->numel == dst->numel;
    if (!same) {
        char a[160], b[64];
        return tg_error_set(err,
                            "safetensors: tensor '%s': shape %s in the file does not match %s of the "
                            "destination",
                            e->name, st_shape_str(e->ndim, e->shape, a, sizeof a), tg_shape_str(dst, b, sizeof b));
    }
    /* the values are read only where a conversion may not fit (narrowing
     * to f32, i64 to i32, bytes to bool): F32 into f32 or f64 and F64 into
     * f64 always do, and a loaded checkpoint's millions of values were
     * compared with dtype names one by one (most of tg_st_load_params) */
    const bool narrow = !strcmp(dt, "F64") && dst->dtype == TG_F32, wide_int = !strcmp(dt, "I64");
    if (!narrow && !wide_int && !is_b) return 0;
    const unsigned char *p = e->data;
    char ix[64];
    for (int64_t i = 0; i < e->numel; i++) {
        if (narrow) {
            double v;
            memcpy(&v, p + 8 * i, 8);
            if (isfinite(v) && (v > FLT_MAX || v < -FLT_MAX)) /* inf and NaN pass as they are */
                return tg_error_set(err,
                                    "safetensors: tensor '%s': element %" PRId64 " %s = %.17g does not "
                                    "fit in f32",
                                    e->name, i, tg_index_str(dst, dst->ndim, i, ix, sizeof ix), v);
        } else if (wide_int) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return tg_error_set(
                    err, "safetensors: tensor '%s': element %" PRId64 " %s = %" PRId64 " does not fit in i32", e->name,
                    i, tg_index_str(dst, dst->ndim, i, ix, sizeof ix), v);
        } else if (is_b && p[i] > 1) {
            return tg_error_set(err,
                                "safetensors: tensor '%s': element %" PRId64 " %s = %u is not 0 or 1 "
                                "for bool",
                                e->name, i, tg_index_str(dst, dst->ndim, i, ix, sizeof ix), p[i]);
        }
    }
    return 0;
}

/* Converts after copy_check passed. */
static void copy_convert(const tg_st_tensor *e, tg_tensor *dst)
{
    const unsigned char *p = e->data;
    size_t es = ST_DTYPES[st_dtype_find(e->dtype)].size; /* a known dtype: copy_check passed */
    if (es == 2) { /* F16 or BF16: exact in f32 and f64 */
        const bool bf = !strcmp(e->dtype, "BF16");
        for (int64_t i = 0; i < e->numel; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * (size_t)i, 2);
            const float v = bf ? bf16_to_float(h) : f16_to_float(h);
            if (dst->dtype == TG_F32) ((float *)dst->data)[i] = v;
            else ((double *)dst->data)[i] = v;
        }
        return;
    }
    if (es == tg_dtype_size(dst->dtype)) { /* same type: the bytes as they are */
        memcpy(dst->data, p, e->nbytes);
        return;
    }
    for (int64_t i = 0; i < e->numel; i++) {
        const unsigned char *q = p + es * (size_t)i;
        if (dst->dtype == TG_F32) { /* from F64 */
            double v;
            memcpy(&v, q, 8);
            ((float *)dst->data)[i] = (float)v;
        } else if (dst->dtype == TG_F64) { /* from F32 */
            float v;
            memcpy(&v, q, 4);
            ((double *)dst->data)[i] = v;
        } else { /* I64 -> i32, range checked */
            int64_t v;
            memcpy(&v, q, 8);
            ((int32_t *)dst->data)[i] = (int32_t)v;
        }
    }
}

int tg_st_copy_to(const tg_st_tensor *e, tg_tensor *dst, tg_error *err)
{
    if (copy_check(e, dst, err) != 0) return -1;
    copy_convert(e, dst);
    return 0;
}

int tg_st_load_params(tg_params *p, const tg_st_file *f, tg_error *err)
{
    if (!p || !f) return tg_error_set(err, "safetensors: load_params: %s is NULL", p ? "file" : "params");
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *t = tg_params_at(p, i);
        const tg_st_tensor *e = tg_st_find(f, t->name);
        if (!e) return tg_error_set(err, "safetensors: parameter '%s' is missing from the file", t->name);
        if (copy_check(e, t, err) != 0) return -1;
    }
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *t = tg_params_at(p, i);
        copy_convert(tg_st_find(f, t->name), t);
    }
    return 0;
}
