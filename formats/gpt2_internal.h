/* GPT-2's byte-level BPE as its files spell it (internal to formats/):
 * the printable stand-ins for bytes and the merges of a tiktoken
 * tokenizer, shared by the Hugging Face reader and writer
 * (tokenizer.json, vocab.json + merges.txt) and the GGUF reader and
 * writer (tokenizer.ggml.tokens / merges). Defined in formats/gpt2.c. */
#ifndef TG_FORMATS_GPT2_INTERNAL_H
#define TG_FORMATS_GPT2_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "../text/text.h"

/* GPT-2's stand-in code point of each byte: '!'..'~', 0xA1..0xAC and
 * 0xAE..0xFF stand for themselves, the other 68 for U+0100.. in order. */
void tg_gpt2_byte_chars(uint32_t cp_of[256]);
/* Both ways: cp_of as tg_gpt2_byte_chars, byte_of[code point] the byte it
 * stands for (-1 for none). */
void tg_gpt2_byte_tables(uint32_t cp_of[256], int16_t byte_of[324]);
/* The bytes GPT-2's byte-level string s stands for, into out (room for
 * strlen(s) bytes): their count, or -1 for a character that stands for
 * no byte. */
int64_t tg_gpt2_unbyte(const char *s, const int16_t byte_of[324], unsigned char *out);
/* The n bytes at p as GPT-2's byte-level string (the stand-ins' UTF-8,
 * NUL-terminated) into out, which has room for 2 n + 1 bytes. */
void tg_gpt2_byte_string(const unsigned char *p, size_t n, const uint32_t cp_of[256], char *out);
/* The two pieces (*a, *b) that piece r of tiktoken tokenizer t is merged
 * from: its bytes merged by tiktoken's rule with only the pieces below r
 * (parts: room for tg_tok_max_piece_len(t) + 1 ids), in time n log n for
 * a piece of n bytes. -1 when that does not end in two pieces that make
 * r; -2 when out of memory (it needs 28 bytes per byte of the piece). */
int tg_gpt2_tiktoken_split(const tg_tokenizer *t, int32_t r, int32_t *parts, int32_t *a, int32_t *b);
/* The tokenizer of a vocabulary (a JSON object string -> id, GPT-2's
 * byte-level strings) and its merges ("a b" strings or [a, b] pairs) as
 * tiktoken ranks, when they are GPT-2's kind: ids 0..n-1 for pieces and n
 * for <|endoftext|>, every single byte a piece, the merges in the order of
 * the pieces they make, every longer piece made by one. NULL with a
 * message naming what (the file or key) otherwise. */
tg_tokenizer *tg_gpt2_tokenizer(const cJSON *vocab, const cJSON *merges, const char *what, tg_error *err);

#endif
