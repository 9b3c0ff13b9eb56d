/* What the GGUF writer's files share (not public): a growing buffer of
 * bytes, and the tokenizer as llama.cpp's (formats/gguf_write_vocab.c)
 * that formats/gguf.c writes into the file. */
#ifndef TG_GGUF_WRITE_INTERNAL_H
#define TG_GGUF_WRITE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_BYTE = 6 }; /* llama.cpp's token types */

/* ---- a growing buffer of bytes -------------------------------------------- */

typedef struct gbuf {
    unsigned char *p;
    size_t len, cap;
    bool oom;
    uint64_t count; /* key-values written (kv_key) */
} gbuf;

/* Appends d (n bytes) to b; out of memory, sets b->oom and appends nothing from then on. */
static inline void tg_gguf_put(gbuf *b, const void *d, size_t n)
{
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}
static inline void tg_gguf_put_u64(gbuf *b, uint64_t v) { tg_gguf_put(b, &v, 8); }

/* ---- the tokenizer ---------------------------------------------------------- */

/* The vocabulary's tokens in llama.cpp's SentencePiece-style form: text
 * (malloc'd, in *text at offsets *at, lengths *len), score and type per
 * id. 0, or -1 with a message. */
typedef struct gvocab {
    int n;
    gbuf text;
    size_t *at, *len;
    float *score;
    int32_t *type;
    int32_t bos, eos, unk; /* -1: none */
    bool add_bos, add_prefix;
    bool gpt2; /* llama.cpp's "gpt2" (byte-level BPE with merges) */
    bool rwkv; /* llama.cpp's "rwkv" (byte strings, the longest first; no specials); else its "llama" */
    gbuf merges; /* gpt2: "a b" strings, each a u64 length and its bytes */
    uint64_t n_merges;
} gvocab;

/* The model's vocabulary (V ids; a GPT's when gpt) as llama.cpp's
 * tokenizer into *g (formats/gguf_write_vocab.c says which model for
 * which vocabulary). 0, or -1 with a message; tg_gguf_vocab_free frees
 * g either way. */
int tg_gguf_make_vocab(const tg_vocab *v, int V, bool gpt, gvocab *g, tg_error *err);
void tg_gguf_vocab_free(gvocab *g);

#endif
