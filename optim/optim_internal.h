/* tapegrad optim (internal): reading a state tensor from a file, and what
 * train/checkpoint.c needs of Muon and of the weight averages to put
 * their state back after a refused load. */
#ifndef TG_OPTIM_INTERNAL_H
#define TG_OPTIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "optim.h"

/* Element i of a state tensor read from a file, f32 (else f64), widened
 * to double (the file's data may be unaligned). */
static inline double tg_state_at(const void *data, bool f32, int64_t i)
{
    if (f32) {
        float x;
        memcpy(&x, (const char *)data + i * (int64_t)sizeof x, sizeof x);
        return x;
    }
    double x;
    memcpy(&x, (const char *)data + i * (int64_t)sizeof x, sizeof x);
    return x;
}

/* Bytes of o's momentum (tg_muon_numel elements of the store's dtype); 0
 * for a NULL o. */
size_t tg_muon_state_bytes(const tg_muon *o);

/* Bytes of e's averages (tg_ema_numel elements of the store's dtype); 0
 * for a NULL e. */
size_t tg_ema_state_bytes(const tg_ema *e);

/* The store each was made on (NULL for NULL), so that a checkpoint can
 * check that the objects it is given belong to one model. */
const tg_params *tg_adamw_store(const tg_adamw *o);
const tg_params *tg_muon_store(const tg_muon *o);
const tg_params *tg_ema_store(const tg_ema *e);

#endif
