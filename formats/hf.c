/* The Hugging Face layout: a model directory as transformers reads and
 * writes one, to and from a tapegrad checkpoint.
 *
 *   config.json              the architecture and its sizes
 *   model.safetensors        the weights under transformers' names, or
 *   model-0000k-of-0000n.safetensors + model.safetensors.index.json
 *                            ({"weight_map": {name: file}}) for shards
 *   tokenizer.json           the tokenizers library's format (or GPT-2's
 *   (vocab.json, merges.txt)  older pair of files)
 *   tokenizer_config.json, generation_config.json   (written on export)
 *
 * Two families, each with its names and layouts below:
 *
 *   GPT2LMHeadModel   tapegrad's GPT. transformers' GPT-2 projections are
 *                     Conv1D modules whose weight is stored (in, out), the
 *                     transpose of tapegrad's (out, in) linear weights.
 *                     The head is tied to wte. GPT-2 computes GELU with the
 *                     tanh form ("gelu_new", tapegrad's gelu "tanh"),
 *                     nanoGPT with the exact erf form ("gelu", tapegrad's
 *                     default "erf"); each is read and written as itself.
 *   LlamaForCausalLM  tapegrad's Llama. transformers rotates q and k by
 *                     halves (rotate_half: pairs (i, i + d/2) of a head),
 *                     Meta's and llama2.c's checkpoints by interleaved
 *                     pairs (2i, 2i + 1): a tapegrad Llama with interleaved
 *                     pairs is exported with its q and k rows permuted
 *                     within each head so the halves pairing computes the
 *                     same function (as transformers' and llama.cpp's
 *                     convert scripts do), and one read from the layout is
 *                     a Llama with rope "halves", whose rows need nothing.
 *
 * What a Hugging Face config cannot say about a tapegrad model (a GPT
 * without biases; a Llama whose pairs were interleaved, written as
 * "rope_permuted_from": "interleaved" since the file's rows are in the
 * halves order) goes into config.json's "tapegrad" object, which
 * transformers ignores and the import reads back, so export then import
 * gives the same checkpoint bit for bit.
 *
 * The reader trusts nothing: each JSON file is read whole up to a limit,
 * every size comes from config.json and is checked against the tensors'
 * own shapes before a model is built, so a crafted directory costs time
 * and memory in proportion to its files. */
#define _POSIX_C_SOURCE 200809L
#include "formats.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"
#include "../text/text_internal.h"
#include "gpt2_internal.h"
#include "hf_files_internal.h"
#include "hf_tokenizer_internal.h"
#include "options_internal.h"

#define HF_MAX_SHARDS 4096

/* config.json's fields, each refused naming its key. */
typedef struct cfg_reader {
    const cJSON *j;
    tg_error *err;
} cfg_reader;

static int cfg_fail(const cfg_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cfg_fail(const cfg_reader *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tg_error_set(r->err, "hf: config.json: %s", msg);
}

static const cJSON *cfg_get(const cfg_reader *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->j, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer in [lo, hi]: the first of keys present (alternative names),
 * or def when none is and def >= lo. */
static int cfg_int(const cfg_reader *r, const char *key, const char *alt, int lo, int hi, int def, int *out)
{
    const cJSON *v = cfg_get(r, key);
    const char *k = key;
    if (!v && alt) v = cfg_get(r, k = alt);
    if (!v) {
        if (def >= lo) return *out = def, 0;
        return cfg_fail(r, "no '%s' (the model's size cannot be known without it)", key);
    }
    const double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo && d <= hi && d == floor(d)))
        return cfg_fail(r, "'%s' is not an integer in [%d, %d]", k, lo, hi);
    *out = (int)d;
    return 0;
}

