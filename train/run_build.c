/* A run's objects, made from its checked settings (train/run_internal.h):
 * vocabulary, data, model, optimizers, the training state a resume
 * continues from, the batches, and the metadata every checkpoint
 * records. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

tg_model_config tg_run_model_config(const tg_run_config *c, int vocab_size)
{
    const bool llama = !strcmp(c->arch, "llama");
    tg_model_config m = {.arch = c->arch,
                         .n_layer = c->n_layer,
                         .n_head = c->n_head,
                         .n_embd = c->n_embd,
                         .block_size = c->block_size,
                         .vocab_size = vocab_size,
                         .bias = c->bias,
                         .n_kv_head = c->n_kv_head ? c->n_kv_head : c->n_head,
                         .hidden_dim = c->hidden_dim ? c->hidden_dim : tg_llama_hidden_dim(c->n_embd, c->multiple_of),
                         .rope_theta = c->rope_theta,
                         .norm_eps = c->norm_eps,
                         .rope_halves = c->rope_halves,
                         .tied = c->tied && !c->untie_head,
                         .dropout = c->dropout,
                         .gelu = c->gelu,
                         .mlp = c->mlp,
                         .qk_norm = c->qk_norm,
                         .zero_init_proj = c->zero_init_proj,
                         .untie_head = c->untie_head || (llama && !c->tied),
                         .logit_softcap = c->logit_softcap};
    /* a Llama with a feed-forward of one matrix each way is 4C wide unless hidden_dim says (the
     * parameters of llama2.c's SwiGLU width) */
    if (llama && !c->hidden_dim && m.mlp != TG_FFN_DEFAULT && m.mlp != TG_FFN_SWIGLU) m.hidden_dim = 4 * c->n_embd;
    return m;
}

void tg_run_set_schedule(tg_run *r)
{
    const tg_run_config *c = &r->c;
    r->sched = (tg_lr_schedule){.shape = c->schedule,
                                .warmup = c->warmup,
                                .decay_steps = c->decay_steps,
                                .lr = c->lr,
                                .min_lr = c->min_lr,
                                .decay_frac = c->decay_frac};
}

/* The model: the weights of r->from (a resume's, or the init weights), or new. */
static int model(tg_run *r, tg_error *err)
{
    if (!r->from) {
        const tg_model_config mc = tg_run_model_config(&r->c, r->v.size);
        return tg_model_init(&r->m, &mc, r->c.dtype, (uint64_t)r->c.seed, err);
    }
    if (tg_checkpoint_load_model(r->from, r->c.dtype, r->c.dropout, &r->m, err) ||
        tg_run_check_against_weights(r, &r->m.config, err))
        return -1;
    if (r->v.size > r->m.config.vocab_size || (r->v.kind == TG_VOCAB_BYTES && r->v.size != r->m.config.vocab_size))
        return tg_error_set(err, "the weights have vocab_size %d but the vocabulary has %d %s", r->m.config.vocab_size,
                            r->v.size, r->v.kind == TG_VOCAB_BYTES ? "characters" : "ids");
    return 0;
}

/* The optimizers for the range this process updates (everything, or
 * with zero 1 its shard), and the weights' averages. */
static int optimizers(tg_run *r, tg_error *err)
{
    const tg_run_config *c = &r->c;
    const tg_run_backend *b = r->b;
    if (!(r->sync = b->sync_new(b->ctx, r->m.params, (size_t)(c->bucket_mb * (1 << 20)), c->zero == 1, err))) return -1;
    int64_t lo, hi;
    b->sync_range(r->sync, &lo, &hi);
    const tg_adamw_config ac = {c->beta1, c->beta2, 1e-8, c->weight_decay};
    if (!(r->opt = tg_adamw_new_shard(r->m.params, &ac, lo, hi, err))) return -1;
    if (c->optimizer == TG_RUN_MUON) { /* Muon for the blocks' matrices (their decay AdamW's), AdamW the rest */
        const tg_muon_config mc = {c->muon_momentum, c->weight_decay};
        if (!(r->muon = tg_muon_new(r->m.params, &mc, err)) || tg_muon_exclude(r->muon, r->opt, err)) return -1;
    }
    /* the averages start as the weights (a new run's are set again once every process holds rank 0's);
     * a resume reads the run's */
    if (c->ema > 0 && !(r->ema = tg_ema_new(r->m.params, c->ema, err))) return -1;
    return 0;
}

/* The global batch (processes x batch_size x grad_accum) is what a
 * resumed run must keep; its split may change. Resumed on another number
 * of processes without a new split, batch_size follows. */
