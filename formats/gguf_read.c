/* GGUF files written by others (llama.cpp's converters, gguf-py, tapegrad)
 * to checkpoints (tg_gguf_import, formats/formats.h). The layout is the
 * one formats/gguf.c writes (its top comment); this side reads versions 2
 * and 3 and any general.alignment.
 *
 * Every count and length in the file is checked against the bytes left
 * before it is used, so a crafted header costs time and memory
 * proportional to the file, never to what it claims. What tapegrad
 * cannot run is refused naming the key or tensor, before anything is
 * written:
 *   - the architecture must be "llama" (RoPE on adjacent pairs, as Meta's
 *     and llama2.c's: tapegrad's default), without rope scaling, with a
 *     rope dimension count equal to the head size; or "gpt2" (a GPT with
 *     the tanh GELU, a 4 C MLP, LayerNorm eps 1e-5, every bias, the head
 *     tied);
 *   - tensors F32, F16, BF16 or Q8_0 (dequantized exactly: a half, a
 *     bfloat16 and a Q8_0 block's scale times its int8 are all floats);
 *   - the tokenizer llama.cpp's "llama" (SentencePiece-style pieces with
 *     scores: text/'s TG_TOK_SPM with spaces spelled U+2581), a GPT's
 *     "gpt2" (GPT-2's byte-level BPE: TG_TOK_TIKTOKEN), or none ("no"
 *     model): the checkpoint then holds bare ids. */
#include "formats.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"
#include "gpt2_internal.h"

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 };
enum { G_F32 = 0, G_F16 = 1, G_Q8_0 = 8, G_BF16 = 30 };   /* ggml's type numbers */

/* ---- the file's parts ------------------------------------------------------ */

typedef struct str {
    const char *p;
    uint64_t n;
} str;

/* s as a message shows it (tg_shown: the first 60 bytes, escaped) */
static const char *shown(str s, char buf[TG_SHOWN_SIZE])
{
    char t[62];
    const size_t n = s.n < 61 ? (size_t)s.n : 61;
    memcpy(t, s.p, n);
    t[n] = 0;
    return tg_shown(t, buf);
}

typedef struct kv {
    str key;
    uint32_t type;
    const unsigned char *val;   /* the value's bytes (an array: after its type and count) */
    uint32_t elem;              /* an array's element type */
    uint64_t count;             /* an array's length */
} kv;

typedef struct tinfo {
    str name;
    uint32_t ndim, type;
    uint64_t dims[4], offset, numel, nbytes;
} tinfo;

typedef struct gguf {
    const unsigned char *buf;
    size_t len, at;
    kv *kvs;
    tinfo *ts;
    uint64_t n_kv, n_t;
    const unsigned char *data;   /* the data section */
    size_t data_len;
} gguf;

static bool take(gguf *g, size_t n, const unsigned char **p)
{
    if (n > g->len - g->at) return false;
    *p = g->buf + g->at;
    g->at += n;
    return true;
}
static bool u32(gguf *g, uint32_t *v)
{
    const unsigned char *p;
    return take(g, 4, &p) ? memcpy(v, p, 4), true : false;
}
static bool u64(gguf *g, uint64_t *v)
{
    const unsigned char *p;
    return take(g, 8, &p) ? memcpy(v, p, 8), true : false;
}
static bool gstr(gguf *g, str *s)
{
    const unsigned char *p;
    return u64(g, &s->n) && s->n <= g->len - g->at && take(g, (size_t)s->n, &p) ? s->p = (const char *)p, true : false;
}

