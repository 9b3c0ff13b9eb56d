#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

void vocab_build(vocab *v, const char *text, size_t len)
{
    bool seen[256] = {0};
    for (size_t i = 0; i < len; i++) seen[(uint8_t)text[i]] = true;
    v->kind = VOCAB_CHARS;
    v->size = 0;
    v->tok = NULL;
    v->docs = false;
    for (int b = 0; b < 256; b++) {
        v->ids[b] = -1;
        if (seen[b]) {
            v->ids[b] = (int16_t)v->size;
            v->chars[v->size++] = (uint8_t)b;
        }
    }
}

void vocab_llama2c(vocab *v)
{
    v->kind = VOCAB_LLAMA2C;
    v->size = VOCAB_LLAMA2C_SIZE;
    v->tok = NULL;
    v->docs = false;
    for (int b = 0; b < 256; b++) v->ids[b] = (int16_t)(b + 3), v->chars[b] = (uint8_t)b;
}

void vocab_to_string(const vocab *v, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    if (v->kind != VOCAB_CHARS) {
        if (v->kind == VOCAB_IDS) snprintf(buf, size, "ids:%d", v->size);
        else snprintf(buf, size, v->kind == VOCAB_LLAMA2C ? "llama2c" : "tokenizer");
        return;
    }
    for (int i = 0; i < v->size && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ",%d" : "%d", v->chars[i]);
}

int vocab_from_string(vocab *v, const char *s, char *err, size_t errlen)
{
    if (!strcmp(s, "llama2c")) {
        vocab_llama2c(v);
        return 0;
    }
    if (!strncmp(s, "ids:", 4)) {
        char *end;
        errno = 0;
        long n = strtol(s + 4, &end, 10);
        if (end == s + 4 || *end || errno || n < 1 || n > (1L << 24)) {
            snprintf(err, errlen, "vocabulary: '%s' is not ids:N with N in [1, 2^24]", s);
            return -1;
        }
        vocab_ids(v, (int)n);
        return 0;
    }
    if (!strcmp(s, "tokenizer")) {
        snprintf(err, errlen, "vocabulary: 'tokenizer' is read from the checkpoint's tokenizer entries");
        return -1;
    }
    v->kind = VOCAB_CHARS;
    v->size = 0;
    v->tok = NULL;
    v->docs = false;
    for (int b = 0; b < 256; b++) v->ids[b] = -1;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long b = strtol(p, &end, 10);
        if (end == p || errno || b < 0 || b > 255 || (*end && *end != ',')) {
            snprintf(err, errlen, "vocabulary: bad entry at \"%.20s\"", p);
            return -1;
        }
        if (v->ids[b] >= 0 || (v->size && b <= v->chars[v->size - 1])) {
            snprintf(err, errlen, "vocabulary: bytes must be increasing and unique (at %ld)", b);
            return -1;
        }
        v->ids[b] = (int16_t)v->size;
        v->chars[v->size++] = (uint8_t)b;
        p = *end ? end + 1 : end;
    }
    if (!v->size) {
        snprintf(err, errlen, "vocabulary: empty");
        return -1;
    }
    return 0;
}

int vocab_encode(const vocab *v, const char *text, size_t len, int32_t *out, size_t *bad)
{
    for (size_t i = 0; i < len; i++) {
        int id = v->ids[(uint8_t)text[i]];
        if (id < 0) {
            if (bad) *bad = i;
            return -1;
        }
        out[i] = id;
    }
    return 0;
}

