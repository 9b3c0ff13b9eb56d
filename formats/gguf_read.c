/* GGUF files written by others (llama.cpp's converters, gguf-py, tapegrad)
 * to checkpoints (tg_gguf_import, formats/formats.h), from the file's
 * parts (formats/gguf_parse.c) and its tokenizer (formats/gguf_read_vocab.c).
 * What tapegrad cannot run is refused naming the key or tensor, before
 * anything is written:
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
#include "gguf_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"

/* Tensor t's values into the parameter p, whose shape must be t's
 * (GGUF lists dimensions fastest first); every value finite. */
static int load_tensor(const gguf *g, const tinfo *t, tg_tensor *p, tg_error *err)
{
    char sb[TG_SHOWN_SIZE];
    const char *name = tg_gguf_shown(t->name, sb);
    bool same = (int)t->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = t->dims[d] == (uint64_t)p->shape[p->ndim - 1 - d];
    if (!same) {
        char want[64];
        return tg_error_set(err,
                            "tensor '%s' has %u dimensions [%llu, %llu, ...] where the model's config "
                            "makes it %s (GGUF lists the fastest first)",
                            name, t->ndim, (unsigned long long)t->dims[0],
                            (unsigned long long)(t->ndim > 1 ? t->dims[1] : 1), tg_shape_str(p, want, sizeof want)),
               -1;
    }
    const unsigned char *q = g->data + t->offset;
    for (int64_t i = 0; i < p->numel; i++) {
        const float x = tg_gguf_value_at(q, t->type, i);
        if (!isfinite(x))
            return tg_error_set(err, "tensor '%s' holds %g at element %lld", name, (double)x, (long long)i), -1;
        tg_tensor_set(p, i, x);
    }
    return 0;
}

/* ---- the Llama ----------------------------------------------------------------- */

static int read_config(const gguf *g, tg_model_config *c, tg_error *err)
{
    char sb[TG_SHOWN_SIZE];
    static const char *const INTS[6] = {"llama.embedding_length", "llama.feed_forward_length",
                                        "llama.block_count",      "llama.attention.head_count",
                                        "llama.context_length",   "llama.attention.head_count_kv"};
    int64_t v[6];
    for (int i = 0; i < 6; i++) {
        const int rc = tg_gguf_get_int(g, INTS[i], 1, 1 << 24, &v[i], err);
        if (rc < 0) return -1;
        if (rc > 0 && i < 5) return tg_error_set(err, "the file has no '%s'", INTS[i]), -1;
        if (rc > 0) v[5] = v[3]; /* no head_count_kv: as many as heads */
    }
    double eps, theta = 10000;
    if (tg_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &eps, err))
        return tg_error_set(err, "the file has no number 'llama.attention.layer_norm_rms_epsilon'"), -1;
    if (tg_gguf_get_float(g, "llama.rope.freq_base", &theta, err) < 0) return -1;
    str s;
    if (tg_gguf_get_str(g, "llama.rope.scaling.type", &s) && !tg_gguf_str_is(s, "none"))
        return tg_error_set(err, "key 'llama.rope.scaling.type' is '%s': tapegrad runs RoPE without scaling",
                            tg_gguf_shown(s, sb)),
               -1;
    const kv *scale = tg_gguf_find(g, "llama.rope.scaling.factor");
    double factor = 1;
    if (scale && (tg_gguf_get_float(g, "llama.rope.scaling.factor", &factor, err) || factor != 1))
        return tg_error_set(err,
                            "key 'llama.rope.scaling.factor' is not 1: tapegrad runs RoPE without "
                            "scaling"),
               -1;
    const tinfo *emb = tg_gguf_find_tensor(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) return tg_error_set(err, "the file has no 2-D tensor 'token_embd.weight'"), -1;
    if (emb->dims[1] > (1 << 24))
        return tg_error_set(err, "'token_embd.weight' has %llu rows", (unsigned long long)emb->dims[1]), -1;
    *c = (tg_model_config){.arch = "llama",
                           .n_embd = (int)v[0],
                           .hidden_dim = (int)v[1],
                           .n_layer = (int)v[2],
                           .n_head = (int)v[3],
                           .block_size = (int)v[4],
                           .n_kv_head = (int)v[5],
                           .vocab_size = (int)emb->dims[1],
                           .rope_theta = theta,
                           .norm_eps = eps,
                           .tied = !tg_gguf_find_tensor(g, "output.weight")};
    int64_t rot;
    const int rc = tg_gguf_get_int(g, "llama.rope.dimension_count", 1, 1 << 24, &rot, err);
    if (rc < 0) return -1;
    if (rc == 0 && (c->n_embd % c->n_head || rot != c->n_embd / c->n_head))
        return tg_error_set(err,
                            "key 'llama.rope.dimension_count' = %lld is not the head size %d / %d: "
                            "tapegrad rotates whole heads",
                            (long long)rot, c->n_embd, c->n_head),
               -1;
    if (tg_model_num_params(c) < 0)
        return tg_error_set(err,
                            "the hyperparameters (embedding %d, feed forward %d, %d blocks, %d heads, %d kv "
                            "heads, context %d, vocabulary %d) are not a Llama tapegrad builds",
                            c->n_embd, c->hidden_dim, c->n_layer, c->n_head, c->n_kv_head, c->block_size,
                            c->vocab_size),
               -1;
    return 0;
}

