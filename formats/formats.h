/* tapegrad's formats layer: models to and from the files other programs
 * run, each format a file-to-file conversion from or to a checkpoint
 * (train/train.h's tg_checkpoint_*), so a program converts without
 * tiny_gpt, and tiny_gpt's export and import are thin commands over it.
 *
 *   llama2.c   run.c's model.bin and tokenizer.bin (formats/llama2c.c)
 *
 * Every reader here checks a file against its own size before it
 * allocates what the file's header claims, and is fuzzed
 * (tests/fuzz/). docs/formats.md lists what each file holds, which
 * program reads it and how exact each round trip is. */
#ifndef TG_FORMATS_H
#define TG_FORMATS_H

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
 * (3 specials, byte b at id 3 + b, then the merges), or a TG_TOK_SPM one
 * read from such a file (run.c's options and layout), fits. 0, or -1. */
TG_API int tg_llama2c_tokenizer_write(const tg_tokenizer *t, const char *path, char *err, size_t errlen);
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
TG_API int tg_llama2c_import(const char *model_path, const char *tokenizer_path, const char *ckpt_path, char *err,
                             size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
