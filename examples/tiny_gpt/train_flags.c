/* tiny_gpt train's flags: each with its default, range, help line and
 * role (args.h: what a resumed run must keep, what it may change). */
#include "train.h"

#include <string.h>

#include "tiny_gpt.h"

int train_specs(train_opts *o, arg_spec *specs)
{
    *o = (train_opts){.out = "out-tiny-gpt", .dtype = "f32", .attn = "fused", .arch = "gpt", .rope = "interleaved", .gelu = "erf", .mlp = "default",
                      .multiple_of = 32, .rope_theta = 10000, .norm_eps = 1e-5, .tied = true, .n_layer = 4, .n_head = 4,
                      .n_embd = 128, .block_size = 64, .batch_size = 12, .grad_accum = 1, .steps = 2000,
                      .warmup = 100, .eval_interval = 250, .eval_iters = 200, .log_interval = 10, .lr = 1e-3,
                      .min_lr = 1e-4, .weight_decay = 0.1, .beta1 = 0.9, .beta2 = 0.99, .grad_clip = 1.0,
                      .seed = 1337, .corpus_chars = 300000, .bucket_mb = 1, .optimizer = "adamw",
                      .muon_lr = TG_MUON_LR, .muon_momentum = 0.95,
                      .schedule = "cosine", .decay_frac = 0.2, .sampling = "random"};
    const arg_spec s[] = {
        {"data", ARG_STRING, &o->data, 0, 0, "text file to train on (default: the built-in corpus)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &o->tokenizer, 0, 0, "encode with this tokenizer (tokenizer file, checkpoint holding "
         "one, or .tiktoken) instead of bytes, or bpe:V to train a V-piece BPE tokenizer on the train split (the first "
         "90% of the text; bpe:V:spaces lets pieces join words and punctuation, as tapegrad 0.2 trained); kept in "
         "every checkpoint", 0, ROLE_NONE},
        {"data-tokens", ARG_STRING, &o->data_tokens, 0, 0, "train on this token file (nanoGPT's raw uint16 or llm.c's "
         ".bin) instead of a text", 0, ROLE_NONE},
        {"val-tokens", ARG_STRING, &o->val_tokens, 0, 0, "the val split's token file (default: the last 10% of "
         "--data-tokens)", 0, ROLE_NONE},
        {"vocab-size", ARG_INT, &o->vocab_size, 1, 1 << 24, "with --data-tokens: the model's ids, every id below it "
         "(>= a --tokenizer's; e.g. 50304 for GPT-2's 50257)", 0, ROLE_MODEL},
        {"arch", ARG_STRING, &o->arch, 0, 0, "the model: gpt (nanoGPT's GPT-2) or llama (llama2.c's Llama)", 0,
         ROLE_MODEL},
        {"n-layer", ARG_INT, &o->n_layer, 1, 256, "transformer blocks", 0, ROLE_MODEL},
        {"n-head", ARG_INT, &o->n_head, 1, 1024, "attention heads", 0, ROLE_MODEL},
        {"n-embd", ARG_INT, &o->n_embd, 1, 65536, "embedding width (divisible by --n-head)", 0, ROLE_MODEL},
        {"block-size", ARG_INT, &o->block_size, 1, 1 << 16, "context length", 0, ROLE_MODEL},
        {"bias", ARG_BOOL, &o->bias, 0, 0, "biases in Linear and LayerNorm (gpt)", 0, ROLE_MODEL},
        {"gelu", ARG_STRING, &o->gelu, 0, 0, "the MLP's GELU: erf (exact, nanoGPT) or tanh (GPT-2's approximation, "
         "llama.cpp's gpt2) (gpt)", 0, ROLE_MODEL},
        {"n-kv-head", ARG_INT, &o->n_kv_head, 0, 1024, "key/value heads, dividing --n-head (llama; 0: --n-head)", 0,
         ROLE_MODEL},
        {"hidden-dim", ARG_INT, &o->hidden_dim, 0, 1 << 24, "feed-forward width (llama; 0: from --multiple-of)", 0,
         ROLE_MODEL},
        {"multiple-of", ARG_INT, &o->multiple_of, 1, 1 << 16,
         "llama's default width: multiple_of * ceil(int(8 C / 3) / multiple_of)", 0, ROLE_NONE},
        {"rope-theta", ARG_DOUBLE, &o->rope_theta, 1.0000001, 1e12, "RoPE base (llama)", 0, ROLE_MODEL},
        {"rope", ARG_STRING, &o->rope, 0, 0, "RoPE pairs: interleaved (Meta, llama2.c) or halves (Hugging Face) (llama)",
         0, ROLE_MODEL},
        {"norm-eps", ARG_DOUBLE, &o->norm_eps, 1e-30, 1, "RMSNorm eps (llama)", 0, ROLE_MODEL},
        {"tied", ARG_BOOL, &o->tied, 0, 0, "output head tied to the token embedding (llama; false is --untie-head)",
         0, ROLE_MODEL},
        {"mlp", ARG_STRING, &o->mlp, 0, 0, "the feed-forward: gelu (GPT's, 4C wide), relu2 (ReLU squared, "
         "modded-nanogpt; 4C) or swiglu (Llama's; a gpt's 8C/3 rounded up to 32, a llama's --hidden-dim) "
         "(default: the family's)", 0, ROLE_MODEL},
        {"qk-norm", ARG_SWITCH, &o->qk_norm, 0, 0, "RMSNorm (no weight) of each head's q and k before RoPE and "
         "the scores", 0, ROLE_MODEL},
        {"zero-init-proj", ARG_SWITCH, &o->zero_init_proj, 0, 0, "the attention's and the MLP's output "
         "projections start at zero", 0, ROLE_MODEL},
        {"untie-head", ARG_SWITCH, &o->untie_head, 0, 0, "an output head of its own instead of the token "
         "embedding (a llama's --tied false)", 0, ROLE_MODEL},
        {"logit-softcap", ARG_DOUBLE, &o->logit_softcap, 0, 1e6, "logits = S tanh(logits / S) (0: none; "
         "modded-nanogpt uses 15 or 30)", 0, ROLE_MODEL},
        {"dropout", ARG_DOUBLE, &o->dropout, 0, 0.999, "dropout probability", 0, ROLE_RUN},
        {"batch-size", ARG_INT, &o->batch_size, 1, 1 << 16, "sequences per micro-batch", 0, ROLE_FREE},
        {"grad-accum", ARG_INT, &o->grad_accum, 1, 1 << 16,
         "micro-batches per optimizer step (the same losses as a batch that many times larger)", 0, ROLE_FREE},
        {"steps", ARG_I64, &o->steps, 1, 1e12, "optimizer steps (with --time-budget: at most this many)", 0, ROLE_FREE},
        {"time-budget", ARG_DOUBLE, &o->time_budget, 0, 1e9, "seconds for the whole run, tokenizer, evaluations and "
         "saves included: the steps are chosen to fit from timed ones (0: --steps)", 0, ROLE_RUN},
        {"decay-steps", ARG_I64, &o->decay_steps, 0, 1e12, "the step where the cosine reaches --min-lr, which stays "
         "after it (nanoGPT's lr_decay_iters; 0: --steps; a resume keeps the run's)", 0, ROLE_FREE},
        {"lr", ARG_DOUBLE, &o->lr, 0, 10, "peak learning rate", 0, ROLE_FREE},
        {"min-lr", ARG_DOUBLE, &o->min_lr, 0, 10, "final learning rate", 0, ROLE_FREE},
        {"warmup", ARG_I64, &o->warmup, 0, 1e12, "linear warmup steps", 0, ROLE_FREE},
        {"schedule", ARG_STRING, &o->schedule, 0, 0, "after the warmup: cosine (nanoGPT's) or wsd (warmup-stable-"
         "decay: --lr, then linear to --min-lr over the last --decay-frac)", 0, ROLE_FREE},
        {"decay-frac", ARG_DOUBLE, &o->decay_frac, 0, 1, "--schedule wsd: the fraction of --decay-steps the decay "
         "takes", 0, ROLE_FREE},
        {"sampling", ARG_STRING, &o->sampling, 0, 0, "the train windows: random (each start drawn anew, nanoGPT's) "
         "or epochs (each epoch the split cut into windows from a random phase, in a shuffled order: every token "
         "once an epoch)", 0, ROLE_RUN},
        {"weight-decay", ARG_DOUBLE, &o->weight_decay, 0, 10, "AdamW decay of 2-D+ tensors (and Muon's)", 0, ROLE_RUN},
        {"beta1", ARG_DOUBLE, &o->beta1, 0, 0.999999999, "AdamW beta1", 0, ROLE_RUN},
        {"beta2", ARG_DOUBLE, &o->beta2, 0, 0.999999999, "AdamW beta2", 0, ROLE_RUN},
        {"grad-clip", ARG_DOUBLE, &o->grad_clip, 0, 1e12, "clip the global gradient norm (0: off; before either "
         "optimizer)", 0, ROLE_RUN},
        {"optimizer", ARG_STRING, &o->optimizer, 0, 0, SPEC_OPTIMIZER_HELP, 0, ROLE_RUN},
        {"muon-lr", ARG_DOUBLE, &o->muon_lr, 0, 10, SPEC_MUON_LR_HELP, 0, ROLE_FREE},
        {"muon-momentum", ARG_DOUBLE, &o->muon_momentum, 0, 0.999999999, SPEC_MUON_MOMENTUM_HELP, 0, ROLE_RUN},
        {"ema", ARG_DOUBLE, &o->ema, 0, 0.999999999, "average the weights: after every step avg = D avg + (1 - D) "
         "weights; each evaluation is of both, best.safetensors keeps the lower (0: off; e.g. 0.995)", 0, ROLE_RUN},
        {"eval-interval", ARG_I64, &o->eval_interval, 1, 1e12, "steps between evaluations", 0, ROLE_FREE},
        {"eval-iters", ARG_I64, &o->eval_iters, 1, 1e9, "batches per loss estimate", 0, ROLE_FREE},
        {"full-val", ARG_SWITCH, &o->full_val, 0, 0, "the val loss over the whole val split, each token once in "
         "consecutive windows, not --eval-iters random batches (the train loss keeps them)", 0, ROLE_FREE},
        {"seed", ARG_I64, &o->seed, 0, 9e15, "random seed", 0, ROLE_RUN},
        {"corpus-chars", ARG_INT, &o->corpus_chars, 1000, 1 << 30, "size of the built-in corpus", 0, ROLE_RUN},
        {"dtype", ARG_STRING, &o->dtype, 0, 0, "f32 or f64", 0, ROLE_RUN},
        {"attn", ARG_STRING, &o->attn, 0, 0, "attention: fused (one op, no (T,T) tensors) or composed (the "
                                            "teaching path)", 0, ROLE_FREE},
        {"log-interval", ARG_I64, &o->log_interval, 1, 1e12, "steps between progress lines (when not a terminal)", 0,
         ROLE_FREE},
        {"log-digits", ARG_INT, &o->log_digits, 0, 17,
         "significant digits of the losses in metrics.csv (0: 6 decimals; 17 reads f64 back exactly)", 0, ROLE_FREE},
        {"zero", ARG_INT, &o->zero, 0, 1,
         "ZeRO stage: 1 shards AdamW's moments across the processes (1/R of the memory each; the same losses)", 0,
         ROLE_FREE},
        {"bucket-mb", ARG_DOUBLE, &o->bucket_mb, 0.001, 4096,
         "MiB of gradients per bucket summed across processes while backward runs", 0, ROLE_NONE},
        SPEC_THREADS(&o->threads),
        {"out", ARG_STRING, &o->out, 0, 0, "output directory", 0, ROLE_NONE},
        {"resume", ARG_SWITCH, &o->resume, 0, 0, "continue the run in OUT (every setting from OUT/last.safetensors)",
         0, ROLE_NONE},
        {"force", ARG_SWITCH, &o->force, 0, 0, "start a new run in OUT even if it holds one (replacing its files)", 0,
         ROLE_NONE},
        {"init", ARG_STRING, &o->init, 0, 0, "start from these weights (nanoGPT names; e.g. from PyTorch)", 0,
         ROLE_NONE},
        {"stop-at", ARG_I64, &o->stop_at, 0, 1e12, "stop at this step as if interrupted (0: never)", 0, ROLE_NONE},
        SPEC_CONFIG(&o->config),
    };
    const int n = (int)(sizeof s / sizeof s[0]);
    _Static_assert(sizeof s / sizeof s[0] <= TRAIN_MAX_SPECS, "TRAIN_MAX_SPECS too small");
    memcpy(specs, s, sizeof s);
    return n;
}