/* ---- the GPT (llama.cpp's gpt2) --------------------------------------------- */

/* GGUF's names for a GPT block's parts (per layer: "blk.N." + name + ".weight" / ".bias") */
static const char *const GPT_PARTS[6][2] = {{"ln_1", "attn_norm"},          {"attn.c_attn", "attn_qkv"},
                                            {"attn.c_proj", "attn_output"}, {"ln_2", "ffn_norm"},
                                            {"mlp.c_fc", "ffn_up"},         {"mlp.c_proj", "ffn_down"}};

/* 1 when tensor t holds only zeros */
static bool all_zero(const gguf *g, const tinfo *t)
{
    for (uint64_t i = 0; i < t->numel; i++)
        if (tg_gguf_value_at(g->data + t->offset, t->type, (int64_t)i) != 0) return false;
    return true;
}

/* A GPT's config from the gpt2.* keys and its tensors: llama.cpp's gpt2
 * (LayerNorm with biases, eps 1e-5, a 4 C MLP with the tanh GELU, the
 * head tied to token_embd). A file whose biases are all zero (tapegrad's
 * export of a GPT without) is a GPT without biases. */
static int read_config_gpt(const gguf *g, tg_model_config *c, tg_error *err)
{
    static const char *const INTS[5] = {"gpt2.embedding_length", "gpt2.feed_forward_length", "gpt2.block_count",
                                        "gpt2.attention.head_count", "gpt2.context_length"};
    int64_t v[5], kv_heads;
    for (int i = 0; i < 5; i++) {
        const int rc = tg_gguf_get_int(g, INTS[i], 1, 1 << 24, &v[i], err);
        if (rc < 0) return -1;
        if (rc > 0) return tg_error_set(err, "the file has no '%s'", INTS[i]), -1;
    }
    if (v[1] != 4 * v[0])
        return tg_error_set(err,
                            "key 'gpt2.feed_forward_length' = %lld is not 4 x the embedding %lld: "
                            "tapegrad's GPT has a 4 C MLP",
                            (long long)v[1], (long long)v[0]),
               -1;
    const int rc = tg_gguf_get_int(g, "gpt2.attention.head_count_kv", 1, 1 << 24, &kv_heads, err);
    if (rc < 0) return -1;
    if (rc == 0 && kv_heads != v[3])
        return tg_error_set(err,
                            "key 'gpt2.attention.head_count_kv' = %lld is not the head count %lld: "
                            "tapegrad's GPT has no grouped-query attention",
                            (long long)kv_heads, (long long)v[3]),
               -1;
    double eps;
    if (tg_gguf_get_float(g, "gpt2.attention.layer_norm_epsilon", &eps, err))
        return tg_error_set(err, "the file has no number 'gpt2.attention.layer_norm_epsilon'"), -1;
    if ((float)eps != (float)TG_LAYERNORM_EPS) /* shown with the float32's digits, which tell the two apart */
        return tg_error_set(err,
                            "key 'gpt2.attention.layer_norm_epsilon' is %.9g as a float32: tapegrad's "
                            "LayerNorm has eps %g (%.9g as a float32)",
                            (double)(float)eps, TG_LAYERNORM_EPS, (double)(float)TG_LAYERNORM_EPS),
               -1;
    const tinfo *emb = tg_gguf_find_tensor(g, "token_embd.weight");
    if (!emb || emb->ndim != 2) return tg_error_set(err, "the file has no 2-D tensor 'token_embd.weight'"), -1;
    if (emb->dims[1] > (1 << 24))
        return tg_error_set(err, "'token_embd.weight' has %llu rows", (unsigned long long)emb->dims[1]), -1;
    const tinfo *out = tg_gguf_find_tensor(g, "output.weight");
    if (out &&
        (out->type != emb->type || out->ndim != emb->ndim || out->dims[0] != emb->dims[0] ||
         out->dims[1] != emb->dims[1] || memcmp(g->data + out->offset, g->data + emb->offset, emb->nbytes)))
        return tg_error_set(err,
                            "tensor 'output.weight' is not 'token_embd.weight': tapegrad's GPT ties its "
                            "head to the token embedding"),
               -1;
    *c = (tg_model_config){.arch = "gpt",
                           .n_embd = (int)v[0],
                           .n_layer = (int)v[2],
                           .n_head = (int)v[3],
                           .block_size = (int)v[4],
                           .vocab_size = (int)emb->dims[1],
                           .gelu = TG_GELU_TANH};
    /* the biases: all in the file (llama.cpp requires them); all zero makes a GPT without */
    bool zero = true;
    char name[96];
    for (int l = 0; l <= c->n_layer; l++)
        for (int k = 0; k < (l < c->n_layer ? 6 : 1); k++) {
            if (l < c->n_layer) snprintf(name, sizeof name, "blk.%d.%s.bias", l, GPT_PARTS[k][1]);
            else snprintf(name, sizeof name, "output_norm.bias");
            const tinfo *t = tg_gguf_find_tensor(g, name);
            if (!t) return tg_error_set(err, "the file has no tensor '%s' (llama.cpp's gpt2 requires it)", name), -1;
            zero = zero && all_zero(g, t);
        }
    c->bias = !zero;
    if (tg_model_num_params(c) < 0)
        return tg_error_set(err,
                            "the hyperparameters (embedding %d, %d blocks, %d heads, context %d, "
                            "vocabulary %d) are not a GPT tapegrad builds",
                            c->n_embd, c->n_layer, c->n_head, c->block_size, c->vocab_size),
               -1;
    return 0;
}

