/* tiny_gpt train's flags: every setting of the library's run table
 * (train/run.h: its default, range, help and role), then the command
 * line's own. */
#include "train.h"

#include <string.h>

#include "tiny_gpt.h"

int train_specs(train_opts *o, arg_spec *specs)
{
    *o = (train_opts){.out = "out-tiny-gpt"};
    tg_run_config_init(&o->c);
    int n_settings;
    const tg_run_setting *t = tg_run_settings(&n_settings);
    int n = 0;
    for (int k = 0; k < n_settings && n < TRAIN_MAX_SPECS; k++)
        specs[n++] = (arg_spec){.name = t[k].name, .kind = ARG_SETTING, .dest = &o->c};
    const arg_spec own[] = {
        SPEC_THREADS(&o->threads),
        {"out", ARG_STRING, &o->out, 0, 0, "output directory", 0, ROLE_NONE},
        {"resume", ARG_SWITCH, &o->resume, 0, 0, "continue the run in OUT (every setting from OUT/last.safetensors)", 0,
         ROLE_NONE},
        {"force", ARG_SWITCH, &o->force, 0, 0, "start a new run in OUT even if it holds one (replacing its files)", 0,
         ROLE_NONE},
        {"init", ARG_STRING, &o->init, 0, 0, "start from these weights (nanoGPT names; e.g. from PyTorch)", 0,
         ROLE_NONE},
        {"stop-at", ARG_I64, &o->stop_at, 0, 1e12, "stop at this step as if interrupted (0: never)", 0, ROLE_NONE},
        SPEC_CONFIG(&o->config),
    };
    for (size_t i = 0; i < sizeof own / sizeof *own && n < TRAIN_MAX_SPECS; i++) specs[n++] = own[i];
    return n;
}