/* the size of one value of a fixed-size type, 0 for strings and arrays */
static size_t fixed_size(uint32_t t)
{
    static const size_t SIZES[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? SIZES[t] : 0;
}

/* Skips one value of type t (not an array), false past the end. */
static bool skip_value(gguf *g, uint32_t t)
{
    const unsigned char *p;
    str s;
    if (t == T_STRING) return gstr(g, &s);
    return t < 13 && t != T_ARRAY && take(g, fixed_size(t), &p);
}

static int parse(gguf *g, char *err, size_t errlen)
{
    char sb[TG_SHOWN_SIZE];
    const unsigned char *magic;
    uint32_t version = 0;
    if (!take(g, 4, &magic) || memcmp(magic, "GGUF", 4))
        return tg_set_err(err, errlen, "the file does not start with \"GGUF\""), -1;
    if (!u32(g, &version) || version < 2 || version > 3)
        return tg_set_err(err, errlen, "GGUF version %u: only versions 2 and 3 are read", version), -1;
    if (!u64(g, &g->n_t) || !u64(g, &g->n_kv))
        return tg_set_err(err, errlen, "the header is cut short"), -1;
    /* every key-value takes at least 12 bytes, every tensor info 28: counts past that are lies */
    if (g->n_kv > (g->len - g->at) / 12 || g->n_t > (g->len - g->at) / 28)
        return tg_set_err(err, errlen, "the header claims %llu key-values and %llu tensors, more than the file's "
                          "%zu bytes hold", (unsigned long long)g->n_kv, (unsigned long long)g->n_t, g->len), -1;
    if (!(g->kvs = calloc(g->n_kv + 1, sizeof *g->kvs)) || !(g->ts = calloc(g->n_t + 1, sizeof *g->ts)))
        return tg_set_err(err, errlen, "out of memory"), -1;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        kv *k = &g->kvs[i];
        const size_t start = g->at;
        if (!gstr(g, &k->key) || !u32(g, &k->type))
            return tg_set_err(err, errlen, "offset %zu: key-value %llu is cut short", start, (unsigned long long)i), -1;
        k->val = g->buf + g->at;
        bool ok;
        if (k->type == T_ARRAY) {
            ok = u32(g, &k->elem) && u64(g, &k->count) && k->elem != T_ARRAY && k->elem < 13;
            k->val = g->buf + g->at;
            const size_t es = ok ? fixed_size(k->elem) : 0;
            if (ok && es) ok = k->count <= (g->len - g->at) / es && take(g, (size_t)k->count * es, &k->val);
            else if (ok) /* strings: each at least 8 bytes */
                for (uint64_t j = 0; ok && j < k->count; j++) ok = k->count <= (g->len - g->at) / 8 + j && skip_value(g, T_STRING);
        } else {
            ok = skip_value(g, k->type);
        }
        if (!ok)
            return tg_set_err(err, errlen, "offset %zu: key '%s' has a bad type or runs past the end", start,
                              shown(k->key, sb)), -1;
    }
    for (uint64_t i = 0; i < g->n_t; i++) {
        tinfo *t = &g->ts[i];
        const size_t start = g->at;
        bool ok = gstr(g, &t->name) && u32(g, &t->ndim) && t->ndim >= 1 && t->ndim <= 4;
        t->numel = 1;
        for (uint32_t d = 0; ok && d < t->ndim; d++)
            ok = u64(g, &t->dims[d]) && t->dims[d] >= 1 && t->dims[d] <= (1ull << 40) / t->numel &&
                 (t->numel *= t->dims[d]);
        ok = ok && u32(g, &t->type) && u64(g, &t->offset);
        if (!ok)
            return tg_set_err(err, errlen, "offset %zu: tensor info %llu is cut short or has a bad shape", start,
                              (unsigned long long)i), -1;
    }
    return 0;
}

static const kv *find(const gguf *g, const char *key)
{
    const size_t n = strlen(key);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kvs[i].key.n == n && !memcmp(g->kvs[i].key.p, key, n)) return &g->kvs[i];
    return NULL;
}

/* An unsigned or signed integer value of key: 0, 1 when absent, or -1
 * with a message (another type, or outside [lo, hi]). */
