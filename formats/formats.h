/* tapegrad's formats layer: models to and from the files other programs
 * run, each format a file-to-file conversion from or to a checkpoint
 * (train/train.h's tg_checkpoint_*), so a program converts without
 * tiny_gpt, and tiny_gpt's export and import are thin commands over it.
 *
 *   llama2.c   run.c's model.bin and tokenizer.bin (formats/llama2c.c)
 *   GGUF       llama.cpp's model file, tokenizer inside (formats/gguf.c)
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

/* ---- GGUF (formats/gguf.c) -------------------------------------------------
 * The file llama.cpp (and what is built on it) runs: a Llama as
 * llama.cpp's architecture "llama", with its tokenizer (llama2.c's bytes
 * or tapegrad's BPE) as llama.cpp's SentencePiece-style vocabulary, so
 * that llama.cpp encodes a text to the ids tapegrad gives it (the
 * exceptions: docs/formats.md, "GGUF"). The weights' type: */
typedef enum tg_gguf_type {
    TG_GGUF_F32 = 0,    /* the model's f32 values */
    TG_GGUF_F16 = 1,    /* matrices in IEEE half, rounded to nearest even; norms f32 */
    TG_GGUF_Q8_0 = 8,   /* matrices in ggml's Q8_0 (blocks of 32 int8 and a half scale; F16 for a row
                           length not a multiple of 32); norms f32 */
} tg_gguf_type;

/* Writes the model of checkpoint ckpt (a tiny_gpt checkpoint: weights,
 * config and vocabulary, tg_checkpoint_load_model) to path as a GGUF
 * file (version 3) with weights of the given type, all or nothing
 * (core/atomic_file.h). 0, or -1 with a message: a NULL argument, a model
 * that is not a Llama, a vocabulary llama.cpp's tokenizer cannot give
 * the same ids (a text's bytes, ids without a tokenizer, GPT-2's ranks,
 * two ids that llama.cpp would spell alike), a NaN or infinite weight,
 * the file not written. */
TG_API int tg_gguf_export(const tg_st_file *ckpt, const char *path, tg_gguf_type type, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
