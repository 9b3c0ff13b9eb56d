/* The settings of a run (train/run.h): the table, each value to and from
 * text, and the config's defaults and strings. */
#include "run_settings.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

#define F(field) offsetof(tg_run_config, field), sizeof(((tg_run_config *)0)->field)
#define S_NONE TG_SETTING_NONE
#define S_MODEL TG_SETTING_MODEL
#define S_RUN TG_SETTING_RUN
#define S_FREE TG_SETTING_FREE
#define INT TG_SETTING_INT
#define I64 TG_SETTING_I64
#define DBL TG_SETTING_DOUBLE
#define STR TG_SETTING_STRING
#define BOOL TG_SETTING_BOOL
#define SWITCH TG_SETTING_SWITCH
#define WORD TG_SETTING_WORD

/* one setting a row, as the help lists them */
// clang-format off
static const tg_run_setting SETTINGS[] = {
    {"data", STR, S_NONE, F(data), 0, 0, NULL, "text file to train on (default: the built-in corpus)"},
    {"tokenizer", STR, S_NONE, F(tokenizer), 0, 0, NULL, "encode with this tokenizer (tokenizer file, checkpoint "
     "holding one, or .tiktoken) instead of bytes, or bpe:V to train a V-piece BPE tokenizer on the train split (the "
     "first 90% of the text; bpe:V:spaces lets pieces join words and punctuation, as tapegrad 0.2 trained); kept in "
     "every checkpoint"},
    {"data-tokens", STR, S_NONE, F(data_tokens), 0, 0, NULL, "train on this token file (nanoGPT's raw uint16 or "
     "llm.c's .bin) instead of a text"},
    {"val-tokens", STR, S_NONE, F(val_tokens), 0, 0, NULL, "the val split's token file (default: the last 10% of "
     "--data-tokens)"},
    {"vocab-size", INT, S_MODEL, F(vocab_size), 1, 1 << 24, NULL, "with --data-tokens: the model's ids, every id "
     "below it (>= a --tokenizer's; e.g. 50304 for GPT-2's 50257)"},
    {"arch", STR, S_MODEL, F(arch), 0, 0, NULL, "the model: gpt (nanoGPT's GPT-2) or llama (llama2.c's Llama)"},
    {"n-layer", INT, S_MODEL, F(n_layer), 1, 256, NULL, "transformer blocks"},
    {"n-head", INT, S_MODEL, F(n_head), 1, 1024, NULL, "attention heads"},
    {"n-embd", INT, S_MODEL, F(n_embd), 1, 65536, NULL, "embedding width (divisible by --n-head)"},
    {"block-size", INT, S_MODEL, F(block_size), 1, 1 << 16, NULL, "context length"},
    {"bias", BOOL, S_MODEL, F(bias), 0, 0, NULL, "biases in Linear and LayerNorm (gpt)"},
    {"gelu", WORD, S_MODEL, F(gelu), 0, 0, "erf|tanh", "the MLP's GELU: erf (exact, nanoGPT) or tanh (GPT-2's "
     "approximation, llama.cpp's gpt2) (gpt)"},
    {"n-kv-head", INT, S_MODEL, F(n_kv_head), 0, 1024, NULL, "key/value heads, dividing --n-head (llama; 0: "
     "--n-head)"},
    {"hidden-dim", INT, S_MODEL, F(hidden_dim), 0, 1 << 24, NULL, "feed-forward width (llama; 0: from "
     "--multiple-of)"},
    {"multiple-of", INT, S_NONE, F(multiple_of), 1, 1 << 16, NULL, "llama's default width: multiple_of * "
     "ceil(int(8 C / 3) / multiple_of)"},
    {"rope-theta", DBL, S_MODEL, F(rope_theta), 1.0000001, 1e12, NULL, "RoPE base (llama)"},
    {"rope", WORD, S_MODEL, F(rope_halves), 0, 0, "interleaved|halves", "RoPE pairs: interleaved (Meta, llama2.c) "
     "or halves (Hugging Face) (llama)"},
    {"norm-eps", DBL, S_MODEL, F(norm_eps), 1e-30, 1, NULL, "RMSNorm eps (llama)"},
    {"tied", BOOL, S_MODEL, F(tied), 0, 0, NULL, "output head tied to the token embedding (llama; false is "
     "--untie-head)"},
    {"mlp", WORD, S_MODEL, F(mlp), 0, 0, "default|gelu|relu2|swiglu", "the feed-forward: gelu (GPT's, 4C wide), "
     "relu2 (ReLU squared, modded-nanogpt; 4C) or swiglu (Llama's; a gpt's 8C/3 rounded up to 32, a llama's "
     "--hidden-dim) (default: the family's)"},
    {"qk-norm", SWITCH, S_MODEL, F(qk_norm), 0, 0, NULL, "RMSNorm (no weight) of each head's q and k before RoPE "
     "and the scores"},
    {"zero-init-proj", SWITCH, S_MODEL, F(zero_init_proj), 0, 0, NULL, "the attention's and the MLP's output "
     "projections start at zero"},
    {"untie-head", SWITCH, S_MODEL, F(untie_head), 0, 0, NULL, "an output head of its own instead of the token "
     "embedding (a llama's --tied false)"},
    {"logit-softcap", DBL, S_MODEL, F(logit_softcap), 0, 1e6, NULL, "logits = S tanh(logits / S) (0: none; "
     "modded-nanogpt uses 15 or 30)"},
    {"dropout", DBL, S_RUN, F(dropout), 0, 0.999, NULL, "dropout probability"},
    {"batch-size", INT, S_FREE, F(batch_size), 1, 1 << 16, NULL, "sequences per micro-batch"},
    {"grad-accum", INT, S_FREE, F(grad_accum), 1, 1 << 16, NULL, "micro-batches per optimizer step (the same "
     "losses as a batch that many times larger)"},
    {"steps", I64, S_FREE, F(steps), 1, 1e12, NULL, "optimizer steps (with --time-budget: at most this many)"},
    {"time-budget", DBL, S_RUN, F(time_budget), 0, 1e9, NULL, "seconds for the whole run, tokenizer, evaluations "
     "and saves included: the steps are chosen to fit from timed ones (0: --steps)"},
    {"decay-steps", I64, S_FREE, F(decay_steps), 0, 1e12, NULL, "the step where the cosine reaches --min-lr, which "
     "stays after it (nanoGPT's lr_decay_iters; 0: --steps; a resume keeps the run's)"},
    {"lr", DBL, S_FREE, F(lr), 0, 10, NULL, "peak learning rate"},
    {"min-lr", DBL, S_FREE, F(min_lr), 0, 10, NULL, "final learning rate"},
    {"warmup", I64, S_FREE, F(warmup), 0, 1e12, NULL, "linear warmup steps"},
    {"schedule", WORD, S_FREE, F(schedule), 0, 0, "cosine|wsd", "after the warmup: cosine (nanoGPT's) or wsd "
     "(warmup-stable-decay: --lr, then linear to --min-lr over the last --decay-frac)"},
    {"decay-frac", DBL, S_FREE, F(decay_frac), 0, 1, NULL, "--schedule wsd: the fraction of --decay-steps the "
     "decay takes"},
    {"sampling", WORD, S_RUN, F(sampling), 0, 0, "random|epochs", "the train windows: random (each start drawn "
     "anew, nanoGPT's) or epochs (each epoch the split cut into windows from a random phase, in a shuffled order: "
     "every token once an epoch)"},
    {"weight-decay", DBL, S_RUN, F(weight_decay), 0, 10, NULL, "AdamW decay of 2-D+ tensors (and Muon's)"},
    {"beta1", DBL, S_RUN, F(beta1), 0, 0.999999999, NULL, "AdamW beta1"},
    {"beta2", DBL, S_RUN, F(beta2), 0, 0.999999999, NULL, "AdamW beta2"},
    {"grad-clip", DBL, S_RUN, F(grad_clip), 0, 1e12, NULL, "clip the global gradient norm (0: off; before either "
     "optimizer)"},
    {"optimizer", WORD, S_RUN, F(optimizer), 0, 0, "adamw|muon", "adamw, or muon: Muon for the blocks' 2-D "
     "matrices, AdamW (--lr, --beta1, ...) for the rest"},
    {"muon-lr", DBL, S_FREE, F(muon_lr), 0, 10, NULL, "Muon's learning rate (with --optimizer muon; follows "
     "--lr's schedule, scaled)"},
    {"muon-momentum", DBL, S_RUN, F(muon_momentum), 0, 0.999999999, NULL, "Muon's momentum (with --optimizer "
     "muon)"},
    {"ema", DBL, S_RUN, F(ema), 0, 0.999999999, NULL, "average the weights: after every step avg = D avg + (1 - "
     "D) weights; each evaluation is of both, best.safetensors keeps the lower (0: off; e.g. 0.995)"},
    {"eval-interval", I64, S_FREE, F(eval_interval), 1, 1e12, NULL, "steps between evaluations"},
    {"eval-iters", I64, S_FREE, F(eval_iters), 1, 1e9, NULL, "batches per loss estimate"},
    {"full-val", SWITCH, S_FREE, F(full_val), 0, 0, NULL, "the val loss over the whole val split, each token once "
     "in consecutive windows, not --eval-iters random batches (the train loss keeps them)"},
    {"seed", I64, S_RUN, F(seed), 0, 9e15, NULL, "random seed"},
    {"corpus-chars", INT, S_RUN, F(corpus_chars), 1000, 1 << 30, NULL, "size of the built-in corpus"},
    {"dtype", WORD, S_RUN, F(dtype), 0, 0, "f32|f64", "f32 or f64"},
    {"attn", WORD, S_FREE, F(attn_composed), 0, 0, "fused|composed", "attention: fused (one op, no (T,T) "
     "tensors) or composed (the teaching path)"},
    {"log-interval", I64, S_FREE, F(log_interval), 1, 1e12, NULL, "steps between progress lines (when not a "
     "terminal)"},
    {"log-digits", INT, S_FREE, F(log_digits), 0, 17, NULL, "significant digits of the losses in metrics.csv (0: 6 "
     "decimals; 17 reads f64 back exactly)"},
    {"zero", INT, S_FREE, F(zero), 0, 1, NULL, "ZeRO stage: 1 shards AdamW's moments across the processes (1/R of "
     "the memory each; the same losses)"},
    {"bucket-mb", DBL, S_NONE, F(bucket_mb), 0.001, 4096, NULL, "MiB of gradients per bucket summed across "
     "processes while backward runs"},
};
// clang-format on
#define N_SETTINGS ((int)(sizeof SETTINGS / sizeof SETTINGS[0]))
_Static_assert(N_SETTINGS <= 32 * 4, "tg_run_config's given bits are too few");
_Static_assert(sizeof(tg_gelu_mode) == sizeof(int) && sizeof(tg_ffn_kind) == sizeof(int) &&
                   sizeof(tg_lr_shape) == sizeof(int) && sizeof(tg_dtype) == sizeof(int) &&
                   sizeof(tg_run_sampling) == sizeof(int) && sizeof(tg_run_optimizer) == sizeof(int),
               "a word setting is an int or a bool");

