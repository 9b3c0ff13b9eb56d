/* tapegrad nn (internal): what every module's init shares. */
#ifndef TG_NN_INTERNAL_H
#define TG_NN_INTERNAL_H

#include "nn.h"

/* Writes "<name>.<part>" into out (TG_NN_NAME_MAX + 1 bytes). 0, or -1
 * with "<who>: the name is N bytes, and '<name>.<part>' is over
 * TG_NN_NAME_MAX (255)" in err when it does not fit. */
int tg_nn_join(char *out, const char *name, const char *part, const char *who, char *err, size_t errlen);

#endif