static int cfg_double(const cfg_reader *r, const char *key, double lo, double hi, double def, double *out)
{
    const cJSON *v = cfg_get(r, key);
    if (!v) {
        if (def >= lo) return *out = def, 0;
        return cfg_fail(r, "no '%s'", key);
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return cfg_fail(r, "'%s' is not a number in [%g, %g]", key, lo, hi);
    *out = v->valuedouble;
    return 0;
}

/* key absent, null, or the boolean want. */
static int cfg_bool_is(const cfg_reader *r, const char *key, bool want, bool def, const char *why)
{
    const cJSON *v = cfg_get(r, key);
    if (!v && def == want) return 0;
    if (v && cJSON_IsBool(v) && cJSON_IsTrue(v) == want) return 0;
    return cfg_fail(r, "'%s' must be %s: %s", key, want ? "true" : "false", why);
}

/* ---- the weights: one file or shards --------------------------------------- */

typedef struct hf_shard_ix { char *key; int value; } hf_shard_ix;

typedef struct hf_weights {
    tg_st_file **files;      /* stb_ds array */
    char **names;            /* the files' names, for messages */
    hf_shard_ix *where;      /* tensor name -> file (with an index), stb_ds string map */
    bool indexed;
} hf_weights;

static void weights_free(hf_weights *w)
{
    for (ptrdiff_t i = 0; i < stbds_arrlen(w->files); i++) {
        tg_st_free(w->files[i]);
        tg_free(w->names[i]);
    }
    stbds_arrfree(w->files);
    stbds_arrfree(w->names);
    stbds_shfree(w->where);
    memset(w, 0, sizeof *w);
}

static int weights_add_file(hf_weights *w, const char *dir, const char *name, tg_error *err)
{
    if (tg_hf_stat(dir, name, err) < 0) return -1;   /* tg_st_load's open would wait on a pipe */
    char *p = tg_hf_path(dir, name), *copy = tg_malloc(strlen(name) + 1);
    tg_st_file *f = p && copy ? tg_st_load(p, err) : NULL;
    if (!p || !copy) tg_error_set(err, "hf: out of memory");
    tg_free(p);
    if (!f) {
        tg_free(copy);
        return -1;
    }
    strcpy(copy, name);
    stbds_arrput(w->files, f);
    stbds_arrput(w->names, copy);
    return 0;
}

/* A shard's name from the index: a plain file name in the directory. */
static bool shard_name_ok(const char *s)
{
    const size_t n = strlen(s);
    return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int weights_open(hf_weights *w, const char *dir, tg_error *err)
{
    memset(w, 0, sizeof *w);
    stbds_sh_new_strdup(w->where);
    const int ix_there = tg_hf_stat(dir, "model.safetensors.index.json", err);
    if (ix_there < 0) return -1;
    if (!ix_there) {
        const int there = tg_hf_stat(dir, "model.safetensors", err);
        if (!there)
            return tg_error_set(err, "hf: %s has neither model.safetensors nor model.safetensors.index.json "
                                     "(a Hugging Face model directory holds its weights in one of them)", dir);
        return there < 0 ? -1 : weights_add_file(w, dir, "model.safetensors", err);
    }
    w->indexed = true;
    cJSON *ix = tg_hf_read_json(dir, "model.safetensors.index.json", false, err);
    if (!ix) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(ix, "weight_map");
    int rc = 0;
    hf_shard_ix *file_ix = NULL;   /* shard name -> index into w->files */
    stbds_sh_new_strdup(file_ix);
    if (!cJSON_IsObject(map))
        rc = tg_error_set(err, "hf: %s/model.safetensors.index.json has no \"weight_map\" object", dir);
    for (const cJSON *e = map ? map->child : NULL; !rc && e; e = e->next) {
        char shown[TG_SHOWN_SIZE];
        if (!cJSON_IsString(e) || !shard_name_ok(e->valuestring)) {
            rc = tg_error_set(err, "hf: model.safetensors.index.json: tensor '%s' is in '%s', not a file name in "
                                   "the directory", tg_shown(e->string, shown),
                              cJSON_IsString(e) ? e->valuestring : "(not a string)");
            break;
        }
        if (stbds_shgeti(w->where, e->string) >= 0) {
            rc = tg_error_set(err, "hf: model.safetensors.index.json: tensor '%s' appears twice",
                              tg_shown(e->string, shown));
            break;
        }
        ptrdiff_t k = stbds_shgeti(file_ix, e->valuestring);
        if (k < 0) {
            if (stbds_arrlen(w->files) == HF_MAX_SHARDS) {
                rc = tg_error_set(err, "hf: model.safetensors.index.json names more than %d files", HF_MAX_SHARDS);
                break;
            }
            if ((rc = weights_add_file(w, dir, e->valuestring, err))) break;
            stbds_shput(file_ix, e->valuestring, (int)stbds_arrlen(w->files) - 1);
            k = stbds_shgeti(file_ix, e->valuestring);
        }
        stbds_shput(w->where, e->string, file_ix[k].value);
    }
    stbds_shfree(file_ix);
    cJSON_Delete(ix);
    return rc;
}

static const tg_st_tensor *weights_find(const hf_weights *w, const char *name)
{
    if (!w->indexed) return tg_st_find(w->files[0], name);
    const ptrdiff_t i = stbds_shgeti(((hf_weights *)w)->where, name);
    return i < 0 ? NULL : tg_st_find(w->files[w->where[i].value], name);
}

static bool float_dtype(const char *d)
{
    return !strcmp(d, "F32") || !strcmp(d, "F64") || !strcmp(d, "F16") || !strcmp(d, "BF16");
}

/* ---- one family's names: a tapegrad parameter and its transformers tensor ---- */

typedef enum hf_layout {
    HF_SAME,        /* the same shape and order */
    HF_TRANSPOSE,   /* a Conv1D weight: (in, out) in the file, (out, in) here */
    HF_ROPE_ROWS    /* q or k of an interleaved Llama: rows permuted within each head */
} hf_layout;

typedef struct hf_map {
    char tg[160], hf[160];
    hf_layout layout;
    int heads;   /* HF_ROPE_ROWS: the heads the rows are cut into */
} hf_map;

/* GPT-2's block i. prefix is "transformer." (GPT2LMHeadModel's state
 * dict) or "" (GPT2Model's, as the files Hugging Face publishes name them). */
static void gpt2_layer_names(const tg_model_config *c, const char *prefix, int i, hf_map **out)
{
    static const struct { const char *part; hf_layout layout; } block[] = {
        {"ln_1.weight", HF_SAME},        {"ln_1.bias", HF_SAME},
        {"attn.c_attn.weight", HF_TRANSPOSE}, {"attn.c_attn.bias", HF_SAME},
        {"attn.c_proj.weight", HF_TRANSPOSE}, {"attn.c_proj.bias", HF_SAME},
        {"ln_2.weight", HF_SAME},        {"ln_2.bias", HF_SAME},
        {"mlp.c_fc.weight", HF_TRANSPOSE},    {"mlp.c_fc.bias", HF_SAME},
        {"mlp.c_proj.weight", HF_TRANSPOSE},  {"mlp.c_proj.bias", HF_SAME},
    };
    hf_map m = {0};
    for (size_t k = 0; k < sizeof block / sizeof *block; k++) {
        const bool is_bias = strstr(block[k].part, ".bias") != NULL;
        if (is_bias && !c->bias) continue;
        m.layout = block[k].layout;
        snprintf(m.tg, sizeof m.tg, "transformer.h.%d.%s", i, block[k].part);
        snprintf(m.hf, sizeof m.hf, "%sh.%d.%s", prefix, i, block[k].part);
        stbds_arrput(*out, m);
    }
}

/* GPT-2 (prefix as above). */
static void gpt2_names(const tg_model_config *c, const char *prefix, hf_map **out)
{
    hf_map m = {0};
    snprintf(m.tg, sizeof m.tg, "transformer.wte.weight");
    snprintf(m.hf, sizeof m.hf, "%swte.weight", prefix);
    stbds_arrput(*out, m);
    snprintf(m.tg, sizeof m.tg, "transformer.wpe.weight");
    snprintf(m.hf, sizeof m.hf, "%swpe.weight", prefix);
    stbds_arrput(*out, m);
    for (int i = 0; i < c->n_layer; i++) gpt2_layer_names(c, prefix, i, out);
    snprintf(m.tg, sizeof m.tg, "transformer.ln_f.weight");
    snprintf(m.hf, sizeof m.hf, "%sln_f.weight", prefix);
    stbds_arrput(*out, m);
    if (c->bias) {
        snprintf(m.tg, sizeof m.tg, "transformer.ln_f.bias");
        snprintf(m.hf, sizeof m.hf, "%sln_f.bias", prefix);
        stbds_arrput(*out, m);
    }
}

/* GPT-2's tensors that are not parameters (the causal mask buffers older
 * transformers saved), skipped on import. */
static bool gpt2_buffer(const char *name)
{
    const size_t n = strlen(name);
    return (n > 10 && !strcmp(name + n - 10, ".attn.bias")) || (n > 17 && !strcmp(name + n - 17, ".attn.masked_bias"));
}

/* LlamaForCausalLM's layer i. */
static void llama_layer_names(const tg_model_config *c, int i, hf_map **out)
{
    static const struct { const char *tg, *hf; int rope; } layer[] = {
        {"attention.wq.weight", "self_attn.q_proj.weight", 1}, {"attention.wk.weight", "self_attn.k_proj.weight", 2},
        {"attention.wv.weight", "self_attn.v_proj.weight", 0}, {"attention.wo.weight", "self_attn.o_proj.weight", 0},
        {"feed_forward.w1.weight", "mlp.gate_proj.weight", 0}, {"feed_forward.w2.weight", "mlp.down_proj.weight", 0},
        {"feed_forward.w3.weight", "mlp.up_proj.weight", 0},   {"attention_norm.weight", "input_layernorm.weight", 0},
        {"ffn_norm.weight", "post_attention_layernorm.weight", 0},
    };
    hf_map m = {0};
    for (size_t k = 0; k < sizeof layer / sizeof *layer; k++) {
        m.layout = layer[k].rope && !c->rope_halves ? HF_ROPE_ROWS : HF_SAME;
        m.heads = layer[k].rope == 1 ? c->n_head : c->n_kv_head;
        snprintf(m.tg, sizeof m.tg, "layers.%d.%s", i, layer[k].tg);
        snprintf(m.hf, sizeof m.hf, "model.layers.%d.%s", i, layer[k].hf);
        stbds_arrput(*out, m);
    }
}

/* LlamaForCausalLM. */
static void llama_names(const tg_model_config *c, hf_map **out)
{
    hf_map m = {0};
    snprintf(m.tg, sizeof m.tg, "tok_embeddings.weight");
    snprintf(m.hf, sizeof m.hf, "model.embed_tokens.weight");
    stbds_arrput(*out, m);
    for (int i = 0; i < c->n_layer; i++) llama_layer_names(c, i, out);
    snprintf(m.tg, sizeof m.tg, "norm.weight");
    snprintf(m.hf, sizeof m.hf, "model.norm.weight");
    stbds_arrput(*out, m);
    if (!c->tied) {
        snprintf(m.tg, sizeof m.tg, "output.weight");
        snprintf(m.hf, sizeof m.hf, "lm_head.weight");
        stbds_arrput(*out, m);
    }
}

/* Row r of an interleaved head (pair i = r / 2, member j = r % 2) is row
 * j d/2 + i of the same head in the halves order. dir 1 moves rows from
 * interleaved to halves order, -1 back; (rows, cols) elements of es bytes. */
static void permute_rope_rows(unsigned char *data, unsigned char *scratch, int64_t rows, int64_t cols, int heads,
                              size_t es, int dir)
{
    const int64_t d = rows / heads, rb = cols * (int64_t)es;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t r = 0; r < d; r++) {
            const int64_t halves = (r % 2) * (d / 2) + r / 2;
            const int64_t from = h * d + (dir > 0 ? r : halves), to = h * d + (dir > 0 ? halves : r);
            memcpy(scratch + to * rb, data + from * rb, (size_t)rb);
        }
    memcpy(data, scratch, (size_t)(rows * rb));
}

/* (rows, cols) -> (cols, rows), elements of es bytes. */
static void transpose(const unsigned char *src, unsigned char *dst, int64_t rows, int64_t cols, size_t es)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) memcpy(dst + (c * rows + r) * es, src + (r * cols + c) * es, es);
}