static int get_int(const gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *v, char *err, size_t errlen)
{
    const kv *k = find(g, key);
    if (!k) return 1;
    uint64_t u = 0;
    int64_t s = 0;
    bool is_signed = k->type == T_I8 || k->type == T_I16 || k->type == T_I32 || k->type == T_I64;
    if (k->type == T_ARRAY || k->type == T_STRING || k->type == T_F32 || k->type == T_F64 || k->type == T_BOOL)
        return tg_set_err(err, errlen, "key '%s' is not an integer", key), -1;
    const size_t n = fixed_size(k->type);
    if (is_signed) {
        int64_t x = 0;
        memcpy(&x, k->val, n);
        s = n == 8 ? x : (x << (64 - 8 * n)) >> (64 - 8 * n);   /* sign-extended */
    } else {
        memcpy(&u, k->val, n);
        s = u > INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    if (s < lo || s > hi)
        return tg_set_err(err, errlen, "key '%s' = %lld is outside [%lld, %lld]", key, (long long)s, (long long)lo,
                          (long long)hi), -1;
    *v = s;
    return 0;
}
static int get_float(const gguf *g, const char *key, double *v, char *err, size_t errlen)
{
    const kv *k = find(g, key);
    if (!k) return 1;
    if (k->type == T_F32) {
        float f;
        memcpy(&f, k->val, 4);
        *v = f;
    } else if (k->type == T_F64) {
        memcpy(v, k->val, 8);
    } else {
        return tg_set_err(err, errlen, "key '%s' is not a number", key), -1;
    }
    return isfinite(*v) ? 0 : (tg_set_err(err, errlen, "key '%s' is %g", key, *v), -1);
}
static bool get_bool(const gguf *g, const char *key, bool dflt)
{
    const kv *k = find(g, key);
    return k && k->type == T_BOOL ? k->val[0] != 0 : dflt;
}
/* a string value: true with *s, false when absent or not a string */
static bool get_str(const gguf *g, const char *key, str *s)
{
    const kv *k = find(g, key);
    if (!k || k->type != T_STRING) return false;
    memcpy(&s->n, k->val, 8);
    s->p = (const char *)k->val + 8;
    return true;
}
static bool str_is(str s, const char *z) { return s.n == strlen(z) && !memcmp(s.p, z, s.n); }

/* ---- tensors ------------------------------------------------------------------ */

/* Places the data section and checks every tensor's bytes lie in it. */
static int place_data(gguf *g, char *err, size_t errlen)
{
    int64_t align = 32;
    if (get_int(g, "general.alignment", 1, 1 << 16, &align, err, errlen) < 0) return -1;
    if (align & (align - 1)) return tg_set_err(err, errlen, "general.alignment %lld is not a power of two", (long long)align), -1;
    const size_t start = (g->at + (size_t)align - 1) / (size_t)align * (size_t)align;
    if (start > g->len) return tg_set_err(err, errlen, "the file ends before its data section"), -1;
    g->data = g->buf + start;
    g->data_len = g->len - start;
    for (uint64_t i = 0; i < g->n_t; i++) {
        tinfo *t = &g->ts[i];
        char sb[TG_SHOWN_SIZE];
        const char *name = shown(t->name, sb);
        switch (t->type) {
        case G_F32: t->nbytes = t->numel * 4; break;
        case G_F16:
        case G_BF16: t->nbytes = t->numel * 2; break;
        case G_Q8_0:
            if (t->dims[0] % 32) return tg_set_err(err, errlen, "tensor '%s' is Q8_0 with rows of %llu, not a multiple "
                                                  "of 32", name, (unsigned long long)t->dims[0]), -1;
            t->nbytes = t->numel / 32 * 34;
            break;
        default:
            return tg_set_err(err, errlen, "tensor '%s' is of ggml type %u: tapegrad reads F32, F16, BF16 and Q8_0",
                              name, t->type), -1;
        }
        if (t->offset % (uint64_t)align || t->offset > g->data_len || t->nbytes > g->data_len - t->offset)
            return tg_set_err(err, errlen, "tensor '%s': its %llu bytes at offset %llu are not within the data "
                              "section's %zu (or not aligned to %lld)", name, (unsigned long long)t->nbytes,
                              (unsigned long long)t->offset, g->data_len, (long long)align), -1;
    }
    return 0;
}

static const tinfo *find_tensor(const gguf *g, const char *name)
{
    const size_t n = strlen(name);
    for (uint64_t i = 0; i < g->n_t; i++)
        if (g->ts[i].name.n == n && !memcmp(g->ts[i].name.p, name, n)) return &g->ts[i];
    return NULL;
}

static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {   /* zero or subnormal: m * 2^-24, exact */
        const float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    const uint32_t bits = sign | (e == 31 ? 0x7f800000u | m << 13 : (e + 112) << 23 | m << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Value i of a tensor of ggml type `type` whose data starts at q. */
static float value_at(const unsigned char *q, uint32_t type, int64_t i)
{
    float x;
    if (type == G_F32) {
        memcpy(&x, q + 4 * i, 4);
    } else if (type == G_F16 || type == G_BF16) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        if (type == G_F16) {
            x = half_to_float(h);
        } else {
            const uint32_t bits = (uint32_t)h << 16;
            memcpy(&x, &bits, 4);
        }
    } else {   /* Q8_0: a half scale, then 32 int8 */
        const unsigned char *b = q + i / 32 * 34;
        uint16_t d;
        memcpy(&d, b, 2);
        x = half_to_float(d) * (float)(int8_t)b[2 + i % 32];
    }
    return x;
}

/* Tensor t's values into the parameter p, whose shape must be t's
 * (GGUF lists dimensions fastest first); every value finite. */
static int load_tensor(const gguf *g, const tinfo *t, tg_tensor *p, char *err, size_t errlen)
{
    char sb[TG_SHOWN_SIZE];
        const char *name = shown(t->name, sb);
    bool same = (int)t->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = t->dims[d] == (uint64_t)p->shape[p->ndim - 1 - d];
    if (!same) {
        char want[64];
        return tg_set_err(err, errlen, "tensor '%s' has %u dimensions [%llu, %llu, ...] where the model's config "
                          "makes it %s (GGUF lists the fastest first)", name, t->ndim, (unsigned long long)t->dims[0],
                          (unsigned long long)(t->ndim > 1 ? t->dims[1] : 1), tg_shape_str(p, want, sizeof want)), -1;
    }
    const unsigned char *q = g->data + t->offset;
    for (int64_t i = 0; i < p->numel; i++) {
        const float x = value_at(q, t->type, i);
        if (!isfinite(x))
            return tg_set_err(err, errlen, "tensor '%s' holds %g at element %lld", name, (double)x, (long long)i), -1;
        tg_tensor_set(p, i, x);
    }
    return 0;
}

/* ---- the Llama ----------------------------------------------------------------- */

static int read_config(const gguf *g, tg_model_config *c, char *err, size_t errlen)
{
    char sb[TG_SHOWN_SIZE];
    static const char *const INTS[6] = {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
                                        "llama.attention.head_count", "llama.context_length",
                                        "llama.attention.head_count_kv"};
    int64_t v[6];
    for (int i = 0; i < 6; i++) {
        const int rc = get_int(g, INTS[i], 1, 1 << 24, &v[i], err, errlen);
        if (rc < 0) return -1;
        if (rc > 0 && i < 5) return tg_set_err(err, errlen, "the file has no '%s'", INTS[i]), -1;
        if (rc > 0) v[5] = v[3];   /* no head_count_kv: as many as heads */
    }
    double eps, theta = 10000;
    if (get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps, err, errlen))
        return tg_set_err(err, errlen, "the file has no number 'llama.attention.layer_norm_rms_epsilon'"), -1;
    if (get_float(g, "llama.rope.freq_base", &theta, err, errlen) < 0) return -1;
    str s;
    if (get_str(g, "llama.rope.scaling.type", &s) && !str_is(s, "none"))
        return tg_set_err(err, errlen, "key 'llama.rope.scaling.type' is '%s': tapegrad runs RoPE without scaling",
                          shown(s, sb)), -1;
    const kv *scale = find(g, "llama.rope.scaling.factor");
    double factor = 1;
    if (scale && (get_float(g, "llama.rope.scaling.factor", &factor, err, errlen) || factor != 1))
        return tg_set_err(err, errlen, "key 'llama.rope.scaling.factor' is not 1: tapegrad runs RoPE without "
                          "scaling"), -1;
    const tinfo *emb = find_tensor(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) return tg_set_err(err, errlen, "the file has no 2-D tensor 'token_embd.weight'"), -1;
    if (emb->dims[1] > (1 << 24)) return tg_set_err(err, errlen, "'token_embd.weight' has %llu rows",
                                                    (unsigned long long)emb->dims[1]), -1;
    *c = (tg_model_config){.arch = "llama", .n_embd = (int)v[0], .hidden_dim = (int)v[1], .n_layer = (int)v[2],
                           .n_head = (int)v[3], .block_size = (int)v[4], .n_kv_head = (int)v[5],
                           .vocab_size = (int)emb->dims[1], .rope_theta = theta, .norm_eps = eps,
                           .tied = !find_tensor(g, "output.weight")};
    int64_t rot;
    const int rc = get_int(g, "llama.rope.dimension_count", 1, 1 << 24, &rot, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0 && (c->n_embd % c->n_head || rot != c->n_embd / c->n_head))
        return tg_set_err(err, errlen, "key 'llama.rope.dimension_count' = %lld is not the head size %d / %d: "
                          "tapegrad rotates whole heads", (long long)rot, c->n_embd, c->n_head), -1;
    if (tg_model_num_params(c) < 0)
        return tg_set_err(err, errlen, "the hyperparameters (embedding %d, feed forward %d, %d blocks, %d heads, %d kv "
                          "heads, context %d, vocabulary %d) are not a Llama tapegrad builds", c->n_embd, c->hidden_dim,
                          c->n_layer, c->n_head, c->n_kv_head, c->block_size, c->vocab_size), -1;
    /* every parameter is in the file, so the model costs no more memory than the file's bytes imply */
    int64_t floats = 0;
    for (uint64_t i = 0; i < g->n_t; i++) floats += (int64_t)g->ts[i].numel;
    if (tg_model_num_params(c) > floats)
        return tg_set_err(err, errlen, "the hyperparameters describe %lld parameters, the file's tensors hold %lld",
                          (long long)tg_model_num_params(c), (long long)floats), -1;
    return 0;
}

/* GGUF's tensor names for tapegrad's Llama parameters (per layer: "blk.N." + name) */
static const char *const LAYER_NAMES[9][2] = {
    {"attention_norm.weight", "attn_norm.weight"}, {"attention.wq.weight", "attn_q.weight"},
    {"attention.wk.weight", "attn_k.weight"},      {"attention.wv.weight", "attn_v.weight"},
    {"attention.wo.weight", "attn_output.weight"}, {"ffn_norm.weight", "ffn_norm.weight"},
    {"feed_forward.w1.weight", "ffn_gate.weight"}, {"feed_forward.w2.weight", "ffn_down.weight"},
    {"feed_forward.w3.weight", "ffn_up.weight"}};

static int load_weights(const gguf *g, tg_model *m, char *err, size_t errlen)
{
    const int64_t n = tg_params_count(m->params);
    for (int64_t i = 0; i < n; i++) {
        tg_tensor *p = tg_params_at(m->params, i);
        char name[96];
        int layer;
        int used = 0;
        if (!strcmp(p->name, "tok_embeddings.weight")) snprintf(name, sizeof name, "token_embd.weight");
        else if (!strcmp(p->name, "norm.weight")) snprintf(name, sizeof name, "output_norm.weight");
        else if (!strcmp(p->name, "output.weight")) snprintf(name, sizeof name, "output.weight");
        else if (sscanf(p->name, "layers.%d.%n", &layer, &used) == 1 && used > 0) {
            name[0] = 0;
            for (int k = 0; k < 9; k++)
                if (!strcmp(p->name + used, LAYER_NAMES[k][0]))
                    snprintf(name, sizeof name, "blk.%d.%s", layer, LAYER_NAMES[k][1]);
        }
        const tinfo *t = name[0] ? find_tensor(g, name) : NULL;
        if (!t) return tg_set_err(err, errlen, "the file has no tensor '%s' (tapegrad's %s)", name, p->name), -1;
        if (load_tensor(g, t, p, err, errlen)) return -1;
    }
    return 0;
}

/* ---- the GPT (llama.cpp's gpt2) --------------------------------------------- */

/* GGUF's names for a GPT block's parts (per layer: "blk.N." + name + ".weight" / ".bias") */
static const char *const GPT_PARTS[6][2] = {{"ln_1", "attn_norm"}, {"attn.c_attn", "attn_qkv"},
                                            {"attn.c_proj", "attn_output"}, {"ln_2", "ffn_norm"},
                                            {"mlp.c_fc", "ffn_up"}, {"mlp.c_proj", "ffn_down"}};

/* 1 when tensor t holds only zeros */
static bool all_zero(const gguf *g, const tinfo *t)
{
    for (uint64_t i = 0; i < t->numel; i++)
        if (value_at(g->data + t->offset, t->type, (int64_t)i) != 0) return false;
    return true;
}

/* A GPT's config from the gpt2.* keys and its tensors: llama.cpp's gpt2
 * (LayerNorm with biases, eps 1e-5, a 4 C MLP with the tanh GELU, the
 * head tied to token_embd). A file whose biases are all zero (tapegrad's
 * export of a GPT without) is a GPT without biases. */
static int read_config_gpt(const gguf *g, tg_model_config *c, char *err, size_t errlen)
{
    static const char *const INTS[5] = {"gpt2.embedding_length", "gpt2.feed_forward_length", "gpt2.block_count",
                                        "gpt2.attention.head_count", "gpt2.context_length"};
    int64_t v[5], kv;
    for (int i = 0; i < 5; i++) {
        const int rc = get_int(g, INTS[i], 1, 1 << 24, &v[i], err, errlen);
        if (rc < 0) return -1;
        if (rc > 0) return tg_set_err(err, errlen, "the file has no '%s'", INTS[i]), -1;
    }
    if (v[1] != 4 * v[0])
        return tg_set_err(err, errlen, "key 'gpt2.feed_forward_length' = %lld is not 4 x the embedding %lld: "
                          "tapegrad's GPT has a 4 C MLP", (long long)v[1], (long long)v[0]), -1;
    const int rc = get_int(g, "gpt2.attention.head_count_kv", 1, 1 << 24, &kv, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0 && kv != v[3])
        return tg_set_err(err, errlen, "key 'gpt2.attention.head_count_kv' = %lld is not the head count %lld: "
                          "tapegrad's GPT has no grouped-query attention", (long long)kv, (long long)v[3]), -1;
    double eps;
    if (get_float(g, "gpt2.attention.layer_norm_epsilon", &eps, err, errlen))
        return tg_set_err(err, errlen, "the file has no number 'gpt2.attention.layer_norm_epsilon'"), -1;
    if ((float)eps != (float)TG_LAYERNORM_EPS)
        return tg_set_err(err, errlen, "key 'gpt2.attention.layer_norm_epsilon' is %g: tapegrad's LayerNorm has "
                          "eps %g", eps, TG_LAYERNORM_EPS), -1;
    const tinfo *emb = find_tensor(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) return tg_set_err(err, errlen, "the file has no 2-D tensor 'token_embd.weight'"), -1;
    if (emb->dims[1] > (1 << 24)) return tg_set_err(err, errlen, "'token_embd.weight' has %llu rows",
                                                    (unsigned long long)emb->dims[1]), -1;
    const tinfo *out = find_tensor(g, "output.weight");
    if (out && (out->type != emb->type || out->ndim != emb->ndim || out->dims[0] != emb->dims[0] ||
                out->dims[1] != emb->dims[1] || memcmp(g->data + out->offset, g->data + emb->offset, emb->nbytes)))
        return tg_set_err(err, errlen, "tensor 'output.weight' is not 'token_embd.weight': tapegrad's GPT ties its "
                          "head to the token embedding"), -1;
    *c = (tg_model_config){.arch = "gpt", .n_embd = (int)v[0], .n_layer = (int)v[2], .n_head = (int)v[3],
                           .block_size = (int)v[4], .vocab_size = (int)emb->dims[1], .gelu = TG_GELU_TANH};
    /* the biases: all in the file (llama.cpp requires them); all zero makes a GPT without */
    bool zero = true;
    char name[96];
    for (int l = 0; l <= c->n_layer; l++)
        for (int k = 0; k < (l < c->n_layer ? 6 : 1); k++) {
            if (l < c->n_layer) snprintf(name, sizeof name, "blk.%d.%s.bias", l, GPT_PARTS[k][1]);
            else snprintf(name, sizeof name, "output_norm.bias");
            const tinfo *t = find_tensor(g, name);
            if (!t)
                return tg_set_err(err, errlen, "the file has no tensor '%s' (llama.cpp's gpt2 requires it)", name), -1;
            zero = zero && all_zero(g, t);
        }
    c->bias = !zero;
    if (tg_model_num_params(c) < 0)
        return tg_set_err(err, errlen, "the hyperparameters (embedding %d, %d blocks, %d heads, context %d, "
                          "vocabulary %d) are not a GPT tapegrad builds", c->n_embd, c->n_layer, c->n_head,
                          c->block_size, c->vocab_size), -1;
    int64_t floats = 0;
    for (uint64_t i = 0; i < g->n_t; i++) floats += (int64_t)g->ts[i].numel;
    if (tg_model_num_params(c) > floats)
        return tg_set_err(err, errlen, "the hyperparameters describe %lld parameters, the file's tensors hold %lld",
                          (long long)tg_model_num_params(c), (long long)floats), -1;
    return 0;
}

static int load_weights_gpt(const gguf *g, tg_model *m, char *err, size_t errlen)
{
    const int64_t n = tg_params_count(m->params);
    for (int64_t i = 0; i < n; i++) {
        tg_tensor *p = tg_params_at(m->params, i);
        char name[96] = "", part[64];
        int layer, used = 0;
        if (!strcmp(p->name, "transformer.wte.weight")) snprintf(name, sizeof name, "token_embd.weight");
        else if (!strcmp(p->name, "transformer.wpe.weight")) snprintf(name, sizeof name, "position_embd.weight");
        else if (!strcmp(p->name, "transformer.ln_f.weight")) snprintf(name, sizeof name, "output_norm.weight");
        else if (!strcmp(p->name, "transformer.ln_f.bias")) snprintf(name, sizeof name, "output_norm.bias");
        else if (sscanf(p->name, "transformer.h.%d.%n", &layer, &used) == 1 && used > 0)
            for (int k = 0; k < 6; k++) {
                const size_t pl = strlen(GPT_PARTS[k][0]);
                if (!strncmp(p->name + used, GPT_PARTS[k][0], pl) && p->name[used + pl] == '.') {
                    snprintf(part, sizeof part, "%s", p->name + used + pl + 1);   /* weight or bias */
                    snprintf(name, sizeof name, "blk.%d.%s.%s", layer, GPT_PARTS[k][1], part);
                }
            }
        const tinfo *t = name[0] ? find_tensor(g, name) : NULL;
        if (!t) return tg_set_err(err, errlen, "the file has no tensor '%s' (tapegrad's %s)", name, p->name), -1;
        if (load_tensor(g, t, p, err, errlen)) return -1;
    }
    return 0;
}

/* ---- the tokenizer ----------------------------------------------------------------- */

/* 1 when each merge (k-th: the k-th piece of two bytes or more, in id
 * order; tg_gpt2_tokenizer checked that) is the split tiktoken's rule
 * makes of its piece with the lower ids, as GPT-2's merges are: then
 * llama.cpp's merges and tapegrad's ranks encode alike. 0 with a message
 * naming the merge otherwise (llama.cpp only merges the listed pairs,
 * tiktoken any pair that is a piece: " " + "hat" where the file lists
 * " h" + "at"). */
static bool merges_are_tiktokens(const tg_tokenizer *t, const cJSON *merges, char *err, size_t errlen)
{
    uint32_t cp_of[256];
    tg_gpt2_byte_chars(cp_of);
    const size_t maxp = tg_tok_max_piece_len(t);
    char *want = malloc(4 * maxp + 2), *b = malloc(2 * maxp + 1);
    int32_t *parts = malloc((maxp + 1) * sizeof *parts);
    const cJSON *m = merges->child;
    bool ok = want && b && parts;
    if (!ok) tg_set_err(err, errlen, "out of memory");
    for (int32_t r = 0, k = 0; ok && r < tg_tok_vocab_size(t) - 1; r++) {
        size_t l, lx, ly;
        int32_t x, y;
        if (!tg_tok_piece(t, r, &l) || l < 2) continue;
        const int split = tg_gpt2_tiktoken_split(t, r, parts, &x, &y);
        if (split) {
            ok = false;
            if (split == -2) tg_set_err(err, errlen, "out of memory");
            else tg_set_err(err, errlen, "key 'tokenizer.ggml.merges': piece %d is no merge of two lower pieces", (int)r);
            break;
        }
        const unsigned char *px = tg_tok_piece(t, x, &lx), *py = tg_tok_piece(t, y, &ly);
        tg_gpt2_byte_string(px, lx, cp_of, want);
        tg_gpt2_byte_string(py, ly, cp_of, b);
        strcat(strcat(want, " "), b);
        if (!m || !cJSON_IsString(m) || strcmp(m->valuestring, want)) {
            char s1[TG_SHOWN_SIZE], s2[TG_SHOWN_SIZE];
            tg_set_err(err, errlen, "key 'tokenizer.ggml.merges': merge %d is '%s' where tiktoken's rule splits its "
                       "piece %d as '%s': llama.cpp and tapegrad would encode differently", (int)k,
                       tg_shown(m && cJSON_IsString(m) ? m->valuestring : "", s1), (int)r, tg_shown(want, s2));
            ok = false;
        }
        m = m ? m->next : NULL;
        k++;
    }
    free(want), free(b), free(parts);
    return ok;
}

/* llama.cpp's "gpt2" tokenizer (GPT-2's byte-level BPE: tokens and
 * merges, pre-tokenizer gpt-2, no BOS) as tiktoken ranks (TG_TOK_TIKTOKEN),
 * when it is GPT-2's kind (tg_gpt2_tokenizer's conditions). */
static int read_vocab_gpt2(const gguf *g, int V, tg_vocab *v, char *err, size_t errlen)
{
    char sb[TG_SHOWN_SIZE], what[64];
    str pre;
    const bool has_pre = get_str(g, "tokenizer.ggml.pre", &pre);
    if (!has_pre || !str_is(pre, "gpt-2"))
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.pre' is %s%s%s: tapegrad's GPT-2 tokenizer splits "
                          "words with GPT-2's pattern ('gpt-2')", has_pre ? "'" : "absent (or not a string)",
                          has_pre ? shown(pre, sb) : "", has_pre ? "'" : ""), -1;
    if (get_bool(g, "tokenizer.ggml.add_bos_token", false))
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.add_bos_token' is true: a GPT reads its text without "
                          "BOS"), -1;
    const kv *tok = find(g, "tokenizer.ggml.tokens"), *mg = find(g, "tokenizer.ggml.merges");
    if (!tok || tok->type != T_ARRAY || tok->elem != T_STRING || tok->count < 257 || tok->count > (uint64_t)V)
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.tokens' is not a list of 257 to %d strings (the "
                          "embedding's rows)", V), -1;
    if (!mg || mg->type != T_ARRAY || mg->elem != T_STRING)
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.merges' is not a list of strings"), -1;
    cJSON *vocab = cJSON_CreateObject(), *merges = cJSON_CreateArray();
    char *z = NULL;
    size_t zcap = 0;
    int rc = -1;
    bool ok = vocab && merges;
    /* the strings were checked by parse: each a u64 length and its bytes */
    for (int pass = 0; ok && pass < 2; pass++) {
        const kv *k = pass ? mg : tok;
        const unsigned char *p = k->val;
        for (uint64_t i = 0; ok && i < k->count; i++) {
            uint64_t l;
            memcpy(&l, p, 8);
            if (l + 1 > zcap) {
                zcap = (size_t)l + 1 > 2 * zcap ? (size_t)l + 1 : 2 * zcap;
                char *nz = realloc(z, zcap);
                if (!(ok = nz != NULL)) break;
                z = nz;
            }
            memcpy(z, p + 8, (size_t)l);
            z[l] = 0;
            p += 8 + l;
            if (strlen(z) != l) {
                tg_set_err(err, errlen, "key '%s': string %llu holds a NUL byte", pass ? "tokenizer.ggml.merges"
                           : "tokenizer.ggml.tokens", (unsigned long long)i);
                goto done;
            }
            ok = pass ? cJSON_AddItemToArray(merges, cJSON_CreateString(z))
                      : cJSON_AddNumberToObject(vocab, z, (double)i) != NULL;
        }
    }
    if (!ok) {
        tg_set_err(err, errlen, "out of memory");
        goto done;
    }
    snprintf(what, sizeof what, "key 'tokenizer.ggml.tokens' / 'merges'");
    tg_tokenizer *t = tg_gpt2_tokenizer(vocab, merges, what, err, errlen);
    if (t && merges_are_tiktokens(t, merges, err, errlen)) rc = tg_vocab_tokenizer(v, t, false, V, err, errlen);
    else tg_tok_free(t);
