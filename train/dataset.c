/* Datasets (train.h): a text or token files as one stream of ids, split
 * into train and val, and random windows of it as batches. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

void tg_dataset_release(tg_dataset *d)
{
    if (!d) return;
    free(d->tokens);
    memset(d, 0, sizeof *d);
}

/* Appends ids[0..n) to d->tokens (capacity *cap); -1 when out of memory. */
static int append(tg_dataset *d, size_t *cap, const int32_t *ids, size_t n)
{
    if (d->n + n > *cap) {
        size_t c = *cap ? *cap : 1 << 16;
        while (c < d->n + n) c *= 2;
        int32_t *t = realloc(d->tokens, c * sizeof *t);
        if (!t) return -1;
        d->tokens = t;
        *cap = c;
    }
    memcpy(d->tokens + d->n, ids, n * sizeof *ids);
    d->n += n;
    return 0;
}

/* 0 when both splits hold a window of block_size + 1 tokens. */
static int check_split(const tg_dataset *d, int block_size, const char *what, tg_error *err)
{
    if (d->n_train >= (size_t)block_size + 1 && d->n - d->n_train >= (size_t)block_size + 1) return 0;
    return tg_error_set(err,
                        "data: %s (%zu train and %zu val tokens) leave fewer than block_size + 1 = %d "
                        "in a split; use more text or a smaller --block-size",
                        what, d->n_train, d->n - d->n_train, block_size + 1);
}

/* The documents of a text, llama2.c's way: cut at blank lines, the first
 * newline of "\n\n" staying with its paragraph. Calls fn(ctx, start, len)
 * per document (a lone newline is none); stops at fn's first nonzero. */
static int each_document(const char *text, size_t len, int (*fn)(void *ctx, const char *doc, size_t n), void *ctx)
{
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && !(text[end] == '\n' && end + 1 < len && text[end + 1] == '\n')) end++;
        if (end < len) end++; /* the newline that ends its last line */
        if (end > i && !(end - i == 1 && text[i] == '\n')) {
            const int rc = fn(ctx, text + i, end - i);
            if (rc) return rc;
        }
        i = end < len ? end + 1 : end; /* past the blank line's newline */
    }
    return 0;
}

/* ---- llama2.c's bytes: BOS, " ", the document's bytes -------------------------- */

typedef struct bytes_docs {
    const tg_vocab *v;
    int32_t *out; /* NULL: count only */
    size_t n;
} bytes_docs;

static int bytes_doc(void *ctx, const char *doc, size_t len)
{
    bytes_docs *b = ctx;
    if (b->out) {
        b->out[b->n] = TG_VOCAB_BOS;
        b->out[b->n + 1] = b->v->ids[' '];
        for (size_t k = 0; k < len; k++) b->out[b->n + 2 + k] = b->v->ids[(uint8_t)doc[k]];
    }
    b->n += 2 + len;
    return 0;
}

/* ---- a tokenizer's ids ------------------------------------------------------------ */

typedef struct tok_docs {
    tg_dataset *d;
    size_t cap;
    const tg_vocab *v;
    char *doc; /* " " + the document */
    char e2[1024];
} tok_docs;

/* Appends BOS (bos >= 0) and the ids of len bytes of text; 0, or -1 with
 * the encoder's message (or "out of memory") in t->e2. */
static int add_encoded(tok_docs *t, int32_t bos, const char *text, size_t len)
{
    int32_t *ids = NULL;
    tg_error e = {0};
    const int64_t n = tg_tok_encode(t->v->tok, text, len, &ids, &e);
    if (n < 0) return snprintf(t->e2, sizeof t->e2, "%s", e.msg), -1;
    const int rc = (bos >= 0 && append(t->d, &t->cap, &bos, 1)) || append(t->d, &t->cap, ids, (size_t)n);
    if (rc) snprintf(t->e2, sizeof t->e2, "out of memory");
    tg_free(ids);
    return rc ? -1 : 0;
}

static int tok_doc(void *ctx, const char *doc, size_t len)
{
    tok_docs *t = ctx;
    if (!tg_vocab_space_before_text(t->v)) /* the tokenizer's own rule: " " added by it, or none */
        return add_encoded(t, tg_tok_bos(t->v->tok), doc, len);
    t->doc[0] = ' '; /* llama2.c's dummy prefix, encoded with the text as run.c encodes it */
    memcpy(t->doc + 1, doc, len);
    return add_encoded(t, tg_tok_bos(t->v->tok), t->doc, len + 1);
}