/* ---- the configs ---------------------------------------------------------------- */

/* The "tapegrad" object of config.json: what the layout cannot say. */
static const char *cfg_tapegrad_str(const cfg_reader *r, const char *key)
{
    const cJSON *t = cfg_get(r, "tapegrad");
    const cJSON *v = t ? cJSON_GetObjectItemCaseSensitive(t, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int gpt2_config(const cfg_reader *r, tg_model_config *c)
{
    c->arch = "gpt";
    c->tied = true;
    int inner = 0;
    double eps = 0;
    if (cfg_int(r, "n_layer", NULL, 1, 1 << 16, -1, &c->n_layer) ||
        cfg_int(r, "n_head", NULL, 1, 1 << 16, -1, &c->n_head) ||
        cfg_int(r, "n_embd", NULL, 1, 1 << 24, -1, &c->n_embd) ||
        cfg_int(r, "n_positions", "n_ctx", 1, 1 << 24, -1, &c->block_size) ||
        cfg_int(r, "vocab_size", NULL, 1, 1 << 24, -1, &c->vocab_size) ||
        cfg_int(r, "n_inner", NULL, 1, 1 << 28, 4 * c->n_embd, &inner) ||
        cfg_double(r, "layer_norm_epsilon", 0, 1, 1e-5, &eps) || cfg_double(r, "resid_pdrop", 0, 0.999, 0, &c->dropout))
        return -1;
    if (inner != 4 * c->n_embd)
        return cfg_fail(r, "'n_inner' %d is not 4 n_embd = %d (tapegrad's GPT has an MLP 4 n_embd wide)", inner,
                        4 * c->n_embd);
    if (eps != 1e-5)
        return cfg_fail(r, "'layer_norm_epsilon' %g is not 1e-05 (tapegrad's LayerNorm uses 1e-5)", eps);
    if (cfg_bool_is(r, "scale_attn_by_inverse_layer_idx", false, false, "tapegrad scales scores by 1/sqrt(head) only") ||
        cfg_bool_is(r, "scale_attn_weights", true, true, "tapegrad scales scores by 1/sqrt(head)") ||
        cfg_bool_is(r, "add_cross_attention", false, false, "tapegrad's GPT has no cross-attention") ||
        cfg_bool_is(r, "tie_word_embeddings", true, true, "tapegrad's GPT ties its head to wte"))
        return -1;
    const cJSON *act = cfg_get(r, "activation_function");
    const char *a = act && cJSON_IsString(act) ? act->valuestring : act ? "" : "gelu_new";
    if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh")) {
        c->gelu = TG_GELU_TANH;
    } else if (!strcmp(a, "gelu")) {
        c->gelu = TG_GELU_ERF;
    } else {
        char shown[TG_SHOWN_SIZE];
        return cfg_fail(r, "'activation_function' '%s' is not one tapegrad's GPT computes (gelu: exact erf; "
                        "gelu_new or gelu_pytorch_tanh: the tanh form)", tg_shown(a, shown));
    }
    const char *bias = cfg_tapegrad_str(r, "bias");
    c->bias = !bias || strcmp(bias, "false");
    return 0;
}

static int llama_config(const cfg_reader *r, tg_model_config *c)
{
    c->arch = "llama";
    int head_dim = 0;
    if (cfg_int(r, "num_hidden_layers", NULL, 1, 1 << 16, -1, &c->n_layer) ||
        cfg_int(r, "num_attention_heads", NULL, 1, 1 << 16, -1, &c->n_head) ||
        cfg_int(r, "num_key_value_heads", NULL, 1, 1 << 16, c->n_head, &c->n_kv_head) ||
        cfg_int(r, "hidden_size", NULL, 1, 1 << 24, -1, &c->n_embd) ||
        cfg_int(r, "intermediate_size", NULL, 1, 1 << 28, -1, &c->hidden_dim) ||
        cfg_int(r, "max_position_embeddings", NULL, 1, 1 << 24, -1, &c->block_size) ||
        cfg_int(r, "vocab_size", NULL, 1, 1 << 24, -1, &c->vocab_size) ||
        cfg_int(r, "head_dim", NULL, 1, 1 << 24, c->n_embd / c->n_head, &head_dim) ||
        cfg_double(r, "rms_norm_eps", 1e-30, 1, 1e-6, &c->norm_eps) ||
        cfg_double(r, "rope_theta", 1.0000001, 1e12, 10000, &c->rope_theta) ||
        cfg_double(r, "attention_dropout", 0, 0.999, 0, &c->dropout))
        return -1;
    if (c->n_embd % c->n_head || head_dim != c->n_embd / c->n_head)
        return cfg_fail(r, "'head_dim' %d is not hidden_size / num_attention_heads (%d / %d)", head_dim, c->n_embd,
                        c->n_head);
    if (cfg_get(r, "rope_scaling")) return cfg_fail(r, "'rope_scaling' is set: tapegrad's RoPE has no scaling");
    const cJSON *act = cfg_get(r, "hidden_act");
    if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        return cfg_fail(r, "'hidden_act' is not silu (tapegrad's Llama gates its MLP with SiLU)");
    if (cfg_bool_is(r, "attention_bias", false, false, "tapegrad's Llama has no biases") ||
        cfg_bool_is(r, "mlp_bias", false, false, "tapegrad's Llama has no biases"))
        return -1;
    const cJSON *tie = cfg_get(r, "tie_word_embeddings");
    c->tied = tie ? cJSON_IsTrue(tie) : true;   /* transformers' PretrainedConfig default */
    if (tie && !cJSON_IsBool(tie)) return cfg_fail(r, "'tie_word_embeddings' is not true or false");
    /* "rope_permuted_from": "interleaved": the export of an interleaved Llama, whose q and k rows go back;
     * "rope": "interleaved" is the older spelling of the same */
    const char *from = cfg_tapegrad_str(r, "rope_permuted_from"), *old = cfg_tapegrad_str(r, "rope");
    if (from && strcmp(from, "interleaved"))
        return cfg_fail(r, "'tapegrad.rope_permuted_from' is not \"interleaved\" (the only pairing export permutes from)");
    if (from && old && strcmp(old, "interleaved"))
        return cfg_fail(r, "'tapegrad.rope' \"%s\" contradicts 'tapegrad.rope_permuted_from'", old);
    c->rope_halves = !from && (!old || strcmp(old, "interleaved"));
    c->bias = false;
    return 0;
}

/* ---- import ---------------------------------------------------------------------- */

/* Every tensor the family needs, present with its shape, and no other
 * (but GPT-2's mask buffers); before a model is built. */
static bool all_zero(const tg_st_tensor *e)
{
    for (size_t i = 0; i < e->nbytes; i++)
        if (((const unsigned char *)e->data)[i]) return false;
    return true;
}

static int check_tensors(const hf_weights *w, const hf_map *maps, const tg_model_config *c, tg_error *err)
{
    hf_shard_ix *need = NULL;
    stbds_sh_new_strdup(need);
    int rc = 0;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) stbds_shput(need, maps[i].hf, (int)i);
    if (c->tied && !strcmp(c->arch, "llama")) stbds_shput(need, "lm_head.weight", -1);   /* the tied copy, if saved */
    if (!strcmp(c->arch, "gpt")) stbds_shput(need, "lm_head.weight", -1);
    for (ptrdiff_t f = 0; f < stbds_arrlen(w->files) && !rc; f++)
        for (int i = 0; i < tg_st_count(w->files[f]) && !rc; i++) {
            const tg_st_tensor *e = tg_st_at(w->files[f], i);
            char shown[TG_SHOWN_SIZE];
            const bool gpt = !strcmp(c->arch, "gpt"), skip = gpt && gpt2_buffer(e->name);
            /* a GPT without biases is exported with zero ones, which transformers' GPT-2 has */
            const size_t nl = strlen(e->name);
            const bool zero_bias = gpt && !c->bias && nl > 5 && !strcmp(e->name + nl - 5, ".bias") && all_zero(e);
            if (stbds_shgeti(need, e->name) < 0 && !skip && !zero_bias)
                rc = tg_error_set(err, "hf: %s holds '%s', which tapegrad's %s has no place for (another "
                                  "architecture, or a variant of it)", w->names[f], tg_shown(e->name, shown), c->arch);
            else if (!float_dtype(e->dtype) && !skip)
                rc = tg_error_set(err, "hf: %s: '%s' is %s; the reader takes F32, F64, F16 and BF16",
                                  w->names[f], tg_shown(e->name, shown), e->dtype);
        }
    stbds_shfree(need);
    return rc;
}

