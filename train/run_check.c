/* A run's settings checked once they are fixed (train/run_internal.h):
 * what goes with what, the model's shape against the weights it starts
 * from, and a time budget's plan as a checkpoint records it. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run_internal.h"

static bool given(const tg_run *r, const char *name) { return tg_run_given(&r->c, &r->base, name); }

/* The setting's name in a message, one of four kept at a time. */
static const char *L(const tg_run *r, const char *name)
{
    static char buf[4][80];
    static int next;
    next = (next + 1) % 4;
    return tg_run_label(&r->say, name, buf[next]);
}

/* Every setting holds a value its text could give (a field set directly
 * may not): a number in its range (or its default, 0 where that means
 * "not given"), one of a word setting's words, a family's name. */
static int check_values(const tg_run *r, tg_error *err)
{
    int n;
    const tg_run_setting *t = tg_run_settings(&n);
    tg_run_config d;
    tg_run_config_init(&d);
    for (int k = 0; k < n; k++) {
        char buf[64];
        const void *v = tg_run_field(&r->c, &t[k]);
        double x = NAN;
        if (t[k].kind == TG_SETTING_INT) x = *(const int *)v;
        else if (t[k].kind == TG_SETTING_I64) x = (double)*(const int64_t *)v;
        else if (t[k].kind == TG_SETTING_DOUBLE) x = *(const double *)v;
        const bool number =
            t[k].kind == TG_SETTING_INT || t[k].kind == TG_SETTING_I64 || t[k].kind == TG_SETTING_DOUBLE;
        if (number && !(x >= t[k].min && x <= t[k].max) && !tg_run_setting_equal(&t[k], v, tg_run_field(&d, &t[k]))) {
            tg_run_setting_format(&t[k], v, buf, sizeof buf);
            return tg_error_set(err, "%s: %s is outside [%g, %g]", L(r, t[k].name), buf, t[k].min, t[k].max);
        }
        if (t[k].kind == TG_SETTING_WORD && tg_run_setting_format(&t[k], v, buf, sizeof buf) == 0 &&
            (buf[0] == '-' || buf[0] >= '0') && buf[0] <= '9')
            return tg_error_set(err, "%s: %s is not one of %s", L(r, t[k].name), buf, t[k].words);
    }
    if (!r->c.arch) return tg_error_set(err, "%s: none given (a family: %s)", L(r, "arch"), tg_model_family_names());
    if (r->c.dtype != TG_F32 && r->c.dtype != TG_F64) /* (f32|f64: the first two dtypes) */
        return tg_error_set(err, "%s: %d is not f32 or f64", L(r, "dtype"), (int)r->c.dtype);
    return 0;
}

/* The model's settings that go with one family, one MLP or each other. */
static int check_model(const tg_run *r, tg_error *err)
{
    const tg_run_config *c = &r->c;
    const bool llama = !strcmp(c->arch, "llama");
    char mlp[16];
    tg_run_config_get(c, "mlp", mlp, sizeof mlp);
    if (!tg_model_family_find(c->arch))
        return tg_error_set(err, "%s: '%s' is not one of %s", L(r, "arch"), c->arch, tg_model_family_names());
    if (llama && !r->from && given(r, "gelu") && c->mlp != TG_FFN_GELU)
        return tg_error_set(err, "%s is a setting of %s gpt or %s gelu (the Llama's MLP is SwiGLU)", L(r, "gelu"),
                            L(r, "arch"), L(r, "mlp"));
    if (!llama && !r->from && given(r, "gelu") && c->mlp != TG_FFN_GELU && c->mlp != TG_FFN_DEFAULT)
        return tg_error_set(err, "%s is a setting of %s gelu (this run's MLP is %s)", L(r, "gelu"), L(r, "mlp"), mlp);
    if (llama && given(r, "tied") && given(r, "untie-head") && c->tied == c->untie_head)
        return tg_error_set(err, "%s %s contradicts %s %s (%s is %s false)", L(r, "tied"), c->tied ? "true" : "false",
                            L(r, "untie-head"), c->untie_head ? "true" : "false", L(r, "untie-head"), L(r, "tied"));
    if (c->logit_softcap && !(c->logit_softcap >= 1e-3))
        return tg_error_set(err, "%s %g: give 0 (none) or a cap of at least 0.001", L(r, "logit-softcap"),
                            c->logit_softcap);
    static const char *const llama_only[] = {"n-kv-head", "hidden-dim", "multiple-of", "rope-theta",
                                             "rope",      "norm-eps",   "tied"};
    for (size_t i = 0; !llama && !r->from && i < sizeof llama_only / sizeof *llama_only; i++)
        if (given(r, llama_only[i]))
            return tg_error_set(err, "%s is a setting of %s llama (this run is a %s)", L(r, llama_only[i]),
                                L(r, "arch"), c->arch);
    if (llama && c->bias) return tg_error_set(err, "%s true: the Llama has no biases", L(r, "bias"));
    if (llama && c->n_kv_head && c->n_head % c->n_kv_head)
        return tg_error_set(err, "%s %d must divide %s %d", L(r, "n-kv-head"), c->n_kv_head, L(r, "n-head"), c->n_head);
    return 0;
}

