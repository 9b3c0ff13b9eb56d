/* TG_TOK_SPM: pieces with scores, merged by score over the whole text,
 * as llama2.c's run.c, sentencepiece's BPE and llama.cpp's SPM tokenizer
 * encode.
 *
 * Encoding (text.h): a space first when the tokenizer adds the dummy
 * prefix and the text is not empty; every space as U+2581 when the
 * pieces spell it so; then characters, cut as run.c cuts them (a byte and
 * the continuation bytes after it, four bytes at most; not validated) or,
 * when spaces are U+2581, the continuation bytes after it up to the
 * length the first byte announces (so a stray byte never joins the
 * U+2581 of a space, which would then go out as bytes and decode as
 * U+2581, not a space; on valid UTF-8 the two cuts and llama.cpp's agree), each
 * looked up as a text piece, else each of its bytes as its byte piece;
 * then the adjacent pair whose concatenation is a text piece of the
 * highest score is merged, the leftmost on a tie, again and again.
 * Where spaces are U+2581 a character that is no text piece but starts or
 * ends one merges make is a symbol of its own instead of its bytes
 * (add_char_symbols): sentencepiece and llama.cpp merge symbols by their
 * text, whatever they are, and give a symbol left alone that is no piece
 * as its bytes, which is how a vocabulary whose characters are only
 * "<0xXX>" bytes (tapegrad's BPE in GGUF) merges at all. run.c turns such
 * a character into its byte pieces at once, which then merge only where
 * they are text (spelled as their byte).
 * run.c rescans every pair after each merge (O(n^2) in the text's
 * length); here a heap of candidate pairs does the same merges in
 * O(n log n) (text/merge.c, with each piece's rank: its score's place
 * among the scores of the pieces merges make, the highest first, equal
 * scores one rank, so a tie goes to the leftmost pair as in run.c).
 * A symbol that is half of no pair can never merge, so the symbols
 * around it merge independently: the runs between such symbols (with
 * llama2.c's and sentencepiece's vocabularies, the byte pieces "<0xXX>",
 * a newline among them) are merged one at a time.
 *
 * Text pieces are the NORMAL ones and the BYTE pieces spelled as their
 * byte (tapegrad's BPE written for run.c); a "<0xXX>" byte piece is no
 * text (sentencepiece never matches text to it; run.c could in theory
 * make one from the literal text "<0xXX>", which no real vocabulary's
 * pieces spell in parts). Specials (CONTROL, UNKNOWN) are never produced,
 * tapegrad's rule for every kind (run.c would make one if a merge's
 * concatenation spelled it; llama2.c's specials "<unk>", "\n<s>\n" and
 * "\n</s>\n" are not made of pieces). With merge_floor (run.c's best
 * score starts at -1e10), a piece scoring at or below it is never made by
 * a merge.
 *
 * Decoding: each id's bytes (tg_tok_piece) are its text: a BYTE piece its
 * byte, U+2581 a space (when the pieces spell spaces so), the rest as
 * spelled; the pieces as spelled are kept for saving (tg_tok_spelled). */
#include "text_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

#define U2581 "\xe2\x96\x81"

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0'
        : c >= 'A' && c <= 'F'  ? c - 'A' + 10
        : c >= 'a' && c <= 'f'  ? c - 'a' + 10
                                : -1;
}

/* The byte "<0xXX>" spells, or -1. */
static int byte_spelling(const unsigned char *p, size_t len)
{
    if (len != 6 || memcmp(p, "<0x", 3) || p[5] != '>' || hexval(p[3]) < 0 || hexval(p[4]) < 0) return -1;
    return hexval(p[3]) << 4 | hexval(p[4]);
}

typedef struct scored {
    float score;
    int32_t id;
} scored;

