/* GGUF, the file llama.cpp runs: a checkpoint to a GGUF file
 * (tg_gguf_export, formats/formats.h).
 *
 * The file (GGUF version 3, all little-endian):
 *   "GGUF", u32 version 3, u64 tensor count, u64 key-value count
 *   each key-value: key (u64 length + bytes), u32 value type, the value
 *                   (a string is u64 length + bytes; an array is u32
 *                   element type, u64 count, the elements)
 *   each tensor:    name, u32 dimensions, u64 sizes (fastest first, so a
 *                   PyTorch (out, in) matrix is [in, out]), u32 ggml type,
 *                   u64 offset of its data from the data section's start
 *   padding to the alignment (32 bytes: general.alignment is not
 *   written), then each tensor's data, each padded to the alignment
 *
 * A Llama is llama.cpp's architecture "llama": the hyperparameters under
 * "llama." (context_length is the block size), the tensors under
 * llama.cpp's names (token_embd, blk.N.attn_q ..., output_norm, output;
 * no output tensor for a tied head, which llama.cpp then takes from
 * token_embd). llama.cpp's "llama" rotates adjacent pairs (RoPE as Meta
 * and llama2.c): a model trained with --rope halves (Hugging Face's
 * pairing) has the rows of wq and wk of each head reordered, row i of
 * the first half to 2i and row i of the second half to 2i + 1, which
 * turns rotating (x_i, x_{i+hd/2}) into rotating (x_2i, x_2i+1) with the
 * same frequency.
 *
 * A GPT is llama.cpp's architecture "gpt2": the "gpt2." keys, nanoGPT's
 * tensors under llama.cpp's names (token_embd, position_embd,
 * blk.N.attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up, ffn_down,
 * output_norm), each with its bias (zeros for a GPT without: llama.cpp
 * requires them), and no output tensor (the head is tied). llama.cpp's
 * gpt2 computes the tanh GELU; an erf GPT is written as it is.
 *
 * The tokenizer is llama.cpp's, as formats/gguf_write_vocab.c makes it.
 *
 * Weights: F32 as the model holds them; F16 (round to nearest even) and
 * Q8_0 (ggml's blocks of 32 int8 with an F16 scale: d = max|x| / 127,
 * q = round(x / d) half away from zero) for the matrices, the norms'
 * vectors F32 as llama.cpp's own converter keeps them; a matrix whose
 * rows are not a multiple of 32 long is F16 in a Q8_0 file. */
#include "gguf_write_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/atomic_file.h"
#include "../core/err_internal.h"
#include "options_internal.h"

#define GGUF_ALIGN 32
enum { GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9 };

/* ---- the file's parts ------------------------------------------------------- */

static void put(gbuf *b, const void *d, size_t n) { tg_gguf_put(b, d, n); }
static void put_u32(gbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(gbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(gbuf *b, const void *s, size_t n)
{
    put_u64(b, n);
    put(b, s, n);
}

static void kv_key(gbuf *b, const char *key, uint32_t type)
{
    put_str(b, key, strlen(key));
    put_u32(b, type);
    b->count++;
}
static void kv_u32(gbuf *b, const char *key, uint32_t v)
{
    kv_key(b, key, GGUF_U32);
    put_u32(b, v);
}
static void kv_f32(gbuf *b, const char *key, float v)
{
    kv_key(b, key, GGUF_F32);
    put(b, &v, 4);
}
static void kv_bool(gbuf *b, const char *key, bool v)
{
    kv_key(b, key, GGUF_BOOL);
    put(b, &(uint8_t){v}, 1);
}
static void kv_string(gbuf *b, const char *key, const char *s)
{
    kv_key(b, key, GGUF_STRING);
    put_str(b, s, strlen(s));
}
static void kv_array(gbuf *b, const char *key, uint32_t type, uint64_t n)
{
    kv_key(b, key, GGUF_ARRAY);
    put_u32(b, type);
    put_u64(b, n);
}

/* ---- numbers --------------------------------------------------------------- */

/* f as IEEE half, rounded to the nearest (ties to even), as ggml's
 * conversion (and the F16C instruction) rounds; the caller passes finite
 * values only (past 65504 the result is infinite). */
static uint16_t to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffff;
    if (ax >= 0x477ff000) return sign | 0x7c00; /* 65520 and up round to infinity */
    if (ax < 0x38800000) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)rintf(a * 16777216.0f); /* exact scaling, rounded to nearest even */
    }
    uint32_t h = ((ax >> 23) - 127 + 15) << 10 | (ax & 0x7fffff) >> 13;
    const uint32_t rest = ax & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* a carry into the exponent is right too */
    return sign | (uint16_t)h;
}

