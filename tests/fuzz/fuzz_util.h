/* What the fuzz harnesses share: the bytes of an input written to a file
 * in this process's own temporary directory (the readers take paths),
 * removed when the process exits; and a walk over a loaded tokenizer. */
#ifndef TG_FUZZ_UTIL_H
#define TG_FUZZ_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapegrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_tmp[512];

/* Removes the directory's files, then the directory (atexit). */
static inline void fuzz_cleanup(void)
{
    DIR *d = opendir(fuzz_tmp);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", fuzz_tmp, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(fuzz_tmp);
}

/* This process's temporary directory (made on the first call), or NULL. */
static inline const char *fuzz_dir(void)
{
    if (!fuzz_tmp[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_tmp, sizeof fuzz_tmp, "%s/tg_fuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_tmp)) {
            perror("fuzz: mkdtemp");
            fuzz_tmp[0] = 0;
            return NULL;
        }
        atexit(fuzz_cleanup);
    }
    return fuzz_tmp;
}

/* The path of file `name` in the directory (a static buffer per slot 0..3). */
static inline const char *fuzz_path(int slot, const char *name)
{
    static char paths[4][1024];
    const char *d = fuzz_dir();
    if (!d) return NULL;
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", d, name);
    return paths[slot];
}

/* Writes size bytes of data to file `name`; its path, or NULL (a harness
 * then skips the input: only a broken /tmp makes this fail). */
static inline const char *fuzz_write(int slot, const char *name, const uint8_t *data, size_t size)
{
    const char *p = fuzz_path(slot, name);
    if (!p) return NULL;
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    const int wrote = size == 0 || fwrite(data, 1, size, f) == size;
    const int ok = (fclose(f) == 0) && wrote;
    return ok ? p : NULL;
}

/* With TG_FUZZ_VERBOSE set (tests/fuzz/README.md), says on stderr what
 * the reader made of the input: "accepted", or its error message. */
static inline void fuzz_report(int ok, const char *err)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("TG_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "  %s\n", ok ? "accepted" : err);
}

/* Uses every part of a tokenizer a reader accepted: its pieces, its
 * specials, and an encode + decode of a fixed text. A validated tokenizer
 * holds every byte and (tiktoken) splits with a pattern that puts every
 * character in a word, so the decode of the text, valid UTF-8, gives it
 * back: when it does not, the reader accepted an inconsistent file or a
 * pattern that drops text (abort: a finding). */
static inline void fuzz_use_tokenizer(const tg_tokenizer *t)
{
    static const char text[] = "Hello, world! It's 2024: na\xc3\xafve caf\xc3\xa9 \xe2\x82\xac 5 \xf0\x9f\x98\x80\n\n"
                               "  the end</s><s><|endoftext|>\tx";
    const int32_t v = tg_tok_vocab_size(t);
    size_t total = 0;
    for (int32_t id = 0; id < v && id < 100000; id++) {
        size_t l;
        const unsigned char *p = tg_tok_piece(t, id, &l);
        if (p && l) total += p[0] + p[l - 1];
        total += (size_t)tg_tok_is_special(t, id);
    }
    (void)tg_tok_piece(t, v, NULL);
    (void)tg_tok_bos(t);
    (void)tg_tok_eos(t);
    (void)tg_tok_max_piece_len(t);
    (void)tg_tok_special_id(t, "<|endoftext|>");
    tg_error err = {0};
    int32_t *ids = NULL;
    const int64_t n = tg_tok_encode(t, text, sizeof text - 1, &ids, &err);
    if (n >= 0) {
        char out[sizeof text * 8];
        const int64_t m = tg_tok_decode(t, ids, (size_t)n, out, sizeof out, &err);
        if (m != (int64_t)sizeof text - 1 || memcmp(out, text, sizeof text - 1)) {
            fprintf(stderr, "fuzz: a tokenizer the reader accepted does not decode its own encoding\n");
            abort();
        }
    }
    tg_free(ids);
    (void)total;
}

#endif