static int from_tokenizer(tg_dataset *d, size_t *cap, const tg_vocab *v, const char *text, size_t len, tg_error *err)
{
    tok_docs t = {.d = d, .cap = *cap, .v = v};
    snprintf(t.e2, sizeof t.e2, "out of memory");
    int rc;
    if (!v->docs) rc = add_encoded(&t, -1, text, len); /* one stream */
    else if (!(t.doc = malloc(len + 2))) rc = -1;
    else rc = each_document(text, len, tok_doc, &t);
    free(t.doc);
    *cap = t.cap;
    return rc ? tg_error_set(err, "data: encoding the text: %s", t.e2) : 0;
}

size_t tg_text_train_bytes(const char *text, size_t len)
{
    size_t m = (size_t)((double)len * 0.9); /* nanoGPT's int(0.9 * n) */
    for (int k = 0; text && k < 3 && m > 0 && m < len && ((unsigned char)text[m] & 0xc0) == 0x80; k++) m--;
    return m;
}

/* The ids of part (0: train, 1: val) of the text, appended to d: a
 * tokenizer's, or llama2.c's bytes (counted first, then written). */
static int encode_part(tg_dataset *d, size_t *cap, const tg_vocab *v, const char *text, size_t len, tg_error *err)
{
    if (v->kind == TG_VOCAB_TOKENIZER) return from_tokenizer(d, cap, v, text, len, err);
    bytes_docs b = {.v = v};
    each_document(text, len, bytes_doc, &b);
    if (d->n + b.n > *cap) {
        int32_t *t = realloc(d->tokens, (d->n + b.n) * sizeof *t);
        if (!t) return tg_error_set(err, "data: out of memory for %zu tokens", d->n + b.n);
        d->tokens = t;
        *cap = d->n + b.n;
    }
    b.out = d->tokens + d->n;
    b.n = 0;
    each_document(text, len, bytes_doc, &b);
    d->n += b.n;
    return 0;
}

int tg_dataset_from_text(tg_dataset *d, const tg_vocab *v, const char *text, size_t len, int block_size, tg_error *err)
{
    if (!d || !v || (!text && len))
        return tg_error_set(err, "dataset_from_text: %s is NULL",
                            !d       ? "the dataset"
                                : !v ? "the vocabulary"
                                     : "the text");
    memset(d, 0, sizeof *d);
    if (block_size < 1) return tg_error_set(err, "dataset_from_text: block_size %d is below 1", block_size);
    if (v->kind == TG_VOCAB_IDS)
        return tg_error_set(err, "data: a vocabulary of token ids has no text to encode (train on token files)");
    const size_t mark = tg_text_train_bytes(text, len);
    if (v->kind == TG_VOCAB_TOKENIZER || v->kind == TG_VOCAB_LLAMA2C) {
        /* each split encoded apart: no token straddles the mark */
        size_t cap = 0;
        if (encode_part(d, &cap, v, text, mark, err)) goto fail;
        d->n_train = d->n;
        if (encode_part(d, &cap, v, text + mark, len - mark, err)) goto fail;
        char what[96];
        snprintf(what, sizeof what, "the text split 90/10 at byte %zu of %zu", mark, len);
        if (check_split(d, block_size, what, err)) goto fail;
        /* bytes of each split's text per token: BOS stands for the blank line */
        d->bytes_per_token[0] = (double)mark / (double)d->n_train;
        d->bytes_per_token[1] = (double)(len - mark) / (double)(d->n - d->n_train);
        return 0;
    }
    if (mark < (size_t)block_size + 1 || len - mark < (size_t)block_size + 1)
        return tg_error_set(err,
                            "data: %zu characters split 90/10 leave fewer than block_size + 1 = %d in a "
                            "split; use more text or a smaller --block-size",
                            len, block_size + 1);
    if (!(d->tokens = malloc(len * sizeof *d->tokens)))
        return tg_error_set(err, "data: out of memory for %zu tokens", len);
    size_t bad = 0;
    if (tg_vocab_encode(v, text, len, d->tokens, &bad) != 0) {
        tg_dataset_release(d);
        return tg_error_set(err, "data: byte %d at offset %zu is not in the vocabulary", (uint8_t)text[bad], bad);
    }
    d->n = len;
    d->n_train = mark;
    d->bytes_per_token[0] = d->bytes_per_token[1] = 1.0;
    return 0;
fail:
    tg_dataset_release(d);
    return -1;
}