static int global_batch(tg_run *r, int64_t *global, tg_error *err)
{
    tg_run_config *c = &r->c;
    const int R = r->ranks;
    char procs[48] = "", bs[80], ga[80];
    tg_run_label(&r->say, "batch-size", bs);
    tg_run_label(&r->say, "grad-accum", ga);
    *global = (int64_t)R * c->batch_size * c->grad_accum;
    int64_t rec = *global;
    if (r->resumed && tg_st_meta(r->from, "train.global_batch") &&
        tg_st_meta_int(r->from, "train.global_batch", 1, INT64_MAX, &rec, err))
        return -1;
    const bool split_given = tg_run_given(c, &r->base, "batch-size") || tg_run_given(c, &r->base, "grad-accum");
    if (rec != *global && !split_given && rec % ((int64_t)R * c->grad_accum) == 0 &&
        rec / ((int64_t)R * c->grad_accum) <= 1 << 16) {
        c->batch_size = (int)(rec / ((int64_t)R * c->grad_accum));
        *global = rec;
        tg_run_notify(&r->say, TG_RUN_NOTICE, "%s %d on each of %d processes keeps the run's %lld sequences per step",
                      bs, c->batch_size, R, (long long)rec);
    }
    if (rec == *global) return 0;
    if (R > 1) snprintf(procs, sizeof procs, "%d processes x ", R);
    return tg_error_set(err,
                        "%s%s %d x %s %d = %lld sequences per step differs from the run's %lld; a resumed run "
                        "keeps its batch (it may split it differently)",
                        procs, bs, c->batch_size, ga, c->grad_accum, (long long)*global, (long long)rec);
}

/* What every checkpoint records of the run besides its state. */
static int metadata(tg_run *r, int64_t global, tg_error *err)
{
    char gb[32], nr[16], left[32];
    snprintf(gb, sizeof gb, "%lld", (long long)global);
    snprintf(nr, sizeof nr, "%d", r->ranks);
    snprintf(left, sizeof left, "%lld", (long long)r->budget_left_at);
    const char *chosen = r->resumed ? tg_st_meta(r->from, "train.budget_steps") : NULL;
    if (tg_run_config_record(&r->c, &r->meta) || (!r->tokens && tg_run_text_record(&r->text, &r->meta)) ||
        tg_run_kv_add(&r->meta, "train.global_batch", gb) || tg_run_kv_add(&r->meta, "train.ranks", nr) ||
        (chosen && tg_run_kv_add(&r->meta, "train.budget_steps", chosen)) ||
        (chosen && r->budget_left_at >= 0 && tg_run_kv_add(&r->meta, "train.budget_left_at", left)))
        return tg_error_set(err, "out of memory");
    return 0;
}

int tg_run_build(tg_run *r, tg_error *err)
{
    tg_run_config *c = &r->c;
    if (tg_run_vocab(&r->v, c, r->tokens, r->from, r->dir, &r->text, &r->say, err)) return -1;
    /* token files are checked whole (size, header, every id below the model's vocabulary) before
     * anything of the model's size exists: a bad file is refused at once, not after gigabytes */
    if (r->tokens) {
        tg_model_config rc;
        int V = r->v.size;
        if (r->from && !tg_model_config_read(r->from, &rc, NULL)) V = rc.vocab_size;
        if (tg_run_tokens_read(&r->d, &r->v, V, c, r->resumed ? r->from : NULL, true, &r->meta, &r->say, err))
            return -1;
    }
    if (model(r, err)) return -1;
    tg_model_set_composed(&r->m, c->attn_composed);
    if (optimizers(r, err)) return -1;
    tg_train_state_init(&r->ts, (uint64_t)c->seed);
    if (r->resumed) {
        if (tg_checkpoint_load_train(r->from, r->opt, r->muon, r->ema, &r->ts, INT64_MAX, err))
            return tg_error_prefix(err, r->path[TG_RUN_LAST]);
        if (r->ts.step >= c->steps) {
            char steps[80];
            tg_run_label(&r->say, "steps", steps);
            const bool f = r->say.flags;
            return tg_error_set(err, "the run in %s %s at step %lld; give %s%s above %lld to train it longer", r->dir,
                                r->ts.step == c->steps ? "finished"
                                    : f                ? "is already past --steps"
                                                       : "is already past "
                                                         "its steps",
                                (long long)r->ts.step, f ? "a " : "", steps, (long long)r->ts.step);
        }
    }
    if (!r->tokens && tg_dataset_from_text(&r->d, &r->v, r->text.text, r->text.len, c->block_size, err)) return -1;
    int64_t global;
    if (global_batch(r, &global, err) || metadata(r, global, err)) return -1;
    tg_run_set_schedule(r);
    r->g = tg_graph_new();
    r->x = malloc((size_t)c->batch_size * c->block_size * sizeof *r->x);
    r->y = malloc((size_t)c->batch_size * c->block_size * sizeof *r->y);
    if (!r->g || !r->x || !r->y) return tg_error_set(err, "out of memory");
    *tg_graph_rng(r->g) = r->ts.drop_rng;
    return 0;
}