/* A resumed time-budget run's record of its plan, checked before it is
 * carried on: train.budget_steps, the steps the budget held (an integer
 * in [1, 1e12], steps' range), are the run's train.steps until a resume
 * gives it other steps; that resume records the step it did so at as
 * train.budget_left_at (at most the budget's steps and the steps done
 * then), kept from then on (r->budget_left_at, -1 while the run keeps
 * the budget's steps). */
static int budget_record(tg_run *r, tg_error *err)
{
    const tg_st_file *f = r->from;
    const char *path = r->path[TG_RUN_LAST];
    if (!tg_st_meta(f, "train.budget_steps"))
        return tg_error_set(err, "the run in %s stopped before %s had chosen its steps: start it again with %s", r->dir,
                            L(r, "time-budget"), r->say.flags ? "--force" : "force");
    int64_t n, steps, step;
    tg_error e = {0};
    if (tg_st_meta_int(f, "train.budget_steps", 1, (int64_t)1e12, &n, &e) ||
        tg_st_meta_int(f, "train.steps", 1, INT64_MAX, &steps, &e) ||
        tg_st_meta_int(f, "train.step", 0, INT64_MAX, &step, &e))
        return tg_error_set(err, "%s: %s", path, e.msg);
    if (tg_st_meta(f, "train.budget_left_at")) {
        if (tg_st_meta_int(f, "train.budget_left_at", 0, n < step ? n : step, &r->budget_left_at, &e))
            return tg_error_set(err,
                                "%s: %s (the step a resume gave the run other steps than the budget's, at most "
                                "both)",
                                path, e.msg);
        return 0;
    }
    if (steps != n)
        return tg_error_set(err,
                            "%s: checkpoint metadata 'train.budget_steps' = '%lld' is not the run's "
                            "'train.steps' %lld, and no resume gave the run other steps (that would have recorded "
                            "'train.budget_left_at')",
                            path, (long long)n, (long long)steps);
    if (r->c.steps != n) r->budget_left_at = step; /* this resume gives it other steps */
    return 0;
}

/* A time budget: a new run chooses its steps once timed (r->plan); a
 * resumed one has them in its checkpoint (train.budget_steps, in
 * train.steps) and keeps them unless given other steps. steps given is a
 * cap; the schedule ends where the steps do. */
static int budget_settings(tg_run *r, tg_error *err)
{
    if (!(r->c.time_budget > 0)) return 0;
    if (r->resumed) return budget_record(r, err);
    if (given(r, "decay-steps"))
        return tg_error_set(err, "%s goes without %s: the schedule ends at the steps the budget holds",
                            L(r, "decay-steps"), L(r, "time-budget"));
    if (!given(r, "steps")) r->c.steps = (int64_t)1e12; /* no cap */
    r->c.decay_steps = 0;
    r->plan = true;
    return 0;
}

