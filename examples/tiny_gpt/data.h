/* tiny_gpt data: a character vocabulary, the token stream, the 90/10
 * train/val split, and random batches of windows. */
#ifndef TINY_GPT_DATA_H
#define TINY_GPT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../tapegrad.h"

/* Characters are bytes; the vocabulary is the sorted set of bytes present. */
typedef struct vocab {
    int size;
    uint8_t chars[256];   /* id -> byte */
    int16_t ids[256];     /* byte -> id, or -1 */
} vocab;

void vocab_build(vocab *v, const char *text, size_t len);
/* "10,32,97,...": the bytes as decimal numbers (for checkpoint metadata). */
void vocab_to_string(const vocab *v, char *buf, size_t size);
/* Parses vocab_to_string's form; 0, or -1 with a message in err. */
int vocab_from_string(vocab *v, const char *s, char *err, size_t errlen);
/* Encodes len bytes into out; returns -1 at the first byte outside the
 * vocabulary (its index in *bad), else 0. */
int vocab_encode(const vocab *v, const char *text, size_t len, int32_t *out, size_t *bad);

typedef struct dataset {
    int32_t *tokens;      /* malloc'd */
    size_t n, n_train;    /* tokens [0, n_train) train, [n_train, n) val */
    double bytes_per_token[2];   /* of the train and the val split's text */
} dataset;

/* Encodes the text with v and splits it 90/10. -1 with a message when a
 * split is too short for windows of block_size + 1 tokens. */
int dataset_make(dataset *d, const vocab *v, const char *text, size_t len, int block_size,
                 char *err, size_t errlen);
void dataset_free(dataset *d);

/* B random windows of the train (val = false) or val split: x (B,T) and
 * y (B,T) = x shifted by one. */
void dataset_batch(const dataset *d, bool val, int B, int T, tg_rng *rng, int32_t *x, int32_t *y);

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
