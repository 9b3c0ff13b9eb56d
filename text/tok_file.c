/* A tokenizer in a safetensors file, alone (tok.safetensors) or among a
 * checkpoint's weights; and tg_tok_load, which tells the file kinds apart.
 *
 * Entries (docs/tokenizers.md):
 *   metadata  tokenizer          "bpe" or "tiktoken"
 *             tokenizer.version  "1"
 *             tokenizer.bos, tokenizer.eos, tokenizer.unk   ids, "-1" if none
 *             tokenizer.pattern  the pre-split regex (tiktoken only)
 *   tensors   tokenizer.pieces   U8 (B)        every piece's bytes, in id order
 *             tokenizer.offsets  I64 (V+1)     piece i is pieces[offsets[i], offsets[i+1])
 *             tokenizer.special  U8 (V)        1 for special tokens
 *             tokenizer.merges   I32 (M,2)     bpe only: merge k joins (left, right)
 *                                              into id V - M + k
 * and for "spm" (pieces with scores, text/spm.c), the pieces as the
 * vocabulary spells them ("<0x0A>", U+2581 for a space) and
 *   metadata  tokenizer.space_u2581, tokenizer.add_prefix   "0" or "1"
 *             tokenizer.merge_floor  a number ("-inf": none)
 *   tensors   tokenizer.scores   F32 (V)
 *             tokenizer.types    U8 (V)        tg_piece_type (special: CONTROL, UNKNOWN)
 * The reader checks all of it: shapes and dtypes, offsets, distinct
 * non-empty pieces, every byte present, the special ids, and that each
 * merge's piece is the concatenation of its two. */
#include "text_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/file_internal.h"
#include "../core/safetensors_internal.h"

int tg_tok_st_add(const tg_tokenizer *t, tg_st_writer *w)
{
    if (!w) return -1;
    if (!t) return tg_st_writer_fail(w, "tokenizer: the tokenizer is NULL");
    char bos[16], eos[16], unk[16];
    snprintf(bos, sizeof bos, "%d", (int)t->bos);
    snprintf(eos, sizeof eos, "%d", (int)t->eos);
    snprintf(unk, sizeof unk, "%d", (int)t->unk);
    const bool spm = t->kind == TG_TOK_SPM;
    int rc = tg_st_writer_add_meta(w, "tokenizer", t->kind == TG_TOK_BPE ? "bpe" : spm ? "spm" : "tiktoken");
    rc |= tg_st_writer_add_meta(w, "tokenizer.version", "1");
    rc |= tg_st_writer_add_meta(w, "tokenizer.bos", bos);
    rc |= tg_st_writer_add_meta(w, "tokenizer.eos", eos);
    rc |= tg_st_writer_add_meta(w, "tokenizer.unk", unk);
    if (t->pattern) rc |= tg_st_writer_add_meta(w, "tokenizer.pattern", t->pattern);
    if (spm) {
        char floor[32];
        snprintf(floor, sizeof floor, "%.17g", t->spm.merge_floor);
        rc |= tg_st_writer_add_meta(w, "tokenizer.space_u2581", t->spm.space_u2581 ? "1" : "0");
        rc |= tg_st_writer_add_meta(w, "tokenizer.add_prefix", t->spm.add_prefix ? "1" : "0");
        rc |= tg_st_writer_add_meta(w, "tokenizer.merge_floor", floor);
        rc |= tg_st_writer_add(w, "tokenizer.scores", "F32", 1, (int64_t[]){t->n}, t->scores);
        rc |= tg_st_writer_add(w, "tokenizer.types", "U8", 1, (int64_t[]){t->n}, t->types);
    }
    const unsigned char *bytes = spm ? t->spelled : t->bytes;
    const int64_t *off = spm ? t->soff : t->off;
    rc |= tg_st_writer_add(w, "tokenizer.pieces", "U8", 1, (int64_t[]){off[t->n]}, bytes);
    rc |= tg_st_writer_add(w, "tokenizer.offsets", "I64", 1, (int64_t[]){(int64_t)t->n + 1}, off);
    rc |= tg_st_writer_add(w, "tokenizer.special", "U8", 1, (int64_t[]){t->n}, t->special);
    if (t->kind == TG_TOK_BPE)
        rc |= tg_st_writer_add(w, "tokenizer.merges", "I32", 2, (int64_t[]){t->n_merges, 2}, t->merges);
    return rc ? -1 : 0;
}