const tg_run_setting *tg_run_settings(int *n)
{
    if (n) *n = N_SETTINGS;
    return SETTINGS;
}

bool tg_run_same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '_' || *a == '-') && (*b == '_' || *b == '-'))) return false;
    return *a == *b;
}

const tg_run_setting *tg_run_setting_find(const char *name)
{
    for (int k = 0; name && k < N_SETTINGS; k++)
        if (tg_run_same_name(SETTINGS[k].name, name)) return &SETTINGS[k];
    return NULL;
}

int tg_run_setting_index(const tg_run_setting *s)
{
    return s >= SETTINGS && s < SETTINGS + N_SETTINGS ? (int)(s - SETTINGS) : -1;
}

/* ---- values to and from text ---------------------------------------------- */

const char *tg_run_shown(const char *s, char buf[TG_RUN_SHOWN])
{
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (i == TG_RUN_SHOWN_BYTES) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        const unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
    }
    buf[o] = 0;
    return buf;
}

/* True when v is a number as people write it: an optional sign, digits
 * with at most one '.' among them, then optionally e or E, a sign and
 * digits. strtod alone also takes hexadecimal (0x1), inf, nan and leading
 * spaces. */
static bool decimal(const char *v)
{
    const char *p = v + (*v == '+' || *v == '-');
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    if (!digits) return false;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '+' || p[1] == '-');
        if (*p < '0' || *p > '9') return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    return !*p;
}

