/* tiny_gpt data: the vocabularies, the token stream, the 90/10
 * train/val split, and random batches of windows. */
#ifndef TINY_GPT_DATA_H
#define TINY_GPT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../tapegrad.h"

/* Two vocabularies of bytes:
 *   VOCAB_CHARS    the sorted set of bytes the text has (a GPT's default):
 *                  id i is the i-th byte present
 *   VOCAB_LLAMA2C  llama2.c's layout, what run.c assumes: id 0 <unk>, 1
 *                  <s> (BOS, before every document and prompt), 2 </s>,
 *                  and 3 + b for every byte b (259 ids; a Llama's) */
typedef enum { VOCAB_CHARS, VOCAB_LLAMA2C } vocab_kind;

#define VOCAB_BOS 1                 /* VOCAB_LLAMA2C's BOS */
#define VOCAB_LLAMA2C_SIZE 259

typedef struct vocab {
    vocab_kind kind;
    int size;
    uint8_t chars[256];   /* VOCAB_CHARS: id -> byte */
    int16_t ids[256];     /* byte -> id, or -1 */
} vocab;

/* A VOCAB_CHARS vocabulary of the bytes in text. */
void vocab_build(vocab *v, const char *text, size_t len);
/* The VOCAB_LLAMA2C vocabulary. */
void vocab_llama2c(vocab *v);
/* For checkpoint metadata: "10,32,97,...", the bytes of a VOCAB_CHARS
 * vocabulary as decimal numbers, or "llama2c". */
void vocab_to_string(const vocab *v, char *buf, size_t size);
/* Parses vocab_to_string's forms; 0, or -1 with a message in err. */
int vocab_from_string(vocab *v, const char *s, char *err, size_t errlen);
/* Encodes len bytes into out (one id per byte); returns -1 at the first
 * byte outside the vocabulary (its index in *bad), else 0. */
int vocab_encode(const vocab *v, const char *text, size_t len, int32_t *out, size_t *bad);
/* The bytes id stands for, into buf (at least 8 bytes); returns their
 * count. VOCAB_LLAMA2C's specials are "<unk>", "\n<s>\n", "\n</s>\n" (the
 * pieces llama2.c's tokenizer has for them; sample stops at BOS instead
 * of printing it); an id past the vocabulary is 0 bytes. */
int vocab_decode(const vocab *v, int id, char *buf);

typedef struct dataset {
    int32_t *tokens;      /* malloc'd */
    size_t n, n_train;    /* tokens [0, n_train) train, [n_train, n) val */
    double bytes_per_token[2];   /* of the train and the val split's text */
} dataset;

/* Encodes the text with v and splits it 90/10. With VOCAB_LLAMA2C the text
 * is cut into documents at blank lines (the "\n\n" between paragraphs:
 * the first newline stays with its paragraph, the second goes), and each
 * document enters the stream as run.c encodes a prompt: BOS, the id of
 * " " (llama2.c's dummy prefix), its bytes. -1 with a message when a
 * split is too short for windows of block_size + 1 tokens. */
int dataset_make(dataset *d, const vocab *v, const char *text, size_t len, int block_size,
                 char *err, size_t errlen);
void dataset_free(dataset *d);

/* B random windows of the train (val = false) or val split: x (B,T) and
 * y (B,T) = x shifted by one. */
void dataset_batch(const dataset *d, bool val, int B, int T, tg_rng *rng, int32_t *x, int32_t *y);
/* Rows [first, first + count) of a batch of `total` windows, into x and
 * y (count x T each): every window's start is drawn, so rng moves as for
 * the whole batch, and only those rows are copied. Rank r of R takes rows
 * [r B, (r + 1) B) of each R B batch: together the ranks see the batch
 * one process with --batch-size R B sees, and their streams stay equal. */
void dataset_rows(const dataset *d, bool val, int total, int first, int count, int T, tg_rng *rng, int32_t *x,
                  int32_t *y);

/* Reads a whole file; NULL with a message in err. */
char *read_file(const char *path, size_t *len, char *err, size_t errlen);

/* The text a run trains on: the bytes of a file, or (path NULL or "")
 * the built-in corpus of corpus_chars characters, whose entropy floor is
 * known. An empty file is an error that says so. */
typedef struct run_text {
    char *text;           /* malloc'd, NUL-terminated */
    size_t len;
    double floor_nats;    /* nats per character for the corpus, -1 for a file */
} run_text;

int run_text_load(run_text *t, const char *path, int corpus_chars, char *err, size_t errlen);
void run_text_free(run_text *t);

#endif