/* config.json's layer count against the files, before the table of
 * every tensor name is built (a few hundred bytes per name): when the
 * layers need more tensors than the files hold, the first one missing is
 * named, found by looking at the layers in order, which costs time in
 * proportion to the tensors present. */
static int check_layer_count(const hf_weights *w, const tg_model_config *c, const char *prefix, tg_error *err)
{
    const bool gpt = !strcmp(c->arch, "gpt");
    int64_t have = 0;
    for (ptrdiff_t f = 0; f < stbds_arrlen(w->files); f++) have += tg_st_count(w->files[f]);
    hf_map *one = NULL;
    int rc = 0;
    for (int i = 0; i < c->n_layer && !rc; i++) {
        stbds_arrfree(one);
        if (gpt) gpt2_layer_names(c, prefix, i, &one);
        else llama_layer_names(c, i, &one);
        if (i == 0 && (int64_t)c->n_layer * stbds_arrlen(one) <= have) break;   /* the names' table fits the files */
        for (ptrdiff_t k = 0; k < stbds_arrlen(one) && !rc; k++)
            if (!weights_find(w, one[k].hf))
                rc = tg_error_set(err, "hf: the weights have no '%s' (config.json describes %d layers)",
                                  one[k].hf, c->n_layer);
    }
    stbds_arrfree(one);
    return rc;
}