/* ---- the tensors a model needs ------------------------------------------------ */

/* GGUF tensor of a model's part: llama.cpp's name, tapegrad's parameter
 * (empty: none, a GPT's bias when it has none) and ggml's dimensions
 * (fastest first: PyTorch's (out, in) is [in, out]). */
typedef struct need {
    char gguf[96], param[96];
    uint32_t ndim;
    uint64_t dims[2];
} need;

/* Tensor i of config c's model into *n, in llama.cpp's order; false past the last. */
static bool needed(const tg_model_config *c, bool gpt, int64_t i, need *n)
{
    static const char *const LLAMA[9][2] = {
        {"attn_norm", "attention_norm"}, {"attn_q", "attention.wq"},      {"attn_k", "attention.wk"},
        {"attn_v", "attention.wv"},      {"attn_output", "attention.wo"}, {"ffn_norm", "ffn_norm"},
        {"ffn_gate", "feed_forward.w1"}, {"ffn_down", "feed_forward.w2"}, {"ffn_up", "feed_forward.w3"}};
    const uint64_t C = (uint64_t)c->n_embd, L = (uint64_t)c->n_layer, V = (uint64_t)c->vocab_size,
                   H = gpt ? 4 * C : (uint64_t)c->hidden_dim, KV = C / (uint64_t)c->n_head * (uint64_t)c->n_kv_head;
    const uint64_t at = (uint64_t)i, blocks = gpt ? 2 + 12 * L : 1 + 9 * L;
    *n = (need){.ndim = 2, .dims = {C, V}};
    if (at == 0)
        return snprintf(n->gguf, 96, "token_embd.weight"),
               snprintf(n->param, 96, gpt ? "transformer.wte.weight" : "tok_embeddings.weight"), true;
    if (gpt && at == 1)
        return n->dims[1] = (uint64_t)c->block_size, snprintf(n->gguf, 96, "position_embd.weight"),
               snprintf(n->param, 96, "transformer.wpe.weight"), true;
    if (at < blocks && !gpt) {
        const uint64_t l = (at - 1) / 9, k = (at - 1) % 9;
        const uint64_t dims[9][2] = {{C, 0}, {C, C}, {C, KV}, {C, KV}, {C, C}, {C, 0}, {C, H}, {H, C}, {C, H}};
        snprintf(n->gguf, 96, "blk.%llu.%s.weight", (unsigned long long)l, LLAMA[k][0]);
        snprintf(n->param, 96, "layers.%llu.%s.weight", (unsigned long long)l, LLAMA[k][1]);
        n->ndim = dims[k][1] ? 2 : 1, n->dims[0] = dims[k][0], n->dims[1] = dims[k][1];
        return true;
    }
    if (at < blocks) { /* a GPT's block: each part's weight, then its bias */
        const uint64_t l = (at - 2) / 12, k = (at - 2) % 12 / 2, bias = (at - 2) % 2;
        const uint64_t dims[6][2] = {{C, 0}, {C, 3 * C}, {C, C}, {C, 0}, {C, H}, {H, C}};
        snprintf(n->gguf, 96, "blk.%llu.%s.%s", (unsigned long long)l, GPT_PARTS[k][1], bias ? "bias" : "weight");
        if (!bias || c->bias)
            snprintf(n->param, 96, "transformer.h.%llu.%s.%s", (unsigned long long)l, GPT_PARTS[k][0],
                     bias ? "bias" : "weight");
        n->ndim = bias || !dims[k][1] ? 1 : 2;
        n->dims[0] = bias && dims[k][1] ? dims[k][1] : dims[k][0], n->dims[1] = bias ? 0 : dims[k][1];
        return true;
    }
    const bool norm_bias = gpt && at == blocks + 1;
    if (at == blocks || norm_bias) {
        snprintf(n->gguf, 96, "output_norm.%s", norm_bias ? "bias" : "weight");
        if (!norm_bias || c->bias)
            snprintf(n->param, 96, gpt ? "transformer.ln_f.%s" : "norm.%s", norm_bias ? "bias" : "weight");
        return n->ndim = 1, n->dims[1] = 0, true;
    }
    if (gpt || c->tied || at != blocks + 1) return false;
    return snprintf(n->gguf, 96, "output.weight"), snprintf(n->param, 96, "output.weight"), true;
}