/* The shortest %g form (6 to 17 digits) that reads back as exactly x. */
static void format_double(double x, char *buf, size_t size)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* The index of word w (len bytes) among "a|b|c", or -1. */
static int word_index(const char *words, const char *w, size_t len)
{
    int i = 0;
    for (const char *p = words;; i++) {
        const char *bar = strchr(p, '|');
        const size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, w, n)) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

/* "a, b or c": the words but "default", for a message. */
static void word_list(const char *words, char *buf, size_t size)
{
    char w[32][32];
    int n = 0;
    for (const char *p = words; *p && n < 32;) {
        const char *bar = strchr(p, '|');
        const size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len < 32 && !(len == 7 && !strncmp(p, "default", 7))) memcpy(w[n], p, len), w[n++][len] = 0;
        p = bar ? bar + 1 : p + len;
    }
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", w[i]);
}

static void store_int(void *dest, size_t size, int v)
{
    if (size == sizeof(bool)) *(bool *)dest = v != 0;
    else *(int *)dest = v;
}

static int load_int(const void *src, size_t size)
{
    return size == sizeof(bool) ? *(const bool *)src : *(const int *)src;
}

static int parse_number(const tg_run_setting *s, const char *v, const char *what, void *dest, tg_error *err)
{
    char b[TG_RUN_SHOWN], lo[32], hi[32];
    if (!decimal(v)) {
        char *end;
        strtod(v, &end);
        const bool strtod_takes = end != v && !*end;
        return tg_error_set(err, "%s: '%s' is not a number%s", what, tg_run_shown(v, b),
                            strtod_takes ? " (write it in decimal, as 3, -0.5 or 6e-4)" : "");
    }
    errno = 0;
    const double x = strtod(v, NULL);
    const bool range = errno == ERANGE;
    format_double(s->min, lo, sizeof lo);
    format_double(s->max, hi, sizeof hi);
    if (x != 0 ? fabs(x) < DBL_MIN : range) /* subnormal, or rounded to 0 */
        return tg_error_set(err,
                            "%s: %s is out of range: too close to 0 (a value other than 0 needs a magnitude of "
                            "at least %.17g); the range is [%s, %s]",
                            what, tg_run_shown(v, b), DBL_MIN, lo, hi);
    if (s->kind != TG_SETTING_DOUBLE && isfinite(x) && x != floor(x))
        return tg_error_set(err, "%s: '%s' is not a whole number", what, tg_run_shown(v, b));
    if (!isfinite(x) || x < s->min || x > s->max) /* beyond a double: ERANGE and +-HUGE_VAL */
        return tg_error_set(err, "%s: %s is outside [%s, %s]", what, tg_run_shown(v, b), lo, hi);
    if (s->kind == TG_SETTING_INT) *(int *)dest = (int)x;
    else if (s->kind == TG_SETTING_I64) *(int64_t *)dest = (int64_t)x;
    else *(double *)dest = x;
    return 0;
}

