/* config.json both ways (hf_config_internal.h): read into a tapegrad
 * model config, every field refused naming its key; written from one. */
#include "hf_config_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"

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
    if (!(d >= lo && d <= hi && d == floor(d))) return cfg_fail(r, "'%s' is not an integer in [%d, %d]", k, lo, hi);
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
    if (eps != 1e-5) return cfg_fail(r, "'layer_norm_epsilon' %g is not 1e-05 (tapegrad's LayerNorm uses 1e-5)", eps);
    if (cfg_bool_is(r, "scale_attn_by_inverse_layer_idx", false, false,
                    "tapegrad scales scores by 1/sqrt(head) only") ||
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
        return cfg_fail(r,
                        "'activation_function' '%s' is not one tapegrad's GPT computes (gelu: exact erf; "
                        "gelu_new or gelu_pytorch_tanh: the tanh form)",
                        tg_shown(a, shown));
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
    c->tied = tie ? cJSON_IsTrue(tie) : true; /* transformers' PretrainedConfig default */
    if (tie && !cJSON_IsBool(tie)) return cfg_fail(r, "'tie_word_embeddings' is not true or false");
    /* "rope_permuted_from": "interleaved": the export of an interleaved Llama, whose q and k rows go back;
     * "rope": "interleaved" is the older spelling of the same */
    const char *from = cfg_tapegrad_str(r, "rope_permuted_from"), *old = cfg_tapegrad_str(r, "rope");
    if (from && strcmp(from, "interleaved"))
        return cfg_fail(r,
                        "'tapegrad.rope_permuted_from' is not \"interleaved\" (the only pairing export permutes from)");
    if (from && old && strcmp(old, "interleaved"))
        return cfg_fail(r, "'tapegrad.rope' \"%s\" contradicts 'tapegrad.rope_permuted_from'", old);
    c->rope_halves = !from && (!old || strcmp(old, "interleaved"));
    c->bias = false;
    return 0;
}

int tg_hf_config_read(const cJSON *j, tg_model_config *c, tg_error *err)
{
    cfg_reader r = {j, err};
    const cJSON *mt = cfg_get(&r, "model_type");
    const char *type = cJSON_IsString(mt) ? mt->valuestring : "";
    char shown[TG_SHOWN_SIZE];
    memset(c, 0, sizeof *c);
    if (!strcmp(type, "gpt2")) return gpt2_config(&r, c);
    if (!strcmp(type, "llama")) return llama_config(&r, c);
    return tg_error_set(err, "hf: config.json: 'model_type' %s'%s' is not one tapegrad runs (gpt2, llama)",
                        mt ? "" : "is missing: ", tg_shown(type, shown));
}

int32_t tg_hf_config_token_id(const cJSON *j, const char *key, int vocab_size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < vocab_size ? (int32_t)v->valuedouble : -1;
}

cJSON *tg_hf_config_write(const tg_model_config *c, tg_dtype dt, int32_t bos, int32_t eos)
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