/* t's dimensions as "[a, b]" */
static const char *dims_of(const tinfo *t, char buf[96])
{
    int o = snprintf(buf, 96, "[");
    for (uint32_t d = 0; d < t->ndim; d++)
        o += snprintf(buf + o, (size_t)(96 - o), "%s%llu", d ? ", " : "", (unsigned long long)t->dims[d]);
    snprintf(buf + o, (size_t)(96 - o), "]");
    return buf;
}

/* Every tensor c's model needs is in the file, of its shape: then the
 * model holds no more values than the file's tensors (whose bytes
 * tg_gguf_place_data found distinct), so building it costs memory in
 * proportion to the file. Checked before the model is built. */
static int check_tensors(const gguf *g, const tg_model_config *c, bool gpt, tg_error *err)
{
    need n;
    for (int64_t i = 0; needed(c, gpt, i, &n); i++) {
        const tinfo *t = tg_gguf_find_tensor(g, n.gguf);
        if (!t)
            return tg_error_set(err, "the file has no tensor '%s' (%s)", n.gguf,
                                gpt ? "llama.cpp's gpt2 "
                                      "requires it"
                                    : "the Llama its keys describe has it"),
                   -1;
        if (t->ndim != n.ndim || t->dims[0] != n.dims[0] || (n.ndim == 2 && t->dims[1] != n.dims[1])) {
            char have[96], want[96];
            const tinfo w = {.ndim = n.ndim, .dims = {n.dims[0], n.dims[1]}};
            return tg_error_set(err,
                                "tensor '%s' is %s where the model its keys describe has %s (GGUF "
                                "lists the fastest dimension first)",
                                n.gguf, dims_of(t, have), dims_of(&w, want)),
                   -1;
        }
    }
    return 0;
}