/* The shapes the config implies, from the counts alone (no model yet):
 * compared name by name with the file's tensors. */
static int check_shapes_before_build(const hf_weights *w, const hf_map *maps, const tg_model_config *c, tg_error *err)
{
    const int64_t C = c->n_embd, V = c->vocab_size;
    const int64_t Ckv = !strcmp(c->arch, "llama") ? (int64_t)c->n_kv_head * (C / c->n_head) : C;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) {
        const char *n = maps[i].tg;
        int64_t want[2] = {C, 0};
        int nd = 1;
        if (strstr(n, "wte.") || strstr(n, "tok_embeddings.") || strstr(n, "output.")) want[0] = V, want[1] = C, nd = 2;
        else if (strstr(n, "wpe.")) want[0] = c->block_size, want[1] = C, nd = 2;
        else if (strstr(n, "c_attn.weight")) want[0] = C, want[1] = 3 * C, nd = 2;
        else if (strstr(n, "c_attn.bias")) want[0] = 3 * C;
        else if (strstr(n, "attn.c_proj.weight")) want[0] = C, want[1] = C, nd = 2;
        else if (strstr(n, "c_fc.weight")) want[0] = C, want[1] = 4 * C, nd = 2;
        else if (strstr(n, "c_fc.bias")) want[0] = 4 * C;
        else if (strstr(n, "mlp.c_proj.weight")) want[0] = 4 * C, want[1] = C, nd = 2;
        else if (strstr(n, ".wq.") || strstr(n, ".wo.")) want[0] = C, want[1] = C, nd = 2;
        else if (strstr(n, ".wk.") || strstr(n, ".wv.")) want[0] = Ckv, want[1] = C, nd = 2;
        else if (strstr(n, ".w1.") || strstr(n, ".w3.")) want[0] = c->hidden_dim, want[1] = C, nd = 2;
        else if (strstr(n, ".w2.")) want[0] = C, want[1] = c->hidden_dim, nd = 2;
        const tg_st_tensor *e = weights_find(w, maps[i].hf);
        if (!e)
            return tg_error_set(err, "hf: the weights have no '%s' (config.json describes %d layers)", maps[i].hf,
                                c->n_layer);
        if (e->ndim != nd || e->shape[0] != want[0] || (nd == 2 && e->shape[1] != want[1])) {
            char s[64] = "", g[64] = "";
            snprintf(s, sizeof s, nd == 2 ? "(%lld,%lld)" : "(%lld)", (long long)want[0], (long long)want[1]);
            for (int d = 0; d < e->ndim && strlen(g) < 40; d++)
                snprintf(g + strlen(g), sizeof g - strlen(g), d ? ",%lld" : "(%lld", (long long)e->shape[d]);
            strcat(g, ")");
            return tg_error_set(err, "hf: '%s' is %s, but config.json says %s", maps[i].hf, e->ndim ? g : "()", s);
        }
    }
    return 0;
}

