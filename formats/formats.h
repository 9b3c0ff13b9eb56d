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

#ifdef __cplusplus
}
#endif

#endif
