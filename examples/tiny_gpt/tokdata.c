/* The token vocabularies (data.h's VOCAB_TOKENIZER and VOCAB_IDS), their
 * datasets and bytes per token, and training on token files (tokdata.h). */
#define _DEFAULT_SOURCE   /* realpath */
#include "tokdata.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the vocabularies ----------------------------------------------------- */

static void vocab_empty(vocab *v, vocab_kind kind, int size)
{
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->size = size;
    for (int b = 0; b < 256; b++) v->ids[b] = -1;   /* no byte is an id by itself */
}

void vocab_ids(vocab *v, int size) { vocab_empty(v, VOCAB_IDS, size); }

void vocab_free(vocab *v)
{
    if (v->kind == VOCAB_TOKENIZER) tg_tok_free(v->tok);
    v->tok = NULL;
}

int vocab_tokenizer(vocab *v, tg_tokenizer *tok, bool docs, int min_size, char *err, size_t errlen)
{
    const int32_t n = tg_tok_vocab_size(tok);
    vocab_empty(v, VOCAB_TOKENIZER, n > min_size ? n : min_size);
    v->tok = tok;
    v->docs = docs;
    if (docs && tg_tok_bos(tok) < 0) {
        snprintf(err, errlen, "the tokenizer (%s) has no BOS id, which a Llama's documents start with (llama2.c's "
                              "convention): use tapegrad's BPE (tiny_gpt tokenizer train), or --arch gpt",
                 tg_tok_kind_of(tok) == TG_TOK_TIKTOKEN ? "GPT-2's tiktoken ranks" : "tapegrad's BPE");
        vocab_free(v);
        return -1;
    }
    return 0;
}

bool tok_same(const tg_tokenizer *a, const tg_tokenizer *b)
{
    const int32_t n = tg_tok_vocab_size(a);
    if (tg_tok_kind_of(a) != tg_tok_kind_of(b) || n != tg_tok_vocab_size(b) || tg_tok_bos(a) != tg_tok_bos(b) ||
        tg_tok_eos(a) != tg_tok_eos(b))
        return false;
    for (int32_t id = 0; id < n; id++) {
        size_t la, lb;
        const unsigned char *pa = tg_tok_piece(a, id, &la), *pb = tg_tok_piece(b, id, &lb);
        if (la != lb || memcmp(pa, pb, la) || tg_tok_is_special(a, id) != tg_tok_is_special(b, id)) return false;
    }
    return true;
}

int vocab_from_st(vocab *v, const tg_st_file *f, char *err, size_t errlen)
{
    const char *s = tg_st_meta(f, "vocab");
    memset(v, 0, sizeof *v);
    if (!s || strcmp(s, "tokenizer")) {
        if (!s) return snprintf(err, errlen, "the file has no 'vocab' in its metadata"), -1;
        return vocab_from_string(v, s, err, errlen);
    }
    char e2[1024];
    tg_tokenizer *t = tg_tok_from_st(f, e2, sizeof e2);
    if (!t) return snprintf(err, errlen, "the checkpoint's tokenizer: %s", e2), -1;
    const char *arch = tg_st_meta(f, "arch");
    return vocab_tokenizer(v, t, arch && !strcmp(arch, "llama"), 0, err, errlen);
}

int vocab_st_add(const vocab *v, tg_st_writer *w)
{
    return v->kind == VOCAB_TOKENIZER ? tg_tok_st_add(v->tok, w) : 0;
}

void bpb_note(char *buf, size_t size, double bpb)
{
    if (isnan(bpb)) snprintf(buf, size, "no bits per byte: token ids without a tokenizer");
    else snprintf(buf, size, "%.4f bits per byte", bpb);
}

/* ---- datasets --------------------------------------------------------------- */

void dataset_bytes_per_token(dataset *d, const vocab *v)
{
    for (int s = 0; s < 2; s++) {
        const size_t lo = s ? d->n_train : 0, hi = s ? d->n : d->n_train;
        if (v->kind != VOCAB_TOKENIZER || hi == lo) {
            d->bytes_per_token[s] = NAN;
            continue;
        }
        const int32_t bos = v->docs ? tg_tok_bos(v->tok) : -1;
        int64_t bytes = 0;
        for (size_t i = lo; i < hi; i++) {
            size_t l = 0;
            if (d->tokens[i] == bos) bytes--;   /* the dummy " " after it is no byte of the text */
            else if (tg_tok_is_special(v->tok, d->tokens[i]) == 0) tg_tok_piece(v->tok, d->tokens[i], &l);
            bytes += (int64_t)l;
        }
        d->bytes_per_token[s] = (double)(bytes > 0 ? bytes : 1) / (double)(hi - lo);
    }
}

/* Appends ids[0..n) to d->tokens (capacity *cap); -1 when out of memory. */
static int append(dataset *d, size_t *cap, const int32_t *ids, size_t n)
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

