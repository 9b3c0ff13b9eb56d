/* tiny_gpt: train, sample, eval, step, attn and tokenizer subcommands (one file each). */
#ifndef TINY_GPT_H
#define TINY_GPT_H

#include <stdbool.h>

#include "../../tapegrad.h"
#include "args.h"

int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_step(int argc, char **argv);
int cmd_attn(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv); /* tokenizer.c: train | encode | decode | info */
int cmd_export(int argc, char **argv); /* export.c: a Llama as llama2.c's files */
int cmd_import(int argc, char **argv); /* export.c: llama2.c's model.bin as a checkpoint */

/* Shared helpers (main.c). */
void set_threads(int n); /* tapegrad + BLAS threads; n <= 0: the cores / this machine's ranks */
int parse_dtype(const char *s, tg_dtype *dt, char *err, size_t errlen);
/* --attn: "fused" (tg_attention, the default) or "composed" (the teaching
 * path, which can return the attention weights) */
int parse_attn(const char *s, bool *composed, char *err, size_t errlen);
/* --optimizer: "adamw" (every tensor) or "muon" (Muon for the blocks'
 * 2-D matrices, tg_muon_takes; AdamW for the rest) */
int parse_optimizer(const char *s, bool *muon, char *err, size_t errlen);
double now_seconds(void);
/* Every process of the job calls it after the same stage with whether it
 * failed and its message: 0 when none did; else rank 0 prints "tiny_gpt
 * cmd: message" (all failed, or one process) or "tiny_gpt cmd: rank R:
 * message" (R the first that did), and it returns -1 on every process. */
int agree_on(const char *cmd, bool failed, const char *err);
/* An evaluation's progress on stderr, for a terminal: "step N: estimating
 * the val loss, batch K of M", rewritten in place at most 10 times a
 * second (the first batch always). */
void eval_progress(int64_t step, bool val, int64_t done, int64_t iters);
/* The start every command shares: --help prints usage on stdout (returns 0); flags,
 * --dtype and --attn (unless NULL) are parsed, and the run settings given
 * (ARG_SETTING) set into their config, --dtype and --attn first (an error
 * prints and returns 2, once for all ranks of an mpirun job: agree_on);
 * tapegrad and BLAS get *threads threads. Returns -1 when the command
 * should go on. */
int command_setup(const char *cmd, const char *usage, arg_spec *specs, int n_specs, int argc, char **argv,
                  const char *const *dtype, tg_dtype *dt, const char *const *attn, bool *attn_composed,
                  const int *threads);

/* The flags every command shares, one definition each (arg_spec rows). */
#define SPEC_DTYPE(p)                                                                                                  \
    {                                                                                                                  \
        "dtype", ARG_STRING, (p), 0, 0, "f32 or f64", 0, ROLE_NONE                                                     \
    }
#define SPEC_ATTN(p)                                                                                                   \
    {                                                                                                                  \
        "attn", ARG_STRING, (p), 0, 0, "attention: fused (one op, no (T,T) tensors) or composed (the teaching path)",  \
            0, ROLE_NONE                                                                                               \
    }
#define SPEC_THREADS(p)                                                                                                \
    {                                                                                                                  \
        "threads", ARG_INT, (p), 0, 1024, "threads for tapegrad and BLAS, per process (0: the cores / its processes)", \
            0, ROLE_NONE                                                                                               \
    }
#define SPEC_OPTIMIZER_HELP "adamw, or muon: Muon for the blocks' 2-D matrices, AdamW (--lr, --beta1, ...) for the rest"
#define SPEC_MUON_MOMENTUM_HELP "Muon's momentum (with --optimizer muon)"
#define SPEC_CONFIG(p)                                                                                                 \
    {                                                                                                                  \
        "config", ARG_STRING, (p), 0, 0, "read flags from FILE ('name = value' lines; flags given here win)", 0,       \
            ROLE_NONE                                                                                                  \
    }

#endif
