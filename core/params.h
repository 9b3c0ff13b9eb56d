/* tapegrad core: the persistent parameter store.
 *
 * Parameters live for the whole run. Their values sit in one flat buffer
 * and their gradients in another, each parameter a named view into both,
 * so an optimizer step or a global gradient norm is one loop over
 * tg_params_data / tg_params_grad. All parameters of a store share one
 * float dtype. Failures are reported in a tg_error (core/error.h). */
#ifndef TG_PARAMS_H
#define TG_PARAMS_H

#include "error.h"
#include "export.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_params tg_params;

/* An empty store for parameters of dtype dt (f32 or f64). NULL, with a
 * message in err, when dt is not f32/f64 or out of memory. */
TG_API tg_params *tg_params_new(tg_dtype dt, tg_error *err);
/* Frees the store: every parameter tensor and both flat buffers. */
TG_API void tg_params_free(tg_params *p); /* accepts NULL */

/* Adds a zero-filled parameter that requires grad. Its data and grad
 * point into the store's flat buffers (pointers stay valid until the next
 * tg_params_add). NULL, with a message in err, for a NULL p, a duplicate
 * or empty name, a bad shape, a store that would pass TG_MAX_NUMEL
 * elements, or out of memory. */
TG_API tg_tensor *tg_params_add(tg_params *p, const char *name, int ndim, const int *shape, tg_error *err);

/* The parameter registered under name; NULL if there is none, or for a
 * NULL p or name. */
TG_API tg_tensor *tg_params_get(const tg_params *p, const char *name);
/* The number of parameters added; 0 for a NULL p. */
TG_API int tg_params_count(const tg_params *p);
/* Parameter i (0 <= i < count), in the order added; NULL when i is out
 * of range or p is NULL. */
TG_API tg_tensor *tg_params_at(const tg_params *p, int i);
/* The store's dtype: every parameter has it. (tg_dtype)-1 for a NULL p,
 * which is no dtype (tg_dtype_size 0, tg_dtype_name "?"). */
TG_API tg_dtype tg_params_dtype(const tg_params *p);
/* Elements of all parameters together: the length of the flat buffers;
 * 0 for a NULL p. */
TG_API int64_t tg_params_numel(const tg_params *p);
/* The flat value buffer: numel elements of the store's dtype, the
 * parameters back to back in the order added. Moves on tg_params_add.
 * NULL for a NULL or empty p. */
TG_API void *tg_params_data(tg_params *p);
/* The flat gradient buffer, laid out like tg_params_data (NULL likewise). */
TG_API void *tg_params_grad(tg_params *p);
/* Sets every gradient to 0. Gradients accumulate across backward calls
 * until this is called (once per optimizer step, or per accumulation).
 * Nothing for a NULL p. */
TG_API void tg_params_zero_grad(tg_params *p);

#ifdef __cplusplus
}
#endif

#endif