done:
    free(z);
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    return rc;
}

/* 1 when every token is a byte token <0xXX> or U+2581 (the space as
 * llama.cpp spells it), their bytes in increasing order: a text's bytes
 * (TG_VOCAB_BYTES) as tapegrad's export writes them for a GPT. */
static bool bytes_only(const kv *tok, const kv *ty, int32_t n)
{
    const unsigned char *p = tok->val;
    int last = -1;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        int32_t type, b = -1;
        memcpy(&l, p, 8);
        memcpy(&type, ty->val + 4 * (size_t)i, 4);
        const char *s = (const char *)p + 8;
        static const char hex[] = "0123456789ABCDEF";
        if (l == 3 && !memcmp(s, "\xe2\x96\x81", 3) && type == 1) b = ' ';
        else if (l == 6 && type == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && strchr(hex, s[3]) && strchr(hex, s[4]) &&
                 s[3] && s[4])
            b = (int)((strchr(hex, s[3]) - hex) * 16 + (strchr(hex, s[4]) - hex));
        if (b <= last) return false;
        last = b;
        p += 8 + l;
    }
    return true;
}

/* The file's vocabulary into v: llama.cpp's "llama" model as TG_TOK_SPM,
 * its "gpt2" (a GPT's) as GPT-2's tiktoken ranks, "no" (or no tokenizer at
 * all) as bare ids. A GPT's text takes no BOS. */