int tg_tok_save(const tg_tokenizer *t, const char *path, tg_error *err)
{
    if (!t || !path) {
        tg_error_set(err, "tokenizer save: NULL argument");
        return -1;
    }
    tg_st_writer *w = tg_st_writer_new();
    if (!w) {
        tg_error_set(err, "tokenizer save: out of memory");
        return -1;
    }
    tg_tok_st_add(t, w); /* a failed add sticks in the writer, whose save reports it */
    int rc = tg_st_writer_save(w, path, err);
    tg_st_writer_free(w);
    return rc;
}

/* ---- reading ------------------------------------------------------------- */

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A tensor of f named name with dtype and ndim, dimension 1 (if ndim 2)
 * equal to dim1; NULL with a message. */
static const tg_st_tensor *tensor(const tg_st_file *f, const char *name, const char *dtype, int ndim, int64_t dim1,
                                  tg_error *err)
{
    const tg_st_tensor *e = tg_st_find(f, name);
    if (!e) {
        tg_error_set(err, "tokenizer: the file has tokenizer metadata but no tensor '%s'", name);
        return NULL;
    }
    if (strcmp(e->dtype, dtype) || e->ndim != ndim || (ndim == 2 && e->shape[1] != dim1)) {
        tg_error_set(err, "tokenizer: '%s' must be %s with %d dimension%s%s, not %s with %d", name, dtype, ndim,
                     ndim > 1 ? "s" : "", ndim == 2 ? " (M,2)" : "", e->dtype, e->ndim);
        return NULL;
    }
    return e;
}