int tg_run_setting_parse(const tg_run_setting *s, const char *v, const char *what, void *dest, tg_error *err)
{
    if (!s || !v || !dest) return tg_error_set(err, "run_setting_parse: NULL argument");
    if (!what) what = s->name;
    char b[TG_RUN_SHOWN];
    switch (s->kind) {
    case TG_SETTING_STRING: *(const char **)dest = v; return 0;
    case TG_SETTING_BOOL:
    case TG_SETTING_SWITCH:
        if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1")) *(bool *)dest = true;
        else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "0")) *(bool *)dest = false;
        else return tg_error_set(err, "%s: '%s' is not true/false", what, tg_run_shown(v, b));
        return 0;
    case TG_SETTING_WORD: {
        const int i = s->words ? word_index(s->words, v, strlen(v)) : -1;
        if (i < 0) {
            char list[256];
            word_list(s->words ? s->words : "", list, sizeof list);
            return tg_error_set(err, "%s: '%s' is not %s", what, tg_run_shown(v, b), list);
        }
        store_int(dest, s->size, i);
        return 0;
    }
    case TG_SETTING_INT:
    case TG_SETTING_I64:
    case TG_SETTING_DOUBLE: return parse_number(s, v, what, dest, err);
    }
    return tg_error_set(err, "%s: unknown kind %d", what, (int)s->kind);
}

int tg_run_setting_format(const tg_run_setting *s, const void *src, char *buf, size_t size)
{
    if (!s || !src || !buf || !size) return -1;
    int n = 0;
    switch (s->kind) {
    case TG_SETTING_INT: n = snprintf(buf, size, "%d", *(const int *)src); break;
    case TG_SETTING_I64: n = snprintf(buf, size, "%lld", (long long)*(const int64_t *)src); break;
    case TG_SETTING_DOUBLE: {
        char d[40];
        format_double(*(const double *)src, d, sizeof d);
        n = snprintf(buf, size, "%s", d);
        break;
    }
    case TG_SETTING_STRING:
        n = snprintf(buf, size, "%s", *(const char *const *)src ? *(const char *const *)src : "");
        break;
    case TG_SETTING_BOOL:
    case TG_SETTING_SWITCH: n = snprintf(buf, size, "%s", *(const bool *)src ? "true" : "false"); break;
    case TG_SETTING_WORD: {
        const int v = load_int(src, s->size);
        const char *p = s->words ? s->words : "";
        for (int i = 0; i < v && p; i++) p = strchr(p, '|'), p = p ? p + 1 : NULL;
        const size_t len = p ? (strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p)) : 0;
        n = p && v >= 0 ? snprintf(buf, size, "%.*s", (int)len, p) : snprintf(buf, size, "%d", v);
        break;
    }
    }
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