static int read_vocab(const gguf *g, int V, bool gpt, tg_vocab *v, char *err, size_t errlen)
{
    char sb[TG_SHOWN_SIZE];
    str model;
    if (!get_str(g, "tokenizer.ggml.model", &model) || str_is(model, "none") || str_is(model, "no"))
        return tg_vocab_ids(v, V), 0;
    if (gpt && str_is(model, "gpt2")) return read_vocab_gpt2(g, V, v, err, errlen);
    if (!str_is(model, "llama"))
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.model' is '%s': tapegrad reads llama.cpp's 'llama' "
                          "(SentencePiece-style) vocabularies%s", shown(model, sb),
                          gpt ? " and, for a GPT, its 'gpt2' (GPT-2's BPE with merges)" : ""), -1;
    if (gpt && get_bool(g, "tokenizer.ggml.add_bos_token", true) && find(g, "tokenizer.ggml.bos_token_id"))
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.add_bos_token' is true (or absent, llama.cpp's 'llama' "
                          "default): a GPT reads its text without BOS"), -1;
    const kv *tok = find(g, "tokenizer.ggml.tokens"), *sc = find(g, "tokenizer.ggml.scores"),
             *ty = find(g, "tokenizer.ggml.token_type");
    if (!tok || tok->type != T_ARRAY || tok->elem != T_STRING || tok->count < 1 || tok->count > (uint64_t)V)
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.tokens' is not a list of at most %d strings (the "
                          "embedding's rows)", V), -1;
    const int32_t n = (int32_t)tok->count;
    if (!sc || sc->type != T_ARRAY || sc->elem != T_F32 || sc->count != (uint64_t)n)
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.scores' is not %d float32 values", (int)n), -1;
    if (!ty || ty->type != T_ARRAY || ty->elem != T_I32 || ty->count != (uint64_t)n)
        return tg_set_err(err, errlen, "key 'tokenizer.ggml.token_type' is not %d int32 values", (int)n), -1;
    if (gpt && n == V && bytes_only(tok, ty, n) && !get_bool(g, "tokenizer.ggml.add_space_prefix", true)) {
        /* tapegrad's export of a GPT's byte vocabulary: a text's bytes again */
        char set[256];
        const unsigned char *p = tok->val;
        for (int32_t i = 0; i < n; i++) {
            uint64_t l;
            memcpy(&l, p, 8);
            set[i] = (char)(l == 3 ? ' ' : strtol((const char *)p + 8 + 3, NULL, 16));
            p += 8 + l;
        }
        tg_vocab_bytes(v, set, (size_t)n);
        return 0;
    }
    int64_t *off = malloc(((size_t)n + 1) * sizeof *off);
    float *scores = malloc((size_t)n * sizeof *scores);
    uint8_t *types = malloc((size_t)n);
    unsigned char *pieces = NULL;
    int rc = -1;
    if (!off || !scores || !types) {
        tg_set_err(err, errlen, "out of memory");
        goto done;
    }
    /* the strings were checked by parse: each is a u64 length and its bytes */
    size_t total = 0;
    const unsigned char *p = tok->val;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        off[i] = (int64_t)total;
        total += (size_t)l;
        p += 8 + l;
    }
    off[n] = (int64_t)total;
    if (!(pieces = malloc(total ? total : 1))) {
        tg_set_err(err, errlen, "out of memory");
        goto done;
    }
    p = tok->val;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        memcpy(pieces + off[i], p + 8, (size_t)l);
        p += 8 + l;
        int32_t t;
        memcpy(&t, ty->val + 4 * (size_t)i, 4);
        types[i] = t >= 1 && t <= 6 ? (uint8_t)t : 0;   /* 0: refused by tg_tok_spm_new, naming the id */
    }
    memcpy(scores, sc->val, (size_t)n * 4);
    int64_t bos = -1, eos = -1;
    if (get_int(g, "tokenizer.ggml.bos_token_id", 0, n - 1, &bos, err, errlen) < 0 ||
        get_int(g, "tokenizer.ggml.eos_token_id", 0, n - 1, &eos, err, errlen) < 0)
        goto done;
    const tg_spm_options o = {.space_u2581 = 1, .add_prefix = get_bool(g, "tokenizer.ggml.add_space_prefix", true),
                              .merge_floor = -INFINITY};
    tg_tokenizer *t = tg_tok_spm_new(n, pieces, off, scores, types, (int32_t)bos, (int32_t)eos, &o, err, errlen);
    if (!t) goto done;
    /* llama.cpp puts BOS first when add_bos_token says so (its default for "llama" is yes) */
    rc = tg_vocab_tokenizer(v, t, !gpt && bos >= 0 && get_bool(g, "tokenizer.ggml.add_bos_token", true), V, err,
                            errlen);