void tg_dataset_bytes_per_token(tg_dataset *d, const tg_vocab *v)
{
    if (!d || !v) return;
    for (int s = 0; s < 2; s++) {
        const size_t lo = s ? d->n_train : 0, hi = s ? d->n : d->n_train;
        if (v->kind != TG_VOCAB_TOKENIZER || hi == lo) {
            d->bytes_per_token[s] = NAN;
            continue;
        }
        const int32_t bos = v->docs ? tg_tok_bos(v->tok) : -1;
        int64_t bytes = 0;
        for (size_t i = lo; i < hi; i++) {
            size_t l = 0;
            if (d->tokens[i] == bos) bytes--; /* the dummy " " after it is no byte of the text */
            else if (!tg_tok_is_special(v->tok, d->tokens[i])) tg_tok_piece(v->tok, d->tokens[i], &l);
            bytes += (int64_t)l;
        }
        d->bytes_per_token[s] = (double)(bytes > 0 ? bytes : 1) / (double)(hi - lo);
    }
}

/* ---- token files --------------------------------------------------------------------- */

/* Appends the ids of the file at path to d; its identity into *id. */
static int load_file(tg_dataset *d, size_t *cap, int64_t V, const char *path, tg_token_file_id *id, tg_error *err)
{
    tg_error e2 = {0};
    tg_tokfile *f = tg_tokfile_open(path, TG_TOKFILE_AUTO, V, &e2);
    if (!f) return tg_error_set(err, "%s", e2.msg);
    const int64_t n = tg_tokfile_count(f);
    const size_t at = d->n;
    int rc = 0;
    int32_t buf[4096];
    for (int64_t j = 0; !rc && j < n; j += 4096) {
        const int64_t m = n - j < 4096 ? n - j : 4096;
        rc = tg_tokfile_read(f, j, m, buf) || append(d, cap, buf, (size_t)m);
    }
    id->format = tg_tokfile_format_of(f);
    tg_tokfile_free(f);
    if (rc) return tg_error_set(err, "%s: out of memory for %lld tokens", path, (long long)n);
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a over the ids, 4 bytes each, little-endian */
    for (size_t i = at; i < d->n; i++)
        for (int b = 0; b < 4; b++) h = (h ^ (((uint32_t)d->tokens[i] >> (8 * b)) & 0xff)) * 0x100000001b3u;
    id->count = n;
    id->fnv = h;
    return 0;
}

int tg_dataset_from_token_files(tg_dataset *d, const tg_vocab *v, const char *train_path, const char *val_path,
                                int block_size, tg_token_file_id *ids, tg_error *err)
{
    if (!d || !v || !train_path)
        return tg_error_set(err, "dataset_from_token_files: %s is NULL",
                            !d       ? "the dataset"
                                : !v ? "the vocabulary"
                                     : "the train file");
    memset(d, 0, sizeof *d);
    if (block_size < 1) return tg_error_set(err, "dataset_from_token_files: block_size %d is below 1", block_size);
    tg_token_file_id got[2] = {{.count = -1}, {.count = -1}};
    size_t cap = 0;
    if (load_file(d, &cap, v->size, train_path, &got[0], err)) goto fail;
    d->n_train = val_path ? d->n : (size_t)((double)d->n * 0.9);
    if (!val_path) got[1] = (tg_token_file_id){0};
    if (val_path && load_file(d, &cap, v->size, val_path, &got[1], err)) goto fail;
    if (check_split(d, block_size, val_path ? "the token files" : "the tokens split 90/10", err)) goto fail;
    tg_vocab plain = *v; /* the files' own ids: their decoded bytes, no dummy space to discount */
    plain.docs = false;
    tg_dataset_bytes_per_token(d, &plain);
    if (ids) ids[0] = got[0], ids[1] = got[1];
    return 0;
fail:
    if (ids) ids[0] = got[0], ids[1] = got[1];
    tg_dataset_release(d);
    return -1;
}