int tg_run_check(tg_run *r, tg_error *err)
{
    tg_run_config *c = &r->c;
    if (check_values(r, err)) return -1;
    if (c->optimizer != TG_RUN_MUON)
        for (int i = 0; i < 2; i++)
            if (given(r, i ? "muon-momentum" : "muon-lr"))
                return tg_error_set(err, "%s is a setting of %s muon (this run's optimizer is adamw)",
                                    L(r, i ? "muon-momentum" : "muon-lr"), L(r, "optimizer"));
    if (check_model(r, err)) return -1;
    const bool tokens = c->data_tokens != NULL;
    if (c->data && given(r, "data") && tokens)
        return tg_error_set(err, "%s (a text) excludes %s (token files)%s", L(r, "data"), L(r, "data-tokens"),
                            given(r, "data-tokens") ? "" : ": this run trains on token files");
    if (!tokens && ((c->val_tokens && given(r, "val-tokens")) || given(r, "vocab-size")))
        return tg_error_set(err, "%s goes with %s", L(r, c->val_tokens ? "val-tokens" : "vocab-size"),
                            L(r, "data-tokens"));
    if (r->resumed && tokens && given(r, "data-tokens") && !tg_st_meta(r->from, "train.data_tokens"))
        return tg_error_set(err, "%s %s: the run in %s trains on a text, not on token files", L(r, "data-tokens"),
                            c->data_tokens, r->dir);
    if (given(r, "decay-frac") && c->schedule != TG_LR_WSD)
        return tg_error_set(err, "%s is a setting of %s wsd (this run's schedule is cosine)", L(r, "decay-frac"),
                            L(r, "schedule"));
    if (budget_settings(r, err)) return -1;
    if (!c->decay_steps) c->decay_steps = c->steps; /* recorded so: a longer resume keeps the run's cosine */
    if (c->warmup >= c->steps && !r->plan)
        tg_run_notify(&r->say, TG_RUN_WARNING,
                      "%s %lld is not shorter than %s %lld: the learning rate never reaches "
                      "%s %g, and never decays",
                      L(r, "warmup"), (long long)c->warmup, L(r, "steps"), (long long)c->steps, L(r, "lr"), c->lr);
    return 0;
}

int tg_run_check_against_weights(tg_run *r, const tg_model_config *mc, tg_error *err)
{
    const tg_run_config *c = &r->c;
    const bool llama = !strcmp(mc->arch, "llama");
    const tg_ffn_kind fam = llama ? TG_FFN_SWIGLU : TG_FFN_GELU, want = c->mlp;
    const tg_ffn_kind have = mc->mlp == TG_FFN_DEFAULT ? fam : mc->mlp;
    const char *from = r->resumed ? r->path[TG_RUN_LAST] : r->init;
    char mlp[16];
    tg_run_config_get(c, "mlp", mlp, sizeof mlp);
    if (given(r, "mlp") && (want == TG_FFN_DEFAULT ? fam : want) != have)
        return tg_error_set(err, "%s %s differs from %s's %s; the model's shape is fixed", L(r, "mlp"), mlp, from,
                            tg_ffn_kind_name(have));
    const struct {
        const char *name;
        bool want, have;
    } sw[] = {{"qk-norm", c->qk_norm, mc->qk_norm},
              {"zero-init-proj", c->zero_init_proj, mc->zero_init_proj},
              {"untie-head", c->untie_head, !mc->tied}};
    for (int i = 0; i < 3; i++)
        if (given(r, sw[i].name) && sw[i].want != sw[i].have)
            return tg_error_set(err, "%s is %s but %s's model was made %s it; the model's shape is fixed",
                                L(r, sw[i].name), sw[i].want ? "on" : "off", from, sw[i].have ? "with" : "without");
    if (given(r, "logit-softcap") && c->logit_softcap != mc->logit_softcap)
        return tg_error_set(err, "%s %g differs from %s's %g; the model's shape is fixed", L(r, "logit-softcap"),
                            c->logit_softcap, from, mc->logit_softcap);
    return 0;
}
