/* tapegrad core (internal): what the parameter store (core/params.c)
 * offers the library's own model builders beyond core/params.h. */
#ifndef TG_PARAMS_INTERNAL_H
#define TG_PARAMS_INTERNAL_H

#include <stdint.h>

#include "params.h"

/* Makes room for numel elements in all (a model's count, known before its
 * tensors are added: tg_gpt_num_params), so that the buffers of a large
 * store are allocated once, zeroed by the kernel as their pages are first
 * used, and never copied as tensors are added. Advice only: nothing for a
 * store under 2 MiB, a smaller numel, or out of memory. */
void tg_params_reserve(tg_params *p, int64_t numel);

#endif
