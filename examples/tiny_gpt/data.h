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
 *                  and 3 + b for every byte b (259 ids; a Llama's)
 * and two of tokens (tokdata.c):
 *   VOCAB_TOKENIZER  a tokenizer's ids (text/text.h: tapegrad's BPE or
 *                  GPT-2's), stored in every checkpoint; for a Llama
 *                  (docs) the text's documents start with its BOS
 *   VOCAB_IDS      ids of token files trained on without a tokenizer: no
 *                  text, no bytes per token */
typedef enum { VOCAB_CHARS, VOCAB_LLAMA2C, VOCAB_TOKENIZER, VOCAB_IDS } vocab_kind;

#define VOCAB_BOS 1                 /* VOCAB_LLAMA2C's BOS */
#define VOCAB_LLAMA2C_SIZE 259

typedef struct vocab {
    vocab_kind kind;
    int size;             /* ids the model needs (VOCAB_TOKENIZER: at least the tokenizer's) */
    uint8_t chars[256];   /* VOCAB_CHARS: id -> byte */
    int16_t ids[256];     /* byte -> id, or -1 (all -1 for the token kinds) */
    tg_tokenizer *tok;    /* VOCAB_TOKENIZER: owned, freed by vocab_free */
    bool docs;            /* VOCAB_TOKENIZER: documents BOS + " " + text, llama2.c's way (a Llama) */
} vocab;

/* A VOCAB_CHARS vocabulary of the bytes in text. */
void vocab_build(vocab *v, const char *text, size_t len);
/* The VOCAB_LLAMA2C vocabulary. */
void vocab_llama2c(vocab *v);
/* Frees what v owns (its tokenizer); v may be zeroed, or made by any of
 * the functions here. */
void vocab_free(vocab *v);
/* For checkpoint metadata: "10,32,97,...", the bytes of a VOCAB_CHARS
 * vocabulary as decimal numbers, "llama2c", "tokenizer" (the tokenizer's
 * entries are in the file too: vocab_st_add) or "ids:V". */
void vocab_to_string(const vocab *v, char *buf, size_t size);
/* Parses vocab_to_string's byte forms ("ids:V" too); 0, or -1 with a
 * message in err. "tokenizer" needs the file: vocab_from_st. */
int vocab_from_string(vocab *v, const char *s, char *err, size_t errlen);
/* The vocabulary a file's "vocab" metadata names, the tokenizer read from
 * its entries for "tokenizer" (docs for a Llama: "arch" llama). 0, or -1
 * with a message (v is then empty). */
int vocab_from_st(vocab *v, const tg_st_file *f, char *err, size_t errlen);
/* Adds a VOCAB_TOKENIZER's tokenizer to a checkpoint's writer (nothing for
 * the other kinds). 0, or -1 (the writer's error says why). */
int vocab_st_add(const vocab *v, tg_st_writer *w);
/* v takes tok (freed with v, also on error): size max(its ids,
 * min_size); docs: a Llama's documents, which need a BOS id (an error
 * naming the tokenizer's kind otherwise). 0, or -1 with a message. */
int vocab_tokenizer(vocab *v, tg_tokenizer *tok, bool docs, int min_size, char *err, size_t errlen);
/* A VOCAB_IDS vocabulary of size ids. */
void vocab_ids(vocab *v, int size);
/* True when a and b give every id the same bytes and specials. */
bool tok_same(const tg_tokenizer *a, const tg_tokenizer *b);
/* Encodes len bytes into out (one id per byte) with a byte vocabulary;
 * returns -1 at the first byte outside the vocabulary (its index in
 * *bad; every byte for the token kinds), else 0. */
int vocab_encode(const vocab *v, const char *text, size_t len, int32_t *out, size_t *bad);
/* The bytes id stands for, into buf (at least 8 bytes); returns their
 * count. VOCAB_LLAMA2C's specials are "<unk>", "\n<s>\n", "\n</s>\n" (the
 * pieces llama2.c's tokenizer has for them; sample stops at BOS instead
 * of printing it); an id past the vocabulary is 0 bytes. */
int vocab_decode(const vocab *v, int id, char *buf);

typedef struct dataset {
    int32_t *tokens;      /* malloc'd */
    size_t n, n_train;    /* tokens [0, n_train) train, [n_train, n) val */
    double bytes_per_token[2];   /* of the train and the val split's text; NAN when unknown (VOCAB_IDS) */
} dataset;

/* Encodes the text with v and splits it 90/10. With VOCAB_LLAMA2C the text
 * is cut into documents at blank lines (the "\n\n" between paragraphs:
 * the first newline stays with its paragraph, the second goes), and each
 * document enters the stream as run.c encodes a prompt: BOS, the id of
 * " " (llama2.c's dummy prefix), its bytes. -1 with a message when a
 * split is too short for windows of block_size + 1 tokens. */
int dataset_make(dataset *d, const vocab *v, const char *text, size_t len, int block_size,
                 char *err, size_t errlen);
/* dataset_make for VOCAB_TOKENIZER (tokdata.c): the text encoded (a GPT's
 * in one piece; a Llama's as documents, each BOS + encode(" " + text),
 * the dummy prefix merging as run.c merges it), split 90/10. Bytes per
 * token: the pieces' bytes, specials 0, the dummy space not counted. */
int dataset_tokenize(dataset *d, const vocab *v, const char *text, size_t len, int block_size, char *err,
                     size_t errlen);
/* Fills the split's bytes per token from d's ids: the bytes the
 * tokenizer gives them (specials 0, ids past it 0), minus one per BOS for
 * docs (the dummy space); NAN for VOCAB_IDS. */
void dataset_bytes_per_token(dataset *d, const vocab *v);
/* What the evaluation line says of bits per byte: "B bits per byte", or
 * for bpb NAN (bytes per token unknown) that there are none. */
void bpb_note(char *buf, size_t size, double bpb);
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