done:
    free(off), free(scores), free(types), free(pieces);
    return rc;
}

/* ---- the import -------------------------------------------------------------------- */

int tg_gguf_import(const char *path, const char *ckpt_path, tg_dtype dt, char *err, size_t errlen)
{
    if (!path || !ckpt_path)
        return tg_set_err(err, errlen, "gguf_import: the %s is NULL", path ? "checkpoint path" : "GGUF path"), -1;
    if (dt != TG_F32 && dt != TG_F64) return tg_set_err(err, errlen, "gguf_import: the dtype must be f32 or f64"), -1;
    size_t len;
    char *buf = tg_file_read(path, &len, err, errlen);
    if (!buf) return -1;
    gguf g = {.buf = (const unsigned char *)buf, .len = len};
    tg_model m = {0};
    tg_vocab v = {0};
    tg_model_config c;
    str arch;
    int rc = -1;
    char e2[1024] = "", sb[TG_SHOWN_SIZE];
    if (parse(&g, e2, sizeof e2) || place_data(&g, e2, sizeof e2)) goto fail;
    if (!get_str(&g, "general.architecture", &arch)) {
        tg_set_err(e2, sizeof e2, "the file has no string 'general.architecture'");
        goto fail;
    }
    const bool gpt = str_is(arch, "gpt2");
    if (!gpt && !str_is(arch, "llama")) {
        tg_set_err(e2, sizeof e2, "key 'general.architecture' is '%s': tapegrad imports 'llama' and 'gpt2'",
                   shown(arch, sb));
        goto fail;
    }
    if ((gpt ? read_config_gpt(&g, &c, e2, sizeof e2) : read_config(&g, &c, e2, sizeof e2)) ||
        read_vocab(&g, c.vocab_size, gpt, &v, e2, sizeof e2) || tg_model_new(&m, &c, dt, TG_NO_INIT, e2, sizeof e2) ||
        (gpt ? load_weights_gpt(&g, &m, e2, sizeof e2) : load_weights(&g, &m, e2, sizeof e2)))
        goto fail;
    const char *meta[2] = {"imported_from", "gguf"};
    rc = tg_checkpoint_save(ckpt_path, &m, &v, NULL, NULL, NULL, NULL, NULL, NULL, meta, 1, err, errlen);
    goto done;
fail:
    tg_set_err(err, errlen, "%s: %s", path, e2);
done:
    tg_vocab_free(&v);
    tg_model_free(&m);
    free(g.kvs);
    free(g.ts);
    free(buf);
    return rc;
}
