/* tiny_gpt data: the text a run trains on (the library's train/train.h
 * has the vocabularies, datasets and batches). */
#ifndef TINY_GPT_DATA_H
#define TINY_GPT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../tapegrad.h"

/* What the evaluation line says of bits per byte: "B bits per byte", or
 * for bpb NAN (bytes per token unknown) that there are none. */
void bpb_note(char *buf, size_t size, double bpb);

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
