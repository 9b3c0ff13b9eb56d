/* tapegrad core: dtypes, shapes and the tensor struct.
 *
 * A tensor is a contiguous row-major block of up to four dimensions in
 * NumPy order (last dimension fastest). Tensors never own their memory:
 * activations live in a graph's per-step arena (core/graph.h), parameters
 * in a parameter store (core/params.h). */
#ifndef TG_TENSOR_H
#define TG_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_MAX_DIMS 4
#define TG_MAX_NUMEL ((int64_t)1 << 40) /* elements of one tensor (or store), at most */

typedef enum tg_dtype {
    TG_F32, /* float: training */
    TG_F64, /* double: gradient checks, or training where wanted */
    TG_I32, /* int32_t: token ids and targets; never requires grad */
    TG_BOOL /* uint8_t 0/1: masks (1 = blocked); never requires grad */
} tg_dtype;

struct tg_graph;

/* Fields are read-only for users except through the functions below;
 * `data` may be read and written (e.g. to fill an input batch). */
typedef struct tg_tensor {
    tg_dtype dtype;
    int ndim; /* 0..TG_MAX_DIMS; 0 is a scalar */
    int shape[TG_MAX_DIMS]; /* unused trailing entries are 1 */
    int64_t numel;
    void *data; /* numel elements of dtype */
    void *grad; /* same dtype and size as data; NULL until a
                                 gradient reaches the tensor */
    bool requires_grad;
    bool is_leaf; /* made by the user, not by a recorded op */
    uint32_t gen; /* generation of `graph` it was made in: after a
                                 tg_graph_reset of that graph it is stale */
    struct tg_graph *graph; /* arena that owns it; NULL for parameters */
    const char *name; /* parameters: their name; otherwise NULL */
} tg_tensor;

/* Bytes per element: 4 (f32, i32), 8 (f64), 1 (bool); 0 for a value that
 * is not a tg_dtype. */
TG_API size_t tg_dtype_size(tg_dtype dt);
/* "f32", "f64", "i32" or "bool" (the names error messages use); "?" for a
 * value that is not a tg_dtype. */
TG_API const char *tg_dtype_name(tg_dtype dt);
/* True for f32 and f64: the dtypes ops compute in and that can require grad. */
static inline bool tg_dtype_is_float(tg_dtype dt) { return dt == TG_F32 || dt == TG_F64; }

/* Writes t's shape as "(2,3,4)" ("()" for a scalar, "NULL" for a NULL t)
 * into buf, truncated to size bytes and always NUL-terminated; returns
 * buf. A NULL buf or a size of 0: nothing is written. */
TG_API char *tg_shape_str(const tg_tensor *t, char *buf, size_t size);

/* Writes the multi-index "(i0,i1,...)" of flat index `flat` over the
 * first k dimensions of t into buf, always NUL-terminated; returns buf.
 * Used by error messages to name an element or a row. k outside
 * 0..t->ndim, or flat outside [0, product of those dimensions), writes a
 * sentence saying so in parentheses instead; a NULL t writes "NULL"; a
 * NULL buf or a size of 0 writes nothing. */
TG_API char *tg_index_str(const tg_tensor *t, int k, int64_t flat, char *buf, size_t size);

/* Element i (flat row-major index) of a tensor of any dtype, as a double.
 * NaN for a NULL t or data, i outside [0, numel), or a tensor made before
 * the last reset of its graph. */
TG_API double tg_tensor_get(const tg_tensor *t, int64_t i);
/* Sets element i (flat row-major index) to v: rounded to float for f32;
 * an I32 tensor takes only whole numbers in its range, a BOOL one only 0
 * and 1. 0, or -1 (nothing written) for those, a NULL t or data, i outside
 * [0, numel), or a tensor made before the last reset of its graph. */
TG_API int tg_tensor_set(tg_tensor *t, int64_t i, double v);
/* The single element of a one-element tensor (a loss) as a double. NaN
 * for a NULL t or a tensor of more than one element. */
TG_API double tg_tensor_item(const tg_tensor *t);
/* True when a and b have the same dtype and the same shape; false when
 * either is NULL. */
TG_API bool tg_tensor_same_shape(const tg_tensor *a, const tg_tensor *b);

#ifdef __cplusplus
}
#endif

#endif
