/* Each family's parameters under transformers' names
 * (hf_names_internal.h): GPT-2's Conv1D weights transposed, an
 * interleaved Llama's q and k rows permuted to the halves pairing. */
#include "hf_names_internal.h"

#include <stdio.h>
#include <string.h>

#include "../core/stb_ds_internal.h"

/* GPT-2's block i. prefix is "transformer." (GPT2LMHeadModel's state
 * dict) or "" (GPT2Model's, as the files Hugging Face publishes name them). */
void tg_hf_gpt2_layer_names(const tg_model_config *c, const char *prefix, int i, hf_map **out)
{
    static const struct {
        const char *part;
        hf_layout layout;
    } block[] = {
        {"ln_1.weight", HF_SAME},
        {"ln_1.bias", HF_SAME},
        {"attn.c_attn.weight", HF_TRANSPOSE},
        {"attn.c_attn.bias", HF_SAME},
        {"attn.c_proj.weight", HF_TRANSPOSE},
        {"attn.c_proj.bias", HF_SAME},
        {"ln_2.weight", HF_SAME},
        {"ln_2.bias", HF_SAME},
        {"mlp.c_fc.weight", HF_TRANSPOSE},
        {"mlp.c_fc.bias", HF_SAME},
        {"mlp.c_proj.weight", HF_TRANSPOSE},
        {"mlp.c_proj.bias", HF_SAME},
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
void tg_hf_gpt2_names(const tg_model_config *c, const char *prefix, hf_map **out)
{
    hf_map m = {0};
    snprintf(m.tg, sizeof m.tg, "transformer.wte.weight");
    snprintf(m.hf, sizeof m.hf, "%swte.weight", prefix);
    stbds_arrput(*out, m);
    snprintf(m.tg, sizeof m.tg, "transformer.wpe.weight");
    snprintf(m.hf, sizeof m.hf, "%swpe.weight", prefix);
    stbds_arrput(*out, m);
    for (int i = 0; i < c->n_layer; i++) tg_hf_gpt2_layer_names(c, prefix, i, out);
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
bool tg_hf_gpt2_buffer(const char *name)
{
    const size_t n = strlen(name);
    return (n > 10 && !strcmp(name + n - 10, ".attn.bias")) || (n > 17 && !strcmp(name + n - 17, ".attn.masked_bias"));
}

/* LlamaForCausalLM's layer i. */
void tg_hf_llama_layer_names(const tg_model_config *c, int i, hf_map **out)
{
    static const struct {
        const char *tg, *hf;
        int rope;
    } layer[] = {
        {"attention.wq.weight", "self_attn.q_proj.weight", 1},
        {"attention.wk.weight", "self_attn.k_proj.weight", 2},
        {"attention.wv.weight", "self_attn.v_proj.weight", 0},
        {"attention.wo.weight", "self_attn.o_proj.weight", 0},
        {"feed_forward.w1.weight", "mlp.gate_proj.weight", 0},
        {"feed_forward.w2.weight", "mlp.down_proj.weight", 0},
        {"feed_forward.w3.weight", "mlp.up_proj.weight", 0},
        {"attention_norm.weight", "input_layernorm.weight", 0},
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
void tg_hf_llama_names(const tg_model_config *c, hf_map **out)
{
    hf_map m = {0};
    snprintf(m.tg, sizeof m.tg, "tok_embeddings.weight");
    snprintf(m.hf, sizeof m.hf, "model.embed_tokens.weight");
    stbds_arrput(*out, m);
    for (int i = 0; i < c->n_layer; i++) tg_hf_llama_layer_names(c, i, out);
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
void tg_hf_permute_rope_rows(unsigned char *data, unsigned char *scratch, int64_t rows, int64_t cols, int heads,
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
void tg_hf_transpose(const unsigned char *src, unsigned char *dst, int64_t rows, int64_t cols, size_t es)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) memcpy(dst + (c * rows + r) * es, src + (r * cols + c) * es, es);
}
