/* Vocabularies (train.h): the ids a model reads, and their form in a
 * checkpoint. */
#include "train.h"

#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"

static void vocab_empty(tg_vocab *v, tg_vocab_kind kind, int size)
{
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->size = size;
    for (int b = 0; b < 256; b++) v->ids[b] = -1; /* no byte is an id by itself */
}

void tg_vocab_bytes(tg_vocab *v, const char *text, size_t len)
{
    if (!v) return;
    bool seen[256] = {0};
    for (size_t i = 0; text && i < len; i++) seen[(uint8_t)text[i]] = true;
    vocab_empty(v, TG_VOCAB_BYTES, 0);
    for (int b = 0; b < 256; b++)
        if (seen[b]) {
            v->ids[b] = (int16_t)v->size;
            v->chars[v->size++] = (uint8_t)b;
        }
}

void tg_vocab_llama2c(tg_vocab *v)
{
    if (!v) return;
    vocab_empty(v, TG_VOCAB_LLAMA2C, TG_VOCAB_LLAMA2C_SIZE);
    for (int b = 0; b < 256; b++) v->ids[b] = (int16_t)(b + 3), v->chars[b] = (uint8_t)b;
}

void tg_vocab_ids(tg_vocab *v, int size)
{
    if (v) vocab_empty(v, TG_VOCAB_IDS, size);
}

void tg_vocab_release(tg_vocab *v)
{
    if (!v) return;
    if (v->kind == TG_VOCAB_TOKENIZER) tg_tok_free(v->tok);
    memset(v, 0, sizeof *v);
}

int tg_vocab_tokenizer(tg_vocab *v, tg_tokenizer *tok, bool docs, int min_size, tg_error *err)
{
    if (!v || !tok) {
        tg_tok_free(tok);
        return tg_error_set(err, "vocab_tokenizer: %s is NULL", v ? "the tokenizer" : "the vocabulary");
    }
    const int32_t n = tg_tok_vocab_size(tok);
    vocab_empty(v, TG_VOCAB_TOKENIZER, n > min_size ? n : min_size);
    v->tok = tok;
    v->docs = docs;
    if (docs && tg_tok_bos(tok) < 0) {
        tg_error_set(err,
                     "the tokenizer (%s) has no BOS id, which a Llama's documents start with (llama2.c's "
                     "convention): use tapegrad's BPE (tiny_gpt tokenizer train), or --arch gpt",
                     tg_tok_kind_of(tok) == TG_TOK_TIKTOKEN  ? "GPT-2's tiktoken ranks"
                         : tg_tok_kind_of(tok) == TG_TOK_SPM ? "pieces with scores"
                                                             : "tapegrad's BPE");
        tg_vocab_release(v);
        return -1;
    }
    return 0;
}

/* ---- as text, and in a checkpoint ------------------------------------------ */

int tg_vocab_to_string(const tg_vocab *v, char *buf, size_t size)
{
    if (!v || !buf || !size) return -1;
    int n;
    if (v->kind == TG_VOCAB_IDS) n = snprintf(buf, size, "ids:%d", v->size);
    else if (v->kind != TG_VOCAB_BYTES) n = snprintf(buf, size, v->kind == TG_VOCAB_LLAMA2C ? "llama2c" : "tokenizer");
    else {
        size_t at = 0;
        buf[0] = 0;
        for (int i = 0; i < v->size && at < size; i++)
            at += (size_t)snprintf(buf + at, size - at, i ? ",%d" : "%d", v->chars[i]);
        n = (int)at;
    }
    return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* A whole decimal number in [lo, hi] from s up to its first `stop` or
 * end: its value, or -1; *end is set past the digits. */
static long decimal(const char *s, char stop, long lo, long hi, const char **end)
{
    long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && p - s < 9; p++) v = v * 10 + (*p - '0');
    *end = p;
    return p == s || (*p && *p != stop) || v < lo || v > hi ? -1 : v;
}