/* The file's tensors into m's parameters, each of which one holds. */
static int load_weights(const gguf *g, tg_model *m, bool gpt, tg_error *err)
{
    need n;
    int64_t loaded = 0;
    for (int64_t i = 0; needed(&m->config, gpt, i, &n); i++) {
        if (!n.param[0]) continue;
        tg_tensor *p = tg_params_get(m->params, n.param);
        if (!p) return tg_error_set(err, "gguf_import: the model has no parameter '%s'", n.param), -1;
        if (load_tensor(g, tg_gguf_find_tensor(g, n.gguf), p, err)) return -1;
        loaded++;
    }
    if (loaded != tg_params_count(m->params)) /* a family of another layout under the name */
        return tg_error_set(err, "gguf_import: the %s has %lld parameters, the file's tensors fill %lld",
                            m->config.arch, (long long)tg_params_count(m->params), (long long)loaded),
               -1;
    return 0;
}

/* ---- the import -------------------------------------------------------------------- */

int tg_gguf_import(const char *path, const char *ckpt_path, tg_dtype dt, tg_error *err)
{
    if (!path || !ckpt_path)
        return tg_error_set(err, "gguf_import: the %s is NULL", path ? "checkpoint path" : "GGUF path"), -1;
    if (dt != TG_F32 && dt != TG_F64) return tg_error_set(err, "gguf_import: the dtype must be f32 or f64"), -1;
    size_t len;
    char *buf = tg_file_read(path, &len, err);
    if (!buf) return -1;
    gguf g = {.buf = (const unsigned char *)buf, .len = len};
    tg_model m = {0};
    tg_vocab v = {0};
    tg_model_config c;
    str arch;
    int rc = -1;
    tg_error e2 = {0};
    char sb[TG_SHOWN_SIZE];
    if (tg_gguf_parse(&g, &e2) || tg_gguf_place_data(&g, &e2)) goto fail;
    if (!tg_gguf_get_str(&g, "general.architecture", &arch)) {
        tg_error_set(&e2, "the file has no string 'general.architecture'");
        goto fail;
    }
    const bool gpt = tg_gguf_str_is(arch, "gpt2");
    if (!gpt && !tg_gguf_str_is(arch, "llama")) {
        tg_error_set(&e2, "key 'general.architecture' is '%s': tapegrad imports 'llama' and 'gpt2'",
                     tg_gguf_shown(arch, sb));
        goto fail;
    }
    if ((gpt ? read_config_gpt(&g, &c, &e2) : read_config(&g, &c, &e2)) || check_tensors(&g, &c, gpt, &e2) ||
        tg_gguf_read_vocab(&g, c.vocab_size, gpt, &v, &e2) || tg_model_init(&m, &c, dt, TG_NO_INIT, &e2) ||
        load_weights(&g, &m, gpt, &e2))
        goto fail;
    const char *meta[2] = {"imported_from", "gguf"};
    rc = tg_checkpoint_save(ckpt_path, &(tg_checkpoint){.model = &m, .vocab = &v, .meta = meta, .n_meta = 1}, err);
    goto done;
fail:
    tg_error_set(err, "%s: %s", path, e2.msg);
done:
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_gguf_release(&g);
    free(buf);
    return rc;
}
