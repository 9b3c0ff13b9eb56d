/* tapegrad core: the persistent parameter store.
 *
 * Parameters live for the whole run. Their values sit in one flat buffer
 * and their gradients in another, each parameter a named view into both,
 * so an optimizer step or a global gradient norm is one loop over
 * tg_params_data / tg_params_grad. All parameters of a store share one
 * float dtype. */
#ifndef TG_PARAMS_H
#define TG_PARAMS_H

#include "tensor.h"

typedef struct tg_params tg_params;

tg_params *tg_params_new(tg_dtype dt);   /* f32 or f64; NULL otherwise */
void tg_params_free(tg_params *p);       /* accepts NULL */

/* Adds a zero-filled parameter that requires grad. Its data and grad
 * point into the store's flat buffers (pointers stay valid until the next
 * tg_params_add). NULL, with tg_params_error set, on a duplicate or empty
 * name, a bad shape, or out of memory. */
tg_tensor *tg_params_add(tg_params *p, const char *name, int ndim, const int *shape);

tg_tensor *tg_params_get(const tg_params *p, const char *name);  /* or NULL */
int tg_params_count(const tg_params *p);
tg_tensor *tg_params_at(const tg_params *p, int i);  /* in order added */
tg_dtype tg_params_dtype(const tg_params *p);
int64_t tg_params_numel(const tg_params *p);          /* all parameters */
void *tg_params_data(tg_params *p);                   /* flat values */
void *tg_params_grad(tg_params *p);                   /* flat gradients */
void tg_params_zero_grad(tg_params *p);

const char *tg_params_error(const tg_params *p);      /* last error or NULL */

#endif
