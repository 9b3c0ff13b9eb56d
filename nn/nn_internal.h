/* tapegrad nn (internal): what every module's init shares. */
#ifndef TG_NN_INTERNAL_H
#define TG_NN_INTERNAL_H

#include <string.h>

#include "nn.h"

/* Writes "<name>.<part>" into out (TG_NN_NAME_MAX + 1 bytes). 0, or -1
 * with "<who>: the name is N bytes, and '<name>.<part>' is over
 * TG_NN_NAME_MAX (255)" in err when it does not fit. */
int tg_nn_join(char *out, const char *name, const char *part, const char *who, tg_error *err);

/* Zero-fills a parameter (an init's zero_init_proj); nothing for NULL. */
static inline void tg_nn_zero(tg_tensor *t)
{
    if (t) memset(t->data, 0, (size_t)t->numel * tg_dtype_size(t->dtype));
}

#endif
