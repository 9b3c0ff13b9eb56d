/* tapegrad text: what the tokenizer files share inside the library.
 *
 * The tokenizer is its pieces in id order (bytes end to end, offsets),
 * with a flag per id for specials; two hash tables are built from them:
 * bytes -> id for the ordinary pieces, and (left id, right id) -> the id
 * of their concatenation, for every way each piece splits into two
 * pieces. Encoding only needs the second; loading needs the first. */
#ifndef TG_TEXT_INTERNAL_H
#define TG_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "text.h"

/* An open-addressing map from 64-bit keys (never UINT64_MAX) to int32. */
typedef struct tg_pairmap {
    uint64_t *keys;
    int32_t *vals;
    size_t cap, n; /* cap a power of two, or 0 */
} tg_pairmap;

/* An open-addressing map from byte strings (copied into its pool) to
 * int64 values. Entries are numbered in insertion order. */
typedef struct tg_strmap {
    uint32_t *slots; /* entry index + 1; 0 is empty */
    size_t cap; /* power of two, or 0 */
    struct tg_strent {
        uint64_t off, hash;
        uint32_t len;
        int64_t val;
    } * ents;
    size_t n, ents_cap;
    unsigned char *pool;
    size_t pool_len, pool_cap;
} tg_strmap;

struct tg_tokenizer {
    tg_tok_kind kind;
    int32_t n; /* ids */
    unsigned char *bytes; /* every piece end to end */
    int64_t *off; /* n + 1 offsets into bytes */
    uint8_t *special; /* n flags */
    int32_t *merges; /* TG_TOK_BPE: (n_merges, 2) left, right; else NULL */
    int32_t n_merges;
    int32_t byte_id[256]; /* the piece of each single byte */
    int32_t bos, eos, unk; /* -1 if none */
    size_t max_piece;
    uint64_t build_work; /* bytes tg_tok_build hashed and compared building pairs (linear in the pieces) */
    bool whole_word_first; /* tiktoken: a word that is a piece is one token */
    tg_pairmap pairs; /* (a << 32 | b) -> id of bytes(a) bytes(b) */
    tg_strmap pieces; /* ordinary piece bytes -> id */
    /* TG_TOK_SPM (text/spm.c); NULL otherwise */
    unsigned char *spelled; /* the pieces as the vocabulary spells them, end to end */
    int64_t *soff; /* n + 1 offsets into spelled */
    float *scores; /* n */
    uint8_t *types; /* n tg_piece_type */
    int32_t *rank; /* n: merge priority of a piece merges make (lower first); NULL: the id */
    uint8_t *mergeable; /* n: 1 when the id is half of some pair */
    tg_spm_options spm;
    char *pattern; /* tiktoken: the pre-split regex */
    void *re; /* its compiled pcre2_code */
};

/* ---- text/hash.c ---------------------------------------------------------- */

uint64_t tg_hash_bytes(const void *p, size_t len);
int32_t tg_pairmap_get(const tg_pairmap *m, uint64_t key); /* -1 if absent */
int tg_pairmap_put(tg_pairmap *m, uint64_t key, int32_t val); /* 0, or -1 out of memory */
void tg_pairmap_free(tg_pairmap *m);
/* The entry index of the given bytes (hash = tg_hash_bytes of them), or -1. */
int64_t tg_strmap_find(const tg_strmap *m, const void *p, uint32_t len, uint64_t hash);
/* Adds the bytes with val (they must be absent); entry index, -1 out of memory. */
int64_t tg_strmap_add(tg_strmap *m, const void *p, uint32_t len, uint64_t hash, int64_t val);
void tg_strmap_free(tg_strmap *m);
static inline const unsigned char *tg_strmap_key(const tg_strmap *m, int64_t e) { return m->pool + m->ents[e].off; }

/* ---- text/tokenizer.c ------------------------------------------------------ */

/* 0 when off (n + 1 offsets) cuts n pieces, end to end from 0, each at
 * most 2^30 bytes, with 1 <= n <= 2^30; else -1 with a message prefixed
 * by what (tg_tok_build and tg_tok_new_spm check with it). */