/* ---- the tensors ------------------------------------------------------------ */

typedef struct gtensor {
    char name[64];
    const tg_tensor *t; /* the model's parameter, f32; NULL: zeros (a GPT's absent bias) */
    int64_t ne[2]; /* ggml's sizes: [columns, rows], or [n] */
    int ndim;
    int type; /* TG_GGUF_F32, _F16 or _Q8_0 */
    int permute_heads; /* >0: wq/wk of a --rope halves model, this many heads to reorder */
    uint64_t offset, nbytes;
} gtensor;

static uint64_t tensor_bytes(const gtensor *g)
{
    const uint64_t n = (uint64_t)g->ne[0] * (uint64_t)(g->ndim > 1 ? g->ne[1] : 1);
    return g->type == TG_GGUF_F32 ? 4 * n : g->type == TG_GGUF_F16 ? 2 * n : n / 32 * 34;
}

/* Row r of the matrix as llama.cpp's "llama" wants it: for wq and wk of a
 * model with Hugging Face's RoPE pairing, the row that goes there. */
static const float *source_row(const gtensor *g, int64_t r, const float *zeros)
{
    if (!g->t) return zeros;
    const float *d = g->t->data;
    if (g->permute_heads <= 0) return d + r * g->ne[0];
    const int64_t hd = g->ne[1] / g->permute_heads, h = r / hd, i = r % hd;
    const int64_t from = h * hd + (i % 2 ? hd / 2 : 0) + i / 2;
    return d + from * g->ne[0];
}

/* Row r of g encoded in its type into out (tensor_bytes / rows bytes). */
static void encode_row(const gtensor *g, int64_t r, const float *zeros, unsigned char *out)
{
    const float *x = source_row(g, r, zeros);
    const int64_t n = g->ne[0];
    if (g->type == TG_GGUF_F32) {
        memcpy(out, x, (size_t)n * 4);
    } else if (g->type == TG_GGUF_F16) {
        for (int64_t j = 0; j < n; j++) {
            const uint16_t h = to_f16(x[j]);
            memcpy(out + 2 * j, &h, 2);
        }
    } else { /* Q8_0: per block of 32, a half scale d then 32 int8 q with x ~ d q */
        for (int64_t b = 0; b < n / 32; b++, out += 34) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
            const float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
            const uint16_t h = to_f16(d);
            memcpy(out, &h, 2);
            for (int j = 0; j < 32; j++) out[2 + j] = (unsigned char)(int8_t)roundf(x[32 * b + j] * id);
        }
    }
}

/* ---- the file ------------------------------------------------------------------- */

static const char *const LAYER_NAMES[9][2] = {
    {"attention_norm.weight", "attn_norm"}, {"attention.wq.weight", "attn_q"},
    {"attention.wk.weight", "attn_k"},      {"attention.wv.weight", "attn_v"},
    {"attention.wo.weight", "attn_output"}, {"ffn_norm.weight", "ffn_norm"},
    {"feed_forward.w1.weight", "ffn_gate"}, {"feed_forward.w2.weight", "ffn_down"},
    {"feed_forward.w3.weight", "ffn_up"},
};

/* Adds parameter pname of m as GGUF tensor gname; -1 if m has none,
 * unless zeros > 0: then a vector of that many zeros (a GPT trained
 * without biases, whose biases llama.cpp's gpt2 requires). */
static int add_tensor(gtensor *ts, int *n, const tg_model *m, const char *pname, const char *gname, int type,
                      int permute_heads, int64_t zeros)
{
    const tg_tensor *t = tg_params_get(m->params, pname);
    gtensor *g = &ts[*n];
    snprintf(g->name, sizeof g->name, "%s", gname);
    if (!t && zeros > 0) {
        (*n)++;
        *g = (gtensor){.ndim = 1, .ne = {zeros, 1}, .type = TG_GGUF_F32};
        snprintf(g->name, sizeof g->name, "%s", gname);
        return 0;
    }
    if (!t || t->dtype != TG_F32 || (t->ndim != 1 && t->ndim != 2)) return -1;
    (*n)++;
    g->t = t;
    g->ndim = t->ndim;
    g->ne[0] = t->shape[t->ndim - 1];
    g->ne[1] = t->ndim > 1 ? t->shape[0] : 1;
    g->type = t->ndim == 1 ? TG_GGUF_F32 : type == TG_GGUF_Q8_0 && g->ne[0] % 32 ? TG_GGUF_F16 : type;
    g->permute_heads = permute_heads;
    return 0;
}