int vocab_decode(const vocab *v, int id, char *buf)
{
    static const char *const specials[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    if (v->kind == VOCAB_TOKENIZER || v->kind == VOCAB_IDS) return 0;   /* (sample streams a tokenizer's) */
    if (v->kind == VOCAB_CHARS) {
        if (id < 0 || id >= v->size) return 0;
        buf[0] = (char)v->chars[id];
        return 1;
    }
    if (id >= 0 && id < 3) {
        const size_t n = strlen(specials[id]);
        memcpy(buf, specials[id], n);
        return (int)n;
    }
    if (id < 3 || id >= VOCAB_LLAMA2C_SIZE) return 0;
    buf[0] = (char)(id - 3);
    return 1;
}

/* The token count of VOCAB_LLAMA2C's document stream for text (or, with
 * out, the stream itself): per document BOS, " ", its bytes (see data.h). */
static size_t llama2c_stream(const vocab *v, const char *text, size_t len, int32_t *out)
{
    size_t n = 0, i = 0;
    while (i < len) {
        size_t end = i;   /* the document: up to the first "\n\n", keeping one newline */
        while (end < len && !(text[end] == '\n' && end + 1 < len && text[end + 1] == '\n')) end++;
        if (end < len) end++;   /* the newline that ends its last line */
        if (end > i && !(end - i == 1 && text[i] == '\n')) {
            if (out) {
                out[n] = VOCAB_BOS;
                out[n + 1] = v->ids[' '];
                for (size_t k = i; k < end; k++) out[n + 2 + k - i] = v->ids[(uint8_t)text[k]];
            }
            n += 2 + (end - i);
        }
        i = end < len ? end + 1 : end;   /* past the blank line's newline */
    }
    return n;
}

int dataset_make(dataset *d, const vocab *v, const char *text, size_t len, int block_size, char *err,
                 size_t errlen)
{
    if (v->kind == VOCAB_TOKENIZER) return dataset_tokenize(d, v, text, len, block_size, err, errlen);
    memset(d, 0, sizeof *d);
    if (v->kind == VOCAB_IDS) {
        snprintf(err, errlen, "data: a vocabulary of token ids has no text to encode (train on --data-tokens)");
        return -1;
    }
    const bool docs = v->kind == VOCAB_LLAMA2C;
    const size_t n = docs ? llama2c_stream(v, text, len, NULL) : len;
    size_t n_train = (size_t)((double)n * 0.9);   /* first 90%, as nanoGPT int(0.9 * n) */
    if (n_train < (size_t)block_size + 1 || n - n_train < (size_t)block_size + 1) {
        snprintf(err, errlen,
                 "data: %zu %s split 90/10 leave fewer than block_size + 1 = %d in a split; "
                 "use more text or a smaller --block-size",
                 n, docs ? "tokens" : "characters", block_size + 1);
        return -1;
    }
    d->tokens = malloc(n * sizeof *d->tokens);
    if (!d->tokens) {
        snprintf(err, errlen, "data: out of memory for %zu tokens", n);
        return -1;
    }
    size_t bad = 0;
    if (docs) {
        llama2c_stream(v, text, len, d->tokens);
    } else if (vocab_encode(v, text, len, d->tokens, &bad) != 0) {
        snprintf(err, errlen, "data: byte %d at offset %zu is not in the vocabulary", (uint8_t)text[bad], bad);
        dataset_free(d);
        return -1;
    }
    d->n = n;
    d->n_train = n_train;
    /* bytes of text per token in each split: the documents' own bytes, so
     * neither BOS nor the dummy space after it (one per BOS) */
    for (int s = 0; s < 2; s++) {
        int64_t bytes = 0;
        for (size_t i = s ? n_train : 0; docs && i < (s ? n : n_train); i++)
            bytes += d->tokens[i] >= 3 ? 1 : d->tokens[i] == VOCAB_BOS ? -1 : 0;
        const size_t tokens = s ? n - n_train : n_train;
        d->bytes_per_token[s] = docs ? (double)(bytes > 0 ? bytes : 1) / (double)tokens : 1.0;
    }
    return 0;
}

void dataset_free(dataset *d)
{
    free(d->tokens);
    memset(d, 0, sizeof *d);
}

void dataset_batch(const dataset *d, bool val, int B, int T, tg_rng *rng, int32_t *x, int32_t *y)
{
    dataset_rows(d, val, B, 0, B, T, rng, x, y);
}

void dataset_rows(const dataset *d, bool val, int total, int first, int count, int T, tg_rng *rng, int32_t *x,
                  int32_t *y)
{
    const int32_t *base = val ? d->tokens + d->n_train : d->tokens;
    size_t n = val ? d->n - d->n_train : d->n_train;
    uint32_t starts = (uint32_t)(n - (size_t)T);   /* windows of T + 1 tokens */
    for (int b = 0; b < total; b++) {
        size_t s = tg_rng_below(rng, starts);   /* every row is drawn, so rng moves as for the whole batch */
        if (b < first || b >= first + count) continue;
        memcpy(x + (size_t)(b - first) * T, base + s, (size_t)T * sizeof *x);
        memcpy(y + (size_t)(b - first) * T, base + s + 1, (size_t)T * sizeof *y);
    }
}

char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *b = realloc(buf, cap);
            if (!b) {
                snprintf(err, errlen, "%s: out of memory", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (got < 65536) break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

int run_text_load(run_text *t, const char *path, int corpus_chars, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->floor_nats = -1;
    if (path && *path) {
        if (!(t->text = read_file(path, &t->len, err, errlen))) return -1;
        if (t->len == 0) {
            snprintf(err, errlen, "--data %s: the file is empty", path);
            run_text_free(t);
            return -1;
        }
        return 0;
    }
    corpus cp;
    if (corpus_generate(&cp, 1, (size_t)corpus_chars) != 0) {
        snprintf(err, errlen, "out of memory generating the corpus");
        return -1;
    }
    t->text = cp.text;
    t->len = cp.len;
    t->floor_nats = corpus_nats_per_char(&cp);
    return 0;
}

void run_text_free(run_text *t)
{
    free(t->text);
    memset(t, 0, sizeof *t);
}