int tg_tok_check_offsets(int32_t n, const int64_t *off, const char *what, tg_error *err);
/* A tokenizer of n ids from pieces given end to end (off: n + 1 offsets,
 * special: n flags), all copied. Checks that ordinary pieces are non-empty
 * and distinct and that every single byte is one, and builds the maps.
 * NULL with a message (err prefixed by `what`). */
tg_tokenizer *tg_tok_build(int kind, int32_t n, const unsigned char *bytes, const int64_t *off, const uint8_t *special,
                           const char *what, tg_error *err);
/* Fills t->pairs from the pieces bytes/off (longest max_len) that part
 * marks as halves and target as results (NULL: the ordinary pieces for
 * both); 0, or -1 out of memory. */
int tg_tok_build_pairs(tg_tokenizer *t, const unsigned char *bytes, const int64_t *off, size_t max_len,
                       const uint8_t *part, const uint8_t *target);
/* A tiktoken tokenizer (GPT-2's pattern, a word that is a piece one
 * token) of the n pieces given end to end in rank order (off: n + 1
 * offsets), with <|endoftext|> = n; what the tiktoken reader makes of a
 * rank file, for readers of other files with the same ranks (formats/hf.c:
 * GPT-2's vocab.json and merges). NULL with a message prefixed by what. */
tg_tokenizer *tg_tok_tiktoken_new(int32_t n, const unsigned char *bytes, const int64_t *off, const char *what,
                                  tg_error *err);
/* Compiles t->pattern with PCRE2 (UTF, UCP, JIT when available); -1
 * with a message when it does not compile or is not GPT-2's. */
int tg_tok_compile_pattern(tg_tokenizer *t, const char *what, tg_error *err);

/* ---- text/encode.c --------------------------------------------------------- */

/* The first position >= pos where a TG_TOK_BPE word starts (len if none). */
size_t tg_bpe_word_start(const unsigned char *s, size_t len, size_t pos);
/* The end of the TG_TOK_BPE word that starts at pos (< len). */
size_t tg_bpe_word_end(const unsigned char *s, size_t len, size_t pos);

/* ---- text/spm.c ------------------------------------------------------------ */

/* tg_tok_encode of a TG_TOK_SPM tokenizer (one thread). */
int64_t tg_spm_encode(const tg_tokenizer *t, const unsigned char *s, size_t len, int32_t **ids, tg_error *err);

/* ---- text/bpe_words.c ----------------------------------------------------- */

/* Words longer than this are counted (and merged) in chunks of it. */
#define TG_BPE_MAX_WORD 256
/* The distinct words of s[0, len) and their counts into *words (empty on
 * entry), on tg_num_threads() threads: the same map on any number. 0, or
 * -1 when out of memory (*words untouched). */
int tg_bpe_count_words(const unsigned char *s, size_t len, bool classes, tg_strmap *words);

/* ---- text/merge.c ---------------------------------------------------------- */

/* The merge's work arrays, grown as words get longer. */
typedef struct tg_merge_scratch {
    int32_t *cand, *next, *prev;
    uint64_t *heap;
    size_t cap;
} tg_merge_scratch;

/* Merges the pieces sym[0..n) of one word by the rule of text/merge.c;
 * the word's ids are sym[0..return). s must hold n (tg_merge_reserve). */
size_t tg_bpe_merge(const tg_tokenizer *t, int32_t *sym, size_t n, tg_merge_scratch *s);
/* Grows s to words of n pieces; -1 when out of memory (s stays valid). */
int tg_merge_reserve(tg_merge_scratch *s, size_t n);
void tg_merge_scratch_free(tg_merge_scratch *s);

/* ---- text/utf8.c ------------------------------------------------------------ */

/* Length of the valid UTF-8 character at s[0..n) (1..4), or 0 when s[0]
 * starts no valid character there; *sub gets the length of the maximal
 * subpart of an ill-formed one (>= 1): what one U+FFFD replaces. */
int tg_utf8_char(const unsigned char *s, size_t n, int *sub);
/* 1 when the bytes held so far (n < 4) are a proper prefix of some valid
 * character, so more bytes could complete it. */
bool tg_utf8_incomplete(const unsigned char *s, int n);

#endif
