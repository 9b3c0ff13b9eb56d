/* tapegrad's formats layer: models to and from the files other programs
 * run, each format a file-to-file conversion from or to a checkpoint
 * (train/train.h's tg_checkpoint_*), so a program converts without
 * tiny_gpt, and tiny_gpt's export and import are thin commands over it.
 *
 *   llama2.c   run.c's model.bin and tokenizer.bin (formats/llama2c.c)
 *   GGUF       llama.cpp's model file, tokenizer inside (formats/gguf.c
 *              writes one, formats/gguf_read.c reads one)
 *   hf         a Hugging Face model directory, as transformers reads and
 *              writes one: GPT2LMHeadModel, LlamaForCausalLM (formats/hf.c; the
 *              tokenizer files formats/hf_tokenizer_read.c and
 *              hf_tokenizer_write.c)
 *
 * Every reader here checks a file against its own size before it
 * allocates what the file's header claims, and is fuzzed
 * (tests/fuzz/). docs/formats.md lists what each file holds, which
 * program reads it and how exact each round trip is. */
#ifndef TG_FORMATS_H
#define TG_FORMATS_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/error.h"
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
TG_API int tg_llama2c_export(const tg_st_file *f, const char *model_path, const char *tokenizer_path, tg_error *err);
/* Writes tokenizer t alone as run.c's tokenizer.bin (the rule of
 * tg_llama2c_export); only a tapegrad BPE tokenizer of llama2.c's layout
 * (3 specials, byte b at id 3 + b, then the merges), or a TG_TOK_SPM one
 * read from such a file (run.c's options and layout), fits. 0, or -1. */
TG_API int tg_llama2c_tokenizer_write(const tg_tokenizer *t, const char *path, tg_error *err);
/* Reads run.c's model.bin and, unless NULL, its tokenizer.bin (any that
 * run.c reads: llama2.c's own, pieces with scores, and both that
 * tg_llama2c_export writes; tg_tok_load_llama2c, with vocab_size pieces)
 * and writes them as a checkpoint at ckpt_path: an f32 Llama whose
 * vocabulary is llama2.c's bytes when the file is that vocabulary, else
 * the file's tokenizer (TG_TOK_SPM, which export writes back as it was),
 * and bare ids (TG_VOCAB_IDS) when tokenizer_path is NULL: a model whose
 * text is unknown (tiny_gpt import asks for --ids-only then); the file's
 * two RoPE tables are kept (tensors llama2c.freqs_cos, llama2c.freqs_sin) so
 * that exporting it again gives the same bytes. The header is checked
 * against the file's size before anything is allocated, and every weight
 * must be finite. 0, or -1 with a message naming the file, writing
 * nothing. */
TG_API int tg_llama2c_import(const char *model_path, const char *tokenizer_path, const char *ckpt_path, tg_error *err);

/* ---- GGUF (formats/gguf.c) -------------------------------------------------
 * The file llama.cpp (and what is built on it) runs: a Llama as
 * llama.cpp's architecture "llama", a GPT as its "gpt2", with the
 * model's tokenizer, so that llama.cpp encodes a text to the ids tapegrad
 * gives it (the exceptions: docs/formats.md, "GGUF"): llama2.c's bytes,
 * a GPT's text bytes and tapegrad's BPE as llama.cpp's SentencePiece-style
 * "llama" vocabulary (a Llama's with BOS and a space in front, a GPT's
 * without), GPT-2's tiktoken ranks as its "gpt2" BPE with merges. The
 * weights' type: */
typedef enum tg_gguf_type {
    TG_GGUF_F32 = 0, /* the model's f32 values */
    TG_GGUF_F16 = 1, /* matrices in IEEE half, rounded to nearest even; norms f32 */
    TG_GGUF_Q8_0 = 8, /* matrices in ggml's Q8_0 (blocks of 32 int8 and a half scale; F16 for a row
                           length not a multiple of 32); norms f32 */
} tg_gguf_type;

/* Writes the model of checkpoint ckpt (a tiny_gpt checkpoint: weights,
 * config and vocabulary, tg_checkpoint_load_model) to path as a GGUF
 * file (version 3) with weights of the given type, all or nothing
 * (core/atomic_file.h). A GPT's absent biases are written as zeros
 * (llama.cpp's gpt2 requires them) and its head is token_embd (tied); its
 * GELU is written as it is: llama.cpp's gpt2 computes the tanh form, so an
 * erf GPT (TG_GELU_ERF) runs there slightly differently (tiny_gpt export
 * says by how much). 0, or -1 with a message: a NULL argument, a model
 * that is neither a Llama nor a GPT, a vocabulary llama.cpp's tokenizer
 * cannot give the same ids (ids without a tokenizer, a Llama's text
 * bytes or GPT-2 ranks, two ids that llama.cpp would spell alike), a NaN
 * or infinite weight, the file not written. */