int tg_vocab_from_string(tg_vocab *v, const char *s, tg_error *err)
{
    if (!v || !s) return tg_error_set(err, "vocab_from_string: %s is NULL", v ? "the text" : "the vocabulary");
    const char *end;
    if (!strcmp(s, "llama2c")) {
        tg_vocab_llama2c(v);
        return 0;
    }
    if (!strncmp(s, "ids:", 4)) {
        const long n = decimal(s + 4, 0, 1, 1L << 24, &end);
        if (n < 0) return tg_error_set(err, "vocabulary: '%.40s' is not ids:N with N in [1, 2^24]", s);
        tg_vocab_ids(v, (int)n);
        return 0;
    }
    if (!strcmp(s, "tokenizer"))
        return tg_error_set(err, "vocabulary: 'tokenizer' is read from the checkpoint's tokenizer entries");
    vocab_empty(v, TG_VOCAB_BYTES, 0);
    for (const char *p = s; *p;) {
        const long b = decimal(p, ',', 0, 255, &end);
        if (b < 0) {
            vocab_empty(v, TG_VOCAB_BYTES, 0);
            return tg_error_set(err, "vocabulary: bad entry at \"%.20s\"", p);
        }
        if (v->size && b <= v->chars[v->size - 1]) {
            vocab_empty(v, TG_VOCAB_BYTES, 0);
            return tg_error_set(err, "vocabulary: bytes must be increasing and unique (at %ld)", b);
        }
        v->ids[b] = (int16_t)v->size;
        v->chars[v->size++] = (uint8_t)b;
        p = *end ? end + 1 : end;
    }
    if (!v->size) return tg_error_set(err, "vocabulary: empty");
    return 0;
}

int tg_vocab_write(const tg_vocab *v, tg_st_writer *w)
{
    char s[4 * 256 + 16];
    if (!v || !w || tg_vocab_to_string(v, s, sizeof s)) return -1;
    return tg_st_writer_add_meta(w, "vocab", s) || (v->kind == TG_VOCAB_TOKENIZER && tg_tok_st_add(v->tok, w)) ? -1 : 0;
}

int tg_vocab_read(tg_vocab *v, const tg_st_file *f, tg_error *err)
{
    if (!v || !f) return tg_error_set(err, "vocab_read: %s is NULL", v ? "the file" : "the vocabulary");
    const char *s = tg_st_meta(f, "vocab");
    memset(v, 0, sizeof *v);
    if (!s) return tg_error_set(err, "the file has no 'vocab' in its metadata");
    if (strcmp(s, "tokenizer")) return tg_vocab_from_string(v, s, err);
    tg_error e2 = {0};
    tg_tokenizer *t = tg_tok_from_st(f, &e2);
    if (!t) return tg_error_set(err, "the checkpoint's tokenizer: %s", e2.msg);
    const char *arch = tg_st_meta(f, "arch");
    return tg_vocab_tokenizer(v, t, arch && !strcmp(arch, "llama"), 0, err);
}

/* ---- ids and bytes ------------------------------------------------------------ */

int tg_vocab_encode(const tg_vocab *v, const char *text, size_t len, int32_t *out, size_t *bad)
{
    if (!v || (len && (!text || !out))) return -1;
    for (size_t i = 0; i < len; i++) {
        const int id = v->ids[(uint8_t)text[i]];
        if (id < 0) {
            if (bad) *bad = i;
            return -1;
        }
        out[i] = id;
    }
    return 0;
}

int tg_vocab_decode(const tg_vocab *v, int id, char *buf)
{
    static const char *const specials[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    if (!v || !buf || v->kind == TG_VOCAB_TOKENIZER || v->kind == TG_VOCAB_IDS) return 0;
    if (v->kind == TG_VOCAB_BYTES) {
        if (id < 0 || id >= v->size) return 0;
        buf[0] = (char)v->chars[id];
        return 1;
    }
    if (id >= 0 && id < 3) {
        const size_t n = strlen(specials[id]);
        memcpy(buf, specials[id], n);
        return (int)n;
    }
    if (id < 3 || id >= TG_VOCAB_LLAMA2C_SIZE) return 0;
    buf[0] = (char)(id - 3);
    return 1;
}

int tg_vocab_check_size(const tg_vocab *v, int vocab_size, const char *whose, tg_error *err)
{
    if (!v) return tg_error_set(err, "vocab_check_size: the vocabulary is NULL"), -1;
    if (v->kind == TG_VOCAB_BYTES ? vocab_size == v->size : vocab_size >= v->size) return 0;
    tg_error_set(err, "the model's vocab_size %d does not match %s vocabulary of %d %s", vocab_size,
                 whose ? whose : "the", v->size, v->kind == TG_VOCAB_BYTES ? "characters" : "ids");
    return -1;
}

bool tg_vocab_space_before_text(const tg_vocab *v)
{
    return v && v->kind == TG_VOCAB_TOKENIZER && v->docs && tg_tok_kind_of(v->tok) != TG_TOK_SPM;
}
