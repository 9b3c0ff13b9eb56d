/* formats/hf_names.c: each family's parameters under transformers' names,
 * with how each tensor's layout differs. Not public. */
#ifndef TG_HF_NAMES_INTERNAL_H
#define TG_HF_NAMES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../nn/nn.h"

typedef enum hf_layout {
    HF_SAME, /* the same shape and order */
    HF_TRANSPOSE, /* a Conv1D weight: (in, out) in the file, (out, in) here */
    HF_ROPE_ROWS /* q or k of an interleaved Llama: rows permuted within each head */
} hf_layout;

typedef struct hf_map {
    char tg[160], hf[160];
    hf_layout layout;
    int heads; /* HF_ROPE_ROWS: the heads the rows are cut into */
} hf_map;

/* The maps of GPT-2's block i (prefix "transformer." for GPT2LMHeadModel's
 * state dict, "" for GPT2Model's), appended to the stb_ds array *out. */
void tg_hf_gpt2_layer_names(const tg_model_config *c, const char *prefix, int i, hf_map **out);
/* Every map of a GPT-2 of config c, embeddings first. */
void tg_hf_gpt2_names(const tg_model_config *c, const char *prefix, hf_map **out);
/* A tensor of GPT-2's files that is a buffer, not a weight (attn.bias, attn.masked_bias). */
bool tg_hf_gpt2_buffer(const char *name);
/* The maps of a Llama's block i, appended to *out. */
void tg_hf_llama_layer_names(const tg_model_config *c, int i, hf_map **out);
/* Every map of a Llama of config c, the embedding first. */
void tg_hf_llama_names(const tg_model_config *c, hf_map **out);
/* q's or k's (rows, cols) elements of es bytes, cut into `heads` heads,
 * moved from the interleaved to the halves pairing (dir 1) or back (-1),
 * through scratch of the same size. */
void tg_hf_permute_rope_rows(unsigned char *data, unsigned char *scratch, int64_t rows, int64_t cols, int heads,
                             size_t es, int dir);
/* (rows, cols) elements of es bytes at src, transposed into dst. */
void tg_hf_transpose(const unsigned char *src, unsigned char *dst, int64_t rows, int64_t cols, size_t es);

#endif