TG_API int tg_gguf_export(const tg_st_file *ckpt, const char *path, tg_gguf_type type, tg_error *err);

/* ---- GGUF import (formats/gguf_read.c) ------------------------------------
 * A Llama GGUF file (architecture "llama") or a GPT one ("gpt2"), as
 * llama.cpp's converters and gguf-py write them, tapegrad's export
 * included, as a checkpoint. */

/* Reads the GGUF file at path and writes it as a checkpoint at ckpt_path
 * in dtype dt (TG_F32 or TG_F64): F32, F16, BF16 and Q8_0 tensors
 * dequantized exactly. A Llama: the hyperparameters from the llama.* keys
 * (head count kv defaults to the head count, rope freq base to 10000), a
 * tied head when there is no output tensor. A GPT: the gpt2.* keys (a 4 C
 * MLP, LayerNorm eps 1e-5, no grouped-query attention), the tanh GELU
 * llama.cpp computes, every bias (all zero: a GPT without biases), an
 * output tensor only when it is token_embd. The vocabulary: llama.cpp's
 * "llama" tokenizer (pieces with scores, byte pieces, U+2581 for space,
 * add_space_prefix) as a TG_TOK_SPM tokenizer (a GPT's without BOS; byte
 * tokens alone, in byte order, as a text's bytes), a GPT's "gpt2"
 * tokenizer (tokens and merges, pre-tokenizer gpt-2) as GPT-2's tiktoken
 * kind when each merge is tiktoken's split of its piece, or bare ids when
 * the file has none. Refused, naming the key or tensor and writing
 * nothing: another architecture, rope scaling, a rope dimension count
 * other than the head size, what a GPT of tapegrad's cannot be (above),
 * another tensor type or tokenizer model, a tensor missing or of the
 * wrong shape, a non-finite weight; counts and lengths are checked
 * against the file's size before anything is allocated. 0, or -1 with a
 * message naming the file. */
TG_API int tg_gguf_import(const char *path, const char *ckpt_path, tg_dtype dt, tg_error *err);
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
    bool ids_only; /* a directory without a tokenizer tapegrad reads gives a checkpoint of bare ids
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
 * tokenizer: GPT-2's byte-level BPE (tokenizer.json or vocab.json +
 * merges.txt) as tiktoken ranks (text.h TG_TOK_TIKTOKEN); a Llama's
 * tokenizer.json as transformers writes it (BPE with byte_fallback,
 * U+2581 for spaces, a BOS template) as pieces with scores (TG_TOK_SPM,
 * the scores from the merges' order); and each form tg_hf_export writes
 * as that tokenizer again. A tokenizer.json whose merges are not
 * tapegrad's rule (every split of each piece, in rank order) or whose
 * pipeline tapegrad's tokenizers have not is refused naming it (formats/
 * hf_tokenizer_read.c, docs/formats.md); without a tokenizer the import
 * fails unless opts->ids_only. opts may be NULL.
 * What tapegrad cannot run (another model_type, rope scaling, biases on a
 * Llama, another epsilon or activation, a tensor it has no place for, a
 * tied head that differs from the embedding, another tokenizer) is
 * refused naming the key or tensor, before any model is built and
 * without writing anything. GPT-2's tanh GELU ("gelu_new") is imported
 * as a GPT with gelu TG_GELU_TANH, "gelu" as the exact erf form. notice
 * (may be NULL) receives what the import changes in what the model
 * computes or encodes (a Metaspace tokenizer.json: texts beginning with
 * a space encode differently); "" when there is nothing to say. 0, or -1
 * with a message in err. */
TG_API int tg_hf_import(const char *dir, const char *ckpt_out, const tg_hf_import_options *opts, char *notice,
                        size_t notice_len, tg_error *err);

/* Writes the model of checkpoint ckpt (a loaded tapegrad checkpoint: its
 * config, weights and vocabulary) as a Hugging Face directory dir (made
 * if absent): config.json, model.safetensors (F32, or F64 for an f64
 * checkpoint), generation_config.json, and tokenizer.json and
 * tokenizer_config.json for the vocabulary: GPT-2's ranks, tapegrad's BPE
 * (a Llama's with " " before the text and BOS), pieces with scores,
 * llama2.c's bytes or a byte vocabulary, each written so the tokenizers
 * library gives tapegrad's ids (bare ids, pieces with equal scores or a
 * piece that is not UTF-8 get no tokenizer files, and notice says why). config.json's "tapegrad" object
 * keeps what the layout cannot say (a GPT without biases: exported with
 * zero ones; a Llama's interleaved RoPE pairs: exported permuted), so
 * tg_hf_import gives back the same checkpoint bit for bit. Each file is
 * written atomically, the JSON files renamed into place after
 * model.safetensors; a directory holding another model's shard index is
 * refused. 0, or -1 with a message. */
TG_API int tg_hf_export(const tg_st_file *ckpt, const char *dir, char *notice, size_t notice_len, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