bool tg_run_setting_equal(const tg_run_setting *s, const void *a, const void *b)
{
    switch (s->kind) {
    case TG_SETTING_INT: return *(const int *)a == *(const int *)b;
    case TG_SETTING_I64: return *(const int64_t *)a == *(const int64_t *)b;
    case TG_SETTING_DOUBLE: return *(const double *)a == *(const double *)b;
    case TG_SETTING_STRING: {
        const char *x = *(const char *const *)a, *y = *(const char *const *)b;
        return !strcmp(x ? x : "", y ? y : "");
    }
    case TG_SETTING_BOOL:
    case TG_SETTING_SWITCH: return *(const bool *)a == *(const bool *)b;
    case TG_SETTING_WORD: return load_int(a, s->size) == load_int(b, s->size);
    }
    return false;
}

/* ---- the config ------------------------------------------------------------ */

void tg_run_config_init(tg_run_config *c)
{
    if (!c) return;
    *c = (tg_run_config){.arch = "gpt",
                         .n_layer = 4,
                         .n_head = 4,
                         .n_embd = 128,
                         .block_size = 64,
                         .multiple_of = 32,
                         .rope_theta = 10000,
                         .norm_eps = 1e-5,
                         .tied = true,
                         .batch_size = 12,
                         .grad_accum = 1,
                         .steps = 2000,
                         .lr = 1e-3,
                         .min_lr = 1e-4,
                         .warmup = 100,
                         .decay_frac = 0.2,
                         .weight_decay = 0.1,
                         .beta1 = 0.9,
                         .beta2 = 0.99,
                         .grad_clip = 1.0,
                         .muon_lr = TG_MUON_LR,
                         .muon_momentum = 0.95,
                         .eval_interval = 250,
                         .eval_iters = 200,
                         .seed = 1337,
                         .corpus_chars = 300000,
                         .dtype = TG_F32,
                         .log_interval = 10,
                         .bucket_mb = 1};
}

void tg_run_config_release(tg_run_config *c)
{
    if (!c) return;
    for (int k = 0; k < N_SETTINGS; k++) { /* the string fields that point at what is freed */
        if (SETTINGS[k].kind != TG_SETTING_STRING) continue;
        const char **f = (const char **)((char *)c + SETTINGS[k].offset);
        for (int i = 0; *f && i < c->own.n; i++)
            if (*f == c->own.strings[i]) *f = NULL;
    }
    for (int i = 0; i < c->own.n; i++) free(c->own.strings[i]);
    free(c->own.strings);
    memset(&c->own, 0, sizeof c->own);
}

const char *tg_run_config_keep(tg_run_config *c, const char *s)
{
    if (!s) return NULL;
    if (c->own.n == c->own.cap) {
        const int cap = c->own.cap ? 2 * c->own.cap : 8;
        char **p = realloc(c->own.strings, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        c->own.strings = p;
        c->own.cap = cap;
    }
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d) return NULL;
    memcpy(d, s, n);
    return c->own.strings[c->own.n++] = d;
}

int tg_run_config_set(tg_run_config *c, const char *name, const char *text, const char *what, tg_error *err)
{
    if (!c || !name || !text) return tg_error_set(err, "run_config_set: NULL argument");
    const tg_run_setting *s = tg_run_setting_find(name);
    char b[TG_RUN_SHOWN];
    if (!s) return tg_error_set(err, "unknown setting '%s'", tg_run_shown(name, b));
    tg_run_value value;
    if (tg_run_setting_parse(s, text, what, &value, err)) return -1;
    if (s->kind == TG_SETTING_STRING && !(value.s = tg_run_config_keep(c, text)))
        return tg_error_set(err, "%s: out of memory", what ? what : s->name);
    memcpy((char *)c + s->offset, &value, s->size);
    const int k = tg_run_setting_index(s);
    c->own.given[k / 32] |= 1u << (k % 32);
    return 0;
}

int tg_run_config_get(const tg_run_config *c, const char *name, char *buf, size_t size)
{
    const tg_run_setting *s = tg_run_setting_find(name);
    if (!c || !s) return -1;
    return tg_run_setting_format(s, (const char *)c + s->offset, buf, size);
}

bool tg_run_config_marked(const tg_run_config *c, const tg_run_setting *s)
{
    const int k = tg_run_setting_index(s);
    return k >= 0 && (c->own.given[k / 32] >> (k % 32) & 1u);
}