/* A Llama's tensors in llama.cpp's order; -1 for a parameter missing. */
static int llama_tensors(const tg_model *m, int type, gtensor *ts, int *nt)
{
    const tg_model_config *c = &m->config;
    char pname[96], gname[64];
    int bad = add_tensor(ts, nt, m, "tok_embeddings.weight", "token_embd.weight", type, 0, 0);
    for (int l = 0; l < c->n_layer; l++)
        for (int k = 0; k < 9; k++) {
            snprintf(pname, sizeof pname, "layers.%d.%s", l, LAYER_NAMES[k][0]);
            snprintf(gname, sizeof gname, "blk.%d.%s.weight", l, LAYER_NAMES[k][1]);
            const int heads = !c->rope_halves ? 0 : k == 1 ? c->n_head : k == 2 ? c->n_kv_head : 0;
            bad |= add_tensor(ts, nt, m, pname, gname, type, heads, 0);
        }
    bad |= add_tensor(ts, nt, m, "norm.weight", "output_norm.weight", type, 0, 0);
    if (!c->tied) bad |= add_tensor(ts, nt, m, "output.weight", "output.weight", type, 0, 0);
    return bad;
}

/* A GPT's tensors under llama.cpp's gpt2 names (its LLM_ARCH_GPT2 list):
 * nanoGPT's (out, in) matrices are ggml's [in, out] as they are, c_attn
 * is attn_qkv (q, k, v rows in that order, as llama.cpp splits it), the
 * MLP's c_fc and c_proj are ffn_up and ffn_down; every bias (zeros for a
 * model without), no output tensor: llama.cpp's gpt2 takes token_embd
 * for the head, which a GPT ties. -1 for a parameter missing. */
static int gpt_tensors(const tg_model *m, int type, gtensor *ts, int *nt)
{
    static const char *const PARTS[6][2] = {{"ln_1", "attn_norm"},          {"attn.c_attn", "attn_qkv"},
                                            {"attn.c_proj", "attn_output"}, {"ln_2", "ffn_norm"},
                                            {"mlp.c_fc", "ffn_up"},         {"mlp.c_proj", "ffn_down"}};
    const int64_t C = m->config.n_embd, bias_len[6] = {C, 3 * C, C, C, 4 * C, C};
    char pname[96], gname[64];
    int bad = add_tensor(ts, nt, m, "transformer.wte.weight", "token_embd.weight", type, 0, 0);
    bad |= add_tensor(ts, nt, m, "transformer.wpe.weight", "position_embd.weight", type, 0, 0);
    for (int l = 0; l < m->config.n_layer; l++)
        for (int k = 0; k < 6; k++)
            for (int b = 0; b < 2; b++) {
                snprintf(pname, sizeof pname, "transformer.h.%d.%s.%s", l, PARTS[k][0], b ? "bias" : "weight");
                snprintf(gname, sizeof gname, "blk.%d.%s.%s", l, PARTS[k][1], b ? "bias" : "weight");
                bad |= add_tensor(ts, nt, m, pname, gname, type, 0, b ? bias_len[k] : 0);
            }
    bad |= add_tensor(ts, nt, m, "transformer.ln_f.weight", "output_norm.weight", type, 0, 0);
    bad |= add_tensor(ts, nt, m, "transformer.ln_f.bias", "output_norm.bias", type, 0, C);
    return bad;
}

/* 1 when every value of every parameter is finite */
static int finite_params(const tg_model *m, tg_error *err)
{
    for (int i = 0; i < tg_params_count(m->params); i++) {
        const tg_tensor *t = tg_params_at(m->params, i);
        const float *d = t->data;
        for (int64_t k = 0; k < t->numel; k++)
            if (!isfinite(d[k]))
                return tg_error_set(err, "%s[%lld] is %g: a model with NaN or infinite weights cannot be run", t->name,
                                    (long long)k, (double)d[k]),
                       0;
    }
    return 1;
}

