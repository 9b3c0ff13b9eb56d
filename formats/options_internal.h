/* tapegrad formats (internal): which of a model config's architecture
 * options (the feed-forward kind, QK norm, a logit softcap, ...) an export
 * target cannot express, so that an export refuses such a model by name
 * rather than write a file that computes something else. */
#ifndef TG_FORMATS_OPTIONS_INTERNAL_H
#define TG_FORMATS_OPTIONS_INTERNAL_H

#include <stdio.h>
#include <string.h>

#include "../nn/nn.h"

/* 0 when the target computes c's model; else -1 with "<who>: this model
 * has <option>, which <target> cannot express (...)" in err. untied_gpt:
 * the target has a GPT with a head of its own. zero_init_proj is only how
 * the weights started, so every target takes it. */
static inline int tg_fmt_check_options(const tg_model_config *c, const char *who, const char *target, bool untied_gpt,
                                       tg_error *err)
{
    const bool llama = !strcmp(c->arch, "llama");
    char opt[64] = "";
    if (c->mlp != TG_FFN_DEFAULT && c->mlp != (llama ? TG_FFN_SWIGLU : TG_FFN_GELU))
        snprintf(opt, sizeof opt, "--mlp %s", tg_ffn_kind_name(c->mlp) ? tg_ffn_kind_name(c->mlp) : "?");
    else if (c->qk_norm) snprintf(opt, sizeof opt, "--qk-norm");
    else if (c->logit_softcap > 0) snprintf(opt, sizeof opt, "--logit-softcap %g", c->logit_softcap);
    else if (!llama && !c->tied && !untied_gpt) snprintf(opt, sizeof opt, "--untie-head");
    if (!opt[0]) return 0;
    tg_error_set(err, "%s: this model has %s, which %s cannot express (the file would compute another model)", who, opt,
                 target);
    return -1;
}

#endif
