/* What export.c shares with the tokenizer command: run.c's tokenizer.bin
 * for a BPE tokenizer. */
#ifndef TINY_GPT_EXPORT_H
#define TINY_GPT_EXPORT_H

#include "../../tapegrad.h"
#include "files.h"

/* Appends t as llama2.c's tokenizer.bin to b: run.c's encoder then gives
 * tapegrad's ids for any text without a NUL byte (export.c's top comment).
 * t must be tapegrad's BPE with pieces that keep UTF-8 characters whole,
 * none holding a NUL byte or spelling "<unk>". 0, or -1 with a message. */
int llama2c_tokenizer_bpe(const tg_tokenizer *t, textbuf *b, char *err, size_t errlen);

#endif