/* 0 when both splits hold a window of block_size + 1 tokens */
static int check_split(const dataset *d, int block_size, const char *what, char *err, size_t errlen)
{
    if (d->n_train >= (size_t)block_size + 1 && d->n - d->n_train >= (size_t)block_size + 1) return 0;
    snprintf(err, errlen, "data: %s (%zu train and %zu val tokens) leave fewer than block_size + 1 = %d in a "
                          "split; use more text or a smaller --block-size",
             what, d->n_train, d->n - d->n_train, block_size + 1);
    return -1;
}

/* Appends BOS (bos >= 0) and the ids of len bytes of text to d; 0, or -1
 * with the encoder's message (or "out of memory") in e2. */
static int add_encoded(dataset *d, size_t *cap, const vocab *v, int32_t bos, const char *text, size_t len, char *e2,
                       size_t e2len)
{
    int32_t *ids = NULL;
    int64_t n = tg_tok_encode(v->tok, text, len, &ids, e2, e2len);
    if (n < 0) return -1;
    int rc = (bos >= 0 && append(d, cap, &bos, 1)) || append(d, cap, ids, (size_t)n);
    if (rc) snprintf(e2, e2len, "out of memory");
    tg_free(ids);
    return rc ? -1 : 0;
}

int dataset_tokenize(dataset *d, const vocab *v, const char *text, size_t len, int block_size, char *err,
                     size_t errlen)
{
    memset(d, 0, sizeof *d);
    size_t cap = 0;
    char e2[1024] = "out of memory";
    int rc = 0;
    if (!v->docs) {
        rc = add_encoded(d, &cap, v, -1, text, len, e2, sizeof e2);   /* one stream */
    } else {   /* a Llama's documents, cut as dataset_make cuts them for llama2.c's bytes */
        char *doc = malloc(len + 2);
        rc = !doc;
        for (size_t i = 0; !rc && i < len;) {
            size_t end = i;
            while (end < len && !(text[end] == '\n' && end + 1 < len && text[end + 1] == '\n')) end++;
            if (end < len) end++;   /* the newline that ends its last line */
            if (end > i && !(end - i == 1 && text[i] == '\n')) {
                doc[0] = ' ';   /* llama2.c's dummy prefix, encoded with the text as run.c encodes it */
                memcpy(doc + 1, text + i, end - i);
                rc = add_encoded(d, &cap, v, tg_tok_bos(v->tok), doc, end - i + 1, e2, sizeof e2);
            }
            i = end < len ? end + 1 : end;   /* past the blank line's newline */
        }
        free(doc);
    }
    if (rc) {
        snprintf(err, errlen, "data: encoding the text: %s", e2);
        dataset_free(d);
        return -1;
    }
    d->n_train = (size_t)((double)d->n * 0.9);   /* first 90%, as nanoGPT int(0.9 * n) */
    if (check_split(d, block_size, "the text's tokens split 90/10", err, errlen)) {
        dataset_free(d);
        return -1;
    }
    dataset_bytes_per_token(d, v);
    return 0;
}

/* ---- the run's vocabulary ------------------------------------------------- */

int vocab_for_run(vocab *v, const char *tokenizer, bool data_tokens, int vocab_size, bool llama,
                  const tg_st_file *from, const char *text, size_t len, char *err, size_t errlen)
{
    char e2[2048];
    tg_tokenizer *given = NULL;
    memset(v, 0, sizeof *v);
    if (tokenizer && !(given = tg_tok_load(tokenizer, e2, sizeof e2)))
        return snprintf(err, errlen, "--tokenizer %s: %s", tokenizer, e2), -1;
    if (given && data_tokens && vocab_size && vocab_size < tg_tok_vocab_size(given) && !(from && tg_st_meta(from, "vocab"))) {
        snprintf(err, errlen, "--vocab-size %d is smaller than the tokenizer's %d ids (it may be larger: ids the "
                              "tokenizer lacks are never seen)", vocab_size, (int)tg_tok_vocab_size(given));
        tg_tok_free(given);
        return -1;
    }
    if (from && tg_st_meta(from, "vocab")) {   /* the run's own */
        if (vocab_from_st(v, from, err, errlen)) {
            tg_tok_free(given);
            return -1;
        }
        const bool same = !given || (v->kind == VOCAB_TOKENIZER && tok_same(v->tok, given));
        tg_tok_free(given);
        if (same) return 0;
        snprintf(err, errlen, "--tokenizer %s is not the tokenizer of the run (%s); a resumed run keeps it: start a "
                              "new run (another --out, or --force) to change it", tokenizer,
                 v->kind == VOCAB_TOKENIZER ? "its checkpoint holds another one"
                 : v->kind == VOCAB_IDS     ? "it trained on token ids without a tokenizer"
                                            : "it has a byte vocabulary");
        vocab_free(v);
        return -1;
    }
    if (given) return vocab_tokenizer(v, given, llama, data_tokens ? vocab_size : 0, err, errlen);
    if (data_tokens) {
        if (vocab_size < 1)
            return snprintf(err, errlen, "--data-tokens needs --vocab-size V (every id must be below it), or a "
                                         "--tokenizer whose ids they are"), -1;
        vocab_ids(v, vocab_size);
    } else if (llama) {
        vocab_llama2c(v);   /* llama2.c's ids: three specials, then the 256 bytes */
    } else {
        vocab_build(v, text, len);   /* the data's sorted bytes */
    }
    return 0;
}

