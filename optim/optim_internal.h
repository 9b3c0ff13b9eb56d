/* tapegrad optim (internal): what train/checkpoint.c needs of Muon and of
 * the weight averages to put their state back after a refused load. */
#ifndef TG_OPTIM_INTERNAL_H
#define TG_OPTIM_INTERNAL_H

#include <stddef.h>

#include "optim.h"

/* Bytes of o's momentum (tg_muon_numel elements of the store's dtype); 0
 * for a NULL o. */
size_t tg_muon_state_bytes(const tg_muon *o);

/* Bytes of e's averages (tg_ema_numel elements of the store's dtype); 0
 * for a NULL e. */
size_t tg_ema_state_bytes(const tg_ema *e);

#endif
