/* tapegrad's formats layer: models to and from the files other programs
 * run, each format a file-to-file conversion from or to a checkpoint
 * (train/train.h's tg_checkpoint_*), so a program converts without
 * tiny_gpt, and tiny_gpt's export and import are thin commands over it.
 *
 *   llama2.c   run.c's model.bin and tokenizer.bin (formats/llama2c.c)
 *   hf         a Hugging Face model directory, as transformers reads and
 *              writes one: GPT2LMHeadModel, LlamaForCausalLM (formats/hf.c)
 *
 * Every reader here checks a file against its own size before it
 * allocates what the file's header claims, and is fuzzed
 * (tests/fuzz/). docs/formats.md lists what each file holds, which
 * program reads it and how exact each round trip is. */
#ifndef TG_FORMATS_H
#define TG_FORMATS_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/export.h"
#include "../core/safetensors.h"
#include "../text/text.h"
#include "../train/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- llama2.c (formats/llama2c.c) ----------------------------------------
 * run.c's model.bin (a header of 7 int32, then every weight as float32 in
 * its order) and tokenizer.bin (pieces with scores). run.c hard-codes
 * RoPE with interleaved pairs, theta 10000, RMSNorm eps 1e-5, and reads
 * llama2.c's byte vocabulary (TG_VOCAB_LLAMA2C) or a tokenizer.bin. */

/* Writes the Llama checkpoint f (tg_st_load) as run.c's model.bin at
 * model_path and, unless tokenizer_path is NULL, its vocabulary as
 * tokenizer.bin: llama2.c's bytes, or a tapegrad BPE tokenizer written so
 * that run.c's encoder gives tapegrad's ids (docs/tokenizers.md). Both
 * files or neither are written (core/atomic_file.h). Refuses, writing
 * nothing, a model run.c would run differently (a GPT, RoPE by halves,
 * another theta or eps) and a vocabulary it cannot read. 0, or -1 with
 * a message. */
TG_API int tg_llama2c_export(const tg_st_file *f, const char *model_path, const char *tokenizer_path, char *err,
                             size_t errlen);
/* Writes tokenizer t alone as run.c's tokenizer.bin (the rule of
 * tg_llama2c_export); only a tapegrad BPE tokenizer of llama2.c's layout
 * (3 specials, byte b at id 3 + b, then the merges) fits. 0, or -1. */
TG_API int tg_llama2c_tokenizer_write(const tg_tokenizer *t, const char *path, char *err, size_t errlen);
/* Reads run.c's model.bin (and, unless NULL, a tokenizer.bin checked to
 * be llama2.c's byte vocabulary) and writes it as a checkpoint at
 * ckpt_path: an f32 Llama with llama2.c's vocabulary and the file's two
 * RoPE tables kept (tensors llama2c.freqs_cos, llama2c.freqs_sin) so
 * that exporting it again gives the same bytes. The header is checked
 * against the file's size before anything is allocated, and every weight
 * must be finite. 0, or -1 with a message naming the file, writing
 * nothing. */
TG_API int tg_llama2c_import(const char *model_path, const char *tokenizer_path, const char *ckpt_path, char *err,
                             size_t errlen);

/* ---- the Hugging Face layout (formats/hf.c) -------------------------------
 * A directory with config.json, model.safetensors (or shards named by
 * model.safetensors.index.json), tokenizer.json (or GPT-2's vocab.json
 * and merges.txt), tokenizer_config.json and generation_config.json. A
 * tapegrad GPT is transformers' GPT2LMHeadModel (Conv1D weights stored
 * (in, out), the head tied to wte; activation_function "gelu", the exact
 * erf form tapegrad computes), a Llama is LlamaForCausalLM (q and k rows
 * in the rotate-half order transformers' RoPE pairs, lm_head absent when
 * tied). docs/formats.md, "Hugging Face layout". */

typedef struct tg_hf_import_options {
    bool ids_only;   /* a directory without a tokenizer tapegrad reads gives a checkpoint of bare ids
                        (vocabulary "ids:V") instead of an error */
} tg_hf_import_options;

/* Reads the model directory dir and writes it as a tapegrad checkpoint at
 * ckpt_out (atomically: tg_checkpoint_save), weights and vocabulary, no
 * training state. config.json's model_type picks the family: "gpt2"
 * (n_layer, n_head, n_embd, n_positions, vocab_size, layer_norm_epsilon
 * 1e-5, activation_function gelu or gelu_new) or "llama" (the
 * LlamaConfig fields; rope_scaling null, no biases, SiLU). Tensors F32,
 * F16 and BF16 make an f32 checkpoint, F64 ones an f64 checkpoint, every
 * value exact; GPT-2's attn.bias and attn.masked_bias buffers are
 * skipped, and its names are taken with or without "transformer.". The
 * tokenizer (a GPT's) is GPT-2's byte-level BPE, from tokenizer.json or
 * vocab.json + merges.txt, as tiktoken ranks (text.h TG_TOK_TIKTOKEN);
 * without one the import fails unless opts->ids_only. opts may be NULL.
 * What tapegrad cannot run (another model_type, rope scaling, biases on a
 * Llama, another epsilon or activation, a tensor it has no place for, a
 * tied head that differs from the embedding, another tokenizer) is
 * refused naming the key or tensor, before any model is built and
 * without writing anything. An import that changes what the model
 * computes says so in notice (GPT-2's tanh GELU computed as erf GELU;
 * notice may be NULL; "" when there is nothing to say). 0, or -1 with a
 * message in err. */
TG_API int tg_hf_import(const char *dir, const char *ckpt_out, const tg_hf_import_options *opts, char *notice,
                        size_t notice_len, char *err, size_t errlen);

/* Writes the model of checkpoint ckpt (a loaded tapegrad checkpoint: its
 * config, weights and vocabulary) as a Hugging Face directory dir (made
 * if absent): config.json, model.safetensors (F32, or F64 for an f64
 * checkpoint), generation_config.json, and for GPT-2's tokenizer
 * tokenizer.json and tokenizer_config.json (another vocabulary gets no
 * tokenizer files, and notice says why). config.json's "tapegrad" object
 * keeps what the layout cannot say (a GPT without biases: exported with
 * zero ones; a Llama's interleaved RoPE pairs: exported permuted), so
 * tg_hf_import gives back the same checkpoint bit for bit. Each file is
 * written atomically, the JSON files renamed into place after
 * model.safetensors; a directory holding another model's shard index is
 * refused. 0, or -1 with a message. */
TG_API int tg_hf_export(const tg_st_file *ckpt, const char *dir, char *notice, size_t notice_len, char *err,
                        size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