/* Metadata key as an id in [-1, n); -1 with a message when it is not. */
static int meta_id(const tg_st_file *f, const char *key, int32_t n, int32_t *out, tg_error *err)
{
    const char *s = tg_st_meta(f, key);
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || v < -1 || v >= n) {
        tg_error_set(err, "tokenizer: metadata '%s' = '%s' is not an id in [-1, %d)", key, s ? s : "(none)", (int)n);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* Metadata key as "0" or "1"; -1 with a message when it is neither. */
static int meta_flag(const tg_st_file *f, const char *key, bool *out, tg_error *err)
{
    const char *s = tg_st_meta(f, key);
    if (!s || (strcmp(s, "0") && strcmp(s, "1"))) {
        tg_error_set(err, "tokenizer: metadata '%s' = '%s' is not 0 or 1", key, s ? s : "(none)");
        return -1;
    }
    *out = s[0] == '1';
    return 0;
}

/* The "spm" kind's rest (the pieces as spelled, offsets and special
 * flags read already): options, scores and types, built by
 * tg_tok_new_spm, and the special flags, bos, eos and unk checked
 * against the types. */
static tg_tokenizer *spm_from_st(const tg_st_file *f, int32_t n, const unsigned char *pieces, const int64_t *off,
                                 const uint8_t *special, tg_error *err)
{
    tg_spm_options o;
    int32_t bos, eos, unk;
    const char *fl = tg_st_meta(f, "tokenizer.merge_floor");
    char *end = NULL;
    o.merge_floor = fl ? strtod(fl, &end) : NAN;
    if (!fl || end == fl || *end || isnan(o.merge_floor)) {
        tg_error_set(err, "tokenizer: metadata 'tokenizer.merge_floor' = '%s' is not a number", fl ? fl : "(none)");
        return NULL;
    }
    if (meta_flag(f, "tokenizer.space_u2581", &o.space_u2581, err) ||
        meta_flag(f, "tokenizer.add_prefix", &o.add_prefix, err) || meta_id(f, "tokenizer.bos", n, &bos, err) ||
        meta_id(f, "tokenizer.eos", n, &eos, err) || meta_id(f, "tokenizer.unk", n, &unk, err))
        return NULL;
    const tg_st_tensor *se = tensor(f, "tokenizer.scores", "F32", 1, 0, err),
                       *te = se ? tensor(f, "tokenizer.types", "U8", 1, 0, err) : NULL;
    if (!te) return NULL;
    if (se->shape[0] != n || te->shape[0] != n) {
        tg_error_set(err, "tokenizer: %lld scores and %lld types for %d ids", (long long)se->shape[0],
                     (long long)te->shape[0], (int)n);
        return NULL;
    }
    float *scores = tg_malloc((size_t)n * sizeof *scores);
    if (!scores) {
        tg_error_set(err, "tokenizer: out of memory");
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        const uint32_t u = (uint32_t)le((const unsigned char *)se->data + 4 * (size_t)i, 4);
        memcpy(&scores[i], &u, 4);
    }
    tg_error e2 = {0};
    const tg_spm_pieces v = {n, pieces, off, scores, te->data, bos, eos};
    tg_tokenizer *t = tg_tok_new_spm(&v, &o, &e2);
    tg_free(scores);
    if (!t) {
        tg_error_set(err, "tokenizer: %s", e2.msg);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++)
        if (special[i] != t->special[i]) {
            tg_error_set(err, "tokenizer: 'tokenizer.special'[%d] = %d disagrees with its type %d", (int)i, special[i],
                         t->types[i]);
            tg_tok_free(t);
            return NULL;
        }
    if (unk != t->unk) {
        tg_error_set(err, "tokenizer: the unk id %d is not the first unknown piece (%d)", (int)unk, (int)t->unk);
        tg_tok_free(t);
        return NULL;
    }
    return t;
}

tg_tokenizer *tg_tok_from_st(const tg_st_file *f, tg_error *err)
{
    if (!f) {
        tg_error_set(err, "tokenizer: NULL file");
        return NULL;
    }
    const char *kind_s = tg_st_meta(f, "tokenizer"), *ver = tg_st_meta(f, "tokenizer.version");
    if (!kind_s) {
        tg_error_set(err, "tokenizer: the file holds no tokenizer (no 'tokenizer' metadata)");
        return NULL;
    }
    int kind = !strcmp(kind_s, "bpe") ? TG_TOK_BPE
        : !strcmp(kind_s, "tiktoken") ? TG_TOK_TIKTOKEN
        : !strcmp(kind_s, "spm")      ? TG_TOK_SPM
                                      : 0;
    if (!kind) {
        tg_error_set(err, "tokenizer: unknown kind '%s' (bpe, tiktoken or spm)", kind_s);
        return NULL;
    }
    if (!ver || strcmp(ver, "1")) {
        tg_error_set(err, "tokenizer: version '%s' is not 1", ver ? ver : "(none)");
        return NULL;
    }
    const tg_st_tensor *pe = tensor(f, "tokenizer.pieces", "U8", 1, 0, err),
                       *oe = pe ? tensor(f, "tokenizer.offsets", "I64", 1, 0, err) : NULL,
                       *se = oe ? tensor(f, "tokenizer.special", "U8", 1, 0, err) : NULL;
    if (!se) return NULL;
    int64_t n = se->shape[0];
    if (n < 1 || n > (1 << 30) || oe->shape[0] != n + 1) {
        tg_error_set(err, "tokenizer: %lld ids with %lld offsets (must be 1..2^30 ids and one offset more)",
                     (long long)n, (long long)oe->shape[0]);
        return NULL;
    }
    tg_tokenizer *t = NULL;
    int64_t *off = tg_malloc(((size_t)n + 1) * sizeof *off);
    uint8_t *special = tg_malloc((size_t)n);
    if (!off || !special) {
        tg_error_set(err, "tokenizer: out of memory");
        goto fail;
    }
    const unsigned char *ob = oe->data, *sb = se->data;
    for (int64_t i = 0; i <= n; i++) off[i] = (int64_t)le(ob + 8 * i, 8);
    for (int64_t i = 0; i < n; i++) {
        if (sb[i] > 1) {
            tg_error_set(err, "tokenizer: 'tokenizer.special'[%lld] = %d is not 0 or 1", (long long)i, sb[i]);
            goto fail;
        }
        special[i] = sb[i];
    }
    if (off[n] != pe->shape[0]) {
        tg_error_set(err, "tokenizer: the offsets end at %lld but 'tokenizer.pieces' has %lld bytes", (long long)off[n],
                     (long long)pe->shape[0]);
        goto fail;
    }
    if (kind == TG_TOK_SPM) {
        t = spm_from_st(f, (int32_t)n, pe->data ? pe->data : (const void *)"", off, special, err);
        tg_free(off);
        tg_free(special);
        return t;
    }
    if (!(t = tg_tok_build(kind, (int32_t)n, pe->data ? pe->data : (const void *)"", off, special, "tokenizer", err)))
        goto fail;
    if (meta_id(f, "tokenizer.bos", t->n, &t->bos, err) || meta_id(f, "tokenizer.eos", t->n, &t->eos, err) ||
        meta_id(f, "tokenizer.unk", t->n, &t->unk, err))
        goto fail;
    const int32_t ids[3] = {t->bos, t->eos, t->unk};
    for (int k = 0; k < 3; k++)
        if (ids[k] >= 0 && !t->special[ids[k]]) {
            tg_error_set(err, "tokenizer: the %s id %d is not a special token",
                         k == 0       ? "bos"
                             : k == 1 ? "eos"
                                      : "unk",
                         (int)ids[k]);
            goto fail;
        }
    if (kind == TG_TOK_BPE) {
        const tg_st_tensor *me = tensor(f, "tokenizer.merges", "I32", 2, 2, err);
        if (!me) goto fail;
        int64_t m = me->shape[0];
        if (m > n) {
            tg_error_set(err, "tokenizer: %lld merges for %lld ids", (long long)m, (long long)n);
            goto fail;
        }
        if (!(t->merges = tg_malloc(((size_t)m + 1) * 2 * sizeof *t->merges))) {
            tg_error_set(err, "tokenizer: out of memory");
            goto fail;
        }
        t->n_merges = (int32_t)m;
        const unsigned char *mb = me->data;
        for (int64_t k = 0; k < m; k++) {
            int32_t id = (int32_t)(n - m + k);
            int32_t l = (int32_t)(uint32_t)le(mb + 8 * k, 4), r = (int32_t)(uint32_t)le(mb + 8 * k + 4, 4);
            t->merges[2 * k] = l;
            t->merges[2 * k + 1] = r;
            bool ok = l >= 0 && r >= 0 && l < id && r < id && !t->special[l] && !t->special[r] && !t->special[id];
            size_t ll = ok ? (size_t)(t->off[l + 1] - t->off[l]) : 0, lr = ok ? (size_t)(t->off[r + 1] - t->off[r]) : 0;
            ok = ok && (size_t)(t->off[id + 1] - t->off[id]) == ll + lr &&
                !memcmp(t->bytes + t->off[id], t->bytes + t->off[l], ll) &&
                !memcmp(t->bytes + t->off[id] + ll, t->bytes + t->off[r], lr);
            if (!ok) {
                tg_error_set(err, "tokenizer: merge %lld (%d, %d) does not make the piece of id %d", (long long)k,
                             (int)l, (int)r, (int)id);
                goto fail;
            }
        }
    } else {
        const char *pat = tg_st_meta(f, "tokenizer.pattern");
        if (!pat) {
            tg_error_set(err, "tokenizer: a tiktoken tokenizer needs 'tokenizer.pattern' metadata");
            goto fail;
        }
        size_t pl = strlen(pat) + 1;
        if (!(t->pattern = tg_malloc(pl))) {
            tg_error_set(err, "tokenizer: out of memory");
            goto fail;
        }
        memcpy(t->pattern, pat, pl);
        t->whole_word_first = true;
        if (tg_tok_compile_pattern(t, "tokenizer", err)) goto fail;
    }
    tg_free(off);
    tg_free(special);
    return t;
fail:
    tg_free(off);
    tg_free(special);
    tg_tok_free(t);
    return NULL;
}

tg_tokenizer *tg_tok_load(const char *path, tg_error *err)
{
    if (!path) {
        tg_error_set(err, "tokenizer: NULL path");
        return NULL;
    }
    /* a regular file (a FIFO would block the sniff's open), its first bytes */
    const char *why = NULL;
    size_t size = 0;
    const int fd = tg_open_regular(path, &size, &why);
    if (fd < 0) {
        tg_error_set(err, "tokenizer: %s: %s", path, why);
        return NULL;
    }
    unsigned char head[9];
    const size_t got = size < sizeof head ? size : sizeof head;
    const int rc = tg_read_exact(fd, head, got, &why);
    close(fd);
    if (rc) {
        tg_error_set(err, "tokenizer: %s: %s", path, why);
        return NULL;
    }
    /* safetensors: an 8-byte little-endian header length, then '{' */
    if (got == sizeof head && head[8] == '{' && le(head, 8) < ((uint64_t)1 << 40)) {
        tg_st_file *st = tg_st_load(path, err);
        if (!st) return NULL;
        tg_tokenizer *t = tg_tok_from_st(st, err);
        tg_st_free(st);
        if (!t) tg_error_prefix(err, path);
        return t;
    }
    /* llama2.c's tokenizer.bin: a small int32 first, whose high bytes are
     * NULs no tiktoken file (text) starts with */
    if (got >= 4 && !head[2] && !head[3]) return tg_tok_load_llama2c(path, 0, err);
    return tg_tok_load_tiktoken(path, err);
}