int tg_gguf_export(const tg_st_file *ckpt, const char *path, tg_gguf_type type, tg_error *err)
{
    if (!path) return tg_error_set(err, "gguf_export: the path is NULL"), -1;
    if (type != TG_GGUF_F32 && type != TG_GGUF_F16 && type != TG_GGUF_Q8_0)
        return tg_error_set(err, "gguf_export: type %d is not one of TG_GGUF_F32, TG_GGUF_F16, TG_GGUF_Q8_0",
                            (int)type),
               -1;
    if (!ckpt) return tg_error_set(err, "gguf_export: the checkpoint is NULL"), -1;
    tg_model m = {0};
    tg_vocab v = {0};
    gvocab gv = {0};
    gbuf h = {0}, kv = {0};
    gtensor *ts = NULL;
    unsigned char *row = NULL;
    float *zeros = NULL;
    int rc = -1;
    if (tg_checkpoint_load_model(ckpt, TG_F32, 0.0, &m, err)) goto done;
    const tg_model_config *c = &m.config;
    const bool gpt = !strcmp(c->arch, "gpt");
    if (!gpt && strcmp(c->arch, "llama")) {
        tg_error_set(err,
                     "gguf_export: a Llama (llama.cpp's architecture \"llama\") or a GPT (\"gpt2\") is "
                     "written; this checkpoint is a %s",
                     c->arch);
        goto done;
    }
    if (tg_fmt_check_options(c, "gguf_export",
                             gpt ? "llama.cpp's architecture \"gpt2\"" : "llama.cpp's architecture \"llama\"", false,
                             err))
        goto done;
    if (tg_checkpoint_load_vocab(ckpt, &m, &v, err)) goto done;
    if (!finite_params(&m, err) || tg_gguf_make_vocab(&v, c->vocab_size, gpt, &gv, err)) goto done;

    /* the tensors, in llama.cpp's order */
    const int max_t = gpt ? 12 * c->n_layer + 4 : 9 * c->n_layer + 3;
    int nt = 0;
    if (!(ts = calloc((size_t)max_t, sizeof *ts)) || !(zeros = calloc(4 * (size_t)c->n_embd, sizeof *zeros))) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    if (gpt ? gpt_tensors(&m, type, ts, &nt) : llama_tensors(&m, type, ts, &nt)) {
        tg_error_set(err,
                     "gguf_export: the %s's parameters are not the ones it writes (a family of another "
                     "layout registered as \"%s\"?)",
                     gpt ? "GPT" : "Llama", c->arch);
        goto done;
    }
    uint64_t off = 0, row_max = 0;
    for (int i = 0; i < nt; i++) {
        ts[i].offset = off;
        ts[i].nbytes = tensor_bytes(&ts[i]);
        off += (ts[i].nbytes + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
        if (ts[i].nbytes / (uint64_t)ts[i].ne[1] > row_max) row_max = ts[i].nbytes / (uint64_t)ts[i].ne[1];
    }

    /* metadata: the architecture's keys, then the tokenizer's */
    const char *a = gpt ? "gpt2" : "llama";
    char key[96];
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", a, k), key)
    kv_string(&kv, "general.architecture", a);
    kv_string(&kv, "general.name", "tapegrad");
    kv_u32(&kv, "general.file_type", type == TG_GGUF_F32 ? 0 : type == TG_GGUF_F16 ? 1 : 7); /* llama_ftype */
    kv_u32(&kv, KEY("context_length"), (uint32_t)c->block_size);
    kv_u32(&kv, KEY("embedding_length"), (uint32_t)c->n_embd);
    kv_u32(&kv, KEY("block_count"), (uint32_t)c->n_layer);
    kv_u32(&kv, KEY("feed_forward_length"), (uint32_t)(gpt ? 4 * c->n_embd : c->hidden_dim));
    kv_u32(&kv, KEY("attention.head_count"), (uint32_t)c->n_head);
    kv_u32(&kv, KEY("attention.head_count_kv"), (uint32_t)(gpt ? c->n_head : c->n_kv_head));
    if (gpt) {
        kv_f32(&kv, KEY("attention.layer_norm_epsilon"), (float)TG_LAYERNORM_EPS);
    } else {
        kv_u32(&kv, KEY("rope.dimension_count"), (uint32_t)(c->n_embd / c->n_head));
        kv_f32(&kv, KEY("rope.freq_base"), (float)c->rope_theta);
        kv_f32(&kv, KEY("attention.layer_norm_rms_epsilon"), (float)c->norm_eps);
    }
    kv_u32(&kv, KEY("vocab_size"), (uint32_t)c->vocab_size);
#undef KEY
    kv_string(&kv, "tokenizer.ggml.model", gv.gpt2 ? "gpt2" : gv.rwkv ? "rwkv" : "llama");
    if (gv.gpt2) kv_string(&kv, "tokenizer.ggml.pre", "gpt-2");
    kv_array(&kv, "tokenizer.ggml.tokens", GGUF_STRING, (uint64_t)gv.n);
    for (int id = 0; id < gv.n; id++) put_str(&kv, gv.text.p + gv.at[id], gv.len[id]);
    if (!gv.gpt2 && !gv.rwkv) {
        kv_array(&kv, "tokenizer.ggml.scores", GGUF_F32, (uint64_t)gv.n);
        put(&kv, gv.score, (size_t)gv.n * 4);
    }
    kv_array(&kv, "tokenizer.ggml.token_type", GGUF_I32, (uint64_t)gv.n);
    put(&kv, gv.type, (size_t)gv.n * 4);
    if (gv.gpt2) {
        kv_array(&kv, "tokenizer.ggml.merges", GGUF_STRING, gv.n_merges);
        put(&kv, gv.merges.p, gv.merges.len);
    }
    if (gv.bos >= 0) kv_u32(&kv, "tokenizer.ggml.bos_token_id", (uint32_t)gv.bos);
    if (gv.eos >= 0) kv_u32(&kv, "tokenizer.ggml.eos_token_id", (uint32_t)gv.eos);
    if (gv.unk >= 0) kv_u32(&kv, "tokenizer.ggml.unknown_token_id", (uint32_t)gv.unk);
    kv_bool(&kv, "tokenizer.ggml.add_bos_token", gv.add_bos);
    if (!gv.gpt2 && !gv.rwkv) kv_bool(&kv, "tokenizer.ggml.add_space_prefix", gv.add_prefix);

    /* the header, the metadata, the tensors' descriptions, then padding to the data */
    put(&h, "GGUF", 4);
    put_u32(&h, 3);
    put_u64(&h, (uint64_t)nt);
    put_u64(&h, kv.count);
    put(&h, kv.p, kv.len);
    for (int i = 0; i < nt; i++) {
        put_str(&h, ts[i].name, strlen(ts[i].name));
        put_u32(&h, (uint32_t)ts[i].ndim);
        for (int d = 0; d < ts[i].ndim; d++) put_u64(&h, (uint64_t)ts[i].ne[d]);
        put_u32(&h, (uint32_t)ts[i].type);
        put_u64(&h, ts[i].offset);
    }
    static const unsigned char pad[GGUF_ALIGN];
    put(&h, pad, (GGUF_ALIGN - h.len % GGUF_ALIGN) % GGUF_ALIGN);
    if (h.oom || kv.oom || !(row = malloc(row_max))) {
        tg_error_set(err, "out of memory");
        goto done;
    }

    /* the file: the header, then the data row by row */
    tg_atomic_file af;
    if (tg_atomic_begin(&af, path, err)) goto done;
    int wrc = tg_atomic_write(&af, h.p, h.len, err);
    for (int i = 0; !wrc && i < nt; i++) {
        const uint64_t rb = ts[i].nbytes / (uint64_t)ts[i].ne[1];
        for (int64_t r = 0; !wrc && r < ts[i].ne[1]; r++) {
            encode_row(&ts[i], r, zeros, row);
            wrc = tg_atomic_write(&af, row, rb, err);
        }
        if (!wrc) wrc = tg_atomic_write(&af, pad, (GGUF_ALIGN - ts[i].nbytes % GGUF_ALIGN) % GGUF_ALIGN, err);
    }
    if (!wrc) wrc = tg_atomic_commit(&af, err);
    if (wrc) {
        tg_atomic_abort(&af);
        goto done;
    }
    rc = 0;
done:
    free(row);
    free(zeros);
    free(ts);
    free(h.p);
    free(kv.p);
    tg_gguf_vocab_free(&gv);
    tg_vocab_release(&v);
    tg_model_release(&m);
    return rc;
}
