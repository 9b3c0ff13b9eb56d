/* tiny_gpt train's flags: the library's run settings (train/run.h's
 * table) and the command line's own. */
#ifndef TINY_GPT_TRAIN_H
#define TINY_GPT_TRAIN_H

#include "../../tapegrad.h"
#include "args.h"

typedef struct train_opts {
    tg_run_config c; /* the run's settings (ARG_SETTING flags) */
    const char *out, *init, *config;
    bool resume, force;
    int64_t stop_at; /* stop at this step as if interrupted (0: never) */
    int threads;
} train_opts;

#define TRAIN_MAX_SPECS 72

/* Fills o with the defaults (tg_run_config_init: nanoGPT's small CPU
 * recipe) and specs with train's flags: one per setting of the library's
 * table, then the command line's own; returns their number. */
int train_specs(train_opts *o, arg_spec *specs);

#endif