/* Fills parameter m->tg of the model from its file tensor, exactly. */
static int fill_param(const hf_weights *w, const hf_map *m, tg_model *model, tg_error *err)
{
    tg_tensor *t = tg_params_get(model->params, m->tg);
    tg_st_tensor e = *weights_find(w, m->hf);
    if (m->layout == HF_TRANSPOSE) {   /* read as (out, in) with the data still (in, out), then transposed */
        e.shape[0] = t->shape[0];
        e.shape[1] = t->shape[1];
    }
    if (tg_st_copy_to(&e, t, err)) return -1;
    for (int64_t i = 0; i < t->numel; i++)   /* a checkpoint holds finite weights only */
        if (!isfinite(tg_tensor_get(t, i)))
            return tg_error_set(err, "hf: '%s' holds %g at element %lld", m->hf, tg_tensor_get(t, i), (long long)i);
    if (m->layout == HF_SAME) return 0;
    const size_t es = tg_dtype_size(t->dtype);
    unsigned char *scratch = tg_malloc((size_t)t->numel * es);
    if (!scratch) return tg_error_set(err, "hf: out of memory");
    if (m->layout == HF_TRANSPOSE) {
        transpose(t->data, scratch, t->shape[1], t->shape[0], es);   /* (in, out) data -> (out, in) */
        memcpy(t->data, scratch, (size_t)t->numel * es);
    } else {
        permute_rope_rows(t->data, scratch, t->shape[0], t->shape[1], m->heads, es, -1);
    }
    tg_free(scratch);
    return 0;
}

int tg_hf_import(const char *dir, const char *ckpt_out, const tg_hf_import_options *opts, char *notice,
                 size_t notice_len, tg_error *err)
{
    if (notice && notice_len) notice[0] = 0;
    if (!dir || !ckpt_out) return tg_error_set(err, "hf_import: %s is NULL", dir ? "the output path" : "the directory");
    const tg_hf_import_options o = opts ? *opts : (tg_hf_import_options){0};
    cJSON *cj = tg_hf_read_json(dir, "config.json", true, err);
    if (!cj) return -1;
    cfg_reader r = {cj, err};
    tg_model_config c = {0};
    const cJSON *mt = cfg_get(&r, "model_type");
    const char *type = cJSON_IsString(mt) ? mt->valuestring : "";
    hf_weights w = {0};
    hf_map *maps = NULL;
    tg_model model = {0};
    tg_vocab v = {0};
    int rc = -1;
    char shown[TG_SHOWN_SIZE];
    if (!strcmp(type, "gpt2")) rc = gpt2_config(&r, &c);
    else if (!strcmp(type, "llama")) rc = llama_config(&r, &c);
    else
        tg_error_set(err, "hf: config.json: 'model_type' %s'%s' is not one tapegrad runs (gpt2, llama)",
                     mt ? "" : "is missing: ", tg_shown(type, shown));
    if (rc) goto out;
    rc = -1;
    if (tg_model_num_params(&c) < 0) {
        tg_error_set(err,
                     "hf: config.json describes a %s tapegrad cannot build (n_layer %d, n_head %d, n_embd %d, "
                     "block_size %d, vocab_size %d)",
                     c.arch, c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size);
        goto out;
    }
    if (weights_open(&w, dir, err)) goto out;
    const bool gpt = !strcmp(c.arch, "gpt");
    const char *prefix = gpt && weights_find(&w, "transformer.wte.weight") ? "transformer." : "";
    if (check_layer_count(&w, &c, prefix, err)) goto out;
    if (gpt) gpt2_names(&c, prefix, &maps);
    else llama_names(&c, &maps);
    if (check_tensors(&w, maps, &c, err) || check_shapes_before_build(&w, maps, &c, err))
        goto out;
    /* F64 weights make an f64 checkpoint; the others are exact in f32 */
    bool f64 = false;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) f64 |= !strcmp(weights_find(&w, maps[i].hf)->dtype, "F64");
    if (tg_model_init(&model, &c, f64 ? TG_F64 : TG_F32, TG_NO_INIT, err)) goto out;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++)
        if (fill_param(&w, &maps[i], &model, err)) goto out;
    /* a head saved beside a tied embedding must be that embedding */
    const tg_st_tensor *head = weights_find(&w, "lm_head.weight");
    if (head && c.tied) {
        const tg_st_tensor *emb = weights_find(&w, maps[0].hf);
        if (head->nbytes != emb->nbytes || strcmp(head->dtype, emb->dtype) || memcmp(head->data, emb->data, emb->nbytes)) {
            tg_error_set(err, "hf: lm_head.weight differs from %s, but this %s ties its head to the token "
                              "embedding", maps[0].hf, gpt ? "GPT-2" : "Llama (tie_word_embeddings)");
            goto out;
        }
    }
    /* the tokenizer: tokenizer.json (each of tapegrad's kinds) or GPT-2's vocab.json + merges.txt */
    int found = 0;
    const cJSON *bj = cfg_get(&r, "bos_token_id"), *ej = cfg_get(&r, "eos_token_id");
    const int32_t bos_id = cJSON_IsNumber(bj) && bj->valuedouble >= 0 && bj->valuedouble < c.vocab_size ? (int32_t)bj->valuedouble : -1;
    const int32_t eos_id = cJSON_IsNumber(ej) && ej->valuedouble >= 0 && ej->valuedouble < c.vocab_size ? (int32_t)ej->valuedouble : -1;
    if (tg_hf_tokenizer_read(dir, !gpt, bos_id, eos_id, &v, &found, notice, notice_len, err)) goto out;
    if (!found && !o.ids_only) {
        tg_error_set(err, "hf: %s has no tokenizer tapegrad reads (tokenizer.json%s); to import the weights with "
                          "bare ids, say the model is ids-only", dir, gpt ? ", or vocab.json and merges.txt" : "");
        goto out;
    }
    if (found && tg_vocab_check_size(&v, c.vocab_size, "the tokenizer's", err)) {
        tg_error_prefix(err, "hf");
        goto out;
    }
    if (found) v.size = c.vocab_size;
    else tg_vocab_ids(&v, c.vocab_size);
    char src[600];
    snprintf(src, sizeof src, "hugging face: %s", dir);
    const char *meta[2] = {"imported_from", src};
    rc = tg_checkpoint_save(ckpt_out, &(tg_checkpoint){.model = &model, .vocab = &v, .meta = meta, .n_meta = 1}, err);