static int by_score_desc(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The length a character's first byte announces (a continuation byte: 1). */
static size_t char_len(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

/* The length of the character at s[i] (of m bytes) as encoding cuts it:
 * the byte and the continuation bytes after it, up to the length the
 * first byte announces when spaces are U+2581 (wide), else up to four. */
static size_t char_at(const unsigned char *s, size_t i, size_t m, bool wide)
{
    size_t k = 1;
    const size_t most = wide ? char_len(s[i]) : 4;
    while (i + k < m && k < most && (s[i + k] & 0xC0) == 0x80) k++;
    return k;
}

/* The symbol spelling s[0..k): a text piece's id or a character symbol's
 * (below), or -1; with add and one (s is one character) a new character
 * symbol when there is none. */
static int64_t symbol_of(tg_tokenizer *t, const unsigned char *s, size_t k, bool one, bool add)
{
    const uint64_t h = tg_hash_bytes(s, k);
    const int64_t e = tg_strmap_find(&t->pieces, s, (uint32_t)k, h);
    if (e >= 0) return t->pieces.ents[e].val;
    if (!one) return -1;
    if (!add) return INT64_MAX; /* would be a new one */
    const int64_t at = (int64_t)t->pieces.n;
    return tg_strmap_add(&t->pieces, s, (uint32_t)k, h, t->n + at) < 0 ? -2 : t->n + at;
}

/* sentencepiece and llama.cpp merge symbols by their text, a character
 * whether or not it is a piece itself, and give a symbol left at the end
 * that is no piece as its bytes. So "F" + "i" merge into "Fi" in a
 * vocabulary whose single characters are only "<0xXX>" byte pieces (as
 * tapegrad's BPE is written to GGUF). Such a character, where a merge can
 * make a piece of it (it starts or ends a piece merges make, the rest
 * being a text piece or another such character), becomes a symbol of its
 * own: id n + e for its entry e in t->pieces, added after the text
 * pieces; encoding gives those left unmerged as their bytes. 0, or -1 out
 * of memory. */
static int add_char_symbols(tg_tokenizer *t, const uint8_t *target)
{
    for (int32_t i = 0; i < t->n; i++) {
        if (!target[i]) continue;
        const unsigned char *p = t->spelled + t->soff[i];
        const size_t len = (size_t)(t->soff[i + 1] - t->soff[i]), first = char_at(p, 0, len, true);
        size_t last = 0; /* where the last character starts */
        for (size_t k = 0; k < len; k += char_at(p, k, len, true)) last = k;
        t->build_work += 2 * len;
        for (int c = 0; c < 2; c++) { /* the first character and the rest, the rest and the last character */
            const size_t cut = c ? last : first;
            if (cut == 0 || cut >= len || (c && last == first)) continue;
            const bool one_l = cut == first, one_r = cut == last;
            int64_t l = symbol_of(t, p, cut, one_l, false), r = symbol_of(t, p + cut, len - cut, one_r, false);
            if (l < 0 || r < 0 || (l < t->n && r < t->n)) continue; /* no pair, or two text pieces: made already */
            if (l == INT64_MAX) l = symbol_of(t, p, cut, true, true);
            if (r == INT64_MAX) r = symbol_of(t, p + cut, len - cut, true, true);
            if (l < 0 || r < 0 || tg_pairmap_put(&t->pairs, (uint64_t)l << 32 | (uint64_t)r, i)) return -1;
        }
    }
    return 0;
}

tg_tokenizer *tg_tok_new_spm(const tg_spm_pieces *v, const tg_spm_options *o, tg_error *err)
{
    static const char *const what = "spm tokenizer";
    if (!v || !v->pieces || !v->off || !v->scores || !v->types || !o) {
        tg_error_set(err, "%s: NULL argument", what);
        return NULL;
    }
    const int32_t n = v->n, bos = v->bos, eos = v->eos;
    const unsigned char *pieces = v->pieces;
    const int64_t *off = v->off;
    const float *scores = v->scores;
    const uint8_t *types = v->types;
    if (tg_tok_check_offsets(n, off, what, err)) return NULL;
    if (isnan(o->merge_floor)) {
        tg_error_set(err, "%s: options: merge_floor is NaN, not a number", what);
        return NULL;
    }
    const size_t nb = (size_t)off[n];
    tg_tokenizer *t = tg_calloc(1, sizeof *t);
    uint8_t *text = tg_calloc((size_t)n, 1), *target = tg_calloc((size_t)n, 1);
    scored *order = tg_malloc((size_t)n * sizeof *order);
    if (!t || !text || !target || !order) goto oom;
    t->kind = TG_TOK_SPM;
    t->n = n;
    t->bos = t->eos = t->unk = -1;
    t->spm = *o;
    t->spelled = tg_malloc(nb ? nb : 1);
    t->soff = tg_malloc(((size_t)n + 1) * sizeof *t->soff);
    t->bytes = tg_malloc(nb ? nb : 1); /* the decoded pieces are never longer */
    t->off = tg_malloc(((size_t)n + 1) * sizeof *t->off);
    t->special = tg_malloc((size_t)n);
    t->scores = tg_malloc((size_t)n * sizeof *t->scores);
    t->types = tg_malloc((size_t)n);
    t->rank = tg_malloc((size_t)n * sizeof *t->rank);
    if (!t->spelled || !t->soff || !t->bytes || !t->off || !t->special || !t->scores || !t->types || !t->rank) goto oom;
    if (nb) memcpy(t->spelled, pieces, nb);
    memcpy(t->soff, off, ((size_t)n + 1) * sizeof *off);
    memcpy(t->scores, scores, (size_t)n * sizeof *scores);
    memcpy(t->types, types, (size_t)n);
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;

    size_t smax = 0;
    int64_t at = 0; /* the decoded pieces so far */
    for (int32_t i = 0; i < n; i++) {
        const unsigned char *p = t->spelled + off[i];
        const size_t len = (size_t)(off[i + 1] - off[i]);
        const int ty = types[i];
        t->off[i] = at;
        t->rank[i] = INT32_MAX;
        if (len > smax) smax = len;
        if (ty < TG_PIECE_NORMAL || ty > TG_PIECE_BYTE || ty == TG_PIECE_USER) {
            tg_error_set(err, "%s: id %d has type %d: %s", what, (int)i, ty,
                         ty == TG_PIECE_USER ? "a user-defined piece, which sentencepiece matches before merging "
                                               "and tapegrad does not"
                                             : "not a piece type (1 normal, 2 unknown, 3 control, 5 unused, 6 byte)");
            goto fail;
        }
        if (!isfinite(scores[i])) {
            tg_error_set(err, "%s: id %d has the score %g: scores must be finite", what, (int)i, (double)scores[i]);
            goto fail;
        }
        if (!len) {
            tg_error_set(err, "%s: id %d is an empty piece", what, (int)i);
            goto fail;
        }
        t->special[i] = ty == TG_PIECE_CONTROL || ty == TG_PIECE_UNKNOWN;
        if (ty == TG_PIECE_UNKNOWN && t->unk < 0) t->unk = i;
        if (ty == TG_PIECE_BYTE) {
            const int b = len == 1 ? p[0] : byte_spelling(p, len);
            if (b < 0) {
                tg_error_set(err, "%s: id %d is a byte piece but spells neither one byte nor <0xXX>", what, (int)i);
                goto fail;
            }
            if (t->byte_id[b] >= 0) {
                tg_error_set(err, "%s: ids %d and %d are both the byte piece of 0x%02X", what, (int)t->byte_id[b],
                             (int)i, b);
                goto fail;
            }
            t->byte_id[b] = i;
            t->bytes[at++] = (unsigned char)b;
            text[i] = len == 1;
        } else if (ty == TG_PIECE_NORMAL || ty == TG_PIECE_UNUSED) {
            for (size_t k = 0; k < len; k++) {
                if (o->space_u2581 && k + 3 <= len && !memcmp(p + k, U2581, 3)) {
                    t->bytes[at++] = ' ';
                    k += 2;
                } else {
                    t->bytes[at++] = p[k];
                }
            }
            text[i] = ty == TG_PIECE_NORMAL;
        } else {
            memcpy(t->bytes + at, p, len);
            at += (int64_t)len;
        }
        if (!text[i]) continue;
        const uint64_t h = tg_hash_bytes(p, len);
        const int64_t e = tg_strmap_find(&t->pieces, p, (uint32_t)len, h);
        if (e >= 0) {
            tg_error_set(err, "%s: id %d repeats the piece of id %d", what, (int)i, (int)t->pieces.ents[e].val);
            goto fail;
        }
        if (tg_strmap_add(&t->pieces, p, (uint32_t)len, h, i) < 0) goto oom;
        target[i] = len >= 2 && (double)scores[i] > o->merge_floor;
    }
    t->off[n] = at;
    for (int b = 0; b < 256; b++) /* spelled U+2581, a space is that piece (checked below), never its byte */
        if (t->byte_id[b] < 0 && !(o->space_u2581 && b == ' ')) {
            tg_error_set(err, "%s: no byte piece for 0x%02X, so some texts could not be encoded", what, b);
            goto fail;
        }
    if (o->space_u2581 && tg_strmap_find(&t->pieces, U2581, 3, tg_hash_bytes(U2581, 3)) < 0) {
        /* its bytes would stand for it, and decode as U+2581, not a space */
        tg_error_set(err,
                     "%s: the pieces spell a space U+2581 but none is U+2581 alone, so a space could not "
                     "be encoded",
                     what);
        goto fail;
    }
    const int32_t ends[2] = {bos, eos};
    for (int k = 0; k < 2; k++)
        if (ends[k] < -1 || ends[k] >= n || (ends[k] >= 0 && types[ends[k]] != TG_PIECE_CONTROL)) {
            tg_error_set(err, "%s: the %s id %d is not a control piece", what, k ? "eos" : "bos", (int)ends[k]);
            goto fail;
        }
    t->bos = bos;
    t->eos = eos;
    for (int32_t i = 0; i < n; i++) {
        const size_t len = (size_t)(t->off[i + 1] - t->off[i]);
        if (len > t->max_piece) t->max_piece = len;
    }
    /* ranks: the targets by score, highest first; equal scores one rank */
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (target[i]) order[m++] = (scored){scores[i], i};
    qsort(order, (size_t)m, sizeof *order, by_score_desc);
    for (int32_t k = 0, r = -1; k < m; k++) {
        if (!k || order[k].score != order[k - 1].score) r++;
        t->rank[order[k].id] = r;
    }
    if (tg_tok_build_pairs(t, t->spelled, t->soff, smax, text, target)) goto oom;
    if (o->space_u2581 && add_char_symbols(t, target)) goto oom;
    if (!(t->mergeable = tg_calloc((size_t)n + t->pieces.n, 1))) goto oom; /* the ids, then the character symbols */
    for (size_t k = 0; k < t->pairs.cap; k++)
        if (t->pairs.keys[k] != UINT64_MAX) {
            t->mergeable[t->pairs.keys[k] >> 32] = 1;
            t->mergeable[t->pairs.keys[k] & 0xffffffffu] = 1;
        }
    tg_free(text);
    tg_free(target);
    tg_free(order);
    return t;
oom:
    tg_error_set(err, "%s: out of memory", what);
fail:
    tg_free(text);
    tg_free(target);
    tg_free(order);
    tg_tok_free(t);
    return NULL;
}

/* ---- encoding ---------------------------------------------------------------- */

int64_t tg_spm_encode(const tg_tokenizer *t, const unsigned char *s, size_t len, int32_t **ids, tg_error *err)
{
    const bool pre = t->spm.add_prefix && len, wide = t->spm.space_u2581;
    unsigned char *buf = NULL;
    int32_t *sym = NULL;
    tg_merge_scratch ms = {0};
    size_t m = len + pre; /* the text's bytes as encoded */
    if (len > (SIZE_MAX - 8) / 12) goto oom;
    if (pre || wide) { /* the dummy prefix, spaces as U+2581 */
        if (!(buf = tg_malloc(wide ? 3 * m + 1 : m + 1))) goto oom;
        size_t o = 0;
        for (size_t i = 0; i < m; i++) {
            const unsigned char c = pre && !i ? ' ' : s[i - pre];
            if (wide && c == ' ') memcpy(buf + o, U2581, 3), o += 3;
            else buf[o++] = c;
        }
        s = buf;
        m = o;
    }
    if (!(sym = tg_malloc((m ? m : 1) * sizeof *sym))) goto oom;
    /* characters as run.c cuts them, each a piece or its bytes' pieces */
    size_t n = 0;
    for (size_t i = 0; i < m;) {
        const size_t k = char_at(s, i, m, wide);
        const int64_t e = tg_strmap_find(&t->pieces, s + i, (uint32_t)k, tg_hash_bytes(s + i, k));
        if (e >= 0) sym[n++] = (int32_t)t->pieces.ents[e].val;
        else
            for (size_t j = 0; j < k; j++) sym[n++] = t->byte_id[s[i + j]];
        i += k;
    }
    /* the runs of symbols that may merge, each on its own */
    size_t w = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && t->mergeable[sym[b]]) b++;
        if (b == a) {
            sym[w++] = sym[a++];
            continue;
        }
        if (b - a > INT32_MAX) {
            tg_free(buf);
            tg_free(sym);
            tg_merge_scratch_free(&ms);
            tg_error_set(err, "tokenizer encode: %zu pieces that may merge in a row (at most 2^31 - 1)", b - a);
            return -1;
        }
        if (tg_merge_reserve(&ms, b - a)) goto oom;
        const size_t k = tg_bpe_merge(t, sym + a, b - a, &ms);
        memmove(sym + w, sym + a, k * sizeof *sym);
        w += k;
        a = b;
    }
    /* a character symbol left alone: its bytes' pieces (no more ids than the text's bytes) */
    size_t out = w;
    for (size_t i = 0; i < w; i++)
        if (sym[i] >= t->n) out += t->pieces.ents[sym[i] - t->n].len - 1;
    for (size_t i = w, o = out; i-- > 0;) {
        if (sym[i] < t->n) {
            sym[--o] = sym[i];
            continue;
        }
        const int64_t e = sym[i] - t->n;
        const unsigned char *c = tg_strmap_key(&t->pieces, e);
        for (uint32_t j = t->pieces.ents[e].len; j-- > 0;) sym[--o] = t->byte_id[c[j]];
    }
    tg_free(buf);
    tg_merge_scratch_free(&ms);
    *ids = sym;
    return (int64_t)out;
oom:
    tg_free(buf);
    tg_free(sym);
    tg_merge_scratch_free(&ms);
    tg_error_set(err, "tokenizer encode: out of memory");
    return -1;
}

/* ---- questions ------------------------------------------------------------------ */

float tg_tok_score(const tg_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || id >= t->n) return NAN;
    return t->scores ? t->scores[id] : 0.0f;
}

tg_piece_type tg_tok_piece_type(const tg_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || id >= t->n) return TG_PIECE_NONE;
    if (t->types) return (tg_piece_type)t->types[id];
    return t->special[id] ? TG_PIECE_CONTROL : TG_PIECE_NORMAL;
}

const unsigned char *tg_tok_spelled(const tg_tokenizer *t, int32_t id, size_t *len)
{
    if (!t || !t->spelled) return tg_tok_piece(t, id, len);
    if (len) *len = 0;
    if (id < 0 || id >= t->n) return NULL;
    if (len) *len = (size_t)(t->soff[id + 1] - t->soff[id]);
    return t->spelled + t->soff[id];
}

bool tg_tok_adds_prefix(const tg_tokenizer *t) { return t && t->kind == TG_TOK_SPM && t->spm.add_prefix; }

int tg_tok_spm_options_of(const tg_tokenizer *t, tg_spm_options *o)
{
    if (!t || t->kind != TG_TOK_SPM || !o) return -1;
    *o = t->spm;
    return 0;
}