/* ---- token files ------------------------------------------------------------ */

bool run_on_tokens(const char *data_tokens, const tg_st_file *rec)
{
    return data_tokens || (rec && tg_st_meta(rec, "train.data_tokens"));
}

/* Reads the file at path (the flag's value, or the recorded one) into d
 * and checks it against the identity recorded under key. */
static int load_one(dataset *d, size_t *cap, int64_t V, const char *flag, const char *path, const tg_st_file *rec,
                    const char *key, bool must_match, kv_list *meta, const char *cmd, char *err, size_t errlen)
{
    char e2[2048], idkey[64], id[64], full[4096];
    tg_tokfile *f = tg_tokfile_open(path, TG_TOKFILE_AUTO, V, e2, sizeof e2);
    if (!f) return snprintf(err, errlen, "--%s: %s", flag, e2), -1;
    const int64_t n = tg_tokfile_count(f);
    const size_t at = d->n;
    int rc = 0;
    int32_t buf[4096];
    for (int64_t j = 0; !rc && j < n; j += 4096) {
        const int64_t m = n - j < 4096 ? n - j : 4096;
        rc = tg_tokfile_read(f, j, m, buf) || append(d, cap, buf, (size_t)m);
    }
    const int format = tg_tokfile_format_of(f);
    tg_tokfile_close(f);
    if (rc) return snprintf(err, errlen, "--%s %s: out of memory for %lld tokens", flag, path, (long long)n), -1;
    uint64_t h = 0xcbf29ce484222325u;   /* FNV-1a over the ids, 4 bytes each, little-endian */
    for (size_t i = at; i < d->n; i++)
        for (int b = 0; b < 4; b++) h = (h ^ (((uint32_t)d->tokens[i] >> (8 * b)) & 0xff)) * 0x100000001b3u;
    snprintf(id, sizeof id, "%lld:fnv1a64:%016" PRIx64, (long long)n, h);
    snprintf(idkey, sizeof idkey, "%s_id", key);
    const char *was = rec ? tg_st_meta(rec, idkey) : NULL;
    if (was && strcmp(was, id)) {
        if (must_match)
            return snprintf(err, errlen, "--%s %s (%s) is not the token file the run was trained on: %s (%s)", flag,
                            path, id, tg_st_meta(rec, key), was), -1;
        if (cmd) fprintf(stderr, "tiny_gpt %s: notice: --%s %s is not the file the run was trained on\n", cmd, flag, path);
    }
    if (!realpath(path, full)) snprintf(full, sizeof full, "%s", path);
    if (cmd && meta) fprintf(stderr, "tiny_gpt %s: %s: %lld tokens (%s's format)\n", cmd, path, (long long)n,
                     format == TG_TOKFILE_LLMC ? "llm.c" : "nanoGPT");
    if (meta && (kv_add(meta, key, full) || kv_add(meta, idkey, id)))
        return snprintf(err, errlen, "out of memory"), -1;
    return 0;
}

int run_load_tokens(dataset *d, const vocab *v, int64_t V, const char *train_flag, const char *val_flag,
                    int block_size, const tg_st_file *rec, bool must_match, kv_list *meta, const char *cmd,
                    char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    const char *train = train_flag ? train_flag : rec ? tg_st_meta(rec, "train.data_tokens") : NULL;
    const char *val = val_flag ? val_flag : rec ? tg_st_meta(rec, "train.val_tokens") : NULL;
    if (val && !*val) val = NULL;   /* recorded as "": the train file split 90/10 */
    size_t cap = 0;
    if (!train) return snprintf(err, errlen, "--data-tokens is required"), -1;
    if (load_one(d, &cap, V, "data-tokens", train, rec, "train.data_tokens", must_match, meta, cmd, err, errlen))
        goto fail;
    d->n_train = val ? d->n : (size_t)((double)d->n * 0.9);
    if (val && load_one(d, &cap, V, "val-tokens", val, rec, "train.val_tokens", must_match, meta, cmd, err, errlen))
        goto fail;
    if (!val && meta && (kv_add(meta, "train.val_tokens", "") || kv_add(meta, "train.val_tokens_id", ""))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (check_split(d, block_size, val ? "the token files" : "the tokens split 90/10", err, errlen)) goto fail;
    vocab plain = *v;   /* the files' own ids: their decoded bytes, no dummy space to discount */
    plain.docs = false;
    dataset_bytes_per_token(d, &plain);
    return 0;
fail:
    dataset_free(d);
    return -1;
}