/* ---- batches ---------------------------------------------------------------------------- */

/* The train (val false) or val split's tokens, their count in *n. */
static const int32_t *split_of(const tg_dataset *d, bool val, size_t *n)
{
    *n = val ? d->n - d->n_train : d->n_train;
    return val ? d->tokens + d->n_train : d->tokens;
}

/* Row `row` of x and y: the window of T + 1 tokens at base + s. */
static void put_row(const int32_t *base, size_t s, int row, int T, int32_t *x, int32_t *y)
{
    memcpy(x + (size_t)row * T, base + s, (size_t)T * sizeof *x);
    memcpy(y + (size_t)row * T, base + s + 1, (size_t)T * sizeof *y);
}

void tg_dataset_rows(const tg_dataset *d, bool val, const tg_rows *r, tg_rng *rng)
{
    if (!d || !d->tokens || !r || !rng || !r->x || !r->y || r->T < 1 || r->first < 0 || r->count < 0 ||
        r->first + r->count > r->total)
        return;
    const int T = r->T, total = r->total, first = r->first, count = r->count;
    int32_t *x = r->x, *y = r->y;
    size_t n;
    const int32_t *base = split_of(d, val, &n);
    if (n < (size_t)T + 1 || n - (size_t)T > UINT32_MAX) return;
    const uint32_t starts = (uint32_t)(n - (size_t)T); /* windows of T + 1 tokens */
    for (int b = 0; b < total; b++) {
        const size_t s = tg_rng_below(rng, starts); /* every row is drawn, so rng moves as for the whole batch */
        if (b >= first && b < first + count) put_row(base, s, b - first, T, x, y);
    }
}

/* ---- epochs: every window once, in a shuffled order ------------------------------------ */

static uint64_t mix64(uint64_t z) /* splitmix64's finalizer: a bijection that scatters the bits */
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A permutation of [0, n) chosen by key, computed one element at a time:
 * a four-round Feistel network on 2h bits (4^h >= n, so fewer than four
 * tries for each i on average) walked along its cycle until it lands
 * below n. */
static uint64_t permute(uint64_t i, uint64_t n, uint64_t key)
{
    int h = 1;
    while (h < 32 && (1ull << (2 * h)) < n) h++;
    const uint64_t mask = (1ull << h) - 1;
    do {
        uint64_t l = i >> h, r = i & mask;
        for (uint64_t round = 0; round < 4; round++) {
            const uint64_t f = mix64(r + mix64(key + round)) & mask;
            const uint64_t t = l ^ f;
            l = r;
            r = t;
        }
        i = l << h | r;
    } while (i >= n);
    return i;
}

int64_t tg_dataset_epoch_windows(const tg_dataset *d, bool val, int T)
{
    if (!d || !d->tokens || T < 1) return 0;
    size_t n;
    split_of(d, val, &n);
    if (n < (size_t)T + 1) return 0;
    return n < 2 * (size_t)T ? 1 : (int64_t)((n - (size_t)T) / (size_t)T);
}

void tg_dataset_epoch_rows(const tg_dataset *d, bool val, const tg_rows *r, uint64_t seed, int64_t at)
{
    if (!r) return;
    const int T = r->T, total = r->total, first = r->first, count = r->count;
    int32_t *x = r->x, *y = r->y;
    const int64_t W = tg_dataset_epoch_windows(d, val, T);
    if (!W || !x || !y || at < 0 || first < 0 || count < 0 || first + count > total || at > INT64_MAX - total) return;
    size_t n;
    const int32_t *base = split_of(d, val, &n);
    const uint64_t spare = n - 1 - (uint64_t)W * (uint64_t)T; /* the targets an epoch leaves: the phase's range */
    for (int b = first; b < first + count; b++) {
        const uint64_t w = (uint64_t)at + (uint64_t)b, epoch = w / (uint64_t)W;
        const uint64_t key = mix64(mix64(seed) ^ mix64(epoch + 0x9e3779b97f4a7c15u));
        const size_t s = (size_t)(mix64(key) % (spare + 1) + permute(w % (uint64_t)W, (uint64_t)W, key) * (uint64_t)T);
        put_row(base, s, b - first, T, x, y);
    }
}