out:
    tg_vocab_release(&v);
    tg_model_release(&model);
    stbds_arrfree(maps);
    weights_free(&w);
    cJSON_Delete(cj);
    return rc;
}

/* ---- export ---------------------------------------------------------------------- */

static cJSON *export_config(const tg_model_config *c, tg_dtype dt, int32_t bos, int32_t eos)
{
    cJSON *j = cJSON_CreateObject(), *arch = cJSON_AddArrayToObject(j, "architectures"), *tg = NULL;
    const bool gpt = !strcmp(c->arch, "gpt");
    cJSON_AddItemToArray(arch, cJSON_CreateString(gpt ? "GPT2LMHeadModel" : "LlamaForCausalLM"));
    cJSON_AddStringToObject(j, "model_type", gpt ? "gpt2" : "llama");
    if (gpt) {
        cJSON_AddNumberToObject(j, "n_layer", c->n_layer);
        cJSON_AddNumberToObject(j, "n_head", c->n_head);
        cJSON_AddNumberToObject(j, "n_embd", c->n_embd);
        cJSON_AddNumberToObject(j, "n_positions", c->block_size);
        cJSON_AddNumberToObject(j, "n_ctx", c->block_size);
        cJSON_AddNumberToObject(j, "vocab_size", c->vocab_size);
        cJSON_AddNullToObject(j, "n_inner");
        cJSON_AddStringToObject(j, "activation_function", c->gelu == TG_GELU_TANH ? "gelu_new" : "gelu");
        cJSON_AddNumberToObject(j, "layer_norm_epsilon", TG_LAYERNORM_EPS);
        cJSON_AddNumberToObject(j, "resid_pdrop", c->dropout);
        cJSON_AddNumberToObject(j, "embd_pdrop", c->dropout);
        cJSON_AddNumberToObject(j, "attn_pdrop", c->dropout);
        cJSON_AddTrueToObject(j, "scale_attn_weights");
        cJSON_AddFalseToObject(j, "scale_attn_by_inverse_layer_idx");
        cJSON_AddFalseToObject(j, "reorder_and_upcast_attn");
        cJSON_AddTrueToObject(j, "tie_word_embeddings");
        cJSON_AddNumberToObject(j, "initializer_range", 0.02);
    } else {
        cJSON_AddNumberToObject(j, "num_hidden_layers", c->n_layer);
        cJSON_AddNumberToObject(j, "num_attention_heads", c->n_head);
        cJSON_AddNumberToObject(j, "num_key_value_heads", c->n_kv_head);
        cJSON_AddNumberToObject(j, "hidden_size", c->n_embd);
        cJSON_AddNumberToObject(j, "head_dim", c->n_embd / c->n_head);
        cJSON_AddNumberToObject(j, "intermediate_size", c->hidden_dim);
        cJSON_AddNumberToObject(j, "max_position_embeddings", c->block_size);
        cJSON_AddNumberToObject(j, "vocab_size", c->vocab_size);
        cJSON_AddNumberToObject(j, "rms_norm_eps", c->norm_eps);
        cJSON_AddNumberToObject(j, "rope_theta", c->rope_theta);
        cJSON_AddNullToObject(j, "rope_scaling");
        cJSON_AddStringToObject(j, "hidden_act", "silu");
        cJSON_AddFalseToObject(j, "attention_bias");
        cJSON_AddFalseToObject(j, "mlp_bias");
        cJSON_AddNumberToObject(j, "attention_dropout", c->dropout);
        cJSON_AddBoolToObject(j, "tie_word_embeddings", c->tied);
        cJSON_AddNumberToObject(j, "initializer_range", 0.02);
        cJSON_AddNumberToObject(j, "pretraining_tp", 1);
    }
    if (bos >= 0) cJSON_AddNumberToObject(j, "bos_token_id", bos);
    if (eos >= 0) cJSON_AddNumberToObject(j, "eos_token_id", eos);
    cJSON_AddStringToObject(j, "torch_dtype", dt == TG_F64 ? "float64" : "float32");
    cJSON_AddTrueToObject(j, "use_cache");
    /* what the layout cannot say, for the import: a GPT's biases; that the q and k rows were permuted from
     * interleaved pairs (the weights are in transformers' halves order; import permutes them back) */
    if (gpt || !c->rope_halves) tg = cJSON_AddObjectToObject(j, "tapegrad");
    if (gpt) cJSON_AddStringToObject(tg, "bias", c->bias ? "true" : "false");
    else if (!c->rope_halves) cJSON_AddStringToObject(tg, "rope_permuted_from", "interleaved");
    return j;
}

/* A JSON file of the export, begun and finished under its temporary name. */
static int stage_json(tg_atomic_file *f, const char *dir, const char *name, cJSON *j, tg_error *err)
{
    char *p = tg_hf_path(dir, name), *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc = 0;
    memset(f, 0, sizeof *f);
    if (!p || !text) rc = tg_error_set(err, "hf: out of memory");
    else if (tg_atomic_begin(f, p, err) || tg_atomic_write(f, text, strlen(text), err) ||
             tg_atomic_write(f, "\n", 1, err) || tg_atomic_finish(f, err)) {
        rc = tg_error_prefix(err, "hf");
        tg_atomic_abort(f);
        memset(f, 0, sizeof *f);
    }
    free(text);   /* cJSON's own allocation */
    tg_free(p);
    return rc;
}

