/* tiny_gpt: train, sample, eval and step subcommands (one file each). */
#ifndef TINY_GPT_H
#define TINY_GPT_H

#include <stdbool.h>

#include "../../tapegrad.h"
#include "args.h"

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_step(int argc, char **argv);

/* Shared helpers (main.c). */
void set_threads(int n);                   /* OpenBLAS threads; n <= 0: all cores */
int parse_dtype(const char *s, tg_dtype *dt, char *err, size_t errlen);
double now_seconds(void);
bool help_requested(int argc, char **argv);

#endif
