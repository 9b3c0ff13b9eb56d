/* tapegrad optim (internal): what train/checkpoint.c needs of a Muon to
 * put its state back after a refused load. */
#ifndef TG_MUON_INTERNAL_H
#define TG_MUON_INTERNAL_H

#include <stddef.h>

#include "optim.h"

/* Bytes of o's momentum (tg_muon_numel elements of the store's dtype); 0
 * for a NULL o. */
size_t tg_muon_state_bytes(const tg_muon *o);

#endif