int tg_hf_export(const tg_st_file *ckpt, const char *dir, char *notice, size_t notice_len, tg_error *err)
{
    if (notice && notice_len) notice[0] = 0;
    if (!ckpt || !dir) return tg_error_set(err, "hf_export: %s is NULL", ckpt ? "the directory" : "the checkpoint");
    tg_model_config c0;
    if (tg_model_config_read(ckpt, &c0, err)) return -1;
    if (strcmp(c0.arch, "gpt") && strcmp(c0.arch, "llama"))
        return tg_error_set(err, "hf: a '%s' has no Hugging Face layout here (gpt, llama)", c0.arch);
    if (tg_fmt_check_options(&c0, "hf", strcmp(c0.arch, "gpt") ? "transformers' LlamaForCausalLM"
                                                                : "transformers' GPT2LMHeadModel", false, err))
        return -1;
    const tg_st_tensor *emb = tg_st_find(ckpt, tg_model_family_find(c0.arch)->embedding);
    const tg_dtype dt = emb && !strcmp(emb->dtype, "F64") ? TG_F64 : TG_F32;
    tg_model m;
    if (tg_checkpoint_load_model(ckpt, dt, -1, &m, err)) return -1;
    const tg_model_config *c = &m.config;
    const bool gpt = !strcmp(c->arch, "gpt");
    tg_vocab v = {0};
    const bool has_vocab = tg_vocab_read(&v, ckpt, NULL) == 0;
    hf_map *maps = NULL;
    unsigned char **bufs = NULL;
    tg_st_writer *w = NULL;
    cJSON *json[4] = {NULL, NULL, NULL, NULL};
    static const char *const json_names[4] = {"config.json", "generation_config.json", "tokenizer.json",
                                              "tokenizer_config.json"};
    tg_atomic_file staged[4];
    memset(staged, 0, sizeof staged);
    int rc = -1;
    if (tg_hf_stat(dir, "model.safetensors.index.json", NULL)) {
        tg_error_set(err, "hf: %s holds model.safetensors.index.json (another model's shards): export into a "
                          "new or empty directory", dir);
        goto out;
    }
    if (mkdir(dir, 0777) && errno != EEXIST) {
        tg_error_set(err, "hf: cannot make the directory %s: %s", dir, strerror(errno));
        goto out;
    }
    /* the weights */
    tg_model_config names_cfg = *c;
    names_cfg.bias = true;   /* transformers' GPT-2 has biases: a GPT without them gets zero ones */
    if (gpt) gpt2_names(&names_cfg, "transformer.", &maps);
    else llama_names(c, &maps);
    if (!(w = tg_st_writer_new()) || tg_st_writer_add_meta(w, "format", "pt")) goto oom;
    const size_t es = tg_dtype_size(dt);
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) {
        const tg_tensor *t = tg_params_get(m.params, maps[i].tg);
        int64_t shape[2];
        if (!t) {   /* a bias of a GPT without biases: zeros of the bias's length */
            const char *n = maps[i].tg;
            shape[0] = strstr(n, "c_attn") ? 3 * (int64_t)c->n_embd : strstr(n, "c_fc") ? 4 * (int64_t)c->n_embd : c->n_embd;
            unsigned char *z = tg_calloc((size_t)shape[0], es);
            if (!z) goto oom;
            stbds_arrput(bufs, z);
            tg_st_writer_add(w, maps[i].hf, dt == TG_F64 ? "F64" : "F32", 1, shape, z);
            continue;
        }
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        const void *data = t->data;
        if (maps[i].layout != HF_SAME) {
            unsigned char *b = tg_malloc((size_t)t->numel * es), *scratch = NULL;
            if (!b) goto oom;
            stbds_arrput(bufs, b);
            if (maps[i].layout == HF_TRANSPOSE) {
                transpose(t->data, b, t->shape[0], t->shape[1], es);
                shape[0] = t->shape[1], shape[1] = t->shape[0];
            } else {
                if (!(scratch = tg_malloc((size_t)t->numel * es))) goto oom;
                memcpy(b, t->data, (size_t)t->numel * es);
                permute_rope_rows(b, scratch, t->shape[0], t->shape[1], maps[i].heads, es, 1);
                tg_free(scratch);
            }
            data = b;
        }
        tg_st_writer_add(w, maps[i].hf, dt == TG_F64 ? "F64" : "F32", t->ndim, shape, data);
    }
    /* the JSON files */
    char why[300] = "";
    int32_t bos = -1, eos = -1;
    if (has_vocab && !tg_hf_tokenizer_write(&v, !gpt, c->block_size, &json[2], &json[3], &bos, &eos, why, sizeof why)) {
    } else if (notice && notice_len) {
        snprintf(notice, notice_len, "no tokenizer.json written: %s", has_vocab ? why : "the checkpoint has no vocabulary");
    }
    json[0] = export_config(c, dt, bos, eos);
    json[1] = cJSON_CreateObject();
    cJSON_AddBoolToObject(json[1], "_from_model_config", true);
    if (bos >= 0) cJSON_AddNumberToObject(json[1], "bos_token_id", bos);
    if (eos >= 0) cJSON_AddNumberToObject(json[1], "eos_token_id", eos);
    cJSON_AddNumberToObject(json[1], "max_length", c->block_size);
    for (int k = 0; k < 4; k++)
        if (json[k] && stage_json(&staged[k], dir, json_names[k], json[k], err)) goto out;
    char *mp = tg_hf_path(dir, "model.safetensors");
    if (!mp) goto oom;
    rc = tg_st_writer_save(w, mp, err);
    tg_free(mp);
    if (rc) goto out;
    for (int k = 0; k < 4; k++)
        if (json[k] && tg_atomic_commit(&staged[k], err)) {
            rc = tg_error_prefix(err, "hf");
            goto out;
        }
    goto out;
oom:
    tg_error_set(err, "hf: out of memory");
    rc = -1;
out:
    for (int k = 0; k < 4; k++) {
        tg_atomic_abort(&staged[k]);
        cJSON_Delete(json[k]);
    }
    for (ptrdiff_t i = 0; i < stbds_arrlen(bufs); i++) tg_free(bufs[i]);
    stbds_arrfree(bufs);
    stbds_arrfree(maps);
    tg_st_writer_free(w);
    tg_vocab_release(&v);
    tg_model_release(&m);
    return rc;
}
